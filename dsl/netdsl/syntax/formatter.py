"""`netdsl fmt`: the canonical formatter (spec text -> IR -> canonical text, comments kept).

`format_text` parses with `to_ir` (syntax errors are SpecErrors) and prints the IR;
expressions are printed by `format_expr.ExprPrinter`, lines and comments here. The rules:

- 2-space indentation, one statement per line, no `;`, `\\n` line ends, one final newline.
- Spaces around binary operators, `->`, `=` in statements and `:` after input and
  weight names; none around `=` in keyword arguments, parameter defaults and weight
  options (`dense(10, activation=relu)`, `weight b: (units,) init=zeros`).
- Tuples `(a, b)`, one-element tuples `(a,)`; strings re-escaped (`\\" \\\\ \\n \\t`);
  numbers exactly as written (`1e-3` stays `1e-3`), read back through their spans.
- Parentheses only where the grammar's precedence needs them (and around a dict
  right after `output`, where `{` would open a block).
- Blank lines: exactly one between top-level declarations when either of the two has a
  body (`model`, `block`, `layer`); between one-line declarations (`import`, `let`,
  `activation`), between statements inside bodies and between comments, one blank line
  where the source had one or more, none otherwise. None right after `{`, before `}`,
  or inside a statement.
- Bodies: `model m {` ... `}`; an empty model, block, layer or train body without
  comments is `{}`. `} else {` and `} else if c {` on one line; `else { if ... }` with
  nothing else in the braces (comments included) is printed as `else if`.
- Long lines (over 88 columns, trailing comments not counted): a flow of three or more
  items breaks before `->`, continuation lines aligned under the first `->` (indented 4
  when that is far right). The first line holds the source and the first step; further
  breaks are the author's own (where a step began a new line), then lines still too long
  break greedily. A flow that fits on one line is joined onto it. Lists, tuples, dicts
  and calls that do not fit print one item per line with a trailing comma. Anything
  else stays on one line, however long.
- Comments: an own-line comment stays above the statement (or flow line, or list item)
  it precedes, at its indentation; a comment after code trails its line after two
  spaces; comments at the end of a body stay inside it, at the end of the file stay
  there; comments between `}` and `else {` end the `if` body. A comment inside something
  printed on one line moves above that line. A flow or a list with a comment between
  its lines stays broken, so the comment keeps its place.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, cast

from netdsl.errors import Diagnostic, SpecError
from netdsl.syntax import ir
from netdsl.syntax.format_expr import POSTFIX, PRODUCT, UNARY, ExprPrinter, number_text_matches
from netdsl.syntax.transform import to_ir

LINE_LENGTH = 88
INDENT = "  "
_FAR_RIGHT = 40  # continuation lines align under the first `->` unless it is further right than this

_COMPOUND = (ir.ModelDecl, ir.BlockDecl, ir.LayerDecl, ir.SweepDecl)


def format_text(text: str, filename: str = "<string>") -> str:
    """The canonical text of a spec; raises SpecError (its syntax errors) when it does not parse."""
    if text.startswith("\ufeff"):
        text = text[1:]
    tree = to_ir(text, filename)
    try:
        return _Printer(text, tree.comments).file(tree.decls)
    except RecursionError:
        raise SpecError(Diagnostic.for_file(filename, "expression nested too deeply")) from None


class _Printer(ExprPrinter):
    def __init__(self, text: str, comments: list[ir.Comment]):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.comments = sorted((self.offset(c.span.line, c.span.col), c.text) for c in comments)
        self.comment_pos = [pos for pos, _ in self.comments]
        self.ci = 0  # the next comment not yet printed
        self.out: list[str] = []

    # ------------------------------------------------------------ source positions

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col - 1

    def start(self, node: ir.Node) -> int:
        return self.offset(node.span.line, node.span.col)

    def end(self, node: ir.Node) -> int:
        return self.offset(node.span.end_line, node.span.end_col)

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def last_line(self, end: int) -> int:
        return self.line_of(max(end - 1, 0))

    def skip(self, pos: int, extra: str = "") -> int:
        """Past whitespace, `;`, comments (and any of `extra`) from pos."""
        text = self.text
        while pos < len(text):
            ch = text[pos]
            if ch in " \t\r\f\n;" or ch in extra:
                pos += 1
            elif ch == "#":
                nl = text.find("\n", pos)
                pos = len(text) if nl < 0 else nl
            else:
                break
        return pos

    def find(self, pos: int, word: str, extra: str = "") -> int:
        """Where `word` starts, with only layout (and `extra`) between pos and it."""
        pos = self.skip(pos, extra)
        if not self.text.startswith(word, pos):  # pragma: no cover - the parser guarantees it
            raise AssertionError(f"formatter: expected {word!r} at offset {pos}")
        return pos

    def past_name(self, decl: ir.Node, keyword: str, name: str) -> int:
        return self.skip(self.start(decl) + len(keyword)) + len(name)

    # ------------------------------------------------------------ comments

    def has_comment(self, lo: int, hi: int) -> bool:
        i = bisect.bisect_left(self.comment_pos, lo)
        return i < len(self.comment_pos) and self.comment_pos[i] < hi

    def take_before(self, pos: int) -> list[tuple[int, str]]:
        taken = []
        while self.ci < len(self.comments) and self.comments[self.ci][0] < pos:
            taken.append(self.comments[self.ci])
            self.ci += 1
        return taken

    def take_trailing(self, end: int, bound: int) -> str | None:
        if self.ci < len(self.comments):
            pos, text = self.comments[self.ci]
            if end <= pos < bound and self.line_of(pos) == self.last_line(end):
                self.ci += 1
                return text
        return None

    def first_line(self, start: int) -> int:
        """The first source line of what starts at `start`, with its leading comments."""
        if self.ci < len(self.comments) and self.comments[self.ci][0] < start:
            return self.line_of(self.comments[self.ci][0])
        return self.line_of(start)

    def gap(self, prev_end: int | None, line: int) -> bool:
        """Whether the source has a blank line between what ended at prev_end and `line`."""
        return prev_end is not None and line - self.last_line(prev_end) > 1

    # ------------------------------------------------------------ output

    def put(self, line: str, blank: bool = False) -> None:
        if blank and self.out and self.out[-1] != "":
            self.out.append("")
        self.out.append(line.rstrip())

    def own_lines(self, indent: str, comments: list[tuple[int, str]], blank: bool, gaps: bool) -> None:
        prev = None
        for pos, text in comments:
            line = self.line_of(pos)
            self.put(indent + text, blank if prev is None else gaps and line - prev > 1)
            prev = line

    def emit(
        self,
        indent: str,
        text: str,
        start: int,
        end: int,
        bound: int,
        blank: bool,
        gaps: bool = True,
        above: str | None = None,
    ) -> None:
        """One output line for the source range [start, end).

        Comments before it, and those inside it, go on their own lines above it (at
        `above`, by default its indentation); the comment after it on its last source
        line, before `bound`, trails it.
        """
        above = indent if above is None else above
        lead = self.take_before(start)
        inner = self.take_before(end)
        if lead:
            self.own_lines(above, lead, blank, gaps)
            blank = gaps and self.line_of(start) - self.line_of(lead[-1][0]) > 1
        if inner:
            self.own_lines(above, inner, blank, False)
            blank = False
        trail = self.take_trailing(end, bound)
        self.put(indent + text + (f"  {trail}" if trail else ""), blank)

    # ------------------------------------------------------------ declarations

    def file(self, decls: list[Any]) -> str:
        prev_end = None
        for i, decl in enumerate(decls):
            bound = self.start(decls[i + 1]) if i + 1 < len(decls) else len(self.text)
            if i == 0:
                blank = False
            elif isinstance(decl, _COMPOUND) or isinstance(decls[i - 1], _COMPOUND):
                blank = True
            else:
                blank = self.gap(prev_end, self.first_line(self.start(decl)))
            self.decl(decl, bound, blank)
            prev_end = self.end(decl)
        self.tail_comments("", prev_end, len(self.text) + 1)
        return "\n".join(self.out) + "\n" if self.out else ""

    def tail_comments(self, indent: str, prev_end: int | None, close: int) -> None:
        rest = self.take_before(close)
        if rest:
            self.own_lines(indent, rest, self.gap(prev_end, self.line_of(rest[0][0])), True)

    def decl(self, node: Any, bound: int, blank: bool) -> None:
        start, end = self.start(node), self.end(node)
        if isinstance(node, ir.Import):
            alias = f" as {node.alias}" if node.alias else ""
            self.emit("", f"import {self.string(node.path)}{alias}", start, end, bound, blank)
        elif isinstance(node, (ir.ActivationDecl, ir.LossDecl, ir.MetricDecl)):
            self.layout(
                "", f"{node.kind} {node.name}({self.params(node.params)}) = ", node.body, start, end, bound, blank
            )
        elif isinstance(node, ir.ModelDecl):
            brace = self.find(self.past_name(node, "model", node.name), "{")
            self.body("", f"model {node.name}", start, brace, node.body, end - 1, end, bound, blank)
        elif isinstance(node, ir.SweepDecl):
            brace = self.find(self.past_name(node, "sweep", node.name), "{")
            self.body("", f"sweep {node.name}", start, brace, node.items, end - 1, end, bound, blank)
        elif isinstance(node, (ir.BlockDecl, ir.LayerDecl)):
            keyword = "block" if isinstance(node, ir.BlockDecl) else "layer"
            if node.params:
                after = self.end(node.params[-1])
            else:
                after = self.find(self.past_name(node, keyword, node.name), "(") + 1
            brace = self.find(after, "{", extra=",)")
            header = f"{keyword} {node.name}({self.params(node.params)})"
            if node.params and len(header + " {") > LINE_LENGTH:  # one parameter per line
                opening = self.find(self.past_name(node, keyword, node.name), "(")
                self.emit("", f"{keyword} {node.name}(", start, opening + 1, self.start(node.params[0]), blank)
                for i, param in enumerate(node.params):
                    nxt = self.start(node.params[i + 1]) if i + 1 < len(node.params) else self.find(after, ")", ",")
                    self.emit(INDENT, self.params([param]) + ",", self.start(param), self.end(param), nxt, False, False)
                start, header, blank = self.find(after, ")", ","), ")", False
            self.body("", header, start, brace, node.body, end - 1, end, bound, blank)
        else:
            self.stmt(node, "", bound, blank)

    def params(self, params: list[ir.Param]) -> str:
        return ", ".join(p.name if p.default is None else f"{p.name}={self.expr(p.default)}" for p in params)

    def body(
        self,
        indent: str,
        header: str,
        start: int,
        brace: int,
        stmts: list[Any],
        close: int,
        end: int,
        bound: int,
        blank: bool,
    ) -> None:
        """`header {`, the statements, `}` (the braces at offsets brace and close)."""
        if not stmts and not self.has_comment(brace, close):
            self.emit(indent, header + " {}", start, end, bound, blank)
            return
        first = self.start(stmts[0]) if stmts else close
        self.emit(indent, header + " {", start, brace + 1, first, blank)
        self.stmts(stmts, indent + INDENT, close)
        self.emit(indent, "}", close, end, bound, False)

    def stmts(self, stmts: list[Any], indent: str, close: int) -> None:
        prev_end = None
        for i, node in enumerate(stmts):
            bound = self.start(stmts[i + 1]) if i + 1 < len(stmts) else close
            self.stmt(node, indent, bound, self.gap(prev_end, self.first_line(self.start(node))))
            prev_end = self.end(node)
        self.tail_comments(indent, prev_end, close)

    # ------------------------------------------------------------ statements

    def stmt(self, node: Any, indent: str, bound: int, blank: bool) -> None:
        start, end = self.start(node), self.end(node)
        if isinstance(node, ir.If):
            self.if_stmt(node, indent, bound, blank, "if ", start, end)
        elif isinstance(node, ir.Train):
            brace = self.find(start + len("train"), "{")
            self.body(indent, "train", start, brace, node.items, end - 1, end, bound, blank)
        else:
            head, value = self.parts(node)
            self.layout(indent, head, value, start, end, bound, blank)

    def parts(self, node: Any) -> tuple[str, ir.Node | None]:
        """A one-statement line as `head` + `value`, where `value` may be broken over lines."""
        if isinstance(node, ir.Let):
            return f"let {node.name} = ", node.value
        if isinstance(node, ir.LetFunc):
            return f"let {node.name}({self.params(node.params)}) = ", node.body
        if isinstance(node, ir.Assign):
            return f"{', '.join(node.targets)} = ", node.value
        if isinstance(node, ir.Shared):
            return f"shared {node.name} = ", node.value
        if isinstance(node, ir.Kwarg):  # a train setting
            return f"{node.name} = ", node.value
        if isinstance(node, ir.Input):
            return "input " + ", ".join(self.input_item(item) for item in node.items), None
        if isinstance(node, ir.Weight):
            options = "".join(f" {o.name}={self.expr(o.value)}" for o in node.options)
            return f"weight {node.name}: {self.expr(node.shape)}{options}", None
        if isinstance(node, ir.Output):
            if len(node.items) == 1 and node.items[0].value is not None:
                item = node.items[0]
                if item.name is not None:
                    return f"output {item.name} = ", item.value
                if not self.expr(item.value).startswith("{"):
                    return "output ", item.value
            return "output " + ", ".join(self.output_item(item) for item in node.items), None
        raise AssertionError(f"formatter: unknown statement {type(node).__name__}")  # pragma: no cover

    def input_item(self, item: ir.InputItem) -> str:
        shape = f": {self.expr(item.shape)}" if item.shape is not None else ""
        dtype = f" as {item.dtype}" if item.dtype else ""
        return f"{item.name}{shape}{dtype}"

    def output_item(self, item: ir.OutputItem) -> str:
        if item.value is None:
            return str(item.name)  # the parser gives an output without a value its name
        if item.name is not None:
            return f"{item.name} = {self.expr(item.value)}"
        text = self.expr(item.value)
        return f"({text})" if text.startswith("{") else text  # `output {` would open a block

    def if_stmt(
        self,
        node: ir.If,
        indent: str,
        bound: int,
        blank: bool,
        lead: str,
        start: int,
        end: int,
        above: str | None = None,
    ) -> None:
        inner = indent + INDENT
        brace = self.find(self.end(node.cond), "{", extra=")")
        close = self.find(self.end(node.then[-1]) if node.then else brace + 1, "}")
        first = self.start(node.then[0]) if node.then else close
        self.emit(indent, f"{lead}{self.expr(node.cond)} {{", start, brace + 1, first, blank, above=above)
        self.stmts(node.then, inner, close)
        if node.orelse is None:
            self.emit(indent, "}", close, end, bound, False)
            return
        after_else = self.skip(self.find(close + 1, "else") + len("else"))
        orelse = node.orelse
        if not self.else_opens_block(after_else, orelse):  # `else if`
            self.if_stmt(cast(ir.If, orelse[0]), indent, bound, False, "} else if ", close, end, above=inner)
            return
        else_close = self.end(node) - 1
        if (
            len(orelse) == 1
            and isinstance(orelse[0], ir.If)
            and not self.has_comment(after_else, self.start(orelse[0]))
            and not self.has_comment(self.end(orelse[0]), else_close)
        ):
            self.if_stmt(orelse[0], indent, bound, False, "} else if ", close, end, above=inner)
            return
        first = self.start(orelse[0]) if orelse else else_close
        # Comments between `}` and `else {` print as the end of the `if` body.
        self.emit(indent, "} else {", close, after_else + 1, first, False, above=inner)
        self.stmts(orelse, inner, else_close)
        self.emit(indent, "}", else_close, end, bound, False)

    def else_opens_block(self, after_else: int, orelse: list[Any]) -> bool:
        """Whether the source wrote `else {` (rather than `else if`)."""
        return self.text[after_else] == "{"

    # ------------------------------------------------------------ line breaking

    def layout(
        self,
        indent: str,
        head: str,
        value: Any,
        start: int,
        end: int,
        bound: int,
        blank: bool,
        suffix: str = "",
        gaps: bool = True,
    ) -> None:
        """`head` + `value` + `suffix` on one line if it fits, else broken (see the module's rules)."""
        flat = head + (self.expr(value) if value is not None else "") + suffix
        long = len(indent) + len(flat) > LINE_LENGTH
        if isinstance(value, ir.Flow):
            lines = self.flow_lines(value)
            if long or self.has_comment(self.end(value.items[lines[0][-1]]), self.end(value)):
                self.flow(indent, head, value, lines, start, end, bound, blank, suffix, gaps)
                return
        elif (opening := self.opener(value)) is not None:
            open_pos, close_pos = opening
            if long or self.has_comment(open_pos + 1, close_pos):
                self.collection(indent, head, value, open_pos, close_pos, start, end, bound, blank, suffix, gaps)
                return
        elif long and isinstance(value, ir.BinOp) and (call := self._leading_call(value)) is not None:
            # `softmax(...) @ v` too long: the call it starts with, one argument per line, then the rest
            text, call_text = self.expr(value), self.expr(call, POSTFIX)
            open_pos, close_pos = cast("tuple[int, int]", self.opener(call))
            rest = text[len(call_text) :] + suffix
            self.collection(indent, head, call, open_pos, close_pos, start, end, bound, blank, rest, gaps)
            return
        self.emit(indent, flat, start, end, bound, blank, gaps)

    def _leading_call(self, value: ir.BinOp) -> ir.Call | None:
        """The call an operator expression's text starts with (its leftmost operand), if it has arguments
        and prints without parentheses around it."""
        left: Any = value
        while isinstance(left, ir.BinOp):
            left = left.left
        call = _breakable_call(left)
        return call if call is not None and self.expr(value).startswith(self.expr(call, POSTFIX)) else None

    def flow_lines(self, flow: ir.Flow) -> list[list[int]]:
        """The flow's items grouped as the source has them on lines (source and first step together)."""
        lines = [[0, 1]]
        for k in range(2, len(flow.items)):
            if self.line_of(self.start(flow.items[k])) > self.last_line(self.end(flow.items[k - 1])):
                lines.append([k])
            else:
                lines[-1].append(k)
        return lines

    def flow(
        self,
        indent: str,
        head: str,
        flow: ir.Flow,
        lines: list[list[int]],
        start: int,
        end: int,
        bound: int,
        blank: bool,
        suffix: str,
        gaps: bool,
    ) -> None:
        items = flow.items
        texts = [self.expr(item, PRODUCT) for item in items]
        column = len(indent + head + texts[0]) + 1
        cont = " " * (column if column <= len(indent) + _FAR_RIGHT else len(indent) + 4)

        def width(group: list[int]) -> int:
            text = " -> ".join(texts[k] for k in group) + (suffix if group[-1] == len(items) - 1 else "")
            return len(indent + head + text) if group[0] == 0 else len(cont) + 3 + len(text)

        # The author's lines, then greedy breaks before `->` where one is still too long
        # (the source and the first step always share the first line).
        filled: list[list[int]] = []
        for group in lines:
            current: list[int] = []
            for k in group:
                if k > 1 and current and width(current + [k]) > LINE_LENGTH:
                    filled.append(current)
                    current = []
                current.append(k)
            filled.append(current)
        for n, group in enumerate(filled):
            last = n == len(filled) - 1
            text = " -> ".join(texts[k] for k in group) + (suffix if last else "")
            line_start = start if n == 0 else self.start(items[group[0]])
            line_end = end if last else self.end(items[group[-1]])
            line_bound = bound if last else self.start(items[filled[n + 1][0]])
            line_indent, line_head = (indent, head) if n == 0 else (cont, "-> ")
            wide = self._call_to_break(items, group) if len(line_indent + line_head + text) > LINE_LENGTH else None
            if wide is not None:  # one step alone is too long: its call, one argument per line
                before = [texts[k] for k in group if k < wide]
                after = [texts[k] for k in group if k > wide]
                step = items[wide]
                call = cast(ir.Call, _breakable_call(step))
                times = f" * {self.expr(step.right, UNARY)}" if isinstance(step, ir.BinOp) else ""  # a repeat
                open_pos, close_pos = cast("tuple[int, int]", self.opener(call))
                self.collection(
                    line_indent,
                    line_head + "".join(t + " -> " for t in before),
                    call,
                    open_pos,
                    close_pos,
                    line_start,
                    line_end,
                    line_bound,
                    blank and n == 0,
                    times + "".join(" -> " + t for t in after) + (suffix if last else ""),
                    gaps and n == 0,
                )
            elif n == 0:
                self.emit(indent, head + text, line_start, line_end, line_bound, blank, gaps)
            else:
                self.emit(cont, "-> " + text, line_start, line_end, line_bound, False, False)

    @staticmethod
    def _call_to_break(items: list[Any], group: list[int]) -> int | None:
        """The last item of a line of a flow that is a call with arguments, or one repeated
        (`conv2d(...) * 3`); None: none is."""
        calls = [k for k in group if _breakable_call(items[k]) is not None]
        return calls[-1] if calls else None

    def opener(self, value: Any) -> tuple[int, int] | None:
        """Offsets of the brackets of a list, tuple, dict or call that could print one item per line."""
        if isinstance(value, (ir.List, ir.Tuple, ir.Dict)) and value.items:
            return self.start(value), self.end(value) - 1
        if isinstance(value, ir.Call) and (value.args or value.kwargs):
            return self.find(self.end(value.func), "(", extra=")"), self.end(value) - 1
        return None

    def collection(
        self,
        indent: str,
        head: str,
        value: Any,
        open_pos: int,
        close_pos: int,
        start: int,
        end: int,
        bound: int,
        blank: bool,
        suffix: str,
        gaps: bool,
    ) -> None:
        if isinstance(value, ir.Call):
            opening, closing = self.expr(value.func, POSTFIX) + "(", ")"
            items: list[tuple[Any, str, Any]] = [(a, "", a) for a in value.args]
            items += [(k, f"{k.name}=", k.value) for k in value.kwargs]
        elif isinstance(value, ir.Dict):
            opening, closing = "{", "}"
            items = [(d, f"{self.expr(d.key)}: ", d.value) for d in value.items]
        else:
            opening, closing = ("[", "]") if isinstance(value, ir.List) else ("(", ")")
            items = [(item, "", item) for item in value.items]
        inner = indent + INDENT
        self.emit(indent, head + opening, start, open_pos + 1, self.start(items[0][0]), blank, gaps)
        for i, (node, item_head, item_value) in enumerate(items):
            item_bound = self.start(items[i + 1][0]) if i + 1 < len(items) else close_pos
            self.layout(
                inner,
                item_head,
                item_value,
                self.start(node),
                self.end(node),
                item_bound,
                False,
                suffix=",",
                gaps=False,
            )
        self.own_lines(inner, self.take_before(close_pos), False, False)
        self.emit(indent, closing + suffix, close_pos, end, bound, False, gaps)

    def number(self, node: ir.Number) -> str:
        """The number as written (`1e-3`, not `0.001`), when its span still reads as its value."""
        written = self.text[self.start(node) : self.end(node)]
        return written if number_text_matches(written, node.value) else super().number(node)


def _breakable_call(item: Any) -> ir.Call | None:
    """The call of a flow's step that may print one argument per line: the step, or the step a
    repeat repeats (`conv2d(512, 3) * 3`)."""
    if isinstance(item, ir.BinOp) and item.op == "*":
        item = item.left
    return item if isinstance(item, ir.Call) and (item.args or item.kwargs) else None


# ---------------------------------------------------------------- IR built in memory


def format_ir(decls: list[Any]) -> str:
    """The canonical text of declarations built in memory rather than parsed (`netdsl decompile`).

    There is no source text: no comments, no author's line breaks, numbers printed
    from their values (`1e-05` as `1e-5`). The result is in `netdsl fmt` form:
    formatting it again changes nothing.
    """
    try:
        return _IRPrinter().file(decls)
    except RecursionError:
        raise SpecError(Diagnostic.for_file("<decompile>", "expression nested too deeply")) from None


class _IRPrinter(_Printer):
    """The formatter with no source text: spans are ignored, every node sits at offset 0."""

    def __init__(self) -> None:
        super().__init__("", [])

    def start(self, node: ir.Node) -> int:
        return 0

    def end(self, node: ir.Node) -> int:
        return 0

    def find(self, pos: int, word: str, extra: str = "") -> int:
        return pos

    def else_opens_block(self, after_else: int, orelse: list[Any]) -> bool:
        return not (len(orelse) == 1 and isinstance(orelse[0], ir.If))

    def number(self, node: ir.Number) -> str:
        return number_text(node.value)


def number_text(value: int | float) -> str:
    """A number as a spec writes it: Python's shortest repr, exponents without padding (`1e-5`)."""
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else ""
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


# ---------------------------------------------------------------- the command
