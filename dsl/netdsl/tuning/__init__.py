"""Sweeps (issue 20): a spec's constants searched by Optuna, one ordinary run folder per trial.

    result = sweep("mlp.net", data="digits.npz", trials=8, seed=0)
    result.best.params, result.best.value, result.dir / "summary.csv"

The spec's `sweep MODEL { ... }` section (checked by `semantics.sweep_space`) says
what is searched and what is optimized; `study.py` puts it in Optuna's terms,
`runner.py` asks, trains (the training engine, with the trial's parameters as
`-D` defines) and tells, `folder.py` keeps the sweep folder and `records.py`
writes summary.csv, best.json and the plots. Importing this package loads
neither Optuna nor TensorFlow.
"""

from __future__ import annotations

from netdsl.tuning.records import SweepResult, TrialRecord

__all__ = ["SweepResult", "TrialRecord"]
