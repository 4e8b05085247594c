"""The sweep's name tables: every sampler, pruner and distribution the check accepts has its Optuna
object in tuning/study.py, and nothing else (a name missing there once fell silently to TPE)."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from netdsl.errors import Span
from netdsl.semantics import sweep_space
from netdsl.semantics.sweep_space import Param, SweepSpace
from netdsl.tuning import study

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
    ],
)
def test_each_sampler_is_the_one_named(name: str, made: type) -> None:
    assert set(sweep_space.SAMPLERS) == {"tpe", "random", "grid"}  # a new name needs its row here too
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
