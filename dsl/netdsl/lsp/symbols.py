"""Document symbols (the outline) and inlay hints (each statement's shape and parameters)."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from netdsl.cost.readout import bytes_text, flops_text
from netdsl.errors import Span
from netdsl.lsp.checking import Snapshot
from netdsl.lsp.facts import GraphFacts, format_shape, statements
from netdsl.lsp.names import NameIndex, Symbol
from netdsl.lsp.positions import Lines
from netdsl.syntax import ir

_NAMED_DECLS = (
    ir.ModelDecl,
    ir.BlockDecl,
    ir.LayerDecl,
    ir.ActivationDecl,
    ir.LossDecl,
    ir.MetricDecl,
    ir.Let,
    ir.LetFunc,
)
_KINDS: dict[type, tuple[types.SymbolKind, str]] = {
    ir.ModelDecl: (types.SymbolKind.Class, "model"),
    ir.BlockDecl: (types.SymbolKind.Function, "block"),
    ir.LayerDecl: (types.SymbolKind.Class, "layer"),
    ir.ActivationDecl: (types.SymbolKind.Function, "activation"),
    ir.LossDecl: (types.SymbolKind.Function, "loss"),
    ir.MetricDecl: (types.SymbolKind.Function, "metric"),
    ir.Let: (types.SymbolKind.Constant, "constant"),
    ir.LetFunc: (types.SymbolKind.Function, "function"),
}


def document_symbols(snapshot: Snapshot, lines: Lines) -> list[types.DocumentSymbol]:
    program, index = snapshot.program, snapshot.index
    if program is None:  # (the server asks only of a text that parsed)
        return []
    out = []
    for decl in program.root_file.decls:
        if not isinstance(decl, _NAMED_DECLS):  # the decls _KINDS has (no ir decl subclasses another)
            continue
        kind, detail = _KINDS[type(decl)]
        name_span = _name_span(index, Symbol("decl", snapshot.display, None, decl.name)) or decl.span
        children = _children(decl, lines) if isinstance(decl, (ir.ModelDecl, ir.BlockDecl, ir.LayerDecl)) else []
        out.append(
            types.DocumentSymbol(
                name=decl.name,
                kind=kind,
                detail=detail,
                range=lines.range(decl.span),
                selection_range=lines.range(name_span),
                children=children,
            )
        )
    return out


def _children(decl: Any, lines: Lines) -> list[types.DocumentSymbol]:
    children = []
    for stmt in decl.body:
        items = []
        if isinstance(stmt, ir.Input):
            items = [(i.name, i.span, "input") for i in stmt.items]
        elif isinstance(stmt, ir.Output):
            items = [(i.name, i.span, "output") for i in stmt.items if i.name]
        elif isinstance(stmt, ir.Weight):
            items = [(stmt.name, stmt.span, "weight")]
        for name, span, detail in items:
            name_span = Span.at(span.file, span.line, span.col, len(name))
            children.append(
                types.DocumentSymbol(
                    name=name,
                    kind=types.SymbolKind.Variable,
                    detail=detail,
                    range=lines.range(span),
                    selection_range=lines.range(name_span),
                )
            )
    return children


def _name_span(index: NameIndex | None, symbol: Symbol) -> Span | None:
    if index is None:
        return None
    return next((o.span for o in index.references(symbol) if o.definition), None)


def inlay_hints(snapshot: Snapshot, lines: Lines, first_line: int, last_line: int) -> list[types.InlayHint]:
    """`(None, 128) · 100,480 params` after each statement of each model that makes tensors."""
    program, analysis = snapshot.program, snapshot.analysis
    if program is None or analysis is None:  # (the server asks only of a text that parsed)
        return []
    hints = []
    for decl in program.root_file.decls:
        if not isinstance(decl, ir.ModelDecl) or decl.name not in analysis.graphs:
            continue
        facts = snapshot.facts[decl.name]
        total = _model_total(facts)
        if total and first_line <= decl.span.line <= last_line:
            end = lines.position(decl.span.line, len(lines.line(decl.span.line)) + 1)
            hints.append(types.InlayHint(position=end, label=total, kind=types.InlayHintKind.Type, padding_left=True))
        for stmt in statements(decl.body):
            for node, targets in _bindings(stmt):
                if not first_line <= node.span.end_line <= last_line:
                    continue
                produced = facts.produced(node, targets)
                if produced is None:
                    continue
                label = (
                    produced.summary()
                    if not isinstance(node, ir.InputItem)
                    else ", ".join(format_shape(s) for s in produced.shapes)
                )
                position = lines.position(node.span.end_line, node.span.end_col)
                hints.append(
                    types.InlayHint(position=position, label=label, kind=types.InlayHintKind.Type, padding_left=True)
                )
    return hints


def _model_total(facts: GraphFacts) -> str:
    """`7.76 GFLOPs a sample · 5.0 GiB to train at batch 32` after a model's first line (docs/cost.md)."""
    cost = facts.cost(batch=None)
    if cost is None or (cost.lower_bound and cost.flops == 0):
        return ""
    at_least = "≥ " if cost.lower_bound else ""
    return (
        f"{at_least}{flops_text(cost.flops)} a sample · {at_least}{bytes_text(cost.train_memory_bytes)} "
        f"to train at batch {cost.batch}"
    )


def _bindings(stmt: Any) -> list[tuple[Any, int]]:
    if isinstance(stmt, ir.Input):
        return [(item, 1) for item in stmt.items]
    if isinstance(stmt, ir.Assign):
        return [(stmt, len(stmt.targets))]
    if isinstance(stmt, ir.Output):
        return [(item, 1) for item in stmt.items if item.value is not None and item.name]
    return []
