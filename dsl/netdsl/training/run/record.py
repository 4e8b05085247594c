"""A run as a program reads it: `Run` (what `netdsl.train` returns and `netdsl.open_run` opens) and
history.csv read back exactly as report.py wrote it.

    run = netdsl.open_run("runs/mlp-3")    # run.history["val_loss"], run.report["status"], run.config

history.csv holds every float with all its digits (`repr`), a metric of one value per class as a
JSON list, and an empty cell where an epoch has no value: `read_history` gives back the very
floats Keras logged. Reading it needs no backend and no NumPy.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_HISTORY_BYTES
from netdsl.training.errors import RunError
from netdsl.training.run.report import LoggedValue
from netdsl.training.run.runs import CONFIG, HISTORY, REPORT, RunFolder


@dataclass
class Run:
    """A run: its folder, the trained model (None for a run opened from its folder: `weights` names the
    file), the history per metric (a metric of one value per class: a list each epoch; None for an epoch
    without the value), the report and the config (config.json: spec, settings, defines, data, backend)."""

    dir: Path | None
    model: Any
    history: dict[str, list[LoggedValue]]
    report: dict
    config: dict = field(default_factory=dict)
    epochs: list[int] = field(default_factory=list)  # the epoch (from 1) of each value of `history`

    @property
    def status(self) -> str:
        return self.report.get("status", "running")

    @property
    def name(self) -> str:
        return self.dir.name if self.dir is not None else ""


def open_run(path: str | Path) -> Run:
    """The run folder at `path` read back (config.json, report.json, history.csv); RunError when it is
    not this user's own run folder (`RunFolder.existing`) or a file of it cannot be read."""
    folder = RunFolder.existing(path)
    history = read_history(folder)
    epochs = [int(e) for e in history.pop("epoch", [])]  # type: ignore[arg-type]
    return Run(
        dir=folder.path,
        model=None,
        history=history,
        report=folder.read_json(REPORT),
        config=folder.read_json(CONFIG),
        epochs=epochs,
    )


def read_history(folder: RunFolder) -> dict[str, list[LoggedValue]]:
    """history.csv as {column: one value per row} ({} before the first epoch), `epoch` as ints; RunError
    for a file that is not what report.py writes."""
    try:
        text = read_regular(folder.path / HISTORY, MAX_HISTORY_BYTES, "run file", follow_links=False, own=True).decode(
            "utf-8"
        )
    except Refused as exc:
        if str(exc) == "no such file":
            return {}
        raise RunError(f"cannot read {HISTORY}: {exc}", file=str(folder.path)) from None
    except UnicodeDecodeError:
        raise RunError(f"cannot read {HISTORY}: not UTF-8 text", file=str(folder.path)) from None
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise RunError(f"cannot read {HISTORY}: {exc}", file=str(folder.path)) from None
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    if not header or header[0] != "epoch" or len(set(header)) != len(header):
        raise RunError(
            f"cannot read {HISTORY}: its first column is not 'epoch', or a column is named twice", file=str(folder.path)
        )
    history: dict[str, list[Any]] = {name: [] for name in header}
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise RunError(
                f"cannot read {HISTORY}: line {number} has {len(row)} cells, not {len(header)}", file=str(folder.path)
            )
        try:
            history["epoch"].append(int(row[0]))
            for name, cell in zip(header[1:], row[1:]):
                history[name].append(_value(cell))
        except ValueError as exc:
            raise RunError(f"cannot read {HISTORY}: line {number}: {exc}", file=str(folder.path)) from None
    return history


def _value(cell: str) -> LoggedValue | None:
    """One cell as report._cell wrote it: '' (no value), a float's repr, or a JSON list of floats."""
    if cell == "":
        return None
    if cell.startswith("["):
        try:
            values = json.loads(cell)
        except (ValueError, RecursionError):
            raise ValueError(f"{cell[:40]!r} is not a list of numbers") from None
        if not isinstance(values, list) or not all(_is_number(v) for v in values):
            raise ValueError(f"{cell[:40]!r} is not a list of numbers")
        return [float(v) for v in values]
    return float(cell)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
