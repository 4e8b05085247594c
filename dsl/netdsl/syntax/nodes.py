"""Making IR nodes without validation, at a fraction of `model_construct`'s cost.

The parser builds a node per expression and a `Span` per node: on a
60,000-statement spec that is most of a million objects, and pydantic's
`model_construct` (which looks up aliases and defaults field by field on every
call) was a third of the parse. `maker(cls, *names)` does that work once per
call site: the node it returns is the one `cls.model_construct(**dict(zip(names,
values)))` returns — the same `__dict__` in field order, defaults filled in,
`model_fields_set` the names given — only made directly. Call sites share one
fields-set per name list (the models are frozen; pydantic copies it before any
change, in `model_copy`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from netdsl.errors import Span

_new = object.__new__
NodeT = TypeVar("NodeT", bound=BaseModel)  # an IR node class


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """Sets one of BaseModel's slots directly, without the attribute lookup that
    `object.__setattr__` makes on every call."""
    descriptor = BaseModel.__dict__.get(name)
    if descriptor is None or not hasattr(descriptor, "__set__"):  # pragma: no cover - another pydantic
        return lambda obj, value: object.__setattr__(obj, name, value)
    setter: Callable[[Any, Any], None] = descriptor.__set__
    return setter


_set_dict = _slot_setter("__dict__")
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")


def maker(cls: type[NodeT], *names: str) -> Callable[..., NodeT]:
    """A function of `names` (positional, in that order) returning a new `cls` node."""
    fields = cls.__pydantic_fields__
    unknown = set(names) - set(fields)
    missing = {n for n, f in fields.items() if f.is_required()} - set(names)
    if unknown or missing:
        raise TypeError(f"{cls.__name__}: unknown fields {sorted(unknown)}, missing fields {sorted(missing)}")
    template = {n: (None if n in names else f.get_default(call_default_factory=True)) for n, f in fields.items()}
    fields_set = set(names)

    def finish(state: dict[str, Any]) -> NodeT:
        node: NodeT = _new(cls)
        _set_dict(node, state)
        _set_fields_set(node, fields_set)
        _set_extra(node, None)
        _set_private(node, None)
        return node

    # The common arities spelt out: storing two values beats zipping them.
    if len(names) == 1:
        (k0,) = names

        def make1(v0: Any) -> NodeT:
            state = template.copy()  # every field, in order, with its default
            state[k0] = v0
            return finish(state)

        return make1
    if len(names) == 2:
        k0, k1 = names

        def make2(v0: Any, v1: Any) -> NodeT:
            state = template.copy()
            state[k0] = v0
            state[k1] = v1
            return finish(state)

        return make2
    if len(names) == 3:
        k0, k1, k2 = names

        def make3(v0: Any, v1: Any, v2: Any) -> NodeT:
            state = template.copy()
            state[k0] = v0
            state[k1] = v1
            state[k2] = v2
            return finish(state)

        return make3

    def make(*values: Any) -> NodeT:
        state = template.copy()
        state.update(zip(names, values))
        return finish(state)

    return make


_SPAN_FIELDS = {"file", "line", "col", "end_line", "end_col"}


def new_span(file: str, line: int, col: int, end_line: int, end_col: int) -> Span:
    """`Span.model_construct(file=..., line=..., ...)`, made directly."""
    span = _new(Span)
    _set_dict(span, {"file": file, "line": line, "col": col, "end_line": end_line, "end_col": end_col})
    _set_fields_set(span, _SPAN_FIELDS)
    _set_extra(span, None)
    _set_private(span, None)
    return span


def span_at(file: str, pos: tuple[Any, ...]) -> Span:
    """The Span of a position `(line, col, end_line, end_col)` in `file`."""
    span = _new(Span)
    _set_dict(span, {"file": file, "line": pos[0], "col": pos[1], "end_line": pos[2], "end_col": pos[3]})
    _set_fields_set(span, _SPAN_FIELDS)
    _set_extra(span, None)
    _set_private(span, None)
    return span


if (
    tuple(Span.__pydantic_fields__) != tuple(sorted(_SPAN_FIELDS, key=list(Span.__pydantic_fields__).index))
    or set(Span.__pydantic_fields__) != _SPAN_FIELDS
):  # pragma: no cover
    raise TypeError("netdsl.errors.Span changed its fields: update syntax/nodes.py")
