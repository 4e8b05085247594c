"""Names in the exported spec: identifiers made from Keras names, never clashing.

A Keras name may hold any character and may be a word the spec already uses
(`add`, `dense`, `model`); `identifier` makes it a plain identifier that is no
keyword and no registry name, and `Namer` keeps the names of one scope apart.
"""

from __future__ import annotations

import re

from netdsl import registry
from netdsl.semantics.declared import OP_FUNCTIONS
from netdsl.syntax.keywords import KEYWORDS as LANGUAGE_KEYWORDS

KEYWORDS = frozenset(LANGUAGE_KEYWORDS)
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]+")


def _reserved() -> frozenset[str]:
    keys = set(KEYWORDS)
    for kind in registry.KINDS:
        keys.update(registry.all_keys(kind))
    keys.update(OP_FUNCTIONS)  # a tensor named `split` would hide the function `split(...)`
    keys.add("concat")
    return frozenset(keys)


_RESERVED: frozenset[str] | None = None


def reserved(name: str) -> bool:
    """A keyword, a registry key or a function of tensors: a tensor or block of that name would read as
    something else."""
    global _RESERVED
    if _RESERVED is None:
        _RESERVED = _reserved()
    return name in _RESERVED


def identifier(name: str, fallback: str = "t") -> str:
    """`conv2_block1/out` -> `conv2_block1_out`; `dense` -> `dense_out`; `1x1` -> `_1x1`."""
    text = _NOT_IDENT.sub("_", name).strip("_") or fallback
    if text[0].isdigit():
        text = "_" + text
    if reserved(text):
        text += "_out"
    return text


class Namer:
    """Unique names within one scope (a model or block body)."""

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set(taken or ())

    def take(self, name: str) -> str:
        """`name` made an identifier, with `_2`, `_3` ... added until it is free; then taken."""
        base = identifier(name)
        candidate, n = base, 1
        while candidate in self.taken:
            n += 1
            candidate = f"{base}_{n}"
        self.taken.add(candidate)
        return candidate

    def fresh(self, base: str) -> str:
        """`base`, `base2`, `base3` ... (for names the decompiler makes up: x, y, branch)."""
        candidate, n = base, 1
        while candidate in self.taken or reserved(candidate):
            n += 1
            candidate = f"{base}{n}"
        self.taken.add(candidate)
        return candidate
