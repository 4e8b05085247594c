"""`netdsl layers [NAME] [--kind KIND]`: what a spec may name, with each entry's parameters."""

from __future__ import annotations

import argparse
from typing import Any

from netdsl import registry
from netdsl.cli.common import EXIT_OK
from netdsl.errors import UsageError, did_you_mean
from netdsl.semantics.values import describe_value


def run(args: argparse.Namespace) -> int:
    kinds = [args.kind] if args.kind else ["layer", "activation"]
    if args.name:
        found = [registry.lookup(kind, args.name) for kind in registry.KINDS]
        entries = [e for e in found if e is not None]
        if not entries:
            pool = [k for kind in registry.KINDS for k in registry.all_keys(kind)]
            hint = did_you_mean(args.name, pool)
            raise UsageError(f"unknown name '{args.name}'", hint)  # a NAME no kind knows: as argparse's bad choice
        for match in entries:
            if args.name != match.name:
                print(f"{args.name}: another name for {match.name}")
            print(_describe_entry(match))
        return EXIT_OK
    for kind in kinds:
        print(f"{_HEADINGS[kind]}:")
        for name in registry.names(kind):
            entry = registry.lookup(kind, name)
            assert entry is not None, name  # names() lists canonical names, each a key lookup() knows
            short = _short_names(entry)
            print(f"  {_signature(entry)}" + (f"  also: {', '.join(short)}" if short else ""))
            print(f"      {entry.description}")
    return EXIT_OK


_HEADINGS = {
    "layer": "layers", "activation": "activations", "initializer": "initializers", "regularizer": "regularizers",
    "constraint": "constraints", "optimizer": "optimizers", "loss": "losses", "metric": "metrics",
    "schedule": "learning-rate schedules", "callback": "callbacks",
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
    for p in entry.params:
        default = "required" if p.default is registry.REQUIRED else f"default {describe_value(p.default)}"
        where = "positional or keyword" if p.positional else "keyword"
        choices = f"; one of {', '.join(p.choices)}{', none' if p.nullable else ''}" if p.choices else ""
        lines.append(f"  {p.name}: {p.type}, {default}, {where}{choices}")
    return "\n".join(lines)
