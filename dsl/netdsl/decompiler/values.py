"""Spec values: what a layer's config values become in the exported spec.

A value is a plain Python constant (int, float, str, bool, None, tuple), a
`ListValue` or `DictValue` (lists and dicts, kept hashable), or a `Named`: an
activation, initializer, regularizer, constraint or nested layer written by its
registry name, with arguments when it has any (`relu`, `he_normal`, `l2(0.0001)`,
`variance_scaling(scale=2.0, mode="fan_out")`). Everything here is hashable, so
layer steps can be compared and grouped when blocks are recovered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from netdsl import registry


@dataclass(frozen=True)
class ListValue:
    items: tuple


@dataclass(frozen=True)
class DictValue:
    items: tuple  # ((key, value), ...)


@dataclass(frozen=True)
class Named:
    """A registry entry used as a value: `relu`, `l2(0.0001)`, `lstm(64)` inside bidirectional."""

    kind: str
    name: str
    kwargs: tuple = ()  # ((param, value), ...): the non-default arguments, in registry order


class Unexpressible(Exception):
    """A config value a spec cannot write; the message says which and why."""


# Values Keras stores where the constructor's default was None: equal to the default.
_RESOLVED_DEFAULTS = {("data_format", "channels_last"), ("activation", "linear")}
_COLLAPSIBLE = ("ints",)  # `(3, 3)` -> `3`: Keras expands an int to the same tuple
_PADDING_LAYERS = ("zero_padding", "cropping")
_OBJECT_TYPES = ("activation", "initializer", "regularizer", "constraint")


def plain(value: Any, where: str) -> Any:
    """A JSON value as a spec constant: lists become tuples, dicts DictValues."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unexpressible(f"{where} is {value}, which a spec cannot write")
        return value
    if isinstance(value, list):
        return tuple(plain(v, where) for v in value)
    if isinstance(value, dict):
        if "class_name" in value and "config" in value:
            raise Unexpressible(f"{where} is a Keras object ({value.get('class_name')}) where a constant is expected")
        return DictValue(tuple((str(k), plain(v, where)) for k, v in value.items()))
    raise Unexpressible(f"{where} has a value a spec cannot write ({type(value).__name__})")


def collapse(value: Any) -> Any:
    """`(3, 3)` -> 3 and `((1, 1), (1, 1))` -> 1: a tuple of one repeated int, as one int."""
    if isinstance(value, tuple) and value:
        items = [collapse(v) for v in value]
        first = items[0]
        if isinstance(first, int) and not isinstance(first, bool) and all(v == first for v in items):
            return first
        return tuple(items)
    return value


def normal_form(entry: registry.Entry, param: registry.Param, value: Any, rank: int | None) -> Any:
    """The value as the spec should write it; equal to `normal_form(default)` when it is the default.

    `rank` is the number of axes of the layer's (first) input without the batch axis,
    when known: an `axis` equal to the last one is written -1.
    """
    if param.type == "list" and isinstance(value, tuple):
        value = ListValue(value)
    if param.type in _COLLAPSIBLE or (param.name in ("padding", "cropping") and entry.name.startswith(_PADDING_LAYERS)):
        value = collapse(value)
    if (param.name, value) in _RESOLVED_DEFAULTS and param.default is None:
        return None
    if param.name == "axis" and rank is not None and value == rank and param.default == -1:
        return -1
    return value


def default_of(entry: registry.Entry, param: registry.Param) -> Any:
    """The parameter's default in normal form (REQUIRED for a required parameter)."""
    if param.required:
        return registry.REQUIRED
    if param.type in _OBJECT_TYPES and isinstance(param.default, str):
        named = registry.lookup(param.type, param.default)
        return Named(param.type, named.name if named else param.default)
    return normal_form(entry, param, param.default, None)


def same(a: Any, b: Any) -> bool:
    """Equal as spec values: 1 == 1.0 for numbers, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b and type(a) is type(b) or (_number(a) and _number(b) and a == b)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
