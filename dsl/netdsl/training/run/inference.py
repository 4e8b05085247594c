"""`evaluate` and `predict` on a trained model: a run folder (its model.keras) or a .keras file.

    evaluate("runs/mlp-3", data="test.npz")  -> {"loss": 0.31, "sparse_categorical_accuracy": 0.91}
    predict("runs/mlp-3", data="new.npz")    -> Predictions: {"logits": array (N, 10)}, .sources, .classes

Data is read exactly as `train` reads it (by the model's input and output
names, a run's CSV columns and class names as its config.json records them);
`predict` needs only the inputs. What can be told of the data without the
model (a path, its format, an image folder's class sub-folders) is checked
before the model file loads TensorFlow.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.atomic import write_bytes
from netdsl.errors import ReportedError, Sources, UsageError
from netdsl.files import Refused, open_regular
from netdsl.training.data.labels import OutputLoss, check_source_labels, output_losses
from netdsl.training.data.plan import split_rows
from netdsl.training.data.request import DEFAULT_SPLIT, DataNames
from netdsl.training.data.signature import Signature
from netdsl.training.data.source import check_layout, open_source
from netdsl.training.errors import RunError
from netdsl.training.run.checkpoint import npz_bytes
from netdsl.training.run.predictions import Predictions, class_names, keras_loss_names
from netdsl.training.run.report import LoggedValue, logged_value, loss_first
from netdsl.training.run.runs import CONFIG, RunFolder, refuse_checkpoint
from netdsl.training.run.settings import saved_data, saved_names

if TYPE_CHECKING:
    from netdsl.semantics.session import LoadedSpec

DEFAULT_BATCH = 32


def _refuse_other_formats(path: Path) -> None:
    """Only a `.keras` zip reaches Keras: it is what netdsl writes, and the one format Keras loads with
    `safe_mode` honoured (HDF5 files ignored it before Keras 3.11.3: CVE-2025-9905)."""
    if path.suffix.lower() != ".keras":
        raise RunError(
            f"not a .keras file ('{path.suffix or path.name}'); netdsl loads models saved as .keras",
            file=str(path),
            hint="load it in Keras and save it with model.save('model.keras')",
        )
    try:
        with open_regular(path, ".keras file") as fd:
            magic = os.pread(fd, 4, 0)
    except Refused as exc:
        raise RunError(str(exc), file=str(path)) from None
    if magic != b"PK\x03\x04":
        raise RunError("not a .keras file (not a zip archive)", file=str(path))


def load_trained(where: Any, checkpoint: str | None = None) -> tuple[Any, int]:
    """(keras.Model, batch size) from a model, a run folder (the weights `RunFolder.weights` picks:
    `checkpoint` "best" or "last", by default best when the run had validation data) or a .keras file."""
    if not isinstance(where, (str, os.PathLike)):
        refuse_checkpoint(checkpoint, "a keras.Model")
        return where, DEFAULT_BATCH
    path = Path(where)
    batch = DEFAULT_BATCH
    if path.is_dir():
        folder = RunFolder.existing(path)
        batch = folder.read_json(CONFIG).get("settings", {}).get("batch_size", DEFAULT_BATCH)
        path = folder.weights(checkpoint).path
    elif not path.exists():
        raise RunError("no such file or folder", file=str(path))
    elif not path.is_file():
        raise RunError("not a run folder or a .keras file", file=str(path))
    else:
        refuse_checkpoint(checkpoint, "a .keras file")
    _refuse_other_formats(path)
    import keras

    from netdsl.backend.runtime import quiet_tensorflow

    quiet_tensorflow(mute_stderr=False)
    try:
        return keras.saving.load_model(path, safe_mode=True), batch
    except Exception as exc:
        text = str(exc).strip().splitlines()
        raise RunError(f"cannot load the model ({text[0] if text else type(exc).__name__})", file=str(path)) from None


def evaluate(
    where: Any,
    data: Any,
    batch_size: int | None = None,
    targets: dict | None = None,
    split: str = "test",
    checkpoint: str | None = None,
) -> dict[str, LoggedValue]:
    """`data=None` with a run folder: the run's own `split` ("test", "val" or "train") of its data,
    cut as training cut it (the same sources, fractions and seed, from its config.json)."""
    if data is None and split not in SPLITS:
        raise UsageError(f"split takes one of {', '.join(SPLITS)}; received {split!r}")
    if data is not None:
        check_layout(data, need_targets=True)
        check_run_data(where, data, targets, need_targets=True)
    elif isinstance(where, (str, os.PathLike)) and Path(where).exists() and not Path(where).is_dir():
        raise UsageError("evaluate needs --data, except for a run folder (which evaluates on its own test split)")
    model, batch = load_trained(where, checkpoint)
    if not model.compiled or model.loss is None:
        raise ReportedError(
            "the model has no loss to evaluate (its spec has no train section)",
            file=str(where) if isinstance(where, (str, os.PathLike)) else None,
        )
    losses = compile_with_run_spec(model, where)
    if data is None:
        source, rows = run_split(where, Signature.of(model), split)
        columns = _run_targets(where)
    else:
        source = open_source(data, Signature.of(model), targets, names=run_names(where))
        rows, columns = np.arange(source.n), dict(targets or {})
    if losses is not None:  # the labels against the spec's losses: one line at its loss, not Keras' traceback
        check_source_labels(losses[0], source, columns, losses[1])
    else:  # a .keras file on its own: against the losses it was compiled with
        check_source_labels(
            model_losses(model), source, columns, None, str(where) if isinstance(where, (str, os.PathLike)) else None
        )
    from netdsl.training.data.feed import feed  # Keras is loaded by now (load_trained)

    logs = model.evaluate(feed(source, rows, batch_size or batch), return_dict=True, verbose=0)
    return {k: logged_value(logs[k]) for k in loss_first(list(logs))}


def _run_targets(where: Any) -> dict[str, str]:
    """The --targets a run folder trained with (output: CSV column)."""
    saved = RunFolder.existing(where).read_json(CONFIG).get("data", {})
    found = saved.get("targets") if isinstance(saved, dict) else None
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}


SPLITS = ("test", "val", "train")


def model_losses(model: Any) -> list[OutputLoss]:
    """Each output of a loaded model with the loss it was compiled with (no spec says where: the
    check's errors then name the model file), as `labels.output_losses` reads them from a spec."""
    names = list(model.output_names)
    loss = model.loss
    per_output = (
        loss
        if isinstance(loss, dict)
        else dict(zip(names, loss))
        if isinstance(loss, (list, tuple))
        else dict.fromkeys(names, loss)
    )
    found = []
    for name, tensor in zip(names, model.outputs):
        named = _loss_name(per_output.get(name))
        if named is None:
            continue
        layer = getattr(getattr(tensor, "_keras_history", None), "operation", None)
        activation = getattr(getattr(layer, "activation", None), "__name__", None)
        if type(layer).__name__ == "Softmax":
            activation = "softmax"
        shape = tuple(d if isinstance(d, int) else None for d in tensor.shape[1:])
        found.append(OutputLoss(name, shape, activation, named[0], named[1], None))
    return found


def _loss_name(loss: Any) -> tuple[str, bool] | None:
    """(registry name, from_logits) of a compiled loss: a name, a Keras loss object or function."""
    if isinstance(loss, str):
        return loss, False
    config = loss.get_config() if hasattr(loss, "get_config") else {}
    name = config.get("name") if isinstance(config, dict) else None
    name = name if isinstance(name, str) else getattr(loss, "__name__", None)
    return (name, config.get("from_logits") is True) if isinstance(name, str) else None


def compile_with_run_spec(model: Any, where: Any) -> tuple[list[OutputLoss], Sources] | None:
    """Score a run folder's model (or a .keras file in one) with the loss and metrics of the spec the run
    recorded, when that spec is still where it was and unchanged (its sha256), read as the run read it
    (`run_spec`); then the spec's losses per output (and its text, to show them), else None. Keras saves
    some losses without their arguments (Huber's `delta`): the reloaded file alone would score
    `huber(delta=0.5)` with delta 1.0."""
    if not isinstance(where, (str, os.PathLike)):
        return None
    path = Path(where)
    folder = path if path.is_dir() else path.parent
    if not (folder / CONFIG).is_file():
        return None
    from netdsl.backend.compiler import compile_for_scoring
    from netdsl.errors import SpecError

    saved = RunFolder.existing(folder).read_json(CONFIG)
    try:
        spec, name = run_spec(folder, saved)
        checked = spec.model(name)
        if not compile_for_scoring(model, checked):
            return None
        return output_losses(checked.graph), spec.program.sources()
    except RunError:
        return None  # gone, or edited since: the file's own compile (its loss arguments as Keras saved them)
    except SpecError:
        return None  # no longer loads here (an imported file gone): the file's own compile


def run_spec(folder: Path, saved: dict) -> tuple[LoadedSpec, str | None]:
    """The spec a run trained with (its config.json `saved`) and its model, read as the run read it:
    imports from its include folders (-I), its -D overrides applied. RunError when the spec is
    gone or changed since (its sha256 differs); SpecError when it no longer loads."""
    from netdsl.semantics.session import LoadedSpec
    from netdsl.training.run.settings import saved_include, spec_sha256

    recorded = saved.get("spec") or {}
    where = recorded.get("path")
    if not isinstance(where, str) or not Path(where).is_file():
        raise RunError(f"the run's spec {where!r} is gone; give it with --spec SPEC.net", file=str(folder))
    spec = LoadedSpec.of(where, saved_include(saved))
    if spec_sha256(spec.program) != recorded.get("sha256"):
        raise RunError(
            f"the spec {where} changed since the run trained; give the one to score with --spec SPEC.net",
            file=str(folder),
        )
    return LoadedSpec.of(spec.program, defines=saved.get("defines") or {}), recorded.get("model")


def run_split(where: Any, signature: Signature, split: str) -> tuple[Any, np.ndarray]:
    """(source, rows) of a run's `split`, as its training cut them."""
    if not isinstance(where, (str, os.PathLike)) or not Path(where).is_dir():
        raise UsageError("evaluate needs --data, except for a run folder (which evaluates on its own test split)")
    folder = RunFolder.existing(where)
    saved = folder.read_json(CONFIG)
    request = saved_data(saved.get("data", {}), str(folder.path), "evaluate")
    settings = saved.get("settings", {})
    what = {"test": "test", "val": "validation", "train": "training"}[split]
    names = saved_names(saved)
    if request.data is not None:
        source = open_source(request.data, signature, request.targets, names=names)
        parts = split_rows(source.n, request.split or DEFAULT_SPLIT, int(settings.get("seed", 0)))
        rows = parts[("train", "val", "test").index(split)]
        if rows is None:
            fractions = ",".join(f"{f:g}" for f in request.split or DEFAULT_SPLIT)
            raise RunError(
                f"this run has no {what} split (--split {fractions})",
                file=str(folder.path),
                hint="give the data to evaluate on with --data",
            )
        return source, rows
    given = {"train": request.train, "val": request.val, "test": request.test}[split]
    if given is None:
        raise RunError(
            f"this run was given no {what} data", file=str(folder.path), hint="give the data to evaluate on with --data"
        )
    source = open_source(given, signature, request.targets, names=names)
    return source, np.arange(source.n)


def predict(
    where: Any, data: Any, batch_size: int | None = None, targets: dict | None = None, checkpoint: str | None = None
) -> Predictions:
    check_layout(data, need_targets=False)  # before the model file loads TensorFlow
    check_run_data(where, data, targets, need_targets=False)
    model, batch = load_trained(where, checkpoint)
    signature = Signature.of(model)
    names = run_names(where)
    source = open_source(data, signature, targets, need_targets=False, names=names)
    from netdsl.training.data.feed import feed

    result = model.predict(feed(source, np.arange(source.n), batch_size or batch, with_targets=False), verbose=0)
    if isinstance(result, dict):
        outputs = {name: np.asarray(result[name]) for name in signature.output_names}
    else:
        if not isinstance(result, (list, tuple)):
            result = [result]
        outputs = {name: np.asarray(value) for name, value in zip(signature.output_names, result)}
    units = {spec.name: (spec.shape[-1] if spec.shape else 1) for spec in signature.outputs}
    classes = class_names(units, keras_loss_names(model), names.classes)
    return Predictions(outputs, source.row_names(np.arange(source.n)), classes)


def check_run_data(where: Any, data: Any, targets: dict | None, need_targets: bool) -> None:
    """The data checked against a run's model before TensorFlow loads, as `train` checks it: a run folder
    (or a .keras file in one) whose spec is still there and unchanged gives the model's inputs and
    outputs from its checked graph (pure Python), and the run's columns and class names read the data
    (a CSV file whole: a label name the run never saw is one line at once). Anything else: its reader
    checks it, after the model is loaded."""
    if data is None or not isinstance(where, (str, os.PathLike)):
        return
    path = Path(where)
    folder = path if path.is_dir() else path.parent
    if not (folder / CONFIG).is_file():
        return
    from netdsl.errors import SpecError
    from netdsl.training.data.data_check import signature_of_graph
    from netdsl.training.data.source import check_source

    try:
        saved = RunFolder.existing(folder).read_json(CONFIG)
        spec, name = run_spec(folder, saved)
        graph = spec.model(name).graph
    except (RunError, SpecError):
        return  # the spec is gone or changed: the loaded model's own signature checks the data
    check_source(data, signature_of_graph(graph), dict(targets or {}), need_targets, names=saved_names(saved))


def run_names(where: Any) -> DataNames:
    """The CSV columns and class names the run recorded (a run folder, or a .keras file in one); none
    for a model from elsewhere."""
    if not isinstance(where, (str, os.PathLike)):
        return DataNames()
    path = Path(where)
    folder = path if path.is_dir() else path.parent
    if not (folder / CONFIG).is_file():
        return DataNames()
    try:
        return saved_names(RunFolder.existing(folder).read_json(CONFIG))
    except RunError:
        return DataNames()  # a config.json that is not a run's: nothing recorded


def write_predictions(predictions: dict[str, np.ndarray], target: str | os.PathLike) -> Path:
    """An .npz with one array per output, written atomically (`Predictions.write` writes names too)."""
    write_bytes(target, npz_bytes(predictions))
    return Path(target)
