"""Making IR nodes without validation, at a fraction of `model_construct`'s cost.

The parser builds a node per expression and a `Span` per node: on a
60,000-statement spec that is most of a million objects, and pydantic's
`model_construct` (which looks up aliases and defaults field by field on every
call) was a third of the parse. `maker(cls, *names)` does that work once per
call site: the node it returns is the one `cls.model_construct(**dict(zip(names,
values)))` returns — the same `__dict__` in field order, defaults filled in,
`model_fields_set` the names given — only made directly. Call sites share one
fields-set per name list (pydantic copies it before any change: `model_copy`).
"""

from __future__ import annotations

from typing import Any, Callable

from netdsl.errors import Span

_new = object.__new__
_set = object.__setattr__


def maker(cls: type, *names: str) -> Callable[..., Any]:
    """A function of `names` (positional, in that order) returning a new `cls` node."""
    fields = cls.__pydantic_fields__
    unknown = set(names) - set(fields)
    missing = {n for n, f in fields.items() if f.is_required()} - set(names)
    if unknown or missing:
        raise TypeError(f"{cls.__name__}: unknown fields {sorted(unknown)}, missing fields {sorted(missing)}")
    template = {n: (None if n in names else f.get_default(call_default_factory=True)) for n, f in fields.items()}
    fields_set = set(names)

    def make(*values: Any) -> Any:
        state = template.copy()
        state.update(zip(names, values))
        node = _new(cls)
        _set(node, "__dict__", state)
        _set(node, "__pydantic_fields_set__", fields_set)
        _set(node, "__pydantic_extra__", None)
        _set(node, "__pydantic_private__", None)
        return node
    return make


_SPAN_FIELDS = {"file", "line", "col", "end_line", "end_col"}


def new_span(file: str, line: int, col: int, end_line: int, end_col: int) -> Span:
    """`Span.model_construct(file=..., line=..., ...)`, made directly."""
    span = _new(Span)
    _set(span, "__dict__", {"file": file, "line": line, "col": col, "end_line": end_line, "end_col": end_col})
    _set(span, "__pydantic_fields_set__", _SPAN_FIELDS)
    _set(span, "__pydantic_extra__", None)
    _set(span, "__pydantic_private__", None)
    return span


def span_at(file: str, pos: tuple) -> Span:
    """The Span of a position `(line, col, end_line, end_col)` in `file`."""
    span = _new(Span)
    _set(span, "__dict__", {"file": file, "line": pos[0], "col": pos[1], "end_line": pos[2], "end_col": pos[3]})
    _set(span, "__pydantic_fields_set__", _SPAN_FIELDS)
    _set(span, "__pydantic_extra__", None)
    _set(span, "__pydantic_private__", None)
    return span


def _check_span_fields() -> None:
    if tuple(Span.__pydantic_fields__) != ("file", "line", "col", "end_line", "end_col"):  # pragma: no cover
        raise TypeError("netdsl.errors.Span changed its fields: update syntax/nodes.py::new_span")


_check_span_fields()
