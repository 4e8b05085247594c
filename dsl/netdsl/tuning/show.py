"""`netdsl sweep --show DIR`: the whole study of a sweep folder, read from its storage."""

from __future__ import annotations

import os

from netdsl.errors import UsageError
from netdsl.tuning import study as studies
from netdsl.tuning.folder import SweepFolder
from netdsl.tuning.records import SweepResult, records
from netdsl.tuning.settings import saved_storage


def read_sweep(folder: str | os.PathLike, *, storage: str | None = None) -> SweepResult:
    """Every trial of the folder's study (all workers'), by number; `storage` where the folder does
    not keep its URL (a password)."""
    sweep = SweepFolder.existing(folder)
    saved = sweep.read()
    url = storage or saved_storage(sweep, saved)
    optuna = studies.optuna_module()
    try:
        study = optuna.load_study(study_name=saved["study"], storage=studies.open_storage(url))
    except KeyError:
        raise UsageError(f"the storage {studies.shown_url(url)} has no study '{saved['study']}'") from None
    return SweepResult(dir=sweep.path, study=saved["study"], storage=studies.shown_url(url),
                       metric=saved["objective"]["metric"], direction=saved["objective"]["direction"],
                       trials=records(study, saved.get("trials")),
                       log_scale=tuple(name for name, text in saved.get("space", {}).items()
                                       if text.startswith("log_uniform")))
