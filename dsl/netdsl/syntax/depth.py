"""How deeply an expression nests, measured without recursion.

Each level of nesting takes at least one character of source (`-x`, `a+b`,
`f()`, `a.b`, `[x]`), so an expression shorter than the limit cannot pass it:
only a long one is walked, once, when its statement has been parsed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from netdsl.errors import Span


def too_deep(expr: Any, limit: int) -> Any | None:
    """The first node, in source order, nested more than `limit` levels deep (leaves are 1), or None."""
    depth: dict[int, int] = {}
    pending: list[tuple[Any, bool]] = [(expr, False)]
    while pending:
        node, children_done = pending.pop()
        if not children_done:
            pending.append((node, True))
            pending.extend((child, False) for child in reversed(_children(node)))
            continue
        deepest = max((depth[id(child)] for child in _children(node)), default=0)
        if deepest + 1 > limit:
            return node
        depth[id(node)] = deepest + 1
    return None


def _children(node: Any) -> list[Any]:
    """The expressions directly inside a node, in source order."""
    found = [value for value in _fields(node) if isinstance(value, BaseModel) and not isinstance(value, Span)]
    if len(found) > 1:
        found.sort(key=lambda child: (child.span.line, child.span.col))  # type: ignore[attr-defined]  # `then if cond else orelse`
    return found


def _fields(node: Any) -> Iterator[Any]:
    for value in node.__dict__.values():
        if isinstance(value, list):
            yield from value
        else:
            yield value
