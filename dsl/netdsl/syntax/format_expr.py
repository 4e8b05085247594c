"""Expressions as canonical text: operators spaced, parentheses exactly where the
grammar's precedence needs them, strings re-escaped (the formatter's half that knows
nothing of lines or comments; see `formatter.py`).
"""

from __future__ import annotations

from typing import Any

from netdsl.syntax import ir

# Precedence levels, loosest first, as in the grammar's expression rules:
# ternary < or < and < not < comparison < `+ -` < `->` < `* / // % @` < unary < `**` < postfix.
TERNARY, OR, AND, NOT, COMPARE, SUM, FLOW, PRODUCT, UNARY, POWER, POSTFIX, ATOM = range(12)
_COMPARE_OPS = {"==", "!=", "<", "<=", ">", ">="}
_PRODUCT_OPS = {"*", "/", "//", "%", "@"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


def number_text_matches(written: str, value: int | float) -> bool:
    """Whether `written` is a number token that reads as `value` (of the same type)."""
    try:
        return (int(written) if isinstance(value, int) else float(written)) == value
    except ValueError:
        return False


class ExprPrinter:
    """`expr(node)`: one expression on one line."""

    def expr(self, node: Any, level: int = TERNARY) -> str:
        text, own = self._expr(node)
        return f"({text})" if own < level else text

    def _expr(self, n: Any) -> tuple[str, int]:  # noqa: C901 - one case per IR class
        e = self.expr
        if isinstance(n, ir.Name):
            return n.id, ATOM
        if isinstance(n, ir.Number):
            return self.number(n), ATOM
        if isinstance(n, ir.String):
            return self.string(n.value), ATOM
        if isinstance(n, ir.Bool):
            return ("true" if n.value else "false"), ATOM
        if isinstance(n, ir.NoneLit):
            return "none", ATOM
        if isinstance(n, ir.Tuple):
            if len(n.items) == 1:
                return f"({e(n.items[0])},)", ATOM
            return f"({', '.join(e(i) for i in n.items)})", ATOM
        if isinstance(n, ir.List):
            return f"[{', '.join(e(i) for i in n.items)}]", ATOM
        if isinstance(n, ir.Dict):
            return "{" + ", ".join(f"{e(i.key)}: {e(i.value)}" for i in n.items) + "}", ATOM
        if isinstance(n, ir.Attr):
            # `1.shape` would lex as the number `1.`: a number gets parentheses.
            value = f"({e(n.value)})" if isinstance(n.value, ir.Number) else e(n.value, POSTFIX)
            return f"{value}.{n.attr}", POSTFIX
        if isinstance(n, ir.Index):
            return f"{e(n.value, POSTFIX)}[{self.subscripts(n.index)}]", POSTFIX
        if isinstance(n, ir.Slice):
            start = e(n.start) if n.start is not None else ""
            stop = e(n.stop) if n.stop is not None else ""
            step = f":{e(n.step)}" if n.step is not None else ""
            return f"{start}:{stop}{step}", ATOM  # only ever a subscript
        if isinstance(n, ir.EllipsisLit):
            return "...", ATOM
        if isinstance(n, ir.Call):
            args = [e(a) for a in n.args] + [f"{k.name}={e(k.value)}" for k in n.kwargs]
            return f"{e(n.func, POSTFIX)}({', '.join(args)})", POSTFIX
        if isinstance(n, ir.BinOp):
            if n.op in _COMPARE_OPS:
                return f"{e(n.left, SUM)} {n.op} {e(n.right, SUM)}", COMPARE
            if n.op in ("+", "-"):
                return f"{e(n.left, SUM)} {n.op} {e(n.right, FLOW)}", SUM
            if n.op in _PRODUCT_OPS:
                return f"{e(n.left, PRODUCT)} {n.op} {e(n.right, UNARY)}", PRODUCT
            if n.op == "**":
                return f"{e(n.left, POSTFIX)} ** {e(n.right, UNARY)}", POWER
            raise AssertionError(f"formatter: unknown operator {n.op!r}")  # pragma: no cover
        if isinstance(n, ir.UnaryOp):
            if n.op == "not":
                return f"not {e(n.operand, NOT)}", NOT
            operand = e(n.operand, UNARY)
            space = " " if operand[:1] in "+-" else ""  # `- -1`, not `--1`
            return f"{n.op}{space}{operand}", UNARY
        if isinstance(n, ir.BoolOp):
            if n.op == "or":
                return f"{e(n.left, OR)} or {e(n.right, AND)}", OR
            return f"{e(n.left, AND)} and {e(n.right, NOT)}", AND
        if isinstance(n, ir.IfExp):
            return f"{e(n.then, OR)} if {e(n.cond, OR)} else {e(n.orelse)}", TERNARY
        if isinstance(n, ir.Flow):
            return " -> ".join(e(i, PRODUCT) for i in n.items), FLOW
        raise AssertionError(f"formatter: unknown expression {type(n).__name__}")  # pragma: no cover

    def subscripts(self, index: Any) -> str:
        """What stands between the brackets: `x[:, :256]` is a tuple of subscripts, written without
        its parentheses (one subscript keeps its comma: `x[:256,]`)."""
        if isinstance(index, ir.Tuple):
            items = [self.expr(i) for i in index.items]
            return ", ".join(items) + ("," if len(items) == 1 else "")
        return self.expr(index)

    def number(self, node: ir.Number) -> str:
        """A number's text; the formatter overrides this to keep the text as written."""
        return repr(node.value)

    @staticmethod
    def string(value: str) -> str:
        return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'
