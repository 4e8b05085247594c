"""Run folders and sweep folders under a folder, read as data: only this user's own, files bounded.

A folder holding config.json is a run; one holding sweep.json is a sweep (its trials are runs in
`trials/<k>`). Anything else is looked into, never through a link, at most `LOOKED_INTO` deep and
`MAX_RUNS_LISTED` folders in all. A folder another account owns or may write into is passed over
with a warning (`runs.untrusted`), as `--resume auto` passes over it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_RUN_JSON_BYTES, MAX_RUNS_LISTED
from netdsl.training.errors import RunError
from netdsl.training.run.record import Run, open_run
from netdsl.training.run.runs import CONFIG, untrusted
from netdsl.tuning.folder import SWEEP, SweepFolder

LOOKED_INTO = 4  # folders deep: DIR/project/runs/<run> (deeper ones are not looked into)
BEST = "best.json"


@dataclass
class Sweep:
    """A sweep folder: sweep.json, best.json (the best trial) and its trials, each a `Run`."""

    dir: Path
    record: dict[str, Any]
    best: dict[str, Any]
    trials: list[tuple[int, Run]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def status(self) -> str:
        return str(self.record.get("status", "running"))


@dataclass
class Found:
    """What a folder holds: its runs and sweeps, and a warning for each folder passed over."""

    runs: list[Run] = field(default_factory=list)
    sweeps: list[Sweep] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # one line each: `PATH: why`


def find(folder: str | os.PathLike) -> Found:
    """Every run and sweep at or under `folder`; RunError when `folder` itself cannot be read."""
    root = Path(folder)
    if not root.is_dir():
        raise RunError("no such folder", file=str(folder))
    found = Found()
    seen = 0
    for path in _walk(root, found):
        seen += 1
        if seen > MAX_RUNS_LISTED:
            found.warnings.append(f"{root}: more than {MAX_RUNS_LISTED:,} folders; the rest were not looked at")
            break
        try:
            if (path / SWEEP).is_file():
                found.sweeps.append(open_sweep(path))
            else:
                found.runs.append(open_run(path))
        except RunError as exc:
            found.warnings.append(exc.text)
    return found


def _walk(root: Path, found: Found) -> Iterator[Path]:
    """The run and sweep folders under `root` (itself included), this user's own, without links."""
    pending = [(root, 0)]
    while pending:
        path, depth = pending.pop()
        if (path / CONFIG).is_file() or (path / SWEEP).is_file():
            distrust = untrusted(path, "sweep folder" if (path / SWEEP).is_file() else "run folder")
            if distrust is not None:
                found.warnings.append(f"{path}: {distrust}; passed over")
            else:
                yield path
            continue
        if depth >= LOOKED_INTO:
            continue
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(path), key=lambda e: e.name, reverse=True):
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    pending.append((Path(entry.path), depth + 1))


def open_sweep(path: str | os.PathLike) -> Sweep:
    """A sweep folder read back: sweep.json, best.json and every trial's run folder (by number)."""
    folder = SweepFolder.existing(path)
    sweep = Sweep(dir=folder.path, record=folder.read(), best=_read_object(folder.path / BEST, folder.path))
    trials = folder.trials
    if trials.is_dir() and untrusted(trials, "sweep's trials folder") is None:
        numbers = sorted(
            int(e.name)
            for e in os.scandir(trials)
            if e.name.isdigit() and len(e.name) < 9 and e.is_dir(follow_symlinks=False)
        )
        for number in numbers[:MAX_RUNS_LISTED]:
            with contextlib.suppress(RunError):  # a trial killed before it started has no config.json
                sweep.trials.append((number, open_run(trials / str(number))))
    return sweep


def _read_object(path: Path, folder: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular(path, MAX_RUN_JSON_BYTES, "run file", follow_links=False, own=True))
    except Refused as exc:
        if str(exc) == "no such file":
            return {}
        raise RunError(f"cannot read {path.name}: {exc}", file=str(folder)) from None
    except (ValueError, RecursionError) as exc:
        raise RunError(f"cannot read {path.name}: {exc}", file=str(folder)) from None
    if not isinstance(data, dict):
        raise RunError(f"cannot read {path.name}: not a JSON object", file=str(folder))
    return data


# ------------------------------------------------------------------ what a line shows


def number(value: Any) -> float | None:
    """A finite number read from a run's files, or None (a file may hold anything)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def text(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def run_best(run: Run) -> tuple[str, float] | None:
    """A run's best objective: val_loss at its best epoch (report.json), else its lowest loss."""
    best = run.report.get("best")
    if isinstance(best, dict) and number(best.get("val_loss")) is not None:
        return "val_loss", float(best["val_loss"])
    losses = [v for v in (number(x) for x in run.history.get("loss", [])) if v is not None]
    return ("loss", min(losses)) if losses else None


def sweep_best(sweep: Sweep) -> tuple[str, float] | None:
    objective = sweep.best.get("objective")
    if isinstance(objective, dict) and number(objective.get("value")) is not None:
        return text(objective.get("metric"), "objective"), float(objective["value"])
    return None


def spec_of(record: dict[str, Any]) -> dict[str, Any]:
    spec = record.get("spec")
    return spec if isinstance(spec, dict) else {}
