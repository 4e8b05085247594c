"""Registry entries as text: signatures, parameter tables, descriptions (hover, completion)."""

from __future__ import annotations

from typing import Any

from netdsl import registry

# The kinds a bare name may be, in the order a step or argument value looks them up.
LOOKUP_ORDER = (
    "layer",
    "activation",
    "initializer",
    "regularizer",
    "constraint",
    "optimizer",
    "loss",
    "metric",
    "schedule",
    "callback",
)
HIDDEN = ("name", "dtype", "trainable")  # base-layer keywords every layer takes


def registry_hover(word: str, prefer: str | None = None) -> str | None:
    kinds = ([prefer] if prefer else []) + [k for k in LOOKUP_ORDER if k != prefer]
    entries = [e for e in (registry.lookup(k, word) for k in kinds) if e is not None]
    if not entries:
        return None
    parts = [entry_markdown(entries[0])]
    for other in entries[1:2]:
        parts.append(f"Also {_article(other.kind)} {other.kind}: `{signature(other)}`")
    return "\n\n".join(parts)


def signature(entry: registry.Entry) -> str:
    params = [
        p.name if p.required else f"{p.name}={default_text(p.default)}"
        for p in entry.params + entry.call_params
        if p.name not in HIDDEN
    ]
    params += [f"{t.name}={call_tensor_default(t)}" for t in entry.call_tensors]
    return f"{entry.name}({', '.join(params)})"


def call_tensor_type(tensor: registry.CallTensor) -> str:
    """What a call argument that takes tensors takes, as a parameter's type reads (`initial_state`: tensors)."""
    return "tensors" if tensor.listed else "tensor"


def call_tensor_default(tensor: registry.CallTensor) -> str:
    """`none`, or where else it comes from (multi_head_attention's value: the tuple's second tensor)."""
    return "none" if tensor.position is None else f"input {tensor.position + 1}"


def entry_markdown(entry: registry.Entry) -> str:
    keras = f" (Keras `{entry.keras_name}`)" if entry.source == "keras" else f" ({entry.source})"
    rows = [
        f"| `{p.name}` | {p.type} | {'required' if p.required else '`' + default_text(p.default) + '`'} |"
        for p in entry.params + entry.call_params
    ]
    rows += [f"| `{t.name}` | {call_tensor_type(t)} | `{call_tensor_default(t)}` |" for t in entry.call_tensors]
    table = "\n".join(["| parameter | type | default |", "|---|---|---|", *rows]) if rows else "No parameters."
    return f"```netdsl\n{signature(entry)}\n```\n{entry.kind}{keras}: {entry.description}\n\n{table}"


def default_text(value: Any) -> str:
    if value is None:
        return "none"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value) if not isinstance(value, tuple) else str(value).replace("None", "none")


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"
