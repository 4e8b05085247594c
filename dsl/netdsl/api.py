"""The library API: every public function of netdsl, in one vocabulary (docs/api.md).

    netdsl.check("cnn.net")                          # a spec by its path ...
    netdsl.check(text=source, filename="cnn.net")    # ... or by its text
    netdsl.build(program, model="classifier")        # ... or parsed (`netdsl.parse`, `netdsl.parse_file`)
    netdsl.evaluate("runs/cnn-1", data="test.npz")   # a trained model: run folder, .keras file or keras.Model

The rules every function follows:

- the first argument is `spec` (a path or a `Program`; spec text goes in
  `text=`, shown in messages as `filename=`) or `trained` (a run folder, a
  `.keras` file or a `keras.Model`), and everything after it is keyword-only;
- `model` is always the *name* of a model inside a spec;
- a keyword is named like its command-line flag: `out` (`-o/--out`),
  `param_limit` (`--param-limit`), `backend` (`--backend`), `include`
  (`--include`), `shapes` (`--no-shapes`), `collapse_repeats` (`--no-collapse`);
- every error is a `netdsl.NetdslError` (`SpecError` for what a spec holds).

Importing this module is cheap: Keras (and TensorFlow or JAX) load only
inside `build`, `build_all`, `fit_kwargs`, `train`, `evaluate`, `predict`,
`summary` and `render` with shapes the pure-Python inference is unsure of, and
`export` of a live model. The front ends (CLI, language server, preview)
share the same steps through `netdsl.pipeline`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

from netdsl import options as options  # each command's flags, declared once: netdsl.cli's parsers
from netdsl import pipeline
from netdsl.cost.readout import costed, summary_cost
from netdsl.errors import Diagnostic, SpecError, UsageError, printable
from netdsl.pipeline import ModelSummary, Spec
from netdsl.registry import plugins
from netdsl.syntax.loader import Program, load_file, load_text
from netdsl.trained import TrainedModel  # what open_trained returns: no Keras until it is used
from netdsl.training.run.record import Run  # what train returns and open_run reads back: no Keras
from netdsl.training.run.signals import EXIT_STOPPED as EXIT_STOPPED  # 130: a run stopped, resumable
from netdsl.training.run.signals import Stopped as Stopped  # a run's Ctrl-C or SIGTERM (the CLI's exit 130)

if TYPE_CHECKING:
    import graphviz
    import keras
    import numpy as np

    from netdsl.decompiler.verify import RoundTrip
    from netdsl.deploy import Exported
    from netdsl.training.run.predictions import Predictions  # NumPy
    from netdsl.training.run.settings import TrainConfig
    from netdsl.tuning import SweepResult, TrialRecord

__all__ = [
    "parse",
    "parse_file",
    "check",
    "format",
    "build",
    "build_all",
    "summary",
    "fit_kwargs",
    "render",
    "decompile",
    "export",
    "train",
    "evaluate",
    "predict",
    "sweep",
    "show_sweep",
    "register_layer",
    "register_activation",
    "Spec",
    "Trained",
    "DataSource",
    "ModelSummary",
    "SweepResult",
    "TrialRecord",
    "Defines",
    "ExportFormat",
    "Predictions",
    "Run",
    "runs",
    "open_run",
    "open_trained",
    "TrainedModel",
]

# Public types of the rooms a command may never need, imported when first asked for (`netdsl.Predictions`):
# NumPy (Predictions) and the sweep records stay out of `netdsl check`'s process.
_LATER = {
    "Predictions": "netdsl.training.run.predictions",
    "SweepResult": "netdsl.tuning",
    "TrialRecord": "netdsl.tuning",
}


def __getattr__(name: str) -> Any:
    if name not in _LATER:
        raise AttributeError(f"module 'netdsl.api' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LATER[name]), name)
    globals()[name] = value  # once: later uses are plain lookups
    return value


# A trained model: a run folder (its best.keras or model.keras: `checkpoint=`), a `.keras` file, or a live
# `keras.Model`.
Trained = Union[str, os.PathLike, "keras.Model"]
# Data by name: a path (.npz, .csv, .tfrecord, an image folder), {input/output name: array},
# or (x, y) for a model with one input and one output.
DataSource = Union[str, os.PathLike, Mapping[str, "np.ndarray"], tuple["np.ndarray", "np.ndarray"]]  # noqa: UP007
Progress = Literal["auto", "bar", "line", "none"]
# -D NAME=VALUE as a mapping: file-level constants of the spec replaced before it is checked.
Defines = Mapping[str, object]
# Which of a run folder's two sets of weights: its best epoch by val_loss (best.keras, kept when the run
# had validation data) or its last (model.keras). None: best when there is one, else last.
Checkpoint = Literal["best", "last"]
T = TypeVar("T")


# ------------------------------------------------------------------ reading and checking (no Keras)


def parse(text: str | bytes, *, filename: str = "<string>", include: Sequence[str | os.PathLike] = ()) -> Program:
    """Parse spec text, and the files it imports, into a `Program` (like `tomllib.loads`).

    `filename`: the name diagnostics show (and the folder imports are read
    from); `include`: further folders imports may read from. Raises
    `SpecError` with every syntax error and unreadable import.
    """
    return load_text(text, filename, list(include))


def parse_file(spec: str | os.PathLike, *, include: Sequence[str | os.PathLike] = ()) -> Program:
    """Parse a `.net` file, and the files it imports, into a `Program` (like `tomllib.load`).

    Raises `SpecError` (a file that cannot be read, a syntax error).
    """
    return load_file(spec, list(include))


def check(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    include: Sequence[str | os.PathLike] = (),
    defines: Defines | None = None,
) -> list[Diagnostic]:
    """Every diagnostic of a spec, in file order; an empty list when it is clean. No Keras.

    Never raises for what the spec holds: an unreadable file, a syntax error
    or a spec too deep to check come back as diagnostics too. Raises
    `UsageError` only for arguments that cannot work (spec text as `spec`).
    """
    spec, text = _legacy_text(spec, text, filename, "check")
    return pipeline.check(spec, text=text, filename=filename, include=include, defines=defines).diagnostics


def format(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,  # noqa: A001 - the API's name
    filename: str | None = None,
) -> str:
    """The canonical formatting of a spec (what `netdsl fmt` writes), comments kept.

    `spec`: a path (its file is read) or a `Program` (its root file's text);
    or the text itself as `text=`. Raises `SpecError` when it does not parse.
    """
    from netdsl.syntax.formatter import format_text
    from netdsl.syntax.source import read_source

    spec, text = _legacy_text(spec, text, filename, "format")
    if text is not None:
        if spec is not None:
            raise UsageError("give the spec once: a path or a Program as `spec`, or its text as `text=`")
        shown = filename if filename is not None else "<string>"
        if isinstance(text, bytes):
            from netdsl.syntax.parser import decode_source

            text = decode_source(text, shown)
        return format_text(text, shown)
    if isinstance(spec, Program):
        return format_text(spec.texts[spec.root], spec.root)
    shown = os.fspath(pipeline.spec_path(spec, filename))
    return format_text(read_source(Path(shown), shown), shown)


def _legacy_text(
    spec: Spec | None, text: str | bytes | None, filename: str | None, function: str
) -> tuple[Spec | None, str | bytes | None]:
    """`check(text, filename=...)` and `format(text, filename=...)`, the spellings before the
    `text=` keyword: still read as text, with a DeprecationWarning."""
    if text is None and filename is not None and isinstance(spec, (str, bytes)):
        warnings.warn(
            f"netdsl.{function}(text, filename=...) is deprecated: pass the text as text=",
            DeprecationWarning,
            stacklevel=3,
        )
        return None, spec
    return spec, text


# ------------------------------------------------------------------ models (Keras)


def build(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    model: str | None = None,
    include: Sequence[str | os.PathLike] = (),
    param_limit: int | None = None,
    backend: str | None = None,
    defines: Defines | None = None,
    weights: str | os.PathLike[str] | None = None,
) -> keras.Model:
    """One model of a spec as a `keras.Model`, compiled when the spec has a `train` section.

    `model`: the model's name (may be left out when the file declares one).
    `param_limit`: refuse a layer with more parameters than this (default:
    `netdsl.limits.MAX_PARAMS`). `backend`: "tensorflow", "jax" or "torch", Keras'
    backend for this process; it must be chosen before Keras is first
    imported (else `BackendError`). Raises `SpecError` with every error,
    Keras' refusals included, at the spec's line and column. `weights`: a
    `.keras` or `.weights.h5` file the whole model's weights are loaded from,
    as the train section's `init = "FILE"` loads them (read as arrays only;
    `UsageError` naming a layer the file has no weights, or other shapes, for;
    `netdsl.errors.FileRefused`, a UsageError, for a file refused for what it holds:
    links, external storage, a virtual dataset, a shape or zip bomb).
    """
    checked = pipeline.LoadedSpec.load(spec, text=text, filename=filename, include=include, defines=defines).model(
        model, param_limit=param_limit
    )
    return pipeline.build(checked, backend=backend, weights=weights)[1][checked.name]


def build_all(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    include: Sequence[str | os.PathLike] = (),
    param_limit: int | None = None,
    backend: str | None = None,
    defines: Defines | None = None,
    weights: str | os.PathLike[str] | None = None,
) -> dict[str, keras.Model]:
    """Every model of a spec: `{name: keras.Model}` in file order (keywords as for `build`;
    `weights` is loaded into every model)."""
    checked = pipeline.LoadedSpec.load(spec, text=text, filename=filename, include=include, defines=defines).models(
        param_limit=param_limit
    )
    return pipeline.build(checked, backend=backend, weights=weights)[1]


def summary(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    model: str | None = None,
    include: Sequence[str | os.PathLike] = (),
    param_limit: int | None = None,
    backend: str | None = None,
    defines: Defines | None = None,
    weights: str | os.PathLike[str] | None = None,
    cost: bool = False,
    batch: int | None = None,
    precision: str | None = None,
) -> dict[str, ModelSummary]:
    """What `netdsl summary --json` prints: per model (every model, or the one `model` names)
    its parameters, trainable and frozen (non-trainable) parameters, number of layers and output
    shapes (batch axis left out). `weights` as for `build`.

    `cost=True` adds "cost" (`summary --cost --json`): MACs and FLOPs, parameter and activation bytes,
    forward and training-step FLOPs, inference and training memory peaks, per model and per layer,
    for `batch` samples (default: the train section's batch_size, else 32) under `precision`
    ("float32", "mixed_float16", "mixed_bfloat16"; default: the train section's). docs/cost.md.

    Computed in pure Python, without importing Keras, when the shape inference is
    sure of every layer (as `render` is); built with Keras otherwise, and whenever
    `backend` or `weights` is given. The numbers are the same either way."""
    program = pipeline.load(spec, text=text, filename=filename, include=include, defines=defines)
    found = pipeline.summaries(
        program, pipeline.pick_models(program, model), param_limit=param_limit, backend=backend, weights=weights
    )
    summaries = {name: pipeline.model_summary(graph, split) for name, (graph, split) in found.items()}
    if cost:
        for name, (graph, _) in found.items():
            summaries[name]["cost"] = summary_cost(graph, batch=batch, precision=precision)
    return summaries


def fit_kwargs(trained: keras.Model) -> dict[str, object]:
    """`model.fit` keyword arguments from the `train` section of a model `build` made in this
    process (batch_size, epochs, validation_split, shuffle, fresh callbacks):
    `model.fit(x, y, **netdsl.fit_kwargs(model))`. `{}` for any other model."""
    from netdsl.backend import compiler

    return compiler.fit_kwargs(trained)


# ------------------------------------------------------------------ diagrams


def render(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    model: str | None = None,
    shapes: bool = True,
    depth: int | None = None,
    collapse_repeats: bool = True,
    cost: bool = False,
    batch: int | None = None,
    include: Sequence[str | os.PathLike] = (),
    defines: Defines | None = None,
) -> graphviz.Digraph:
    """The architecture diagram of one model as a `graphviz.Digraph` (shows inline in Jupyter).

    `shapes=True` shows each layer's output shape and parameter count, as
    Keras reports them: inferred in pure Python when that is certain, else
    from building the model with Keras; `shapes=False` draws the checked
    topology only. `depth`: fold block instances nested deeper than this (0:
    every block one box). `collapse_repeats`: draw `STEP * N` as one box
    marked xN (False: every copy). `cost`: each box's FLOPs a sample and output
    memory for `batch` (default: the train section's batch_size, else 32), the
    model's totals in the title (docs/cost.md). Raises `SpecError` when the
    spec has errors, `ValueError` for a negative depth, `UsageError` for
    `cost` without shapes.
    """
    if depth is not None and depth < 0:
        raise ValueError(f"Expected a depth of 0 or more, received: {depth}")
    program = pipeline.load(spec, text=text, filename=filename, include=include, defines=defines)
    name = pipeline.LoadedSpec(program).model(model).name
    return diagrams(
        program, [name], shapes=shapes, depth=depth, collapse_repeats=collapse_repeats, cost=cost, batch=batch
    )[name]


# ------------------------------------------------------------------ trained models


def decompile(trained: Trained, *, flat: bool = False, checkpoint: Checkpoint | None = None) -> str:
    """The spec of a Keras model, in `netdsl fmt` form (`netdsl decompile`). `trained`: a `.keras`
    file (read as data, without importing TensorFlow), a run folder (its weights as `evaluate` picks
    them: see `checkpoint`) or a live `keras.Model`.

    Repeated structure comes back as blocks and `* N` repeats unless `flat`.
    Raises `SpecError` naming every layer a spec cannot express.
    """
    from netdsl.decompiler import decompile_model

    return decompile_model(_run_weights(trained, checkpoint), flat=flat)


def _run_weights(trained: Trained, checkpoint: str | None) -> Trained:
    """A run folder as the .keras file of its weights (`RunFolder.weights`); anything else as it is."""
    from netdsl.training.run.runs import RunFolder, is_run_folder, refuse_checkpoint

    if is_run_folder(trained):
        return RunFolder.existing(trained).weights(checkpoint).path
    refuse_checkpoint(checkpoint, "a .keras file" if isinstance(trained, (str, os.PathLike)) else "a keras.Model")
    return trained


ExportFormat = Literal["onnx", "saved_model", "litert"]


def export(
    source: Spec | Trained,
    *,
    format: ExportFormat,  # noqa: A002 - named like the CLI flag
    out: str | os.PathLike | None = None,
    model: str | None = None,
    weights: str | os.PathLike | None = None,
    last: bool = False,
    verify: bool = True,
    data: DataSource | None = None,
    seed: int | None = None,
    include: Sequence[str | os.PathLike] = (),
    checkpoint: Checkpoint | None = None,
) -> Path:
    """Export a model to ONNX, SavedModel or LiteRT (`netdsl export`) and, with `verify`, run the
    file in that format's own runtime next to Keras.

    `source`: a spec (a path or `Program`, built with fresh weights or those of
    `weights=FILE.keras`; `model` picks one of its models), a run folder (its
    weights as `evaluate` picks them: `checkpoint` "best" or "last", by default best when
    the run had validation data; `last=True` is `checkpoint="last"`), a `.keras` file, a Lightning
    checkpoint of `netdsl.lightning.SpecModule` (`.ckpt`: the spec it holds, its weights), or a
    live `keras.Model`. `out`: the file (a folder for saved_model); by default
    `<model>.onnx`, `<model>_saved_model` or `<model>.tflite` in the run folder,
    beside the .keras file, or in the current folder. Returns the path written.
    Raises `ExportError` (one line) for what cannot be exported and
    `VerifyFailed` when the file's outputs differ from Keras' beyond the
    format's tolerance (1e-5; LiteRT 1e-4). `data`: verify on its first 32
    samples instead of seeded inputs. `seed`: a spec's fresh weights are drawn
    from it (the same seed, the same weights and outputs).
    """
    from netdsl.deploy import export_model

    if last and checkpoint not in (None, "last"):
        raise UsageError("last=True is checkpoint='last'; give one of them")
    return export_model(
        source,
        format=format,
        out=out,
        model=model,
        weights=weights,
        checkpoint="last" if last else checkpoint,
        check=verify,
        include=list(include),
        data=data,
        seed=seed,
    ).path


def train(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    model: str | None = None,
    data: DataSource | None = None,
    split: Sequence[float] | None = None,
    train: DataSource | None = None,
    val: DataSource | None = None,
    test: DataSource | None = None,
    targets: Mapping[str, str] | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    out: str | os.PathLike = "runs",
    resume: str | os.PathLike | None = None,
    progress: Progress = "none",
    tensorboard: bool = False,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    include: Sequence[str | os.PathLike] = (),
    backend: str | None = None,
    defines: Defines | None = None,
    init_from: str | os.PathLike[str] | None = None,
    features: Sequence[str] | None = None,
    drop: Sequence[str] | None = None,
    devices: int | None = None,
    plugins: Sequence[str] = (),
    on_start: Callable[[Path, int], None] | None = None,
    max_memory: int | str | None = None,
    track: str | None = None,
) -> Run:
    """Train one model of a spec in a new run folder `out/<model>-N/`; the engine of `netdsl train`.

    `data` (cut by `split`, default 0.8/0.1/0.1) or `train` [+ `val`,
    `test`]: see `DataSource`. `targets`: {output name: CSV column}.
    `epochs`, `batch_size`: override the spec's `train` section. `seed`:
    the same seed gives the same weights. `resume`: "auto" (the newest
    unfinished run of this model in `out`) or a run folder. `progress`:
    "none", "line", "bar" or "auto" (a bar on a terminal), on stderr.
    `backend` as for `build`. Returns a `Run` (`.dir`, `.model`, `.history`
    {metric: per epoch}, `.report`). Raises `SpecError`, `DataError` (bad
    data), `RunError` (a run folder that cannot be made or resumed) or `UsageError`.
    `defines`: {constant: value} replacing file-level `let`s (`-D`), recorded in config.json.
    `init_from`: a `.keras`/`.weights.h5` file the whole model starts from (`--init-from`, loaded as
    `build`'s `weights`), recorded in config.json's settings.
    `features`: the CSV columns that form the input, in that order (`--features`); `drop`: CSV columns
    left out of it (`--drop`). A CSV label column of names trains on their sorted order; the columns used
    and the class names are recorded in config.json, and evaluate, predict and export read them.
    `devices`: train on N devices of this process (GPUs, or the CPU split in N; `--devices`).
    `plugins`: modules that register layers or activations (`--plugin`), imported with the installed
    plugins once the backend is loaded (the spec is checked after them). `on_start(folder, first_epoch)`:
    told the run folder when the run starts (first_epoch 0, or the epoch a resumed run goes on after).
    `max_memory`: bytes, or a size ("12GiB", "800MB"; `--max-memory`): a batch whose estimated training peak
    is over it is refused before anything is built, naming the largest batch that fits (docs/cost.md).
    `track`: "mlflow:<tracking URI>" or "tensorboard:<folder>", the run pushed as it trains (`--track`,
    docs/runs.md); a server that is down is a `DataWarning`, never a failed run.
    """
    from netdsl.training.data.request import DataRequest, check_columns
    from netdsl.training.run.settings import TrainRequest, resolve

    if track is not None:
        from netdsl.tracking.push import check_uri

        check_uri(track, "--track")  # before anything loads or trains
    program = pipeline.load(spec, text=text, filename=filename, include=include)
    request = TrainRequest(
        spec=program,
        model=model,
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        out=out,
        resume=resume,
        progress=progress,
        tensorboard=tensorboard,
        include=list(include),
        callbacks=list(callbacks),
        defines=dict(defines or {}),
        init_from=init_from,
        max_memory=memory_bytes(max_memory),
        data=DataRequest(
            data=data,
            split=tuple(split) if split is not None else None,
            train=train,
            val=val,
            test=test,
            targets=dict(targets or {}),
        ),
    )
    request.data.features, request.data.drop = check_columns(features, drop)
    if plugins:  # a plugin imports Keras: the backend first, then the plugins, then the spec that names them
        distribution = _train_backend(backend, devices)
        load_plugins(plugins, spec=program.root)
    config = resolve(request)  # without plugins: the spec and the settings checked before TensorFlow loads
    if not plugins:
        distribution = _train_backend(backend, devices)
    config.on_start = on_start
    from netdsl.training.run.engine import run_training

    if track is None:
        return run_training(config, distribution)
    from netdsl.tracking.live import Tracker

    tracker = Tracker.attach(track, config)
    try:
        return run_training(config, distribution)
    finally:
        tracker.finish()


def _train_backend(backend: str | None, devices: int | None) -> Any:
    """Keras on `backend` for a run in this process: on `devices` (the Distribution, None for one device)
    as `netdsl train` sets them up, or as Keras is (None)."""
    if devices is None:
        _backend(backend)
        return None
    from netdsl.training.scale.distribute import set_up
    from netdsl.training.scale.topology import resolve_topology

    return set_up(resolve_topology(backend, devices, None, None, None, {}))  # this process only: no job


def evaluate(
    trained: Trained,
    *,
    data: DataSource | None = None,
    batch_size: int | None = None,
    targets: Mapping[str, str] | None = None,
    backend: str | None = None,
    split: Literal["test", "val", "train"] = "test",
    spec: Spec | None = None,
    model: str | None = None,
    include: Sequence[str | os.PathLike] = (),
    checkpoint: Checkpoint | None = None,
    trust: bool = False,
) -> dict[str, float | list[float]]:
    """The loss and metrics of a trained model on `data`: {"loss": ..., metric: ...}; a metric of one
    value per class (f1_score without `average`) is a list. A run folder (or a .keras file in one) is
    scored with the loss and metrics of the spec it recorded, when that spec is unchanged (Keras saves
    some losses without their arguments: Huber's `delta`).

    A run folder's weights: `checkpoint` "best" (best.keras, its best epoch by val_loss) or "last"
    (model.keras); by default best when the run had validation data, else last: the weights
    `export`, `predict`, `decompile` and train's test scores use too.

    Without `data`, a run folder's own `split` ("test", "val" or "train"), cut
    as its training cut it. `batch_size`: default the run's (32 for a `.keras`
    file; for an exported file, that of the run folder it sits in). `targets` as for
    `train`. `trained` may also be an exported file
    (`.onnx`, `.tflite`, a SavedModel folder), run in its own runtime and scored
    with the loss and metrics of `spec`'s train section (default: the spec of
    the run folder the file is in; `model`: its model, by default the one the
    file records or the spec's only one; `include`: further folders its imports read from);
    `data` is then required. A SavedModel folder is a program: netdsl runs it only when it is
    this user's own and its graph holds only the compute ops Keras models export to, or with
    `trust=True` (an exported file's run folder must be this user's own too; docs/export.md).
    Raises `DataError`, `RunError`, `ExportError`, or `TrainingError` for a model without a loss."""
    opened = open_trained(trained, checkpoint=checkpoint, trust=trust)
    opened.use_backend(backend, scoring=True)
    return opened.evaluate(
        data, batch_size=batch_size, targets=targets, split=split, spec=spec, model=model, include=include
    )


def predict(
    trained: Trained,
    *,
    data: DataSource,
    batch_size: int | None = None,
    targets: Mapping[str, str] | None = None,
    backend: str | None = None,
    checkpoint: Checkpoint | None = None,
    trust: bool = False,
) -> Predictions:
    """The model's outputs on `data`'s inputs, named: a `Predictions`, a mapping {output name: array} with
    `.sources` (each sample's name: an image's path relative to the folder given, a CSV row's line, an
    array index), `.classes` ({output: class names} of the classifier outputs), `.labels` (the predicted
    class names), `.predicted(output)`, `.columns()` and `.write(path)` (.csv, .npz or .json).
    Keywords as for `evaluate`.

    `data`: an image folder (class sub-folders or not, searched recursively), one image file, a CSV
    file or an `.npz` (no label columns needed), or arrays. A run's CSV columns and class names are
    those its config.json records; an exported file's, those its metadata records.
    An exported file (`.onnx`, `.tflite`, a SavedModel folder) runs in its own
    runtime; ONNX and LiteRT load neither Keras nor TensorFlow (data from
    `.npz`, `.csv` or arrays). `trust=True`: run a SavedModel whose graph holds
    ops outside netdsl's allow-list (see `evaluate`)."""
    opened = open_trained(trained, checkpoint=checkpoint, trust=trust)
    opened.use_backend(backend, scoring=False)
    return opened.predict(data, batch_size=batch_size, targets=targets)


def open_trained(trained: Trained, *, checkpoint: Checkpoint | None = None, trust: bool = False) -> TrainedModel:
    """A run folder, a `.keras` file, a `keras.Model` or an exported file (`.onnx`, `.tflite`, a SavedModel
    folder) behind one interface (`netdsl.trained.TrainedModel`): `.classes`, `.signature`, `.predict(data)`,
    `.evaluate(data)` (keywords as for `evaluate` and `predict`), `.weights_line`. `checkpoint` and `trust`
    as for `evaluate`; a `UsageError` where they do not apply. Nothing loads until it is used."""
    from netdsl.trained import open_trained as opened

    return opened(trained, checkpoint=checkpoint, trust=trust)


# ------------------------------------------------------------------ sweeps


def sweep(
    spec: Spec,
    *,
    model: str | None = None,
    data: DataSource | None = None,
    split: Sequence[float] | None = None,
    train: DataSource | None = None,
    val: DataSource | None = None,
    test: DataSource | None = None,
    targets: Mapping[str, str] | None = None,
    trials: int | None = None,
    workers: int = 1,
    storage: str | None = None,
    study: str | None = None,
    seed: int | None = None,
    out: str | os.PathLike = "sweeps",
    resume: str | os.PathLike | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    defines: Defines | None = None,
    include: Sequence[str | os.PathLike] = (),
    echo: bool = False,
    features: Sequence[str] | None = None,
    drop: Sequence[str] | None = None,
    plugins: Sequence[str] = (),
    join: str | os.PathLike | None = None,
    track: str | None = None,
) -> SweepResult:
    """Search the constants of a spec's `sweep MODEL { ... }` section with Optuna; the same as `netdsl sweep`.

    Each trial is an ordinary run in `<out>/<model>-sweep-N/trials/<k>/` trained with the trial's
    parameters as defines. `trials`: the study's total (default: the spec's `trials`, else 10);
    `workers`: processes sharing the study (the spec and data must then be paths); `storage`: a
    database URL (`postgresql://...`, `sqlite:///...`; default: the environment's NETDSL_SWEEP_STORAGE,
    else SQLite in the sweep folder) that workers on many machines share under one `study` name (a
    password in it is never written: docs/sweeps.md); `resume`: "auto" or a sweep folder, to
    finish a sweep that was stopped or killed. Returns a `SweepResult` (`.dir`, `.trials`, `.best`).
    Raises `SpecError` (the spec or its sweep section), `TrainingError` (data, storage) or
    `UsageError` (a flag that cannot work). `features`, `drop`: a CSV's input columns, as for `train`.
    `plugins`: modules that register layers or activations (`--plugin`), loaded with the installed plugins
    first and by each of the `workers`. `join`: the sweep folder this process works on as one of its
    `workers` (how `netdsl sweep --workers K` starts them).
    `track`: "mlflow:<tracking URI>" or "tensorboard:<folder>", the sweep pushed as its trials train
    (`--track`, docs/runs.md); a server that is down is a `DataWarning`, never a failed sweep.
    """
    from netdsl.training.data.request import DataRequest, check_columns
    from netdsl.tuning.runner import SweepRequest, resolve_sweep, run_sweep

    request = SweepRequest(
        spec=spec,
        model=model,
        trials=trials,
        workers=workers,
        storage=storage,
        study=study,
        seed=seed,
        out=out,
        resume=resume,
        epochs=epochs,
        batch_size=batch_size,
        defines=dict(defines or {}),
        include=list(include),
        echo=echo,
        plugins=list(plugins),
        join=join,
        data=DataRequest(
            data=data,
            split=tuple(split) if split is not None else None,
            train=train,
            val=val,
            test=test,
            targets=dict(targets or {}),
        ),
    )
    request.data.features, request.data.drop = check_columns(features, drop)
    if track is not None:
        from netdsl.tracking.push import check_uri

        check_uri(track, "--track")  # before the plugins load and the sweep folder is made
    if plugins:  # before the spec is checked: it may name their layers
        load_plugins(plugins, spec=spec if isinstance(spec, (str, os.PathLike)) else spec.root)
    if track is None:
        return run_sweep(resolve_sweep(request))
    from netdsl.tracking.live import Tracker

    config = resolve_sweep(request)
    tracker = Tracker.attach_sweep(track, config)
    try:
        return run_sweep(config)
    finally:
        tracker.finish()


def show_sweep(folder: str | os.PathLike, *, storage: str | None = None) -> SweepResult:
    """The whole study of a sweep folder (every worker's trials), read from its storage."""
    from netdsl.tuning.show import read_sweep

    return read_sweep(folder, storage=storage)


# ------------------------------------------------------------------ runs (docs/runs.md)


def runs(folder: str | os.PathLike = ".") -> list[Run]:
    """The run folders at or under `folder` (not a sweep's trials: `show_sweep`), newest first, each read
    back as a `Run` (`.dir`, `.history`, `.report`, `.config`, `.epochs`; `.model` None). A folder another
    account owns or may write into is passed over, as `netdsl runs` passes over it with a warning."""
    from netdsl.tracking.found import find

    found = find(folder)
    return sorted(found.runs, key=lambda run: (str(run.config.get("created", "")), run.name), reverse=True)


def open_run(folder: str | os.PathLike) -> Run:
    """A run folder read back as a `Run`, as `train` returned it (the model left out: `weights`-reading
    commands take the folder). Raises `RunError` for a folder that is not this user's own run."""
    from netdsl.training.run.record import open_run as opened

    return opened(Path(folder))


# ------------------------------------------------------------------ plugins


def register_layer(name: str, *, description: str | None = None) -> Callable[[T], T]:
    """A class decorator: the Keras layer class becomes the layer `name` specs may use, its
    parameters read from `__init__` (`description`: for `netdsl layers`; default: the class
    docstring's first line). For the person running netdsl (`--plugin MODULE`, or the
    `netdsl.layers` entry point), never because a spec says so."""
    return plugins.register_layer(name, description)


def register_activation(name: str, *, description: str | None = None) -> Callable[[T], T]:
    """A function decorator: the function becomes the activation `name` (as `register_layer`)."""
    return plugins.register_activation(name, description)


def load_plugins(modules: Sequence[str] = (), *, spec: str | os.PathLike = "netdsl") -> None:
    """Load the installed plugins (the `netdsl.layers` entry points) and the `modules` (`--plugin`).

    A plugin that cannot be imported, or that registers a name it may not take, is a
    `SpecError` of one line about `spec` (the file the plugins were loaded for).
    """
    from netdsl.backend.runtime import muted_stderr  # imports nothing heavy

    for what, load in [("installed plugins", plugins.load_entry_points)] + [
        (f"plugin '{module}'", lambda module=module: plugins.load_plugins([module])) for module in modules
    ]:
        try:
            with muted_stderr():  # a plugin imports Keras: TensorFlow's start-up lines are not ours to print
                load()
        except Exception as exc:  # a missing module, a plugin's own error, or a name refused
            message = str(exc).splitlines()[0] if str(exc) else ""
            raise SpecError(
                Diagnostic.for_file(os.fspath(spec), f"cannot load {what}: {type(exc).__name__}: {message}")
            ) from None


def _backend(backend: str | None) -> None:
    if backend is not None:
        pipeline.start_backend(backend, mute_stderr=False)


# ------------------------------------------------------------------ for the command line (not in __all__)
# netdsl.cli is a skin over this module: what its commands need beyond the functions above, each a door
# into the room that owns it, so that cli/ imports the API and nothing deeper (tests/test_architecture.py).


def memory_bytes(size: int | str | None) -> int | None:
    """`max_memory` / `--max-memory` as bytes: a whole number, or a size such as 12GiB or 800MB."""
    from netdsl.semantics.train_checks import memory_size

    if size is None or (isinstance(size, int) and not isinstance(size, bool) and size >= 1):
        return size
    found = memory_size(size) if isinstance(size, str) else None
    if found is None:
        raise UsageError(f"--max-memory expects a size such as 12GiB or 800MB, received {printable(str(size))}")
    return found


def parse_defines(items: Sequence[str], spec: str | os.PathLike) -> dict[str, object]:
    """`-D NAME=VALUE` items as `defines`; a `SpecError` about `spec` for an item that is none."""
    from netdsl.semantics.defines import parse_defines as parse

    return parse(list(items), os.fspath(spec))


def run_weights(trained: Trained, checkpoint: Checkpoint | None) -> Trained:
    """The `.keras` file of a run folder's weights (`checkpoint`, as `evaluate` picks them), or `trained` as
    it is (a `checkpoint` for anything else is a `UsageError`)."""
    return _run_weights(trained, checkpoint)


def weights_line(trained: Trained, checkpoint: Checkpoint | None) -> str | None:
    """The line saying which weights of a run folder a command uses (`weights: best.keras ...`); None for
    anything else (a spec `export` builds, a `.keras` file)."""
    from netdsl.trained import weights_line as line

    return line(trained, checkpoint)


def summary_report(
    program: Program,
    model: str | None,
    *,
    backend: str | None = None,
    weights: str | None = None,
    plugins: Sequence[str] = (),
    cost: bool = False,
    batch: int | None = None,
    precision: str | None = None,
) -> dict[str, tuple[dict[str, Any], str]]:
    """What `netdsl summary` prints, per model: its numbers (`--json`; "cost" with `cost`) and its table. No
    backend is imported when the pure-Python inference is sure of every model and neither a backend,
    weights nor plugins are asked for (model_report.py)."""
    from netdsl.model_report import summaries, summary_report

    found = summaries(
        program,
        model,
        backend=backend,
        weights=weights,
        plugins=bool(plugins),
        load_plugins=lambda: load_plugins(plugins, spec=program.root),
    )
    return summary_report(found, cost=cost, batch=batch, precision=precision)


def build_files(
    program: Program,
    model: str | None,
    out: str,
    *,
    backend: str | None = None,
    weights: str | None = None,
    param_limit: int | None = None,
    diagram: bool = True,
    plugins: Sequence[str] = (),
) -> Iterator[str]:
    """What `netdsl build` does and prints: each model built, written as `out/<model>.keras` and drawn as
    `out/<model>.svg`, the lines to print yielded as each file is written (model_report.py)."""
    from netdsl.model_report import build_files as build

    return build(
        program,
        model,
        out,
        backend=backend,
        weights=weights,
        param_limit=param_limit,
        diagram=diagram,
        load_plugins=lambda: load_plugins(plugins, spec=program.root),
    )


def layer_listing(kind: str | None = None) -> list[str]:
    """What `netdsl layers` prints: the entries of `kind` (default: layers and activations), each with its
    first parameters, short names and description."""
    from netdsl.layer_listing import DEFAULT_KINDS, listing

    return listing((kind,) if kind else DEFAULT_KINDS)


def layer_entry(name: str) -> list[str]:
    """What `netdsl layers NAME` prints: every entry called `name`, in full (a `UsageError` for an unknown one)."""
    from netdsl.layer_listing import entry_lines

    return entry_lines(name)


@dataclass(frozen=True)
class RunsListing:
    """What `netdsl runs DIR` prints: one entry per run and sweep (`json`: `--json`'s objects, `table`: the
    lines), and a warning line per folder passed over."""

    json: list[dict[str, Any]]
    table: list[str]
    warnings: list[str]


def runs_listing(folder: str | os.PathLike) -> RunsListing:
    """The runs and sweeps at or under `folder`, newest first (tracking/listing.py)."""
    from netdsl.tracking import listing
    from netdsl.tracking.found import find

    found = find(folder)
    entries = listing.entries(found, Path(folder))
    return RunsListing(
        [entry.as_json() for entry in entries], listing.table(entries) if entries else [], list(found.warnings)
    )


@dataclass(frozen=True)
class RunsComparison:
    """What `netdsl runs compare` prints: the runs side by side (`table`, or `json`) and, with `plot`, their
    curves overlaid."""

    runs: list[Run]
    json: dict[str, Any]
    table: list[str]

    def plot(self, target: str | os.PathLike) -> Path:
        """The runs' curves overlaid, written to `target` (its suffix gives the format); the path written."""
        from netdsl.tracking.compare import plot

        return plot(self.runs, Path(target))


def runs_compared(paths: Sequence[str | os.PathLike]) -> RunsComparison:
    """The run folders `paths` read back and compared: settings and metrics, what differs marked."""
    from netdsl.tracking import compare

    runs = [open_run(path) for path in paths]
    found = {
        "runs": [str(run.dir) for run in runs],
        "differ": compare.differing(runs),
        "settings": {run.name: compare.settings(run) for run in runs},
        "metrics": {run.name: compare.metrics(run) for run in runs},
    }
    return RunsComparison(runs, found, compare.table(runs))


def push_runs(paths: Sequence[str | os.PathLike], to: str, experiment: str = "netdsl") -> tuple[Any, str]:
    """Every run and sweep under `paths` pushed to `to` (`netdsl runs push`): what it changed (a `PushCount`)
    and the URI as it may be shown (a password left out)."""
    from netdsl.tracking.push import push
    from netdsl.tracking.pushed import shown_uri

    return push(list(paths), to, experiment), shown_uri(to)


def check_track(uri: str) -> None:
    """`--track`'s URI checked before anything starts (a `UsageError` for one netdsl cannot push to)."""
    from netdsl.tracking.push import check_uri

    check_uri(uri, "--track")


def track_run(uri: str, config: TrainConfig) -> Callable[[], None]:
    """The run `config` describes pushed to `uri` as it trains (`--track`; a job's process 0): the tracker
    attached to `config`; the function returned pushes the run whole once it ended."""
    from netdsl.tracking.live import Tracker

    return Tracker.attach(uri, config).finish


def model_names(program: Program, model: str | None) -> list[str]:
    """The models a command works on: the one `model` names, else every model of the spec (a `SpecError`
    for a name the spec does not define)."""
    return pipeline.pick_models(program, model)


def diagrams(
    program: Program,
    names: list[str],
    *,
    shapes: bool = True,
    depth: int | None = None,
    collapse_repeats: bool = True,
    cost: bool = False,
    batch: int | None = None,
    mute_tensorflow: bool = False,
) -> dict[str, graphviz.Digraph]:
    """The diagram of each model `names` lists (see `render`); `mute_tensorflow`: TensorFlow's start-up
    notices kept off stderr, when a shape needs Keras."""
    if cost and not shapes:
        raise UsageError("--cost needs the shapes: leave out --no-shapes")
    graphs = pipeline.model_graphs(program, names, shapes, mute_tensorflow=mute_tensorflow)
    return {
        name: pipeline.draw(
            graphs[name],
            shapes=shapes,
            depth=depth,
            collapse_repeats=collapse_repeats,
            cost=costed(graphs[name], batch=batch) if cost else None,
        )
        for name in names
    }


def write_diagram(diagram: graphviz.Digraph, path_without_suffix: str | os.PathLike, fmt: str) -> Path:
    """`diagram` written as `<path_without_suffix>.<fmt>` (svg, png, pdf or dot); `RenderError` when Graphviz's
    `dot` is missing or fails (the `.dot` source is written instead)."""
    from netdsl.diagram.render import write_diagram as write  # graphviz: only when drawing

    return write(diagram, path_without_suffix, fmt)


def spec_text(path: str) -> str:
    """The text of the spec file `path` as the checker reads it (bounded, UTF-8, a BOM dropped), or a
    `SpecError` about `path` saying why not."""
    from netdsl.syntax.source import read_source

    return read_source(Path(path), path)


def check_file(
    path: str, *, include: Sequence[str | os.PathLike] = (), defines: Mapping[str, object] | None = None
) -> pipeline.Checked:
    """`check` of the spec file `path` as typed on the command line (shown unchanged), with the sources
    its diagnostics point into."""
    return pipeline.check(pipeline.TypedPath(path), include=include, defines=defines)


def verify_decompiled(model_file: str, text: str, *, flat: bool, filename: str) -> RoundTrip:
    """`decompile --verify`: the `.keras` file loaded in Keras' safe mode and the spec `text` rebuilt next
    to it; the round trip's result (`.ok`, `.lines()`)."""
    from netdsl.backend.runtime import quiet_tensorflow

    quiet_tensorflow()
    from netdsl.backend.inspection import load_saved
    from netdsl.decompiler.verify import verify_round_trip

    result, _ = verify_round_trip(load_saved(model_file), text, flat=flat, filename=filename)
    return result


def export_report(
    source: Spec | Trained,
    *,
    format: ExportFormat,  # noqa: A002 - named like the CLI flag
    out: str | os.PathLike | None,
    model: str | None,
    weights: str | os.PathLike | None,
    checkpoint: Checkpoint | None,
    verify: bool,
    include: Sequence[str | os.PathLike],
    data: DataSource | None,
    seed: int | None,
) -> Exported:
    """`export`, the runtimes' C++ chatter on stderr muted, returning what `netdsl export` prints: the file
    written (`.path`, `.format`), the notes on what it changed, and the verification (None without)."""
    from netdsl.deploy import export_model

    return export_model(
        source,
        format=format,
        out=out,
        model=model,
        weights=weights,
        checkpoint=checkpoint,
        check=verify,
        include=list(include),
        quiet=True,
        data=data,
        seed=seed,
    )


def sweep_table(result: SweepResult) -> str:
    """A sweep's trials as `netdsl sweep` prints them: sorted by the objective, best first, aligned (several
    objectives: the Pareto front, then every trial)."""
    from netdsl.tuning.records import show_table

    return show_table(result)


def sweep_json(result: SweepResult) -> dict[str, Any]:
    """A sweep as `netdsl sweep --json` prints it: its objectives, every trial with each objective's value
    and whether it is on the Pareto front, the front's trial numbers (sorted) and the best trial's."""
    from netdsl.tuning.records import sweep_json as as_json

    return as_json(result)


def graphviz_hint() -> str:
    """How to install Graphviz's `dot` program (the diagrams need it)."""
    from netdsl.diagram.render import INSTALL_HINT

    return INSTALL_HINT


def write_starter(folder: str | os.PathLike) -> list[Path]:
    """`netdsl init`: `digits.net` and `digits.npz` written in `folder`, never over a file; the paths written.
    Raises `StarterError` (a `NetdslError`) or `OSError`."""
    from netdsl.starter import write_starter as write

    return write(folder)


def example_specs() -> dict[str, str]:
    """The example specs that ship with netdsl: {name: the first sentence of its leading comment}."""
    from netdsl.starter import examples

    return examples()


def copy_example(name: str, folder: str | os.PathLike) -> list[Path]:
    """The example spec `name` (and the files it imports) copied into `folder`; the paths written.
    Raises `StarterError` (a `NetdslError`) or `OSError`."""
    from netdsl.starter import copy_example as copy

    return copy(name, folder)


def backend_packages(environ: Mapping[str, str]) -> tuple[str, dict[str, tuple[str, ...]]]:
    """`netdsl --version`: the backend `environ` chooses, and each backend's distributions (first found shown)."""
    from netdsl.backend import profiles  # the table alone (pure Python): no backend is imported

    return profiles.chosen(None, environ), {name: p.packages for name, p in profiles.PROFILES.items()}


def zoo_listing() -> list[str]:
    """`netdsl zoo list`: a line per keras.applications family (whether a spec can import it), then the cache."""
    from netdsl.errors import printable
    from netdsl.zoo.catalog import FAMILIES
    from netdsl.zoo.weights import cache_folder, zoo_specs

    width = max(len(found.name) for found in FAMILIES)
    lines = [
        f"{found.name:<{width}}  {'spec' if found.name in zoo_specs() else 'weights only':<12}  "
        f"keras.applications.{found.constructor}, {found.input_size}x{found.input_size}, "
        f"preprocess {found.preprocess}"
        for found in FAMILIES
    ]
    return [*lines, f"weights cache: {printable(cache_folder())}"]


def zoo_description(name: str) -> list[str]:
    """`netdsl zoo show NAME`: the family's import line, input, preprocessing and files; a `NetdslError` (the
    nearest names) for an unknown one."""
    from netdsl.zoo.weights import describe, family

    return describe(family(name))


def zoo_fetch(
    name: str, *, include_top: bool = False, source: str | os.PathLike | None = None, progress: Any = None
) -> str:
    """`netdsl zoo fetch NAME`: the family's published weights in Keras' cache, checked by their pinned hash;
    the line saying which file it is. A `NetdslError` for one that cannot be had."""
    from netdsl.errors import printable
    from netdsl.zoo.weights import fetch

    weights = fetch(name, include_top=include_top, source=source, progress=progress)
    return f"{weights.name}: {printable(weights.path)} (sha256 {weights.sha256})"


def load_spec(
    path: str, *, include: Sequence[str | os.PathLike] = (), defines: Mapping[str, object] | None = None
) -> Program:
    """The spec file `path`, as typed on the command line (shown unchanged), read with its imports and
    `defines`: a `Program`, or a `SpecError`."""
    return pipeline.load(pipeline.TypedPath(path), include=include, defines=defines)


def split_flag(text: str) -> tuple[float, ...]:
    """`--split 0.8,0.1,0.1` as `split`; a `UsageError` naming the flag for anything else."""
    from netdsl.training.data.request import parse_split

    return parse_split(text)


def column_flags(features: str | None, drop: str | None) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """`--features` and `--drop` (comma-separated column names) as `features` and `drop`; their errors
    name the flags."""
    from netdsl.training.data.request import check_columns

    return check_columns(features, drop, ("--features", "--drop"))


def train_settings(**keywords: Any) -> TrainConfig:
    """`train`'s keywords checked and resolved (the spec, the model, the data flags) without training: the
    settings a process of a job trains with (`training/scale/job.run_in_job` needs them before the run)."""
    from netdsl.training.data.request import DataRequest
    from netdsl.training.run.settings import TrainRequest, resolve

    data = DataRequest(**{key: keywords.pop(key) for key in DataRequest.__dataclass_fields__})
    keywords["max_memory"] = memory_bytes(keywords.get("max_memory"))
    return resolve(TrainRequest(**keywords, data=data))


def shown_value(value: Any, spec: str) -> str:
    """A logged value as the commands print it: `0.8125`, or `[0.7500, 0.8571]` for one value per class."""
    from netdsl.training.run.report import shown_value as shown

    return shown(value, spec)


def report_weights_line(report: Mapping[str, Any]) -> str:
    """The line saying which weights a run's test scores were computed with (its `report.json`'s)."""
    from netdsl.training.run.runs import weights_line as line

    used = report.get("test_weights") or {}
    why = "no validation data, so no best epoch" if used.get("checkpoint") == "last" else None
    return line(
        str(used.get("checkpoint", "last")), used.get("epoch"), report.get("epochs_run"), used.get("val_loss"), why
    )
