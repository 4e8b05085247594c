"""A sweep's budget (`constraints = [params < 5e6, train_memory(batch=64) < "12GiB"]`) and its cost
objectives (`objectives = [maximize(val_accuracy), minimize(flops)]`): each trial's parameters applied to the
spec, its graph checked and costed in pure Python (netdsl.cost), in milliseconds, before anything is built. A
trial over budget is never built: Optuna is told it was pruned, with its constraint values (TPE's and
NSGA-II's `constraints_func` learn to propose inside the budget), and the sweep records it as `infeasible`
with the bound it broke. A cost objective's figure is the trial's value for it, told with its metrics.

The cost model's figures are estimates (docs/cost.md); a model with a step it cannot cost has totals that
are lower bounds, so a bound it keeps may still be broken by the model built: such a trial is built. A
cost objective of such a model has no value (a lower bound would rank it wrongly): the trial fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from netdsl.cost.model import ModelCost
from netdsl.cost.readout import bytes_text, costed
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.session import LoadedSpec
from netdsl.semantics.sweep_space import MEMORIES, Constraint, Objective
from netdsl.syntax.loader import Program

ATTRIBUTE = "constraints"  # the trial's user attribute Optuna's constraints_func reads


@dataclass(frozen=True)
class Budget:
    """A trial's figures against the sweep's bounds: Optuna's constraint values (<= 0: kept) and the bounds
    it broke, as a person reads them."""

    values: tuple[float, ...]
    broken: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "over budget: " + "; ".join(self.broken)


@dataclass(frozen=True)
class TrialCost:
    """A trial's model costed: its budget, and the figure of each cost objective (in the order given)."""

    budget: Budget
    figures: tuple[float, ...]
    floor: str | None = None  # why the figures are lower bounds (a step the cost model cannot count), or None


def costed_trial(
    program: Program,
    model: str,
    defines: Mapping[str, object],
    constraints: list[Constraint],
    objectives: list[Objective] | tuple[Objective, ...] = (),
) -> TrialCost:
    """The trial's model (the spec with `defines`) costed against `constraints`, and the figure of each of
    `objectives` (cost objectives); a `SpecError` when these parameters make a spec with errors."""
    graph = LoadedSpec.of(program, defines=defines).model(model).graph
    certain = fill_estimates(graph)  # the parameter counts, as summary fills them without Keras
    costs: dict[int | None, ModelCost] = {}

    def figure(quantity: str, batch: int | None) -> tuple[float, ModelCost]:
        batch = batch if quantity in MEMORIES else 1  # counts and FLOPs are one sample's
        cost = costs.get(batch) or costs.setdefault(batch, costed(graph, batch=batch))
        return float(_figure(cost, quantity)), cost

    values, broken = [], []
    for bound in constraints:
        value, cost = figure(bound.quantity, bound.batch)
        bounded = cost.lower_bound or not certain  # a total that is a lower bound proves a floor, not a ceiling
        if bound.holds(value) or (bounded and bound.op in (">", ">=")):
            values.append(min(bound.excess(value), 0.0))
        else:
            values.append(bound.excess(value))
            broken.append(f"{bound.text} ({_shown(bound.quantity, value)}{' at least' if bounded else ''})")
    figures: list[float] = []
    floor: str | None = None
    for objective in objectives:
        assert objective.figure is not None, f"{objective.name} is a trained metric, not a cost figure"
        value, cost = figure(objective.figure, objective.batch)
        figures.append(value)
        if floor is None and (cost.lower_bound or not certain):
            why = cost.unknown[0] if cost.unknown else "the parameter counts are not certain without Keras"
            floor = f"{objective.name} is only a lower bound: the cost model cannot count {why}"
    return TrialCost(Budget(tuple(values), tuple(broken)), tuple(figures), floor)


def _figure(cost: ModelCost, quantity: str) -> int:
    return {
        "params": cost.params,
        "trainable_params": cost.trainable_params,
        "macs": cost.macs,
        "flops": cost.flops,
        "train_memory": cost.train_memory_bytes,
        "inference_memory": cost.inference_memory_bytes,
    }[quantity]


def _shown(quantity: str, value: float) -> str:
    if quantity in MEMORIES:
        return f"estimated {bytes_text(int(value))}"
    return f"estimated {int(value):,}"


def constraint_values(trial: Any) -> tuple[float, ...]:
    """Optuna's `constraints_func`: what `costed_trial` recorded on the trial (none recorded: kept)."""
    recorded = trial.user_attrs.get(ATTRIBUTE)
    return tuple(recorded) if isinstance(recorded, list) and recorded else (0.0,)
