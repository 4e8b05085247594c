"""What a sweep was asked, resolved: the spec and its sweep section checked, the flags checked, the
sweep folder made (or found to resume or join) and its sweep.json written. Nothing trains here,
and neither Optuna nor TensorFlow is imported.

    config = resolve_sweep(SweepRequest(spec="mlp.net", data=DataRequest(data="d.npz"), trials=8))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from netdsl.errors import UsageError
from netdsl.limits import MAX_SWEEP_TRIALS, MAX_SWEEP_WORKERS
from netdsl.semantics.session import CheckedModel, LoadedSpec
from netdsl.semantics.sweep_space import SweepSpace
from netdsl.syntax.loader import Program
from netdsl.training.data.request import DEFAULT_SPLIT, DataRequest
from netdsl.training.errors import RunError
from netdsl.training.run.settings import MAX_SEED, json_defines, spec_sha256
from netdsl.tuning import study as studies
from netdsl.tuning.folder import STUDY_FILE, SweepFolder


@dataclass
class SweepRequest:
    """What was asked: the flags of `netdsl sweep` or the arguments of `netdsl.sweep`."""

    spec: Any  # a path or a Program
    model: str | None = None
    data: DataRequest = field(default_factory=DataRequest)
    trials: int | None = None  # None: the spec's `trials`, else 10 (a grid: its size)
    workers: int = 1
    storage: str | None = None  # None: SQLite in the sweep folder
    study: str | None = None  # None: "<model>-sweep"
    seed: int | None = None
    out: str | os.PathLike = "sweeps"
    resume: str | os.PathLike | None = None  # "auto" or a sweep folder
    epochs: int | None = None
    batch_size: int | None = None
    defines: dict[str, Any] = field(default_factory=dict)  # fixed -D overrides under every trial
    include: list = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)  # --plugin modules, given again to --workers' processes
    join: str | os.PathLike | None = None  # internal: a worker of this sweep folder (--workers)
    echo: bool = False  # print one line per trial (the CLI)
    callbacks: list = field(default_factory=list)  # Keras callbacks added to each trial's (--track's epoch hook)


@dataclass
class SweepConfig:
    request: SweepRequest
    checked: CheckedModel  # the spec's model, picked and checked once
    space: SweepSpace
    trials: int
    seed: int
    storage: str
    study: str
    folder: SweepFolder
    identity: dict[str, Any]

    @property
    def program(self) -> Program:
        """The spec as the sweep reads it (its fixed -D overrides applied)."""
        return self.checked.program

    @property
    def model(self) -> str:
        """The name of the model the sweep trains."""
        return self.checked.name

    @property
    def metric(self) -> str:
        """The objective's metric (`resolve_sweep` refuses a sweep without one)."""
        return _objective_metric(self.space)


DEFAULT_TRIALS = 10


def resolve_sweep(request: SweepRequest) -> SweepConfig:
    """Check the spec, its sweep and the flags; make (or find) the sweep folder. Nothing trains yet."""
    checked = LoadedSpec.of(request.spec, list(request.include), request.defines).model(request.model)
    program, name = checked.program, checked.name
    space = checked.sweep
    if space is None:
        raise UsageError(
            f"the spec has no sweep section for model '{name}'",
            hint=f"add one: sweep {name} {{ width = choice(32, 64)  objective = minimize(val_loss) }}",
        )
    clash = sorted(set(request.defines) & {p.name for p in space.params})
    if clash:
        raise UsageError(f"-D {clash[0]} fixes a constant this sweep searches; leave it out of the sweep or of -D")
    folder = _existing_folder(request, name)
    saved = folder.read() if folder is not None else {}
    _settings_from(saved, request)
    _check_flags(request)
    graph = checked.graph
    _objective_metric(space)
    for objective in space.trained:
        _check_validation(objective.name, request.data, graph.train.fit.get("validation_split"))
        _check_one_number(objective.name, graph)
    grid = studies.grid_size(space) if space.sampler == "grid" else None
    trials = request.trials or saved.get("trials") or space.trials or grid or DEFAULT_TRIALS
    if not 1 <= trials <= MAX_SWEEP_TRIALS:
        raise UsageError(f"--trials takes a number from 1 to {MAX_SWEEP_TRIALS:,}; received {trials}")
    folder = folder or SweepFolder.create(request.out, name)  # only once everything was checked
    seed = saved.get("seed", request.seed if request.seed is not None else int.from_bytes(os.urandom(4), "little"))
    storage = request.storage or (
        saved_storage(folder, saved) if saved else os.environ.get(STORAGE_ENV) or folder.own_storage
    )
    identity = {
        "spec": spec_sha256(program),
        "model": name,
        "metric": space.metric,
        "direction": space.direction,
        # several objectives: all of them (a single one is said by metric and direction, as before them)
        **({"objectives": [o.describe() for o in space.objectives]} if space.multi else {}),
        "defines": json_defines(request.defines),
    }
    config = SweepConfig(
        request=request,
        checked=checked,
        space=space,
        trials=trials,
        seed=seed,
        storage=storage,
        study=request.study or saved.get("study") or f"{name}-sweep",
        folder=folder,
        identity=identity,
    )
    if request.join is None:
        _record(config, saved)
    return config


# --storage's value when the flag is not given: a URL with a password stays out of `ps` (argv)
# and shell history; --workers K hands its storage to the workers the same way.
STORAGE_ENV = "NETDSL_SWEEP_STORAGE"


def saved_storage(folder: SweepFolder, saved: dict) -> str:
    """The storage of a sweep folder: its own SQLite file, the URL it recorded, or (a URL with a
    secret is never recorded) the one in NETDSL_SWEEP_STORAGE."""
    if saved.get("storage", STUDY_FILE) == STUDY_FILE:
        return folder.own_storage
    if saved.get("storage_url"):
        return saved["storage_url"]
    if os.environ.get(STORAGE_ENV):
        return os.environ[STORAGE_ENV]
    raise UsageError(
        f"this sweep's study is in {saved['storage']}; give the URL again with --storage URL (or in {STORAGE_ENV})"
    )


def _settings_from(saved: dict, request: SweepRequest) -> None:
    """A resumed sweep keeps its data, epochs and batch size unless they are given again."""
    if not saved:
        return
    request.epochs = request.epochs or saved.get("epochs")
    request.batch_size = request.batch_size or saved.get("batch_size")
    data = saved.get("data", {})
    if request.data.data is None and request.data.train is None and data:
        for key in ("data", "train", "val", "test"):
            entry = data.get(key)
            if entry is not None and "absolute" not in entry:
                raise UsageError("this sweep trained on arrays passed in memory; pass them again to resume")
            setattr(request.data, key, entry["absolute"] if entry else None)
        request.data.split = tuple(data["split"]) if "split" in data else None
        request.data.targets = dict(data.get("targets", {}))
        features, drop = data.get("features"), data.get("drop", [])
        names = lambda value: isinstance(value, list) and all(isinstance(v, str) for v in value)  # noqa: E731
        request.data.features = tuple(features) if names(features) else None
        request.data.drop = tuple(drop) if names(drop) else ()


def _check_flags(request: SweepRequest) -> None:
    for flag, value, low, high in (
        ("--workers", request.workers, 1, MAX_SWEEP_WORKERS),
        ("--trials", request.trials, 1, MAX_SWEEP_TRIALS),
        ("--epochs", request.epochs, 1, None),
        ("--batch-size", request.batch_size, 1, None),
        ("--seed", request.seed, 0, MAX_SEED),
    ):
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < low or (high and value > high):
            bounds = f"from {low} to {high:,}" if high else f"of {low} or more"
            raise UsageError(f"{flag} takes a whole number {bounds}; received {value!r}")
    if request.data.data is None and request.data.train is None and request.join is None:
        raise UsageError("no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]")


def _objective_metric(space: SweepSpace) -> str:
    """The sweep's objective metric: analysis reports a sweep whose objective is missing or unknown as an error."""
    assert space.metric is not None, f"the sweep of '{space.model}' has no objective, and analysis passed it"
    return space.metric


def _check_validation(metric: str, data: DataRequest, validation_split: float | None) -> None:
    """A `val_` objective needs validation data: said before anything trains."""
    if not metric.startswith("val_") or validation_split:
        return
    split = data.split or DEFAULT_SPLIT
    if (data.data is not None and (len(split) < 2 or split[1] <= 0)) or (data.train is not None and data.val is None):
        raise UsageError(
            f"the objective {metric} needs validation data, and this sweep has none",
            hint="give --val SRC (with --train), a --split with a validation part, or minimize "
            "a training metric such as loss",
        )


def _check_one_number(metric: str, graph: Any) -> None:
    """An objective is one number: a metric of one value per class (f1_score without `average`,
    r2_score(class_aggregation=none)) is not."""
    from netdsl.semantics.train_checks import per_class_metric_names

    one_number = per_class_metric_names(graph.train.metrics, graph.output_names).get(metric.removeprefix("val_"))
    if one_number is not None:
        raise UsageError(
            f"the objective {metric} gives one value per class; an objective is one number",
            hint=f"give the metric {one_number}",
        )


def _existing_folder(request: SweepRequest, model: str) -> SweepFolder | None:
    """The sweep folder joined or resumed (None: a new sweep; `--resume auto` with nothing to resume too)."""
    if request.join is not None:
        return SweepFolder.existing(request.join)
    if request.resume is None:
        return None
    folder = (
        SweepFolder.newest_unfinished(request.out, model)
        if str(request.resume) == "auto"
        else SweepFolder.existing(request.resume)
    )
    if folder is not None:
        searched = folder.read().get("spec", {}).get("model")
        if searched != model:
            raise RunError(f"this sweep searched model '{searched}', not '{model}'", file=str(folder.path))
    return folder


def _record(config: SweepConfig, saved: dict) -> None:
    request = config.request
    here = config.storage == config.folder.own_storage
    shown = studies.shown_url(config.storage)
    config.folder.write(
        {
            "spec": {
                "path": os.path.abspath(config.program.root),
                "sha256": config.identity["spec"],
                "model": config.model,
            },
            "objective": {"direction": config.space.direction, "metric": config.space.metric},
            "objectives": [
                {"direction": o.direction, "name": o.name, "figure": o.figure} for o in config.space.objectives
            ],
            "space": {p.name: p.describe() for p in config.space.params},
            "sampler": config.space.sampler
            + (f"(population={config.space.population})" if config.space.population else ""),
            "pruner": config.space.pruner,
            "trials": config.trials,
            "seed": config.seed,
            "study": config.study,
            "storage": STUDY_FILE if here else shown,
            # the URL itself only where it holds no secret (`--resume` and `--show` then need no --storage)
            **({"storage_url": config.storage} if not here and not studies.holds_secret(config.storage) else {}),
            "data": request.data.describe(),
            "defines": json_defines(request.defines),
            "epochs": request.epochs,
            "batch_size": request.batch_size,
            "status": "running",
            "created": saved.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    )


# ------------------------------------------------------------------ running
