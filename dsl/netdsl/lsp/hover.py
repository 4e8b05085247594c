"""Hover: what a name under the cursor is.

A layer or activation of the registry: its signature, parameter table and
description. A tensor: its inferred shape and the parameters of the statement
that made it, from the checker's graph. A block, declared layer or
activation, constant or model of the spec: its signature.
"""

from __future__ import annotations

import re
from typing import Any

from netdsl.lsp.checking import Snapshot
from netdsl.lsp.completion import context_at, find_callee
from netdsl.lsp.describe import registry_hover
from netdsl.lsp.facts import binding_facts, format_shape, statement_at
from netdsl.lsp.names import NameIndex, Occurrence
from netdsl.syntax import ir
from netdsl.syntax.format_expr import ExprPrinter

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PRINT = ExprPrinter()


def word_at(line: str, col: int) -> tuple[str, int] | None:
    """The name around 1-based column `col` of a line, and its 1-based start column."""
    for match in WORD.finditer(line):
        if match.start() + 1 <= col <= match.end() + 1:
            return match.group(0), match.start() + 1
    return None


def hover_text(
    snapshot: Snapshot | None, before: str, line_text: str, file: str, line: int, col: int
) -> tuple[str, int, int] | None:
    """Markdown for the name at (line, col), with the 1-based column range it covers.

    `before`: the text before the line (a few lines suffice), to know the call a keyword belongs to."""
    found = word_at(line_text, col)
    if found is None:
        return None
    word, start = found
    end = start + len(word)
    if re.match(r"\s*=(?!=)", line_text[end - 1 :]):
        text = _keyword_hover(snapshot, before + line_text[: start - 1], word, file)
        if text:
            return text, start, end
    index = snapshot.index if snapshot is not None else None
    occ = index.at(file, line, col) if index is not None else None
    if snapshot is not None and index is not None and occ is not None and occ.symbol.name == word:
        text = _symbol_hover(snapshot, index, occ)
        if text:
            return text, start, end
    # `-> relu` is the activation, `-> relu(max_value=6.0)` the layer (where both exist)
    called = line_text[end - 1 :].lstrip().startswith("(")
    kind = _value_kind(line_text, start) or ("layer" if called else "activation")
    text = registry_hover(word, kind)
    return (text, start, end) if text else None


def _keyword_hover(snapshot: Snapshot | None, before: str, word: str, file: str) -> str | None:
    """`units=` inside `dense(`: that parameter of the callee."""
    context = context_at(before)
    callee = find_callee(context.callee, snapshot, file) if context.callee else None
    param = next((p for p in callee.params if p[0] == word), None) if callee else None
    if callee is None or param is None:
        return None
    name, type_, default = param
    detail = ", ".join(x for x in (type_, f"default {default}" if default else "required" if type_ else "") if x)
    return f"```netdsl\n{callee.label}\n```\nparameter `{name}`" + (f": {detail}" if detail else "")


def _value_kind(line: str, start: int) -> str | None:
    """The registry kind a keyword argument's value names: `kernel_initializer=he_normal` -> initializer."""
    before = line[: start - 1].rstrip()
    match = re.search(r"([A-Za-z_]\w*)\s*=$", before)
    if not match:
        return None
    key = match.group(1)
    if key in ("optimizer", "loss", "metrics"):
        return {"metrics": "metric"}.get(key, key)
    for kind in ("activation", "initializer", "regularizer", "constraint"):
        if key == kind or key.endswith("_" + kind):
            return kind
    return None


# ------------------------------------------------------------------ the spec's names


def _symbol_hover(snapshot: Snapshot, index: NameIndex, occ: Occurrence) -> str | None:
    symbol = occ.symbol
    if symbol.kind == "decl":
        decl = index.decls.get(symbol)
        return decl_markdown(decl, symbol.file) if decl is not None else None
    if symbol.kind == "alias":
        target = index.scopes[symbol.file].aliases.get(symbol.name)
        return f'```netdsl\nimport "…" as {symbol.name}\n```\nthe names of `{target.path}`' if target else None
    definition = index.definition(occ)
    if definition is None:
        return None
    body = index.body_at(symbol.file, definition.span.line, definition.span.col)
    if body is None:
        return None
    what = body.locals.get(symbol.name, "name")
    where = f"{_decl_keyword(body.decl)} `{body.decl.name}`"
    if what == "param":
        param = next(p for p in body.decl.params if p.name == symbol.name)
        default = f" = {_PRINT.expr(param.default)}" if param.default is not None else ""
        return f"```netdsl\n{symbol.name}{default}\n```\nparameter of {where}"
    if what == "tensor":
        return _tensor_markdown(snapshot, body, definition, symbol.name, where)
    stmt = None
    if isinstance(body.decl.body, list):
        stmt = statement_at(body.decl.body, definition.span.line, definition.span.col)
    value = f" = {_PRINT.expr(stmt.value)}" if isinstance(stmt, (ir.Let, ir.Shared)) else ""
    return f"```netdsl\n{symbol.name}{value}\n```\n{what} in {where}"


def _tensor_markdown(snapshot: Snapshot, body, definition: Occurrence, name: str, where: str) -> str:
    head = f"tensor in {where}"
    graph = None
    if snapshot.analysis and isinstance(body.decl, ir.ModelDecl):
        graph = snapshot.analysis.graphs.get(body.decl.name)
    stmt = statement_at(body.decl.body, definition.span.line, definition.span.col)
    if graph is None or stmt is None:
        note = "its shape depends on each use of the block" if isinstance(body.decl, ir.BlockDecl) else ""
        return f"```netdsl\n{name}\n```\n{head}" + (f"; {note}" if note else "")
    produced = binding_facts(snapshot.facts[body.decl.name], stmt, name)
    if produced is None:
        return f"```netdsl\n{name}\n```\n{head}"
    shape = format_shape(produced.shapes[0]) if produced.shapes else "(unknown)"
    guess = "" if produced.certain else " (an estimate: the check could not decide everything)"
    flops = f", {produced.flops_text}" if produced.flops_text else ""
    made = (
        f"\n\nmade by {produced.layers} layer{'s' if produced.layers != 1 else ''}, "
        f"{produced.params_text} parameters{flops}"
        if produced.layers
        else ""
    )
    return f"```netdsl\n{name}: {shape}\n```\n{head}{guess}{made}"


def decl_markdown(decl: Any, file: str) -> str:
    keyword = _decl_keyword(decl)
    if isinstance(decl, ir.Let):
        head = f"let {decl.name} = {_PRINT.expr(decl.value)}"
    elif isinstance(decl, ir.ModelDecl):
        inputs = [i.name for s in decl.body if isinstance(s, ir.Input) for i in s.items]
        outputs = [i.name for s in decl.body if isinstance(s, ir.Output) for i in s.items if i.name]
        head = f"model {decl.name}  # inputs: {', '.join(inputs) or '-'}; outputs: {', '.join(outputs) or '-'}"
    else:
        params = ", ".join(p.name if p.default is None else f"{p.name}={_PRINT.expr(p.default)}" for p in decl.params)
        head = f"{keyword} {decl.name}({params})"
        if isinstance(decl, (ir.ActivationDecl, ir.LossDecl, ir.MetricDecl, ir.LetFunc)):
            head += f" = {_PRINT.expr(decl.body)}"
        elif isinstance(decl, (ir.BlockDecl, ir.LayerDecl)):
            inputs = [i.name for s in decl.body if isinstance(s, ir.Input) for i in s.items]
            head += f"  # inputs: {', '.join(inputs) or '-'}"
    return f"```netdsl\n{head}\n```\n{keyword} declared in `{file}` line {decl.span.line}"


_DECL_KEYWORDS: dict[type, str] = {
    ir.Let: "let",
    ir.LetFunc: "let",
    ir.ModelDecl: "model",
    ir.BlockDecl: "block",
    ir.ActivationDecl: "activation",
    ir.LayerDecl: "layer",
    ir.LossDecl: "loss",
    ir.MetricDecl: "metric",
}


def _decl_keyword(decl: Any) -> str:
    return _DECL_KEYWORDS.get(type(decl), "declaration")
