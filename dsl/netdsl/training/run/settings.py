"""From what a user asked (flags or library arguments) to the settings a run trains with.

    config = resolve(TrainRequest(spec="mlp.net", data=DataRequest(data="digits.npz"), epochs=3))
    run = run_training(config)                       # netdsl.training.run.engine

Flags override the spec's `train { }` section; without `--epochs` /
`--batch-size` the spec's values hold (then Keras' defaults, 1 and 32).
The spec is read and checked here, in pure Python (this module imports
no TensorFlow): a spec error is
reported before TensorFlow loads and before any run folder exists.

Resuming (`resume="auto"` or a run folder) takes the run's own settings
from its config.json — the seed, the data, the batch size — and refuses a
spec whose content changed since the run started. `--epochs` may raise the
number of epochs of a resumed run; a differing batch size or seed is an
error (the run would no longer be the run it was).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netdsl.errors import Diagnostic, SpecError, UsageError
from netdsl.semantics.session import CheckedModel, LoadedSpec
from netdsl.syntax.loader import Program, spec_sha256
from netdsl.training.data.request import DataNames, DataRequest, check_split
from netdsl.training.errors import DataError, RunError
from netdsl.training.run.runs import CONFIG, RunFolder

PROGRESS = ("auto", "bar", "line", "none")
KERAS_DEFAULTS = {"epochs": 1, "batch_size": 32, "shuffle": True}
MAX_SEED = 2**32 - 1


@dataclass
class TrainRequest:
    """What was asked: the CLI's flags or the library's arguments, before any default."""

    spec: Any  # a path or a Program
    model: str | None = None
    data: DataRequest = field(default_factory=DataRequest)
    epochs: int | None = None
    batch_size: int | None = None
    seed: int | None = None
    out: str | os.PathLike = "runs"
    resume: str | os.PathLike | None = None  # "auto" or a run folder
    progress: str = "none"
    tensorboard: bool = False
    include: list = field(default_factory=list)
    callbacks: list = field(default_factory=list)  # further Keras callbacks (library only)
    defines: dict[str, Any] = field(default_factory=dict)  # -D overrides of the spec's constants
    run_dir: str | os.PathLike | None = None  # this exact new run folder instead of OUT/<model>-N (sweeps)
    init_from: str | os.PathLike | None = None  # the whole model's initial weights from this file (--init-from)
    extra: dict[str, Any] = field(default_factory=dict)  # further sections of config.json (a sweep's trial)
    max_memory: int | None = None  # bytes a training step may need (--max-memory; else the spec's max_memory)


@dataclass
class TrainConfig:
    """Everything a run trains with, resolved. The engine takes this and nothing else."""

    checked: CheckedModel  # the spec's model, picked and checked once: the engine builds it without a second check
    spec_path: str
    spec_sha256: str
    data: DataRequest
    epochs: int
    batch_size: int
    shuffle: bool
    validation_split: float | None
    seed: int
    out: Path
    resume_from: RunFolder | None = None  # None: a new run folder
    progress: str = "none"
    tensorboard: bool = False
    callbacks: list = field(default_factory=list)
    on_start: Callable[[Path, int], None] | None = None  # told the run folder and the first epoch
    defines: dict[str, Any] = field(default_factory=dict)  # -D overrides applied to `program`
    run_dir: Path | None = None  # this exact new run folder instead of OUT/<model>-N (a sweep's trial)
    extra: dict[str, Any] = field(default_factory=dict)  # further sections of config.json
    init_from: str | None = None  # the whole model's initial weights from this file (absolute)
    include: list[str] = field(default_factory=list)  # the folders imports were read from (-I), absolute
    losses: list = field(default_factory=list)  # labels.OutputLoss per output: the data read is checked against them

    @property
    def program(self) -> Program:
        """The spec as this run reads it (its -D overrides applied)."""
        return self.checked.program

    @property
    def model(self) -> str:
        """The name of the model this run trains."""
        return self.checked.name

    def spec_entry(self) -> dict[str, Any]:
        """config.json's `spec`: what re-reads the spec as this run read it (see `run_spec`)."""
        return {"path": self.spec_path, "sha256": self.spec_sha256, "model": self.model, "include": self.include}

    def settings(self) -> dict[str, Any]:
        """The resolved settings as config.json keeps them (`init_from` only when given)."""
        found = {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "shuffle": self.shuffle,
            "validation_split": self.validation_split,
            "seed": self.seed,
        }
        return found | ({"init_from": self.init_from} if self.init_from is not None else {})


def resolve(request: TrainRequest) -> TrainConfig:
    checked = LoadedSpec.of(request.spec, list(request.include), request.defines).model(request.model)
    program, name = checked.program, checked.name
    graph = _trainable_graph(checked)
    train = graph.train
    _check_flags(request)
    fit = {**KERAS_DEFAULTS, **train.fit}
    config = TrainConfig(
        checked=checked,
        spec_path=os.path.abspath(program.root),
        spec_sha256=spec_sha256(program),
        data=request.data,
        epochs=request.epochs or fit["epochs"],
        batch_size=request.batch_size or fit["batch_size"],
        shuffle=fit["shuffle"],
        validation_split=fit.get("validation_split") or None,
        seed=request.seed if request.seed is not None else _fresh_seed(),
        out=Path(request.out),
        progress=request.progress,
        tensorboard=request.tensorboard,
        callbacks=list(request.callbacks),
        defines=dict(request.defines),
        run_dir=Path(request.run_dir) if request.run_dir is not None else None,
        extra=dict(request.extra),
        init_from=_init_from(request.init_from),
        include=[os.path.abspath(p) for p in request.include],
    )
    if request.resume is not None:
        _resume_settings(config, request)
    _check_memory(graph, config.batch_size, request, program)
    if _no_data(config.data):
        resumable = f" (and no unfinished run of '{name}' in {config.out} to resume)" if request.resume else ""
        raise UsageError(f"no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]{resumable}")
    _check_paths(config.data)
    from netdsl.training.data.data_check import signature_of_graph  # NumPy only: still no TensorFlow
    from netdsl.training.data.labels import check_request_labels, output_losses
    from netdsl.training.data.source import check_data

    if config.data.split is not None:
        config.data.split = check_split(config.data.split)
    check_data(config.data, signature_of_graph(graph), config.validation_split)  # before TensorFlow, any run folder
    check_request_labels(graph, config.data, program.sources())  # labels against losses, at the spec's loss
    config.losses = output_losses(graph)
    return config


def _check_memory(graph: Any, batch: int, request: TrainRequest, program: Program) -> None:
    """Refuse a batch whose estimated training peak (netdsl.cost) is over --max-memory, else over the
    train section's max_memory: at the spec's batch_size when the batch is the spec's."""
    from netdsl.cost.budget import overrun
    from netdsl.cost.readout import default_precision

    limit = request.max_memory if request.max_memory is not None else graph.train.max_memory
    over = overrun(graph, batch, limit, default_precision(graph)) if limit is not None else None
    if over is None:
        return
    spec_batch = request.batch_size is None and request.resume is None and "batch_size" in graph.train.spans
    named = "--batch-size" if request.batch_size is not None else "batch_size" if spec_batch else "the batch size"
    text = over.text(named, "--max-memory" if request.max_memory is not None else "max_memory")
    if spec_batch:
        raise SpecError(Diagnostic.at(graph.train.spans["batch_size"], text), program.sources())
    raise UsageError(text)


def _init_from(path: str | os.PathLike | None) -> str | None:
    """`--init-from FILE`: a .keras or .weights.h5 file that exists, made absolute (checked before TensorFlow)."""
    if path is None:
        return None
    shown = os.fspath(path)
    if not shown.endswith((".keras", ".weights.h5")):
        raise UsageError(f"--init-from takes a .keras or .weights.h5 file; received '{shown}'")
    if not os.path.isfile(shown):
        raise UsageError(f"--init-from: weights file '{shown}' does not exist")
    return os.path.abspath(shown)


def _check_paths(data: DataRequest) -> None:
    """A path that does not exist is a typo: say so before any run folder is made."""
    for key in ("data", "train", "val", "test"):
        value = getattr(data, key)
        if isinstance(value, (str, os.PathLike)) and not os.path.exists(value):
            raise DataError("no such file or folder", file=str(value))


def _trainable_graph(checked: CheckedModel) -> Any:
    """The model's checked graph, which has a train section with a loss; SpecError otherwise."""
    graph, name, program = checked.graph, checked.name, checked.program
    if graph.train is None or graph.train.loss is None:
        what = "no train section" if graph.train is None else "a train section without a loss"
        raise SpecError(
            Diagnostic.at(
                graph.span,
                f"model '{name}' has {what}; training needs a loss",
                "add: train { optimizer = adam  loss = sparse_categorical_crossentropy }",
            ),
            program.sources(),
        )
    return graph


def _check_flags(request: TrainRequest) -> None:
    for flag, value in (("--epochs", request.epochs), ("--batch-size", request.batch_size)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise UsageError(f"{flag} takes a positive integer; received {value!r}")
    if request.seed is not None and not (isinstance(request.seed, int) and 0 <= request.seed <= MAX_SEED):
        raise UsageError(f"--seed takes an integer from 0 to {MAX_SEED}; received {request.seed!r}")
    if request.progress not in PROGRESS:
        raise UsageError(f"--progress takes one of {', '.join(PROGRESS)}; received {request.progress!r}")
    if request.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise UsageError(
            "--tensorboard needs the TensorBoard package, which is not installed",
            hint="pip install 'netdsl[tensorboard]' (or: pip install tensorboard)",
        )


def _resume_settings(config: TrainConfig, request: TrainRequest) -> None:
    resume = request.resume
    assert resume is not None  # (resolve calls this only for a request to resume)
    if str(resume) == "auto":
        folder = RunFolder.newest_unfinished(config.out, config.model)
        if folder is None:
            return  # nothing to resume: a new run (so one command line serves the first and every later try)
    else:
        folder = RunFolder.existing(resume)
    saved = folder.read_json(CONFIG)
    where = str(folder.path)
    if not isinstance(saved.get("spec"), dict):
        raise RunError("config.json's spec entry is damaged", file=where, hint="start a new run (without --resume)")
    if saved.get("spec", {}).get("model") != config.model:
        raise RunError(
            f"this run trained model '{saved.get('spec', {}).get('model')}', not '{config.model}'", file=where
        )
    if saved.get("spec", {}).get("sha256") != config.spec_sha256:
        raise RunError(
            "the spec changed since this run started; resuming would train a different model",
            file=where,
            hint="start a new run (without --resume)",
        )
    if saved.get("defines", {}) != json_defines(config.defines):
        raise RunError(
            f"the -D overrides {_shown_defines(config.defines)} differ from this run's "
            f"{_shown_defines(saved.get('defines', {}))}; resuming would train a different model",
            file=where,
            hint="give the run's own -D flags, or start a new run (without --resume)",
        )
    settings = _saved_settings(saved, where)
    for flag, key, value in (("--batch-size", "batch_size", request.batch_size), ("--seed", "seed", request.seed)):
        if value is not None and value != settings.get(key):
            raise RunError(
                f"{flag} {value} differs from this run's {settings.get(key)}; a resumed run keeps its settings",
                file=where,
            )
    config.seed, config.batch_size = settings["seed"], settings["batch_size"]
    config.shuffle, config.validation_split = settings["shuffle"], settings["validation_split"]
    config.epochs = request.epochs or settings["epochs"]
    done = _epochs_done(folder)
    if config.epochs < done:
        raise RunError(f"--epochs {config.epochs} is fewer than the {done} this run has already trained", file=where)
    if _no_data(config.data):
        config.data = saved_data(saved.get("data", {}), where)
    elif config.data.data is not None and "split" in saved.get("data", {}):
        split = tuple(saved["data"]["split"])
        if config.data.split is not None and tuple(config.data.split) != split:
            raise RunError(
                f"--split differs from this run's {','.join(f'{f:g}' for f in split)}; a resumed run keeps its split",
                file=where,
            )
        config.data.split = split
    config.resume_from = folder


def json_defines(defines: dict) -> dict:
    """The -D overrides as config.json keeps them (tuples as lists, names as strings)."""
    return json.loads(json.dumps(defines))


def _shown_defines(defines: dict) -> str:
    return "(none)" if not defines else " ".join(f"{k}={v!r}" for k, v in defines.items())


_SAVED = {  # config.json's settings, checked as the flags are: a damaged or crafted file is one line
    "epochs": lambda v: _positive(v),
    "batch_size": lambda v: _positive(v),
    "seed": lambda v: _integer(v) and 0 <= v <= MAX_SEED,
    "shuffle": lambda v: isinstance(v, bool),
    "validation_split": lambda v: v is None or (_number(v) and 0 <= v < 1),
}


def _saved_settings(saved: dict, where: str) -> dict:
    settings = saved.get("settings")
    for key, valid in _SAVED.items():
        value = settings.get(key) if isinstance(settings, dict) else None
        if not isinstance(settings, dict) or key not in settings or not valid(value):
            raise RunError(
                f"config.json's settings.{key} is {value!r}, which netdsl never writes; the run folder is damaged",
                file=where,
                hint="start a new run (without --resume)",
            )
    data = saved.get("data", {})
    if not isinstance(data, dict) or ("split" in data and not _split_ok(data["split"])):
        raise RunError("config.json's data entry is damaged", file=where, hint="start a new run (without --resume)")
    assert isinstance(settings, dict)  # the loop over _SAVED (not empty) raised otherwise
    return settings


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive(value: Any) -> bool:
    return _integer(value) and value >= 1


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _split_ok(split: Any) -> bool:
    if not isinstance(split, list) or not 2 <= len(split) <= 3 or not all(_number(f) for f in split):
        return False
    try:
        check_split(tuple(split))
    except UsageError:
        return False
    return True


def _epochs_done(folder: RunFolder) -> int:
    if not folder.checkpoint.is_file():
        return 0
    from netdsl.training.run.checkpoint import read_meta  # NumPy only: still no TensorFlow

    return int(read_meta(folder.checkpoint).get("epoch", 0))


def _no_data(data: DataRequest) -> bool:
    return data.data is None and data.train is None


def saved_include(saved: dict) -> list[str]:
    """The include folders (-I) a run read its spec's imports from (none in a run of an older netdsl)."""
    found = (saved.get("spec") or {}).get("include")
    return [p for p in found if isinstance(p, str)] if isinstance(found, list) else []


def saved_data(saved: dict, where: str, purpose: str = "resume") -> DataRequest:
    """The DataRequest a run's config.json recorded (absolute paths, split, targets), read to `purpose`
    ("resume" or "evaluate": what a run trained on arrays asks for is said in its terms)."""
    targets = saved.get("targets", {})
    if not (isinstance(targets, dict) and all(isinstance(v, str) for v in targets.values())):
        raise RunError("config.json's data targets are damaged", file=where)
    request = DataRequest(targets=dict(targets))
    for key in ("data", "train", "val", "test"):
        entry = saved.get(key)
        if entry is None:
            continue
        if isinstance(entry, dict) and "arrays" in entry:
            if purpose == "evaluate":
                raise RunError(
                    "this run trained on arrays passed in memory, which its folder does not keep; "
                    "give the data to evaluate on",
                    file=where,
                    hint="evaluate(run, data=...) (--data SRC)",
                )
            raise RunError("this run trained on arrays passed in memory; pass them again to resume", file=where)
        if not (isinstance(entry, dict) and isinstance(entry.get("absolute"), str)):
            raise RunError(f"config.json's data entry '{key}' is damaged", file=where)
        setattr(request, key, entry["absolute"])
    if "split" in saved:
        request.split = tuple(saved["split"])
    features, drop = saved.get("features"), saved.get("drop", [])
    if not (features is None or _names(features)) or not _names(drop):
        raise RunError("config.json's data columns are damaged", file=where)
    request.features, request.drop = (tuple(features) if features is not None else None), tuple(drop)
    return request


def saved_names(saved: dict) -> DataNames:
    """How a run read its data's columns and named its classes (config.json's `columns` and `classes`), for
    evaluate and predict to read alike; an entry that is not what netdsl writes is left out."""
    columns, classes = saved.get("columns"), saved.get("classes")
    features = None
    if isinstance(columns, dict) and len(columns) == 1 and _names(next(iter(columns.values()))):
        features = tuple(next(iter(columns.values())))
    found = {}
    if isinstance(classes, dict):
        found = {k: tuple(v) for k, v in classes.items() if isinstance(k, str) and _names(v) and v}
    return DataNames(features, (), found)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little")
