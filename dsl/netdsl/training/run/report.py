"""The one place that writes into a run folder: config.json, report.json, history.csv,
checkpoint.npz, the .keras models and the curves — each atomically (a temporary file in
the folder, then `os.replace`), so a run killed at any moment leaves whole files.

A process that must not write (a worker other than the first, in a
distributed run) gets `RunWriter(None)`, which writes nothing.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from netdsl.atomic import write_bytes
from netdsl.training.run.runs import CHECKPOINT, CONFIG, HISTORY, REPORT, RUN_FILE_MODE, RunFolder


class RunWriter:
    def __init__(self, folder: RunFolder | None, saving: Callable[[], AbstractContextManager] = contextlib.nullcontext):
        self.folder = folder
        self.saving = saving  # the context a model is saved in (distribution: see Placement.saving)

    @property
    def path(self) -> Path | None:
        return self.folder.path if self.folder is not None else None

    def config(self, data: dict) -> None:
        self._json(CONFIG, data)

    def report(self, data: dict) -> None:
        self._json(REPORT, data)

    def history(self, rows: list[dict]) -> None:
        if self.folder is not None:
            write_bytes(self.folder.path / HISTORY, history_csv(rows).encode(), new_mode=RUN_FILE_MODE)

    def checkpoint(self, data: bytes) -> None:
        if self.folder is not None:
            write_bytes(self.folder.path / CHECKPOINT, data, new_mode=RUN_FILE_MODE)

    def model(self, model: Any, name: str) -> Path | None:
        if self.folder is None:
            return None
        from netdsl.backend.saving import save_atomic

        with self.saving():
            return save_atomic(model, self.folder.path / name)

    def curves(self, rows: list[dict], title: str) -> None:
        if self.folder is None or not rows:
            return
        from netdsl.training.run.curves import write_curves

        columns = history_columns(rows)[1:]
        history = {key: [row.get(key, math.nan) for row in rows] for key in columns}
        write_curves(history, [row["epoch"] for row in rows], self.folder.path, title)

    def _json(self, name: str, data: dict) -> None:
        if self.folder is not None:
            write_bytes(
                self.folder.path / name,
                (json.dumps(data, indent=2, default=_plain) + "\n").encode(),
                new_mode=RUN_FILE_MODE,
            )


# A logged value: a number, or the list a metric of one value per class gives (f1_score without `average`).
LoggedValue = float | list[float]


def logged_value(value: Any) -> Any:
    """A value of Keras' logs as netdsl records it: a float, or a list of floats (nested for a matrix) for a
    metric of one value per class; anything else as it is."""
    import numpy as np

    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return value
    return float(array) if array.ndim == 0 else array.tolist()


def shown_value(value: Any, spec: str) -> str:
    """A logged value as the CLI prints it: `0.8125`, or `[0.7500, 0.8571]` for one value per class."""
    if isinstance(value, list):
        return "[" + ", ".join(shown_value(v, spec) for v in value) + "]"
    return format(value, spec)


def history_columns(rows: list[dict]) -> list[str]:
    """epoch, loss, the other training values, then their val_ forms in the same order."""
    seen: list[str] = []
    for row in rows:
        seen.extend(k for k in row if k not in seen)
    train = loss_first([k for k in seen if k != "epoch" and not k.startswith("val_")])
    val = [f"val_{k}" for k in train if f"val_{k}" in seen]
    return ["epoch", *train, *val, *(k for k in seen if k.startswith("val_") and k not in val)]


def loss_first(keys: list[str]) -> list[str]:
    """Keras hands logs over sorted by name; a person reads the loss first."""
    return sorted(keys, key=lambda k: k != "loss")


def history_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = history_columns(rows)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(k)) for k in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # every digit: the CSV gives back the exact float
    if isinstance(value, list):  # one value per class: a JSON list, every digit
        return json.dumps(value)
    return str(value)


def _plain(value: Any) -> Any:
    """JSON for what json cannot write itself (NumPy numbers, paths, Keras objects)."""
    if hasattr(value, "tolist"):  # a NumPy number or array (a metric of one value per class)
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return str(value)
