"""`netdsl sweep --show DIR`: the whole study of a sweep folder, read from its storage."""

from __future__ import annotations

import os

from netdsl.errors import NetdslError, UsageError, printable
from netdsl.semantics.sweep_space import Objective
from netdsl.training.errors import RunError
from netdsl.tuning import study as studies
from netdsl.tuning.folder import SWEEP, SweepFolder
from netdsl.tuning.records import SweepResult, one_line, records
from netdsl.tuning.settings import saved_storage


def read_sweep(folder: str | os.PathLike, *, storage: str | None = None) -> SweepResult:
    """Every trial of the folder's study (all workers'), by number; `storage` where the folder does
    not keep its URL (a password)."""
    sweep = SweepFolder.existing(folder)
    saved = sweep.read()
    for key in ("study", "objective"):
        if key not in saved or (key == "objective" and "metric" not in saved[key]):
            raise RunError(
                f"cannot read {SWEEP}: it names no {'objective metric' if key == 'objective' else key}",
                file=str(sweep.path),
            )
    url = storage or saved_storage(sweep, saved)
    optuna = studies.optuna_module()
    try:
        study = optuna.load_study(study_name=saved["study"], storage=studies.open_storage(url))
        directions = len(study.directions)
    except KeyError:
        raise UsageError(f"the storage {studies.shown_url(url)} has no study '{printable(saved['study'])}'") from None
    except NetdslError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged study: Optuna and SQLAlchemy raise what its bytes cause
        raise RunError(f"cannot read the study: {one_line(exc)}", file=str(sweep.path)) from None
    # sweep.json's objectives (a sweep recorded before them: its one objective)
    objectives = tuple(Objective(o["direction"], o["name"], o["figure"]) for o in saved.get("objectives", []))
    if directions != max(len(objectives), 1):
        raise RunError(
            f"cannot read the study: it optimizes {directions} objective{'s' * (directions != 1)}, "
            f"{SWEEP} names {max(len(objectives), 1)}",
            file=str(sweep.path),
        )
    return SweepResult(
        dir=sweep.path,
        study=saved["study"],
        storage=studies.shown_url(url),
        metric=saved["objective"]["metric"],
        direction=saved["objective"].get("direction", "minimize"),
        trials=records(study, saved.get("trials"), sweep.path, objectives),
        log_scale=tuple(name for name, text in saved.get("space", {}).items() if text.startswith("log_uniform")),
        objectives=objectives,
    )
