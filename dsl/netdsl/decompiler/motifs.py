"""Finding repeated structure in chains of units.

A unit's skeleton is what must be equal for two places to be one block: the step
(its class, not its arguments), a merge's step and the skeletons of its branches,
or the block a call uses. Argument values and repeat counts are holes: they may
differ and become the block's parameters. A motif is a run of consecutive units
whose skeletons repeat elsewhere (in any chain, non-overlapping).

`text_cost` estimates how many characters a unit prints as, so a motif is folded only
when the block's definition plus its calls are shorter than what they replace.
"""

from __future__ import annotations

from dataclasses import dataclass

from netdsl.decompiler.units import InputDim, Leaf, Merge, ParamRef, Scaled
from netdsl.decompiler.values import DictValue, ListValue, Named
from netdsl.limits import MAX_MOTIF_UNITS

MERGE_COST = 40  # the bindings a merge needs: `y = ...`, `h = (a, b) -> ...`
CALL_ARROW = 4  # " -> "


@dataclass
class Motif:
    key: int
    length: int
    places: list[tuple[int, int]]  # (chain, start), non-overlapping
    bound: float = 0.0  # savings if every hole were free


class Skeletons:
    """Interned skeletons (an int per distinct structure) and text costs, memoised per unit."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.memo: dict[int, tuple[int, int]] = {}  # id(unit) -> (skeleton id, cost)
        self.values: dict[int, int] = {}  # id(unit) -> value id
        self.barrier = 0

    def of(self, unit) -> tuple[int, int]:
        found = self.memo.get(id(unit))
        if found is None:
            found = (self._intern(self._shape(unit)), text_cost(unit))
            self.memo[id(unit)] = found
        return found

    def value_id(self, unit) -> int:
        """An int per distinct unit, values included: equal ids are units `* N` can join."""
        found = self.values.get(id(unit))
        if found is None:
            found = self._intern(("value", self._values(unit)))
            self.values[id(unit)] = found
        return found

    def _values(self, unit) -> tuple:
        if isinstance(unit, Leaf):
            return (self.of(unit)[0], unit.step.kwargs, unit.count)
        if isinstance(unit, Merge):
            return (
                self.of(unit)[0],
                unit.step.kwargs,
                tuple(tuple(self.value_id(u) for u in branch) for branch in unit.branches),
            )
        return (self.of(unit)[0], unit.args, unit.count)

    def _intern(self, shape: tuple) -> int:
        return self.ids.setdefault(shape, len(self.ids))

    def _shape(self, unit) -> tuple:
        if isinstance(unit, Leaf):
            step = unit.step
            if step.kind in ("model", "shared"):
                self.barrier += 1  # never part of a block: each is its own skeleton
                return ("barrier", self.barrier)
            return ("leaf", step.kind, step.entry.name if step.entry is not None else step.name)
        if isinstance(unit, Merge):
            branches = tuple(tuple(self.of(u)[0] for u in branch) for branch in unit.branches)
            return ("merge", unit.step.name, branches)
        return ("use", unit.block.name)


def find_motifs(
    chains: list[list], skeletons: Skeletons, pinned: frozenset[int] | set[int] = frozenset()
) -> list[Motif]:
    """Every run of units that repeats, with its non-overlapping places, best bound first
    (never over a `pinned` unit)."""
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    costs: dict[tuple[int, int], int] = {}
    for c, chain in enumerate(chains):
        ids = [skeletons.of(u) for u in chain]
        for start in range(len(chain)):
            key, cost = 0, 0
            for length in range(1, min(MAX_MOTIF_UNITS, len(chain) - start) + 1):
                if id(chain[start + length - 1]) in pinned:
                    break
                sid, unit_cost = ids[start + length - 1]
                key = hash((key, sid))
                cost += unit_cost
                if length > 1 and isinstance(chain[start + length - 1], Merge):
                    break  # a merge may only start a block: its entry is where the block begins
                if length == 1 and not isinstance(chain[start], Merge):
                    continue  # a lone step is no block
                groups.setdefault((key, length), []).append((c, start))
                costs[(key, length)] = cost
    motifs = []
    for (key, length), places in groups.items():
        if len(places) < 2:
            continue
        c, start = places[0]
        if _has_tandem([skeletons.value_id(u) for u in chains[c][start : start + length]]):
            continue  # fold the repeated part first: it becomes `* N`
        chosen = _non_overlapping(places, length)
        if len(chosen) < 2:
            continue
        cost = costs[(key, length)]
        motifs.append(Motif(key, length, chosen, (len(chosen) - 1) * cost))
    motifs.sort(key=lambda m: -m.bound)
    return motifs


def _has_tandem(ids: list[int]) -> bool:
    """Whether some run repeats right after itself, values and all (`a b a b`, `a a`): once
    that run is a block, its calls join into one `* N`, so the longer motif should wait."""
    n = len(ids)
    for period in range(1, n // 2 + 1):
        for i in range(n - 2 * period + 1):
            if ids[i : i + period] == ids[i + period : i + 2 * period]:
                return True
    return False


def _non_overlapping(places: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    chosen: list[tuple[int, int]] = []
    for chain, start in places:  # in order of (chain, start)
        if chosen and chosen[-1][0] == chain and start < chosen[-1][1] + length:
            continue
        chosen.append((chain, start))
    return chosen


# ---------------------------------------------------------------- text cost


def text_cost(unit) -> int:
    """About how many characters the unit prints as (with its ` -> `)."""
    if isinstance(unit, Leaf):
        return CALL_ARROW + step_cost(unit.step) + _count_cost(unit.count)
    if isinstance(unit, Merge):
        return MERGE_COST + step_cost(unit.step) + sum(text_cost(u) for b in unit.branches for u in b)
    return (
        CALL_ARROW + len(unit.block.name) + 2 + _count_cost(unit.count) + sum(value_cost(v) + 2 for _, v in unit.args)
    )


def step_cost(step) -> int:
    return len(step.name) + sum(len(k) + 3 + value_cost(v) for k, v in step.kwargs)


def value_cost(v) -> int:
    if isinstance(v, bool) or v is None:
        return 5
    if isinstance(v, (int, float)):
        return len(repr(v))
    if isinstance(v, str):
        return len(v) + 2
    if isinstance(v, tuple):
        return 2 + sum(value_cost(i) + 2 for i in v)
    if isinstance(v, (ListValue, DictValue)):
        return 2 + sum(value_cost(i) + 2 for i in v.items)
    if isinstance(v, Named):
        return len(v.name) + sum(len(k) + 3 + value_cost(x) for k, x in v.kwargs)
    if isinstance(v, ParamRef):
        return len(v.name)
    if isinstance(v, InputDim):
        return 13
    if isinstance(v, Scaled):
        return value_cost(v.base) + 4 + len(str(v.factor))
    return 8


def _count_cost(count) -> int:
    return 0 if count == 1 else 3 + value_cost(count)
