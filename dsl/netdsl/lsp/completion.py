"""Completion and signature help, read from the text before the cursor.

The text being typed rarely parses, so the context (after `->`, inside
`name(`, after `key=`) comes from the characters before the cursor, and the
names in scope from the newest check that parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from netdsl import registry
from netdsl.lsp.checking import Snapshot
from netdsl.lsp.describe import HIDDEN, LOOKUP_ORDER, call_tensor_default, call_tensor_type, default_text, signature
from netdsl.syntax import ir
from netdsl.syntax.format_expr import ExprPrinter
from netdsl.syntax.keywords import KEYWORDS

LOOKBACK = 4000  # characters before the cursor that can hold the open call
MAX_ITEMS = 200  # more is marked incomplete: the client asks again as more of the name is typed
_PARTIAL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_CALLEE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\s*$")
_PRINT = ExprPrinter()
_STEP_KINDS: dict[type, str] = {
    ir.BlockDecl: "block",
    ir.LayerDecl: "layer",
    ir.ActivationDecl: "activation",
    ir.ModelDecl: "model",
}
_VALUE_KINDS: dict[type, str] = {ir.Let: "constant", ir.LetFunc: "function"}


@dataclass
class Context:
    kind: str  # "step" | "argument" | "value" | "general" | "none"
    partial: str  # the part of a name already typed
    callee: str | None = None  # inside `callee(`
    argument: int = 0  # the argument the cursor is in (0-based)
    keyword: str | None = None  # `keyword=` of that argument, when written
    given: tuple[str, ...] = ()  # keywords already given in the call


def context_at(before: str) -> Context:
    """What the cursor is completing, from the text before it."""
    before = before[-LOOKBACK:]
    line = before[before.rfind("\n") + 1 :]
    if _in_comment_or_string(line):
        return Context("none", "")
    partial_match = _PARTIAL.search(before)
    partial = partial_match.group(0) if partial_match else ""
    head = before[: len(before) - len(partial)]
    stripped = head.rstrip()
    call = _open_call(head)
    if stripped.endswith("->") or stripped.endswith("-> (") or re.search(r"shared\s+\w+\s*=\s*$", stripped):
        return Context("step", partial)
    if call is not None:
        callee, args_text = call
        pieces = _split_args(args_text)
        current = pieces[-1]
        given = tuple(m.group(1) for p in pieces[:-1] if (m := re.match(r"\s*(\w+)\s*=", p)))
        keyword = re.match(r"\s*(\w+)\s*=", current)
        if keyword:
            return Context("value", partial, callee, len(pieces) - 1, keyword.group(1), given)
        return Context("argument", partial, callee, len(pieces) - 1, None, given)
    return Context("general", partial)


def _in_comment_or_string(line: str) -> bool:
    quoted = False
    for i, char in enumerate(line):
        if char == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        elif char == "#" and not quoted:
            return True
    return quoted


def _open_call(head: str) -> tuple[str, str] | None:
    """(callee, text of its arguments so far) of the innermost call left open before the cursor."""
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        char = head[i]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                if char != "(":
                    return None
                match = _CALLEE.search(head[:i])
                return (match.group(1), head[i + 1 :]) if match else None
            depth -= 1
        elif char == "\n" and depth == 0 and not head[i + 1 :].lstrip(" \t").startswith("->"):
            return None  # the statement started before this line
    return None


def _split_args(text: str) -> list[str]:
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return pieces


# ------------------------------------------------------------------ callees


@dataclass
class Callee:
    label: str
    params: list[tuple[str, str, str]]  # (name, type or "", default text or "")
    doc: str


def find_callee(name: str, snapshot: Snapshot | None, file: str) -> Callee | None:
    """A called name's parameters: a spec declaration in scope first, then the registry."""
    decl = _spec_decl(name, snapshot, file)
    if decl is not None and getattr(decl, "params", None) is not None:
        params = [(p.name, "", _PRINT.expr(p.default) if p.default is not None else "") for p in decl.params]
        label = f"{name}({', '.join(n if not d else f'{n}={d}' for n, _, d in params)})"
        return Callee(label, params, f"declared in {file}")
    for kind in LOOKUP_ORDER:
        entry = registry.lookup(kind, name)
        if entry is not None:
            params = [
                (p.name, p.type, "" if p.required else default_text(p.default))
                for p in entry.params + entry.call_params
                if p.name not in HIDDEN
            ]
            params += [(t.name, call_tensor_type(t), call_tensor_default(t)) for t in entry.call_tensors]
            return Callee(signature(entry), params, entry.description)
    return None


def _spec_decl(name: str, snapshot: Snapshot | None, file: str) -> Any:
    if snapshot is None or snapshot.index is None or file not in snapshot.index.scopes:
        return None
    scope = snapshot.index.scopes[file]
    if "." in name:
        alias, attr = name.split(".", 1)
        target = scope.aliases.get(alias)
        return target.own.get(attr) if target else None
    found = scope.find(name)
    return found[0] if found else None


# ------------------------------------------------------------------ completion


def completion_list(
    context: Context, snapshot: Snapshot | None, file: str, line: int, col: int
) -> types.CompletionList:
    """The items whose label holds the typed part's letters in order (as editors match), at most
    MAX_ITEMS of them: a model with a thousand tensors should not send a thousand on each key."""
    items = [i for i in completions(context, snapshot, file, line, col) if _fuzzy(i.label, context.partial)]
    return types.CompletionList(is_incomplete=len(items) > MAX_ITEMS, items=items[:MAX_ITEMS])


def _fuzzy(label: str, typed: str) -> bool:
    position = 0
    label = label.lower()
    for char in typed.lower():
        position = label.find(char, position) + 1
        if position == 0:
            return False
    return True


def completions(
    context: Context, snapshot: Snapshot | None, file: str, line: int, col: int
) -> list[types.CompletionItem]:
    if context.kind == "none":
        return []
    if context.kind == "step":
        return _step_items(snapshot, file, line, col)
    if context.kind == "argument":
        callee = find_callee(context.callee, snapshot, file) if context.callee is not None else None
        items = []
        if callee is not None:
            for name, type_, default in callee.params:
                if name not in context.given:
                    shown = f"= {default}" if default else "required" if type_ else ""
                    detail = " ".join(x for x in (type_, shown) if x)
                    items.append(
                        types.CompletionItem(
                            label=f"{name}=",
                            kind=types.CompletionItemKind.Property,
                            detail=detail,
                            insert_text=f"{name}=",
                            sort_text=f"0{name}",
                        )
                    )
        return items + _scope_items(snapshot, file, line, col, tensors=False, typed=context.partial)
    if context.kind == "value":
        return _value_items(context, snapshot, file, line, col)
    return _scope_items(snapshot, file, line, col, tensors=True, typed=context.partial) + [
        types.CompletionItem(label=k, kind=types.CompletionItemKind.Keyword, sort_text=f"9{k}") for k in KEYWORDS
    ]


def _step_items(snapshot, file, line, col) -> list[types.CompletionItem]:
    items = _registry_items("layer", types.CompletionItemKind.Class)
    items += _registry_items("activation", types.CompletionItemKind.Function)
    for name, decl in _file_names(snapshot, file):
        if type(decl) in _STEP_KINDS:
            items.append(
                types.CompletionItem(
                    label=name,
                    kind=types.CompletionItemKind.Module,
                    detail=f"{_STEP_KINDS[type(decl)]} (this spec)",
                    sort_text=f"0{name}",
                )
            )
    for name, what in _locals(snapshot, file, line, col):
        if what == "shared":
            items.append(
                types.CompletionItem(
                    label=name, kind=types.CompletionItemKind.Variable, detail="shared instance", sort_text=f"0{name}"
                )
            )
    return items


def _value_items(context: Context, snapshot, file, line, col) -> list[types.CompletionItem]:
    callee = find_callee(context.callee, snapshot, file) if context.callee is not None else None
    type_ = next((t for n, t, _ in (callee.params if callee else []) if n == context.keyword), "")
    items: list[types.CompletionItem] = []
    if type_ in ("activation", "initializer", "regularizer", "constraint"):
        items += _registry_items(type_, types.CompletionItemKind.Function)
        if type_ == "activation":
            items += [
                types.CompletionItem(label=n, kind=types.CompletionItemKind.Function, detail="activation (this spec)")
                for n, d in _file_names(snapshot, file)
                if isinstance(d, ir.ActivationDecl)
            ]
    elif type_ == "bool":
        items += [types.CompletionItem(label=v, kind=types.CompletionItemKind.Keyword) for v in ("true", "false")]
    entry = registry.lookup("layer", context.callee) if context.callee else None
    param = entry.param(context.keyword) if entry and context.keyword else None
    if param is not None and param.choices:
        items += [types.CompletionItem(label=f'"{c}"', kind=types.CompletionItemKind.EnumMember) for c in param.choices]
    tensors = type_ in ("tensor", "tensors")  # `initial_state=`: the body's tensors are what it takes
    return items + _scope_items(snapshot, file, line, col, tensors=tensors, typed=context.partial)


def _registry_items(kind: str, item_kind: types.CompletionItemKind) -> list[types.CompletionItem]:
    """Every name of `kind` in the registry, in the order names() lists them."""
    items = []
    for name in registry.names(kind):
        entry = registry.lookup(kind, name)
        assert entry is not None, name  # names() lists canonical names, each a key lookup() knows
        items.append(_entry_item(entry, item_kind))
    return items


def _entry_item(entry: registry.Entry, kind) -> types.CompletionItem:
    """A registry name; its signature and description come with `completionItem/resolve`
    (a list of 170 full signatures would weigh ten times as much on every keystroke)."""
    return types.CompletionItem(label=entry.name, kind=kind, detail=entry.kind)


def resolve(item: types.CompletionItem) -> types.CompletionItem:
    """Fill in a registry item's signature and description (its detail names its kind)."""
    entry = registry.lookup(item.detail, item.label) if item.detail in registry.KINDS else None
    if entry is not None:
        item.detail = signature(entry)
        item.documentation = entry.description
    return item


def _scope_items(snapshot, file, line, col, tensors: bool, typed: str = "") -> list[types.CompletionItem]:
    """The body's names (the latest bound first), then the file's; only those matching what was typed."""
    items: list[types.CompletionItem] = []
    for name, what in _locals(snapshot, file, line, col):
        if (what == "tensor" and not tensors) or not _fuzzy(name, typed):
            continue
        kind = types.CompletionItemKind.Variable if what == "tensor" else types.CompletionItemKind.Constant
        items.append(types.CompletionItem(label=name, kind=kind, detail=what, sort_text=f"0{len(items):05d}"))
        if len(items) > MAX_ITEMS:
            break
    for name, decl in _file_names(snapshot, file):
        what = _VALUE_KINDS.get(type(decl)) or _STEP_KINDS.get(type(decl), "name")
        kind = types.CompletionItemKind.Constant if what == "constant" else types.CompletionItemKind.Module
        items.append(types.CompletionItem(label=name, kind=kind, detail=f"{what} (this spec)", sort_text=f"1{name}"))
    return items


def _locals(snapshot, file, line, col) -> list[tuple[str, str]]:
    """The body's names, the latest bound first (the nearest above the cursor matter most)."""
    if snapshot is None or snapshot.index is None:
        return []
    body = snapshot.index.body_at(file, line, col)
    return list(reversed(body.locals.items())) if body is not None else []


def _file_names(snapshot, file) -> list[tuple[str, Any]]:
    if snapshot is None or snapshot.index is None or file not in snapshot.index.scopes:
        return []
    scope = snapshot.index.scopes[file]
    names = [(name, decl) for name, decl in scope.own.items()]
    names += [(name, found[0]) for name, found in scope.imported.items()]
    for alias, target in scope.aliases.items():
        names += [(f"{alias}.{name}", decl) for name, decl in target.own.items() if not isinstance(decl, ir.ModelDecl)]
    return names


# ------------------------------------------------------------------ signature help


def signature_help(context: Context, snapshot: Snapshot | None, file: str) -> types.SignatureHelp | None:
    if context.callee is None or context.kind not in ("argument", "value"):
        return None
    callee = find_callee(context.callee, snapshot, file)
    if callee is None:
        return None
    parameters, offset = [], callee.label.index("(") + 1
    for name, _, _ in callee.params:
        start = callee.label.index(name, offset)
        parameters.append(types.ParameterInformation(label=(start, start + len(name))))
        offset = start + len(name)
    names = [n for n, _, _ in callee.params]
    active = names.index(context.keyword) if context.keyword in names else min(context.argument, max(len(names) - 1, 0))
    info = types.SignatureInformation(
        label=callee.label, documentation=callee.doc, parameters=parameters, active_parameter=active
    )
    return types.SignatureHelp(signatures=[info], active_signature=0, active_parameter=active)
