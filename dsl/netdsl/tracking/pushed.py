"""What a tracking server records of a run folder or a sweep folder, whatever the server.

    item = pushed_run(run)          # .identity, .params, .metrics, .artifacts, .summary

A run's `identity` keys it on the server: the same folder (copied to another machine, renamed
or not) pushed twice is the same tracked run, updated in place. It is made of what the run
wrote when it started (config.json's model, spec hash, seed and creation time, and the run's
name); a sweep trial's of its sweep's identity and its number. Metrics are history.csv's values
as they are (floats with every digit; a metric of one value per class as `NAME/0`, `NAME/1`, ...).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from netdsl.files import Refused, open_regular, read_regular
from netdsl.limits import MAX_ARTIFACT_BYTES, MAX_FILE_BYTES
from netdsl.tracking.drawing import DIAGRAM, draw_into, spec_state
from netdsl.tracking.found import Sweep, number, run_best, spec_of, sweep_best, text
from netdsl.training.errors import RunError
from netdsl.training.run.record import Run
from netdsl.training.run.runs import CHECKPOINTS, CONFIG, HISTORY, REPORT
from netdsl.tuning.study import shown_url

# The files of a run folder a server keeps (best.keras, or model.keras when the run has no best epoch).
RUN_FILES = (CONFIG, REPORT, HISTORY, "curves.svg", "curves.png")
SWEEP_FILES = (
    "sweep.json",
    "best.json",
    "summary.csv",
    "history.svg",
    "history.png",
    "params.svg",
    "params.png",
    "pareto.svg",  # several objectives: the trials and the Pareto front
    "pareto.png",
)
# netdsl's statuses as a tracking server's (MLflow's RunStatus names)
STATUSES = {
    "finished": "FINISHED",
    "stopped_early": "FINISHED",
    "pruned": "FINISHED",
    "failed": "FAILED",
    "stopped": "KILLED",
    "running": "RUNNING",
}


@dataclass
class Pushed:
    """One tracked run: a run folder, or a sweep (whose `children` are its trials)."""

    identity: str
    name: str
    folder: Path
    status: str  # netdsl's
    start_ms: int
    params: dict[str, str]
    metrics: dict[str, list[tuple[int, float]]]  # name: (epoch, value) for each epoch that has one
    files: list[Path]  # the folder's files kept as artifacts
    spec_text: bytes | None = None  # the spec, when it is still there with the hash the run recorded
    spec_name: str = "spec.net"
    config: dict[str, Any] | None = None  # a run's config.json: what its diagram is drawn from (a sweep: None)
    summary: dict[str, float] = field(default_factory=dict)  # best_X, final_X, min_X: the HParams view's metrics
    hparams: dict[str, Any] = field(default_factory=dict)
    children: list[Pushed] = field(default_factory=list)
    kind: str = "run"

    @property
    def last_epoch(self) -> int:
        return max((epoch for values in self.metrics.values() for epoch, _ in values), default=0)


def _identity(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:32]


def _start_ms(created: str) -> int:
    try:
        return int(datetime.fromisoformat(created).timestamp() * 1000)
    except ValueError:
        return 0


def pushed_run(run: Run, parent: str | None = None, trial: int | None = None) -> Pushed:
    """A run folder as a tracked run; `parent`: its sweep's identity, `trial`: its number there."""
    assert run.dir is not None
    config, spec = run.config, spec_of(run.config)
    created = text(config.get("created"))
    identity = (
        _identity("trial", parent, trial)
        if parent is not None
        else _identity(
            "run",
            run.name,
            text(spec.get("model")),
            text(spec.get("sha256")),
            created,
            json.dumps(config.get("settings"), sort_keys=True, default=str),
        )
    )
    item = Pushed(
        identity=identity,
        name=run.name if trial is None else f"trial {trial}",
        folder=run.dir,
        status=run.status,
        start_ms=_start_ms(created),
        params=run_params(run),
        metrics=run_metrics(run),
        files=_files(run.dir),
        config=config,
    )
    item.spec_text, item.spec_name = _spec_text(spec)
    item.summary = summary(run)
    item.hparams = {key: _hparam(value) for key, value in item.params.items()}
    return item


def pushed_sweep(sweep: Sweep) -> Pushed:
    """A sweep folder as a parent run, its trials as children."""
    spec = spec_of(sweep.record)
    identity = _identity(
        "sweep",
        sweep.name,
        text(spec.get("sha256")),
        text(sweep.record.get("study")),
        text(sweep.record.get("created")),
    )
    params = {
        "spec.sha256": text(spec.get("sha256")),
        "spec.model": text(spec.get("model")),
        "sweep.study": text(sweep.record.get("study")),
        "sweep.trials": str(sweep.record.get("trials", "")),
        "sweep.seed": str(sweep.record.get("seed", "")),
        "sweep.sampler": str(sweep.record.get("sampler")),
    }
    objective = sweep.record.get("objective")
    if isinstance(objective, dict):
        params["sweep.objective"] = f"{objective.get('direction', 'minimize')}({objective.get('metric', '')})"
    objectives = sweep.record.get("objectives")
    if isinstance(objectives, list) and len(objectives) > 1:  # several: each, as the spec writes it
        params["sweep.objectives"] = ", ".join(
            f"{o.get('direction')}({o.get('name')})" for o in objectives if isinstance(o, dict)
        )
    space = sweep.record.get("space")
    for key, value in space.items() if isinstance(space, dict) else []:
        params[f"space.{key}"] = str(value)
    item = Pushed(
        identity=identity,
        name=sweep.name,
        folder=sweep.dir,
        status=sweep.status,
        start_ms=_start_ms(text(sweep.record.get("created"))),
        params=params,
        metrics={},
        files=[sweep.dir / name for name in SWEEP_FILES if (sweep.dir / name).is_file()],
        kind="sweep",
    )
    item.spec_text, item.spec_name = _spec_text(spec)
    best = sweep_best(sweep)
    if best is not None:
        item.summary = {f"best_{best[0]}": best[1]}
    if isinstance(sweep.best.get("trial"), int):
        item.params["sweep.best_trial"] = str(sweep.best["trial"])
    item.children = [pushed_run(run, identity, number_) for number_, run in sweep.trials]
    return item


def run_params(run: Run) -> dict[str, str]:
    """defines, train settings, data, backend and seed, as `group.name: text`."""
    config, spec = run.config, spec_of(run.config)
    params = {
        "spec.sha256": text(spec.get("sha256")),
        "spec.model": text(spec.get("model")),
        "backend": text(config.get("backend")),
    }
    for group, key in (("define", "defines"), ("train", "settings")):
        values = config.get(key)
        for name, value in values.items() if isinstance(values, dict) else []:
            params[f"{group}.{name}"] = value if isinstance(value, str) else json.dumps(value, default=str)
    params.update(_data_params(config.get("data"), "data"))
    seed = config.get("settings", {}).get("seed") if isinstance(config.get("settings"), dict) else None
    params["seed"] = json.dumps(seed)
    return {key: value for key, value in params.items() if key}


def _data_params(value: Any, prefix: str) -> dict[str, str]:
    if isinstance(value, dict):
        return {
            k: v
            for key, inner in value.items()
            if key != "absolute"
            for k, v in _data_params(inner, f"{prefix}.{key}").items()
        }
    return {prefix: value if isinstance(value, str) else json.dumps(value, default=str)}


def run_metrics(run: Run) -> dict[str, list[tuple[int, float]]]:
    """Every value of history.csv by metric; a metric of one value per class as one metric per class."""
    metrics: dict[str, list[tuple[int, float]]] = {}
    for name, values in run.history.items():
        for epoch, value in zip(run.epochs, values):
            if isinstance(value, list):
                for k, inner in enumerate(value):
                    metrics.setdefault(f"{name}/{k}", []).append((epoch, inner))
            elif value is not None:
                metrics.setdefault(name, []).append((epoch, value))
    return metrics


def summary(run: Run) -> dict[str, float]:
    """For TensorBoard's HParams view (which shows one value per metric): each metric's value at the
    best epoch (`best_X`, by val_loss), at the last (`final_X`) and its lowest (`min_X`)."""
    out: dict[str, float] = {}
    best = run.report.get("best")
    best_epoch = best.get("epoch") if isinstance(best, dict) else None
    for name, values in run_metrics(run).items():
        finite = [(e, v) for e, v in values if number(v) is not None]
        if not finite:
            continue
        out[f"final_{name}"] = finite[-1][1]
        out[f"min_{name}"] = min(v for _, v in finite)
        at = [v for e, v in finite if e == best_epoch]
        if at:
            out[f"best_{name}"] = at[0]
    found = run_best(run)
    if found is not None:
        out.setdefault(f"best_{found[0]}", found[1])
    return out


def _files(folder: Path) -> list[Path]:
    names = list(RUN_FILES)
    names.append(CHECKPOINTS["best"] if (folder / CHECKPOINTS["best"]).is_file() else CHECKPOINTS["last"])
    return [folder / name for name in names if (folder / name).is_file()]


def _spec_text(spec: dict[str, Any]) -> tuple[bytes | None, str]:
    """The spec file the run names, when it is there still with the hash the run recorded (else None:
    it changed since, and the server would keep another spec than the one that trained)."""
    path, sha = text(spec.get("path")), text(spec.get("sha256"))
    if not path or not sha:
        return None, "spec.net"
    try:
        data = read_regular(path, MAX_FILE_BYTES, "spec file")
    except Refused:
        return None, Path(path).name
    # the hash config.json records (`loader.spec_sha256`): the spec's text and a NUL, then each imported
    # file's; a spec that imports others is kept only in config.json's hash
    return (data if hashlib.sha256(data + b"\0").hexdigest() == sha else None), Path(path).name


def _hparam(value: str) -> Any:
    """A parameter's text as the HParams view shows it: a number, a bool or text."""
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, bool):
        return parsed
    found = number(parsed)
    return found if found is not None else value


# ------------------------------------------------------------------ sending


@dataclass
class PushCount:
    """What one push changed on the server (a second push of the same folders: all zero)."""

    created: int = 0  # tracked runs made
    updated: int = 0  # tracked runs that were there and got something new
    unchanged: int = 0
    metric_values: int = 0  # metric values written
    artifacts: int = 0  # files written
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def add(self, other: PushCount) -> None:
        for name in ("created", "updated", "unchanged", "metric_values", "artifacts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.warnings += other.warnings


def shown_uri(uri: str) -> str:
    """A target URI without its secrets (a password, a token in the query), for messages."""
    scheme, _, rest = uri.partition(":")
    return f"{scheme}:{shown_url(rest)}" if "://" in rest else uri


@contextlib.contextmanager
def staged(item: Pushed, warnings: list[str]) -> Iterator[Path]:
    """A private temporary folder holding copies of the item's files (and its spec), each read as a run's
    files are (a regular file of this user's, never through a link, at most MAX_ARTIFACT_BYTES), and a
    run's diagram drawn from its spec (`drawing.py`; why there is none appended to `warnings`): what a
    tracking client then copies wherever it keeps artifacts. Removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="netdsl-push-") as folder:
        stage = Path(folder)
        for source in item.files:
            _copy(source, stage / source.name)
        if item.spec_text is not None:
            (stage / "spec").mkdir()
            (stage / "spec" / item.spec_name).write_bytes(item.spec_text)
        if item.config is not None:
            warning = draw_into(item.folder, item.config, stage)
            if warning is not None:
                warnings.append(warning)
        yield stage


def _copy(source: Path, target: Path) -> None:
    try:
        with open_regular(source, "run file", follow_links=False, own=True) as fd:
            size = os.fstat(fd).st_size
            if size > MAX_ARTIFACT_BYTES:
                raise Refused(
                    f"file is too large ({size:,} bytes); a run file pushed may be at most {MAX_ARTIFACT_BYTES:,} bytes"
                )
            with os.fdopen(os.dup(fd), "rb") as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    except Refused as exc:
        raise RunError(f"cannot read {source.name}: {exc}", file=str(source.parent)) from None


def fingerprint(item: Pushed) -> str:
    """What the item's artifacts are now (names, sizes, times): pushed again only when it changes."""
    parts = []
    for path in item.files:
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            parts.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    parts.append(f"spec:{len(item.spec_text) if item.spec_text is not None else '-'}")
    if item.config is not None:  # the file a diagram is drawn from (drawn when the files are sent)
        parts.append(f"{DIAGRAM}:{spec_state(item.config)}")
    return ";".join(parts)
