"""Values written once: an initializer (or regularizer, constraint, configured activation)
with arguments that the spec would repeat becomes a file-level `let`.

EfficientNet passes `variance_scaling(scale=2.0, mode="fan_out")` to every convolution;
the export says it once, `let init = variance_scaling(...)`, and writes
`kernel_initializer=init`. The value stays the same, so the rebuilt model does too.
"""

from __future__ import annotations

from collections import Counter

from netdsl.decompiler.layer_steps import Step
from netdsl.decompiler.naming import Namer
from netdsl.decompiler.units import Block, Leaf, LetRef, Merge, ModelProgram, Use
from netdsl.decompiler.values import Named

MIN_USES = 2
_BASES = {"initializer": "init", "regularizer": "reg", "constraint": "constraint", "activation": "act"}


def factor_lets(blocks: list[Block], programs: list[ModelProgram], file_names: Namer) -> list[tuple[str, Named]]:
    """Replace often-used named values with `LetRef`s (in place); the lets, in order of first use."""
    chains = [b.body for b in blocks] + [s.units for p in programs for s in p.statements]
    counts: Counter = Counter()
    for units in chains:
        _each_step(units, lambda step: counts.update(v for _, v in step.kwargs if _factorable(v)))
    lets: dict[Named, LetRef] = {}
    for value, uses in counts.items():
        if uses >= MIN_USES:
            lets[value] = LetRef(file_names.fresh(_BASES.get(value.kind, "value")))
    if lets:
        for units in chains:
            _rewrite(units, lets)
    return [(ref.name, value) for value, ref in lets.items()]


def _factorable(value) -> bool:
    return isinstance(value, Named) and bool(value.kwargs) and value.kind in _BASES


def _each_step(units: list, visit) -> None:
    for unit in units:
        if isinstance(unit, (Leaf, Merge)):
            visit(unit.step)
        if isinstance(unit, Merge):
            for branch in unit.branches:
                _each_step(branch, visit)


def _rewrite(units: list, lets: dict) -> None:
    for unit in units:
        if isinstance(unit, (Leaf, Merge)):
            unit.step = _replaced(unit.step, lets)
        if isinstance(unit, Merge):
            for branch in unit.branches:
                _rewrite(branch, lets)
        if isinstance(unit, Use):
            unit.args = tuple((k, lets.get(v, v) if isinstance(v, Named) else v) for k, v in unit.args)


def _replaced(step: Step, lets: dict) -> Step:
    kwargs = tuple((k, lets.get(v, v) if isinstance(v, Named) else v) for k, v in step.kwargs)
    return Step(step.kind, step.name, kwargs, step.entry)
