"""The sweep's name tables: every sampler, pruner and distribution the check accepts has its Optuna
object in tuning/study.py, and nothing else (a name missing there once fell silently to TPE)."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from netdsl.errors import Span
from netdsl.semantics import sweep_space
from netdsl.semantics.sweep_space import Constraint, Objective, Param, SweepSpace
from netdsl.tuning import study
from netdsl.tuning.constraints import constraint_values

SPAN = Span(file="sweep.net", line=1, col=1, end_line=1, end_col=2)


def _space(**settings: Any) -> SweepSpace:
    params = [Param("units", "choice", choices=(8, 16)), Param("depth", "int_range", low=1, high=4, step=1)]
    if settings.get("sampler") != "grid":  # a grid takes choices and whole ranges (the check refuses others)
        params += [Param("lr", "log_uniform", low=1e-4, high=1e-1), Param("rate", "uniform", low=0.0, high=0.5)]
    return SweepSpace(model="m", span=SPAN, params=params, **settings)


def test_the_tables_name_what_the_check_accepts() -> None:
    assert tuple(study.SAMPLERS) == sweep_space.SAMPLERS
    assert set(study.PRUNERS) == {None, *sweep_space.PRUNERS}
    assert tuple(study.DISTRIBUTIONS) == sweep_space.DISTRIBUTIONS


@pytest.mark.parametrize(
    ("name", "made"),
    [
        ("tpe", optuna.samplers.TPESampler),
        ("random", optuna.samplers.RandomSampler),
        ("grid", optuna.samplers.GridSampler),
        ("nsga2", optuna.samplers.NSGAIISampler),
    ],
)
def test_each_sampler_is_the_one_named(name: str, made: type) -> None:
    assert set(sweep_space.SAMPLERS) == {"tpe", "random", "grid", "nsga2"}  # a new name needs its row here too
    assert isinstance(study.sampler(_space(sampler=name), seed=0), made)


def test_each_pruner_is_the_one_named() -> None:
    median = study.pruner(_space(pruner="median", warmup=2, startup=3))
    assert isinstance(median, optuna.pruners.MedianPruner)
    assert (median._n_warmup_steps, median._n_startup_trials) == (2, 3)
    assert isinstance(study.pruner(_space()), optuna.pruners.NopPruner)


def test_each_distribution_is_the_one_named() -> None:
    found = study.distributions(_space())
    assert found["units"] == optuna.distributions.CategoricalDistribution((8, 16))
    assert found["lr"] == optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)
    assert found["rate"] == optuna.distributions.FloatDistribution(0.0, 0.5)
    assert found["depth"] == optuna.distributions.IntDistribution(1, 4, step=1)


def test_a_name_without_a_row_fails_loudly() -> None:
    with pytest.raises(KeyError):
        study.sampler(_space(sampler="cmaes"), seed=0)


BUDGET = [Constraint("params", "<", 200.0, "params < 200")]


@pytest.mark.parametrize(("name", "told"), [("tpe", True), ("nsga2", True), ("random", False), ("grid", False)])
def test_the_samplers_that_take_a_budget_are_told_it(name: str, told: bool) -> None:
    """TPE and NSGA-II take Optuna's constraints_func; random search and the grid have none (a trial over
    budget is still never built: docs/sweeps.md)."""
    made = study.sampler(_space(sampler=name, constraints=BUDGET), seed=0)
    assert (getattr(made, "_constraints_func", None) is constraint_values) is told
    assert getattr(study.sampler(_space(sampler=name), seed=0), "_constraints_func", None) is None


@pytest.mark.parametrize("name", sweep_space.SAMPLERS)
def test_every_sampler_proposes_for_several_objectives(name: str) -> None:
    """The check refuses no sampler beside `objectives`: each of them runs a study of two directions."""
    space = _space(
        sampler=name, objectives=[Objective("maximize", "val_accuracy"), Objective("minimize", "flops", "flops")]
    )
    made = optuna.create_study(directions=["maximize", "minimize"], sampler=study.sampler(space, seed=0))
    dists = study.distributions(space)
    for _ in range(3):
        trial = made.ask(dists)
        made.tell(trial, [trial.params["units"] / 16, trial.params["units"] * trial.params["depth"]])
    assert len(made.best_trials) >= 1


def test_nsga2_takes_its_population_from_the_spec() -> None:
    assert study.sampler(_space(sampler="nsga2", population=12), seed=0)._population_size == 12
    assert study.sampler(_space(sampler="nsga2"), seed=0)._population_size == 50  # Optuna's default
