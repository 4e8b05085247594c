"""`netdsl runs push DIR|RUN ... --to URI`: run folders and sweep folders into a tracking server.

    mlflow:sqlite:///mlflow.db          MLflow, any tracking URI (a SQLite file, http://host:5000, ...)
    tensorboard:logs/                   TensorBoard event files: scalars and the HParams view

Pushing twice creates nothing new: each run is found on the server by its folder's identity
(`pushed.py`) and completed in place (the epochs it lacks, the artifacts when they changed).
A URI's password is never printed (`shown_uri`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from netdsl.errors import UsageError
from netdsl.tracking.found import find
from netdsl.tracking.pushed import PushCount, Pushed, pushed_run, pushed_sweep, shown_uri
from netdsl.training.errors import RunError

SCHEMES = ("mlflow:", "tensorboard:")


class Target(Protocol):
    """A tracking server: `push` records one item (and its children), idempotently."""

    live: bool  # pushed again each epoch while it trains
    artifacts: bool  # whether files are sent (a live run sends them when it ends)

    def push(self, item: Pushed) -> PushCount: ...


def check_uri(uri: str, flag: str = "--to") -> None:
    """UsageError for a `--to` / `--track` URI netdsl does not know."""
    if not any(uri.startswith(scheme) and uri[len(scheme) :] for scheme in SCHEMES):
        raise UsageError(f"{flag} takes mlflow:<tracking URI> or tensorboard:<folder>; received {shown_uri(uri)!r}")


def open_target(uri: str, experiment: str = "netdsl") -> Target:
    """The target a `--to` URI names; UsageError for one netdsl does not know."""
    check_uri(uri)
    if uri.startswith("mlflow:") and uri[len("mlflow:") :]:
        from netdsl.tracking.mlflow_target import MlflowTarget

        return MlflowTarget(uri[len("mlflow:") :], experiment)
    from netdsl.tracking.tensorboard_target import TensorBoardTarget

    return TensorBoardTarget(Path(uri[len("tensorboard:") :]))


def items(paths: list[str | os.PathLike]) -> tuple[list[Pushed], list[str]]:
    """The runs and sweeps the paths name (a run, a sweep, or a folder of them), and warnings."""
    found_items: list[Pushed] = []
    warnings: list[str] = []
    seen: set[Path] = set()
    for path in paths:
        found = find(path)
        warnings += found.warnings
        for sweep in found.sweeps:
            if sweep.dir.resolve() not in seen:
                seen.add(sweep.dir.resolve())
                found_items.append(pushed_sweep(sweep))
        for run in found.runs:
            assert run.dir is not None
            if run.dir.resolve() not in seen:
                seen.add(run.dir.resolve())
                found_items.append(pushed_run(run))
    return found_items, warnings


def push(paths: list[str | os.PathLike], uri: str, experiment: str = "netdsl") -> PushCount:
    """Push every run and sweep under `paths` to `uri`; what it changed."""
    started = time.perf_counter()
    pushed, warnings = items(paths)
    if not pushed:
        raise RunError("no run folder or sweep folder here", file=str(paths[0]) if paths else ".")
    count = PushCount(warnings=warnings)
    with quick_failing(retries=2):
        target = open_target(uri, experiment)
        for item in pushed:
            count.add(target.push(item))
    count.seconds = time.perf_counter() - started
    return count


@contextlib.contextmanager
def quick_failing(retries: int) -> Iterator[None]:
    """MLflow's client told to give up on a server that is down after `retries` more tries and to wait
    20 s at most for an answer (its default: 7 tries over about four minutes), for the push only; a
    value the user set in the environment is kept."""
    wanted = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(retries), "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}
    added = [name for name in wanted if name not in os.environ]
    os.environ.update({name: wanted[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
