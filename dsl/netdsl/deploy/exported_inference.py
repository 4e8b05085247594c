"""`predict` and `evaluate` on an exported file (`.onnx`, `.tflite`, a SavedModel folder), run in its runtime.

    predict("mlp.onnx", data="new.npz")                      -> {"logits": array (N, 10)}   (no Keras)
    evaluate("mlp.tflite", data="test.npz", spec="mlp.net")  -> {"loss": 0.31, "accuracy": 0.91}

The data is read by the file's input names (the spec's: export keeps them), with the
readers `train` uses; the outputs come from the file's runtime, batch by batch.
An exported file holds no train section, so `evaluate` takes the loss and metrics
from the spec (`spec=`, or the spec recorded by the run folder the file sits in), read
from its checked train section (no Keras model is built), and computes them in NumPy
on the runtime's outputs batch by batch, as `model.evaluate` does (scoring/);
what NumPy does not compute there (a plugin's loss or metric, ...) is scored by Keras'
own objects. The batch size is the run folder's when the file sits in one. The layers'
regularization penalties, which Keras adds to a trained model's loss, are not part
of an exported file and so not of its loss.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.deploy.errors import ExportError, SpecChangedWarning
from netdsl.deploy.exported_runtime import ExportedModel, exported_format, first_line, open_exported
from netdsl.deploy.formats import recorded_names
from netdsl.errors import ReportedError, RunError, UsageError
from netdsl.semantics.session import CheckedModel, LoadedSpec
from netdsl.training import (  # the training room's face, none of its modules (tests/test_architecture.py)
    CONFIG,
    DataNames,
    DataSource,
    Predictions,
    RunFolder,
    check_layout,
    check_source_labels,
    open_source,
    output_losses,
)

if TYPE_CHECKING:
    import keras

    from netdsl.syntax.loader import Program


def is_exported(where: Any) -> bool:
    """A path whose name or content says exported file (a run folder or a .keras file does not)."""
    return isinstance(where, (str, os.PathLike)) and exported_format(Path(where)) is not None


def output_batches(
    model: ExportedModel, source: DataSource, batch_size: int, with_targets: bool = False
) -> Iterator[tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]]:
    """The file's outputs batch by batch (and the targets read beside them), as the runtime gives them."""
    dtypes = {spec.name: object if spec.dtype == "string" else spec.dtype for spec in model.signature.inputs}
    for x, y in source.batches(np.arange(source.n), batch_size, with_targets):
        try:
            got = model.run({name: np.asarray(array, dtype=dtypes[name]) for name, array in x.items()})
        except Exception as exc:  # the runtime's own type: a shape or type the file does not take
            raise ExportError(
                f"{model.format.runtime} cannot run it on this data ({first_line(exc)})", file=str(model.path)
            ) from None
        yield got, y


def run_batches(
    model: ExportedModel, source: DataSource, batch_size: int, with_targets: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """The file's outputs on every sample of `source` (and the targets read beside them), concatenated."""
    outputs: dict[str, list[np.ndarray]] = {name: [] for name in model.signature.output_names}
    targets: dict[str, list[np.ndarray]] = {name: [] for name in model.signature.output_names}
    for got, y in output_batches(model, source, batch_size, with_targets):
        for name in outputs:
            outputs[name].append(got[name])
            if y is not None:
                targets[name].append(y[name])
    joined = {name: np.concatenate(parts) for name, parts in outputs.items()}
    return joined, ({name: np.concatenate(parts) for name, parts in targets.items()} if with_targets else None)


def run_batch_size(path: Path, batch_size: int | None) -> int:
    """`batch_size`, else the batch size of the run folder the file sits in, else 32 (as for a .keras file)."""
    if batch_size is not None:
        return batch_size
    from netdsl.training import DEFAULT_BATCH

    config = path.parent / CONFIG
    if not config.is_file():
        return DEFAULT_BATCH
    try:  # a config.json that is not a run's (another tool's, unreadable) leaves the default
        settings = RunFolder.existing(path.parent).read_json(CONFIG).get("settings")
    except RunError:
        return DEFAULT_BATCH
    found = settings.get("batch_size") if isinstance(settings, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else DEFAULT_BATCH


def predict_exported(
    where: str | os.PathLike,
    data: Any,
    batch_size: int | None,
    targets: dict[str, str] | None = None,
    trust: bool = False,
) -> Predictions:
    """`batch_size` None: the run folder's (see `run_batch_size`). Class names and CSV columns: those the
    file records (`exported_names`). `trust`: run a SavedModel whose graph holds ops outside the
    allow-list (`runtime.refuse_untrusted`)."""
    check_layout(data, need_targets=False)  # before a runtime loads the file
    path = Path(where)
    model = open_exported(path, trust=trust)
    names = exported_names(model)
    source = open_source(data, model.signature, targets, need_targets=False, names=names)
    outputs = run_batches(model, source, run_batch_size(path, batch_size))[0]
    return Predictions(outputs, source.row_names(np.arange(source.n)), dict(names.classes))


def exported_names(model: ExportedModel) -> DataNames:
    """What the file records of its run's data (`source.data_names_metadata`): the class names of its
    classifier outputs and the CSV columns of its input; a record that is not netdsl's is left out."""
    return recorded_names(model.metadata, model.signature.output_names)


def evaluate_exported(
    where: str | os.PathLike,
    data: Any,
    batch_size: int | None,
    targets: dict[str, str] | None = None,
    spec: Any = None,
    model_name: str | None = None,
    include: Sequence[str | os.PathLike[str]] = (),
    trust: bool = False,
) -> dict[str, float | list[float]]:
    """`model_name`: the spec's model (default: the one the file records, else the spec's only one).
    Scored in NumPy (scoring/); a train section with a loss or metric NumPy does not
    compute (`scoring.not_in_numpy`) is scored by Keras, which then loads. `trust` as for `predict_exported`."""
    path = Path(where)
    model = open_exported(path, trust=trust)
    loaded, name = _train_spec(path, model, spec, include)
    program = loaded.program
    if spec is not None:
        _warn_if_another_spec(path, model, program)
    if data is None:
        raise UsageError("evaluating an exported file needs --data SRC")
    checked = loaded.model(model_name or name)  # picked and checked once: scored, and built for Keras' scores
    graph = _scored_graph(checked, model)
    check_layout(data, need_targets=True)
    source = open_source(data, model.signature, targets, names=exported_names(model))
    check_source_labels(output_losses(graph), source, dict(targets or {}), program.sources())
    size = run_batch_size(path, batch_size)
    from netdsl.scoring import Scorer, ScoringError, not_in_numpy
    from netdsl.training import logged_value, loss_first

    if not_in_numpy(graph.train, graph.output_names) is not None:
        logs = _keras_scores(checked, model, source, size)
    else:
        scorer = Scorer.of(graph.train, graph.output_names)
        try:
            for got, wanted in output_batches(model, source, size, with_targets=True):
                assert wanted is not None  # with_targets: open_source checked the data holds them
                scorer.update(wanted, got)
        except ScoringError as exc:
            raise ReportedError(exc.message, file=program.root) from None
        logs = scorer.result()
    return {key: logged_value(logs[key]) for key in loss_first(list(logs))}


def _scored_graph(checked: CheckedModel, model: ExportedModel) -> Any:
    """The spec model's checked graph (no Keras), with a loss, whose outputs are the file's."""
    graph, picked, program = checked.graph, checked.name, checked.program
    if graph.train is None or graph.train.loss is None:
        raise ReportedError(
            f"the model '{picked}' has no loss to evaluate (its spec has no train section)", file=program.root
        )
    specs = [spec.name for spec in model.signature.outputs]
    if sorted(graph.output_names) != sorted(specs):
        raise ReportedError(
            f"the file's outputs ({', '.join(specs)}) are not those of the spec's model "
            f"'{picked}' ({', '.join(graph.output_names)})",
            file=str(model.path),
        )
    return graph


def _keras_scores(checked: CheckedModel, model: ExportedModel, source: Any, batch_size: int) -> dict[str, Any]:
    """Keras' own `evaluate` on the file's outputs, for a loss or metric NumPy does not compute here."""
    scorer = _scorer(checked, model)
    predicted, wanted = run_batches(model, source, batch_size, with_targets=True)
    assert wanted is not None  # with_targets: open_source checked the data holds them
    names = scorer.output_names
    return scorer.evaluate(
        [predicted[n] for n in names], [wanted[n] for n in names], batch_size=batch_size, return_dict=True, verbose=0
    )


def _train_spec(
    path: Path, model: ExportedModel, spec: Any, include: Sequence[str | os.PathLike[str]]
) -> tuple[LoadedSpec, str | None]:
    """The spec whose train section names the loss and metrics, and the model's name in it."""
    if spec is not None:
        return LoadedSpec.of(spec, include), model.metadata.get("netdsl_model")
    run = path.parent
    if not (run / CONFIG).is_file():
        raise UsageError(
            "an exported file holds no loss or metrics; give the spec with --spec SPEC.net "
            "(or keep the file in its run folder, whose spec is used)"
        )
    from netdsl.training import run_spec

    return run_spec(run, RunFolder.existing(run).read_json(CONFIG))


def _warn_if_another_spec(path: Path, model: ExportedModel, program: Program) -> None:
    """A `SpecChangedWarning` when the file records the sha256 of the spec it was exported from and the
    spec given to score it hashes otherwise: its loss and metrics may not be those the model trained with.
    (A file another tool wrote records none: nothing to compare.)"""
    recorded = model.metadata.get("netdsl_spec_sha256")
    if recorded is None:
        return
    from netdsl.training import spec_sha256

    if spec_sha256(program) != recorded:
        message = (
            f"{path}: the spec changed since export ({program.root}'s sha256 differs from the one the "
            "file records); scored with the spec as it is now"
        )
        warnings.warn(SpecChangedWarning(message), stacklevel=4)  # at the caller of netdsl.evaluate


def _scorer(checked: CheckedModel, model: ExportedModel) -> keras.Model:
    """A model that passes the file's outputs through, compiled with the spec's loss, weights and metrics,
    so that `evaluate` computes them as Keras computes them for the trained model (names included).
    Its inputs and outputs are in the spec's order (a LiteRT signature may list them in another)."""
    from netdsl.backend.compiler import build_one

    built = build_one(checked)
    if not built.compiled or built.loss is None:
        raise ReportedError(
            f"the model '{built.name}' has no loss to evaluate (its spec has no train section)",
            file=checked.program.root,
        )
    specs = {spec.name: spec for spec in model.signature.outputs}
    if sorted(built.output_names) != sorted(specs):
        raise ReportedError(
            f"the file's outputs ({', '.join(specs)}) are not those of the spec's model "
            f"'{built.name}' ({', '.join(built.output_names)})",
            file=str(model.path),
        )
    import keras

    ordered = [specs[name] for name in built.output_names]
    inputs = [keras.Input(shape=spec.shape, dtype=spec.dtype, name=f"{spec.name}__exported") for spec in ordered]
    outputs = [keras.layers.Identity(name=spec.name)(x) for spec, x in zip(ordered, inputs)]
    scorer = keras.Model(inputs, outputs if len(outputs) > 1 else outputs[0])
    scorer.compile_from_config(built.get_compile_config())
    return scorer
