"""Where every name of a program is defined and used: a pure function over the IR.

The checker resolves names while it expands models but keeps no record of
where; navigation, rename, hover and completion need that record, so it is
rebuilt here from the IR and the scopes (`semantics.scope.build_scopes`, the
same import rules as the checker).

A *symbol* is one thing a name can mean: a top-level declaration of a file,
an import alias, or a name local to one declaration's body (its parameters,
inputs, tensors, constants, weights). Every binding of a local name in one
body is the same symbol, so rebinding `h = h -> relu` renames as one name;
"go to definition" picks the binding nearest before the use.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import Span
from netdsl.semantics.scope import FileScope, build_scopes
from netdsl.syntax import ir
from netdsl.syntax.loader import Program

DECL_KINDS = {
    ir.Let: "constant",
    ir.LetFunc: "function",
    ir.ModelDecl: "model",
    ir.BlockDecl: "block",
    ir.ActivationDecl: "activation",
    ir.LayerDecl: "layer",
    ir.LossDecl: "loss",
    ir.MetricDecl: "metric",
}


@dataclass(frozen=True)
class Symbol:
    kind: str  # "decl" (top level), "alias" (import ... as NAME) or "local" (inside a declaration)
    file: str  # the file that defines it
    owner: str | None  # the declaration whose body holds a local
    name: str


@dataclass(frozen=True)
class Occurrence:
    symbol: Symbol
    span: Span  # the name's own text
    definition: bool


@dataclass
class Body:
    """One declaration's body: what its local names are, for completion and hover."""

    file: str
    decl: Any  # the ir declaration
    locals: dict[str, str] = field(default_factory=dict)  # name -> "tensor" | "constant" | "param" | ...

    @property
    def span(self) -> Span:
        return self.decl.span


@dataclass
class NameIndex:
    occurrences: dict[str, list[Occurrence]] = field(default_factory=dict)  # by file, in text order
    by_symbol: dict[Symbol, list[Occurrence]] = field(default_factory=dict)
    bodies: list[Body] = field(default_factory=list)
    scopes: dict[str, FileScope] = field(default_factory=dict)
    decls: dict[Symbol, Any] = field(default_factory=dict)  # a top-level symbol's declaration

    def at(self, file: str, line: int, col: int) -> Occurrence | None:
        """The occurrence whose name covers (line, col); the end column counts (a cursor just after it)."""
        found = self.occurrences.get(file, [])
        i = bisect.bisect_right(found, (line, col), key=lambda o: (o.span.line, o.span.col))
        for occ in found[max(i - 1, 0) : i]:
            if occ.span.line == line and occ.span.col <= col <= occ.span.end_col:
                return occ
        return None

    def references(self, symbol: Symbol) -> list[Occurrence]:
        return self.by_symbol.get(symbol, [])

    def definition(self, occ: Occurrence) -> Occurrence | None:
        """The binding a use means: the nearest one before it in the same file, else the first."""
        defs = [o for o in self.references(occ.symbol) if o.definition]
        before = [
            o
            for o in defs
            if o.span.file == occ.span.file and (o.span.line, o.span.col) <= (occ.span.line, occ.span.col)
        ]
        if before:
            return before[-1]
        return defs[0] if defs else None

    def body_at(self, file: str, line: int, col: int) -> Body | None:
        """The innermost declaration body around a position."""
        best = None
        for body in self.bodies:
            s = body.span
            if body.file == file and (s.line, s.col) <= (line, col) <= (s.end_line, s.end_col):
                if best is None or (s.line, s.col) >= (best.span.line, best.span.col):
                    best = body
        return best

    def add(self, occ: Occurrence) -> None:
        self.occurrences.setdefault(occ.span.file, []).append(occ)
        self.by_symbol.setdefault(occ.symbol, []).append(occ)


def build_index(program: Program) -> NameIndex:
    index = NameIndex(scopes=build_scopes(program.files, program.imports, []))
    for path, file in program.files.items():
        _Walker(index, index.scopes[path], program.texts[path]).file(file)
    for found in index.occurrences.values():
        found.sort(key=lambda o: (o.span.line, o.span.col))
    return index


# ------------------------------------------------------------------ name positions

_TOKEN = re.compile(r'#[^\n]*|"(?:[^"\\\n]|\\[^\n])*"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|([A-Za-z_]\w*)|\S')


def names_from(lines: list[str], line: int, col: int) -> Iterator[tuple[int, int, str]]:
    """(line, col, text) of each name token from a 1-based position on, skipping strings and comments."""
    for number in range(line, len(lines) + 1):
        text = lines[number - 1]
        for match in _TOKEN.finditer(text, col - 1 if number == line else 0):
            if match.group(1):
                yield number, match.start() + 1, match.group(1)


class _Walker:
    def __init__(self, index: NameIndex, scope: FileScope, text: str):
        self.index = index
        self.scope = scope
        self.path = scope.path
        self.lines = text.split("\n")

    # -- positions
    def _name_span(self, node: Any, nth: int = 0, name: str | None = None) -> Span | None:
        """The span of the `nth` name token of a node (0: the first), checked against `name`."""
        for i, (line, col, text) in enumerate(names_from(self.lines, node.span.line, node.span.col)):
            if i == nth:
                if name is not None and text != name:
                    return None
                return Span.at(self.path, line, col, len(text))
        return None

    def _define(self, symbol: Symbol, node: Any, nth: int = 0) -> None:
        span = self._name_span(node, nth, symbol.name)
        if span is not None:
            self.index.add(Occurrence(symbol, span, True))

    def _use(self, symbol: Symbol, span: Span) -> None:
        self.index.add(Occurrence(symbol, span, False))

    # -- declarations
    def file(self, file: ir.File) -> None:
        for decl in file.decls:
            if isinstance(decl, ir.Import):
                if decl.alias:
                    self._define(Symbol("alias", self.path, None, decl.alias), decl, 2)
                continue
            if isinstance(decl, ir.SweepDecl):
                self._sweep(decl)
                continue
            symbol = Symbol("decl", self.path, None, decl.name)
            self.index.decls.setdefault(symbol, decl)
            self._define(symbol, decl, 1)
            self._decl(decl, [])

    def _sweep(self, decl: ir.SweepDecl) -> None:
        """A sweep's model and the constants it searches are uses of their declarations; so are
        the constants its values name."""
        for node, nth, name in [(decl, 1, decl.name), *((item, 0, item.name) for item in decl.items)]:
            span = self._name_span(node, nth, name)
            if span is not None:
                self._name(name, span, [])
        for item in decl.items:
            self._expr(item.value, [])

    def _decl(self, decl: Any, stack: list[dict[str, Symbol]]) -> None:
        owner = decl.name if not stack else f"{_owner(stack)}.{decl.name}"
        if isinstance(decl, ir.Let):
            self._expr(decl.value, stack)
            return
        body = Body(self.path, decl)
        self.index.bodies.append(body)
        frame: dict[str, Symbol] = {}
        for param in getattr(decl, "params", []):
            frame[param.name] = Symbol("local", self.path, owner, param.name)
            body.locals[param.name] = "param"
        statements = decl.body if isinstance(decl.body, list) else []
        for name, kind in _bindings(statements):
            frame.setdefault(name, Symbol("local", self.path, owner, name))
            body.locals.setdefault(name, kind)
        for param in getattr(decl, "params", []):
            self._define(frame[param.name], param)
            if param.default is not None:
                self._expr(param.default, stack)
        inner = stack + [frame]
        if statements:
            self._statements(statements, inner)
        else:
            self._expr(decl.body, inner)

    # -- statements
    def _statements(self, statements: list, stack: list[dict[str, Symbol]]) -> None:
        for stmt in statements:
            self._statement(stmt, stack)

    def _statement(self, stmt: Any, stack: list[dict[str, Symbol]]) -> None:
        frame = stack[-1]
        if isinstance(stmt, ir.Input):
            for item in stmt.items:
                self._define(frame[item.name], item)
                if item.shape is not None:
                    self._expr(item.shape, stack)
        elif isinstance(stmt, ir.Output):
            for out in stmt.items:
                if out.name is not None and out.value is not None:
                    self._define(frame[out.name], out)
                if out.value is not None:
                    self._expr(out.value, stack)
                elif out.name is not None:
                    self._name(out.name, Span.at(self.path, out.span.line, out.span.col, len(out.name)), stack)
        elif isinstance(stmt, ir.Assign):
            for i, target in enumerate(stmt.targets):
                self._define(frame[target], stmt, i)
            self._expr(stmt.value, stack)
        elif isinstance(stmt, (ir.Let, ir.Shared, ir.Weight)):
            self._define(frame[stmt.name], stmt, 1)
            for child in (getattr(stmt, "value", None), getattr(stmt, "shape", None)):
                if child is not None:
                    self._expr(child, stack)
            for option in getattr(stmt, "options", []):
                self._expr(option.value, stack)
        elif isinstance(stmt, ir.LetFunc):
            self._define(frame[stmt.name], stmt, 1)
            self._decl(stmt, stack)
        elif isinstance(stmt, ir.If):
            self._expr(stmt.cond, stack)
            self._statements(stmt.then, stack)
            self._statements(stmt.orelse or [], stack)
        elif isinstance(stmt, ir.Train):
            for setting in stmt.items:
                self._expr(setting.value, stack)

    # -- expressions
    def _expr(self, expr: Any, stack: list[dict[str, Symbol]]) -> None:
        if isinstance(expr, ir.Name):
            self._name(expr.id, expr.span, stack)
        elif isinstance(expr, ir.Attr):
            self._attr(expr, stack)
        elif isinstance(expr, ir.Call):
            self._expr(expr.func, stack)
            for arg in expr.args:
                self._expr(arg, stack)
            callee = self._callee(expr.func, stack)
            for kwarg in expr.kwargs:
                if callee is not None and kwarg.name in _param_names(callee[0]):
                    self._use(
                        Symbol("local", callee[1], callee[0].name, kwarg.name),
                        Span.at(self.path, kwarg.span.line, kwarg.span.col, len(kwarg.name)),
                    )
                self._expr(kwarg.value, stack)
        elif isinstance(expr, ir.Node):  # any other expression: its sub-expressions, in field order
            for value in expr.__dict__.values():
                if isinstance(value, ir.Node):
                    self._expr(value, stack)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, ir.Node):
                            self._expr(item, stack)

    def _name(self, name: str, span: Span, stack: list[dict[str, Symbol]]) -> None:
        symbol = self._resolve(name, stack)
        if symbol is not None:
            self._use(symbol, span)

    def _resolve(self, name: str, stack: list[dict[str, Symbol]]) -> Symbol | None:
        for frame in reversed(stack):
            if name in frame:
                return frame[name]
        found = self.scope.find(name)
        if found is not None:
            return Symbol("decl", found[1].path, None, name)
        if name in self.scope.aliases:
            return Symbol("alias", self.path, None, name)
        return None

    def _attr(self, expr: ir.Attr, stack: list[dict[str, Symbol]]) -> None:
        value = expr.value
        local = isinstance(value, ir.Name) and any(value.id in frame for frame in stack)
        if isinstance(value, ir.Name) and not local and value.id in self.scope.aliases:
            self._use(Symbol("alias", self.path, None, value.id), value.span)
            target = self.scope.aliases[value.id]
            if expr.attr in target.own:
                col = expr.span.end_col - len(expr.attr)
                if self.lines[expr.span.end_line - 1][col - 1 : expr.span.end_col - 1] == expr.attr:
                    self._use(
                        Symbol("decl", target.path, None, expr.attr),
                        Span.at(self.path, expr.span.end_line, col, len(expr.attr)),
                    )
            return
        self._expr(value, stack)

    def _callee(self, func: Any, stack: list[dict[str, Symbol]]) -> tuple[Any, str] | None:
        """The declaration a call's function names (a block, declared layer ...) and its file."""
        if isinstance(func, ir.Name):
            if any(func.id in frame for frame in stack):
                return None
            found = self.scope.find(func.id)
            return (found[0], found[1].path) if found else None
        if isinstance(func, ir.Attr) and isinstance(func.value, ir.Name) and func.value.id in self.scope.aliases:
            target = self.scope.aliases[func.value.id]
            decl = target.own.get(func.attr)
            return (decl, target.path) if decl is not None else None
        return None


def _owner(stack: list[dict[str, Symbol]]) -> str:
    for frame in reversed(stack):
        for symbol in frame.values():
            return symbol.owner or ""
    return ""


def _param_names(decl: Any) -> set[str]:
    return {p.name for p in getattr(decl, "params", [])}


def _bindings(statements: list) -> Iterator[tuple[str, str]]:
    """(name, what it is) for each name a body binds, `if` branches included."""
    for stmt in statements:
        if isinstance(stmt, ir.Input):
            for item in stmt.items:
                yield item.name, "tensor"
        elif isinstance(stmt, ir.Output):
            for out in stmt.items:
                if out.name is not None and out.value is not None:
                    yield out.name, "tensor"
        elif isinstance(stmt, ir.Assign):
            for target in stmt.targets:
                yield target, "tensor"
        elif isinstance(stmt, ir.Let):
            yield stmt.name, "constant"
        elif isinstance(stmt, ir.LetFunc):
            yield stmt.name, "function"
        elif isinstance(stmt, ir.Shared):
            yield stmt.name, "shared"
        elif isinstance(stmt, ir.Weight):
            yield stmt.name, "weight"
        elif isinstance(stmt, ir.If):
            yield from _bindings(stmt.then)
            yield from _bindings(stmt.orelse or [])
