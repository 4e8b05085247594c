"""A block's body and parameters from the occurrences of one repeated structure.

The occurrences have the same skeleton (see `motifs.skeleton`): the same steps,
merges and block calls in the same places; only values differ. Walking them side by
side, each value that differs becomes an expression: the block input's channels
(`x.shape[-1]`, `2 * x.shape[-1]`, `x.shape[-1] // 2`), an earlier parameter
(`filters`, `4 * filters`) or a new parameter. A parameter gets a default when the
underlying argument's default is among its values, and the calls leave it out there.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from netdsl import registry
from netdsl.decompiler.layer_steps import Step, written_name
from netdsl.decompiler.naming import KEYWORDS
from netdsl.decompiler.units import BlockParam, InputDim, Leaf, Merge, ParamRef, Scaled, Use
from netdsl.decompiler.values import default_of, same

_SIZE_HINTS = ("filters", "units", "target_shape")  # sizes: multiples of each other or of the input's channels
MAX_PARAMS = 8  # a block that needs more is no easier to read than what it replaces
_RENAMED_HINTS = {"activation": "act", "kernel_size": "kernel", "count": "n"}


@dataclass
class _Column:
    param: BlockParam
    hint: str
    values: list
    sized: bool = False  # integer sizes: other sizes may be multiples of it


@dataclass
class Template:
    """A block's body and parameters, and the arguments of each occurrence."""

    body: list
    params: list[BlockParam]
    args: list[tuple]  # per occurrence: ((param, value), ...) in `params` order
    columns: list[_Column] = field(default_factory=list)


class TooManyParams(Exception):
    """The places differ in more values than a readable block takes."""


def build_template(occurrences: list[list], channels: list[int | None]) -> Template | None:
    """The block the occurrences make, or None when it would need more than MAX_PARAMS parameters."""
    builder = _Builder(channels)
    try:
        body = builder.units(occurrences)
    except TooManyParams:
        return None
    columns = builder.ordered_columns()
    params = [c.param for c in columns]
    args = [tuple((c.param.name, c.values[i]) for c in columns) for i in range(len(occurrences))]
    return Template(body, params, args, columns)


class _Builder:
    def __init__(self, channels: list[int | None]):
        self.channels = channels
        self.columns: list[_Column] = []
        self.names: set[str] = {"x"}
        self.by_values: dict[tuple, str] = {}  # (family, values) -> the parameter that has them

    def ordered_columns(self) -> list[_Column]:
        """Required parameters first, then those with defaults, each in order of appearance."""
        required = [c for c in self.columns if c.param.default is registry.REQUIRED]
        return required + [c for c in self.columns if c.param.default is not registry.REQUIRED]

    # ------------------------------------------------------------ units

    def units(self, occurrences: list[list]) -> list:
        body: list[Leaf | Merge | Use] = []
        for position in range(len(occurrences[0])):
            same_place = [units[position] for units in occurrences]
            first = same_place[0]
            if isinstance(first, Leaf):
                body.append(Leaf(self.step(same_place), self.count(same_place)))
            elif isinstance(first, Merge):
                branches = [self.units([u.branches[b] for u in same_place]) for b in range(len(first.branches))]
                body.append(Merge(self.step(same_place), branches))
            else:
                body.append(Use(first.block, self.use_args(same_place), self.count(same_place)))
        return body

    def step(self, units: list) -> Step:
        first = units[0].step
        if first.kind in ("model", "shared", "activation", "op"):
            return first  # no arguments: the skeleton already says it all
        entry = first.entry
        given = [dict(u.step.kwargs) for u in units]
        keys = [p.name for p in entry.params + entry.call_params if any(p.name in g for g in given)]
        pairs: list[tuple[str, Any]] = []
        for key in keys:
            param = entry.param(key)
            default = default_of(entry, param)
            values = [g.get(key, default) for g in given]
            value = self.hole(key, values, default)
            if isinstance(value, (ParamRef, Scaled, InputDim)) or not same(value, default):
                pairs.append((key, value))
        kwargs = tuple(pairs)
        return Step(first.kind, written_name(entry, kwargs), kwargs, entry)

    def count(self, units: list) -> Any:
        return self.hole("count", [u.count for u in units], 1)

    def use_args(self, units: list) -> tuple:
        block = units[0].block
        given = [dict(u.args) for u in units]
        return tuple((p.name, self.hole(p.name, [g[p.name] for g in given], p.default)) for p in block.params)

    # ------------------------------------------------------------ values

    def hole(self, hint: str, values: list, default: Any) -> Any:
        """The value common to every occurrence, or an expression that gives each its own."""
        key = tuple(map(_typed, values))
        if len(set(key)) == 1:
            return values[0]
        if _tuples(values):
            items = self.items(hint, values)
            if items is not None:
                return items
        family = _family(hint)
        known = self.by_values.get((family, key))
        if known is not None:
            return ParamRef(known)
        sized = family in _SIZE_HINTS and _ints(values)
        if sized and _ints(self.channels):
            found = _relation(InputDim(), self.channels, values)
            if found is not None:
                return found
        if sized:
            for column in self.columns:
                if column.sized:
                    found = _relation(ParamRef(column.param.name), column.values, values)
                    if found is not None:
                        return found
        if len(self.columns) >= MAX_PARAMS:
            raise TooManyParams()
        name = self.fresh(_RENAMED_HINTS.get(family, family))
        param = BlockParam(name, _default(family, values, default))
        self.columns.append(_Column(param, hint, list(values), sized))
        self.by_values[(family, key)] = name
        return ParamRef(name)

    def items(self, hint: str, values: list) -> tuple | None:
        """A tuple item by item (`(1, 1, x.shape[-1])`), when that needs no new parameter."""
        columns, names, known = len(self.columns), set(self.names), dict(self.by_values)
        try:
            items = tuple(self.hole(hint, [v[i] for v in values], registry.REQUIRED) for i in range(len(values[0])))
        except TooManyParams:
            items = None
        if items is not None and len(self.columns) == columns:
            return items
        del self.columns[columns:]
        self.names, self.by_values = names, known
        return None

    def fresh(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self.names or candidate in KEYWORDS:
            n += 1
            candidate = f"{base}{n}"
        self.names.add(candidate)
        return candidate


def _default(family: str, values: list, default: Any) -> Any:
    """The value calls may leave out: the most common one for options (strides, padding),
    the argument's own default when it is among the values, else none (a required parameter)."""
    if family not in _SIZE_HINTS and family not in ("kernel_size", "count"):
        counts = [sum(same(v, w) for w in values) for v in values]
        best = max(counts)
        common = [v for v, c in zip(values, counts) if c == best]
        if best >= 2 and all(same(common[0], v) for v in common):
            return common[0]
    if default is not registry.REQUIRED and any(same(default, v) for v in values):
        return default
    return registry.REQUIRED


def _tuples(values: list) -> bool:
    return all(isinstance(v, tuple) for v in values) and len({len(v) for v in values}) == 1


@functools.cache
def _family(hint: str) -> str:
    return re.sub(r"\d+$", "", hint)


def _typed(value: Any) -> Any:
    """A key that tells `true` from 1 (Python's == does not)."""
    return ("bool", value) if isinstance(value, bool) else value


def _ints(values: list[Any]) -> TypeGuard[list[int]]:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _relation(base: Any, bases: list[int], values: list[int]) -> Any:
    """`base`, `k * base` or `base // k` when that gives every value."""
    if bases == values:
        return base
    if bases[0] and values[0] % bases[0] == 0:
        k = values[0] // bases[0]
        if k >= 2 and all(v == k * b for b, v in zip(bases, values)):
            return Scaled(base, k)
    if values[0] and bases[0] >= 2 * values[0]:
        k = bases[0] // values[0]
        if k >= 2 and all(b // k == v for b, v in zip(bases, values)):
            return Scaled(base, k, divide=True)
    return None
