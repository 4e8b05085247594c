"""Names that hide a step: `block mlp(units, dropout=0.1) { ... -> dropout(dropout) }`.

A block parameter, a `let`, a tensor or an input named like a layer, an
activation or a declared step hides that step in the rest of its body: the
`-> dropout(dropout)` after it reads the parameter. Each use of such a step
would be its own error ("'dropout' is a constant, not a step", once per use
and once more per use of the block); `shadowing` finds them before the body
runs, so the expander reports ONE error, at the binding, that says what it
hides and how to rename it. Pure IR: nothing runs.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from netdsl import registry
from netdsl.errors import Fail, Span
from netdsl.semantics.scope import FileScope
from netdsl.syntax import ir

_STEP_DECLS = (ir.BlockDecl, ir.LayerDecl, ir.ActivationDecl, ir.ModelDecl)


@dataclass(frozen=True)
class Shadow:
    """A binding that hides a step the body uses after it."""

    name: str
    span: Span  # the binding: a parameter, a statement, an input
    kind: str  # "parameter", "constant", "tensor", "input"
    hidden: str  # what it hides, in words: "the layer 'dropout'"
    use: Span  # the first use of the name as a step after the binding
    rename: str  # a name to suggest

    def failure(self) -> Fail:
        """The one error, at the binding (every use raises the same: reported once)."""
        return Fail(
            self.span,
            f"the {self.kind} '{self.name}' hides {self.hidden}, used as a step at line {self.use.line}",
            f"rename the {self.kind} (say '{self.rename}'): after it, '-> {self.name}' reads the {self.kind}",
        )


def shadows(params: list[ir.Param], body: list[Any], scope: FileScope) -> dict[str, Shadow]:
    """The bindings of a model's or block's body (its parameters first) that hide a step it uses later."""
    bindings = [(p.name, p.span, "parameter", -1) for p in params]
    statements = list(_statements(body))
    for index, stmt in enumerate(statements):
        bindings.extend((name, span, kind, index) for name, span, kind in _bound(stmt))
    uses = _uses_by_name(statements)
    found: dict[str, Shadow] = {}
    for name, span, kind, index in bindings:
        if name in found:
            continue
        later = _first_use_after(uses.get(name, ()), index)
        hidden = _hidden(name, scope) if later is not None else None
        if later is not None and hidden is not None:
            found[name] = Shadow(name, span, kind, hidden[0], later, hidden[1] if kind != "tensor" else f"{name}_out")
    return found


def _uses_by_name(statements: list[Any]) -> dict[str, list[tuple[int, Span]]]:
    """{name: (statement index, span) of each use of it as a step, in order}: looked up per binding, so
    that a body of n statements costs n, not n x n (a 10,000-statement chain took seconds)."""
    uses: dict[str, list[tuple[int, Span]]] = {}
    for index, stmt in enumerate(statements):
        for name, span in _step_uses(stmt):
            uses.setdefault(name, []).append((index, span))
    return uses


def _first_use_after(uses: Sequence[tuple[int, Span]], index: int) -> Span | None:
    """The first of a name's uses (in statement order) in a statement after `index`."""
    at = bisect.bisect_right(uses, index, key=lambda use: use[0])
    return uses[at][1] if at < len(uses) else None


def _hidden(name: str, scope: FileScope) -> tuple[str, str] | None:
    """What a step name names (in words) and a rename for a parameter hiding it; None: no step."""
    found = scope.find(name)
    if found is not None and isinstance(found[0], _STEP_DECLS):
        word = {ir.BlockDecl: "block", ir.LayerDecl: "layer", ir.ActivationDecl: "activation", ir.ModelDecl: "model"}
        return f"the {word[type(found[0])]} '{name}'", f"{name}_value"
    if registry.lookup("activation", name) is not None:  # a bare `-> relu` is the activation
        return f"the activation '{name}'", f"{name}_value"
    entry = registry.lookup("layer", name)
    if entry is not None:  # `dropout_rate`, `dense_units`: what such a parameter holds
        first = entry.positional_params[0].name if entry.positional_params else "value"
        return f"the layer '{name}'", f"{name}_{first}"
    return None


def _statements(body: list[Any]) -> Iterator[Any]:
    """A body's statements in order, those of `if` branches in place."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ir.If):
            yield from _statements(stmt.then)
            if stmt.orelse is not None:
                yield from _statements(stmt.orelse)


def _bound(stmt: Any) -> list[tuple[str, Span, str]]:
    if isinstance(stmt, ir.Assign):  # the first name where it stands; the others at the statement
        first = Span.at(stmt.span.file, stmt.span.line, stmt.span.col, len(stmt.targets[0]))
        return [(name, first if i == 0 else stmt.span, "tensor") for i, name in enumerate(stmt.targets)]
    if isinstance(stmt, (ir.Let, ir.LetFunc)):
        return [(stmt.name, stmt.span, "constant")]
    if isinstance(stmt, ir.Input):
        return [(item.name, item.span, "input") for item in stmt.items]
    if isinstance(stmt, ir.Output):
        return [(item.name, item.span, "tensor") for item in stmt.items if item.name and item.value is not None]
    return []


def _step_uses(stmt: Any) -> Iterator[tuple[str, Span]]:
    """The names a statement uses as steps: after an arrow, in a group, as a shared instance."""
    if isinstance(stmt, ir.If):
        return  # its branches are statements of their own
    if isinstance(stmt, ir.Shared):
        yield from _as_step(stmt.value)
    for node in _walk(stmt):
        if isinstance(node, ir.Flow):
            for item in node.items[1:]:
                yield from _as_step(item)


def _as_step(expr: Any) -> Iterator[tuple[str, Span]]:
    if isinstance(expr, ir.Name):
        yield expr.id, expr.span
    elif isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name):
        yield expr.func.id, expr.func.span
    elif isinstance(expr, ir.BinOp) and expr.op == "*":  # `dense(64) * 3`
        yield from _as_step(expr.left)
    elif isinstance(expr, ir.Flow):  # a group: `(conv2d(8, 3) -> relu) * 2`
        for item in expr.items:
            yield from _as_step(item)


def _walk(node: Any) -> Iterator[Any]:
    """Every IR node under `node`, without recursion (an expression may nest deeply)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for value in current.__dict__.values():
            if isinstance(value, ir.Node):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ir.Node))
