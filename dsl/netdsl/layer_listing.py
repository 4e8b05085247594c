"""What `netdsl layers` prints: every name a spec may use by kind (layers, activations, initializers, ...),
each with its first parameters and short names, or one entry in full with every parameter's type, default
and choices. Read from the registry's allow-lists (registry/), values written as a spec writes them."""

from __future__ import annotations

from typing import Any

from netdsl import registry
from netdsl.errors import UsageError, did_you_mean
from netdsl.semantics.values import describe_value

DEFAULT_KINDS = ("layer", "activation")


def listing(kinds: tuple[str, ...] = DEFAULT_KINDS) -> list[str]:
    """The entries of each kind: a heading, then per entry its signature (and short names) and description."""
    lines = []
    for kind in kinds:
        lines.append(f"{_HEADINGS[kind]}:")
        for name in registry.names(kind):
            entry = registry.lookup(kind, name)
            assert entry is not None, name  # names() lists canonical names, each a key lookup() knows
            short = _short_names(entry)
            lines.append(f"  {_signature(entry)}" + (f"  also: {', '.join(short)}" if short else ""))
            lines.append(f"      {entry.description}")
    return lines


def entry_lines(name: str) -> list[str]:
    """Every entry called `name` (of any kind), in full; a `UsageError` with a did-you-mean for a name no kind
    knows."""
    found = [registry.lookup(kind, name) for kind in registry.KINDS]
    entries = [e for e in found if e is not None]
    if not entries:
        pool = [k for kind in registry.KINDS for k in registry.all_keys(kind)]
        raise UsageError(f"unknown name '{name}'", did_you_mean(name, pool))  # as argparse's bad choice
    lines = []
    for match in entries:
        if name != match.name:
            lines.append(f"{name}: another name for {match.name}")
        lines.append(_describe_entry(match))
    return lines


_HEADINGS = {
    "layer": "layers",
    "activation": "activations",
    "initializer": "initializers",
    "regularizer": "regularizers",
    "constraint": "constraints",
    "optimizer": "optimizers",
    "loss": "losses",
    "metric": "metrics",
    "schedule": "learning-rate schedules",
    "callback": "callbacks",
}


def _short_names(entry: Any) -> list[str]:
    """The other snake_case names of an entry (`batch_norm`, `mse`); Keras' class names are left out."""
    return [a for a in entry.aliases if a == a.lower()]


def _signature(entry: Any) -> str:
    parts = []
    for p in entry.params:
        if p.name in ("name", "dtype", "trainable") and entry.kind == "layer":
            continue
        parts.append(p.name if p.default is registry.REQUIRED else f"{p.name}={describe_value(p.default)}")
        if len(parts) >= 4:
            parts.append("...")
            break
    return f"{entry.name}({', '.join(parts)})" if parts else entry.name


def _describe_entry(entry: Any) -> str:
    lines = [f"{entry.name} ({entry.kind}, {entry.source}): {entry.description}"]
    if entry.aliases:
        lines.append(f"  also written: {', '.join(entry.aliases)}")
    if entry.kind == "layer" and entry.inputs != (1, 1):
        lines.append(f"  inputs: {_inputs(entry.inputs)}, a tuple in the order of Keras' call: (a, b) -> {entry.name}")
    for p in entry.params:
        lines.append(_param_line(p, "positional or keyword" if p.positional else "keyword"))
    for p in entry.call_params:  # Keras takes them when the layer is called; a spec writes them beside the others
        lines.append(_param_line(p, "keyword, given to the call"))
    for t in entry.call_tensors:  # `lstm(64, initial_state=[h, c])`
        lines.append(_call_tensor_line(t, entry.name))
    return "\n".join(lines)


def _call_tensor_line(tensor: Any, layer: str) -> str:
    what = "a list of tensors" if tensor.listed else "a tensor"
    if tensor.position is not None:  # multi_head_attention's value and key
        return f"  {tensor.name}: {what}, input {tensor.position + 1} of the tuple or keyword, given to the call"
    return f"  {tensor.name}: {what}, default none, keyword, given to the call"


def _param_line(p: Any, where: str) -> str:
    default = "required" if p.default is registry.REQUIRED else f"default {describe_value(p.default)}"
    choices = f"; one of {', '.join(p.choices)}{', none' if p.nullable else ''}" if p.choices else ""
    return f"  {p.name}: {p.type}, {default}, {where}{choices}"


def _inputs(arity: tuple[int, int | None]) -> str:
    lo, hi = arity
    if hi is None:
        return f"{lo} or more tensors"
    return f"{lo} tensors" if lo == hi else f"{lo} to {hi} tensors"
