"""What `netdsl export` exports: a spec, a run folder or a `.keras` file, resolved to one Keras model.

    spec.net (or a Program)   built with fresh weights, or the weights of `weights=FILE.keras`
    runs/mlp-3/               its weights as every command reading a run picks them (`RunFolder.weights`):
                              best.keras when it had validation data, else model.keras (`checkpoint=`)
    model.keras               loaded in safe mode
    epoch=3.ckpt              a Lightning checkpoint of netdsl.lightning.SpecModule: the spec it records,
                              built on TensorFlow, with the checkpoint's weights (read weights-only)
    a keras.Model             as it is (for a library user holding one)

Each comes with what the exported file records about it (netdsl's version, the spec's
hash when there is a spec, the class names of its classifier outputs and the CSV
columns its input is made of, so that `predict FILE` names classes and reads a table
as the run did) and the name the output takes by default.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netdsl.deploy.errors import ExportError
from netdsl.semantics.session import LoadedSpec
from netdsl.syntax.loader import Program
from netdsl.training.data.request import DataNames
from netdsl.training.run.inference import run_names
from netdsl.training.run.predictions import class_names, keras_loss_names
from netdsl.training.run.runs import CONFIG, RunFolder, refuse_checkpoint
from netdsl.training.run.settings import saved_names
from netdsl.version import __version__

if TYPE_CHECKING:
    import keras

SPEC_SUFFIXES = (".net",)


@dataclass
class Resolved:
    model: keras.Model
    name: str  # the model's name: the default output's stem
    where: Path | None  # the folder the default output goes to (None: the current folder)
    label: str  # the source as messages name it
    metadata: dict[str, str] = field(default_factory=dict)  # what the exported file records
    notes: list[str] = field(default_factory=list)  # what the CLI tells the user about the export


def in_float32(resolved: Resolved) -> Resolved:
    """A model that computes in float16 (mixed precision, a training technique) is exported as its float32 twin:
    the same layers and weights (kept in float32 anyway), each computing in float32, which every format
    and runtime runs the same way; float16 kernels differ between runtimes by more than any tolerance here."""
    policies = sorted(
        {
            layer.dtype_policy.name
            for layer in resolved.model.layers
            if layer.dtype_policy.compute_dtype != layer.dtype_policy.variable_dtype
        }
    )
    if not policies:
        return resolved
    import keras

    def float32_layer(layer: keras.layers.Layer) -> keras.layers.Layer:
        return type(layer).from_config({**layer.get_config(), "dtype": "float32"})

    twin = keras.models.clone_model(resolved.model, clone_function=float32_layer)
    twin.set_weights(resolved.model.get_weights())
    note = f"the model computes in {', '.join(policies)}; exported in float32 with the same weights"
    return Resolved(twin, resolved.name, resolved.where, resolved.label, resolved.metadata, [*resolved.notes, note])


def resolve(
    source: Any,
    *,
    model: str | None = None,
    weights: str | os.PathLike | None = None,
    checkpoint: str | None = None,
    include: Sequence[str | os.PathLike[str]] = (),
    quiet: bool = False,
    seed: int | None = None,
) -> Resolved:
    """The Keras model `source` means, loaded or built (see the module's docstring), in float32.

    `seed`: a spec's fresh weights are drawn from it (the same seed, the same weights and the
    same exported file's outputs), as `netdsl train --seed` draws them.
    Everything that can be checked without TensorFlow is checked before it is imported.
    """
    if seed is not None and (weights is not None or not _is_spec(source)):
        raise ExportError(
            "--seed draws a spec's fresh weights; "
            + ("--weights gives them" if weights is not None else "this source has trained weights"),
            file=str(source) if isinstance(source, (str, os.PathLike)) else None,
        )
    if not (isinstance(source, (str, os.PathLike)) and Path(source).is_dir()):
        refuse_checkpoint(checkpoint, "a spec, a .keras file or a keras.Model")
    if isinstance(source, Program):
        return in_float32(_from_spec(LoadedSpec(source), source.root, model, weights, quiet, seed))
    if not isinstance(source, (str, os.PathLike)):
        if weights is not None or model is not None:
            raise ExportError("model= and weights= choose a model of a spec; the source is a keras.Model already")
        return in_float32(Resolved(source, source.name, None, source.name, {"netdsl_version": __version__}))
    path = Path(source)
    if path.is_dir():
        return in_float32(_from_run(path, checkpoint, quiet))
    if not path.exists():
        raise ExportError("no such spec, run folder or .keras file", file=str(path))
    if path.suffix == ".keras":
        _refuse_options(path, model, weights)
        loaded = _load_keras(path, quiet)
        metadata = {"netdsl_version": __version__, **data_names_metadata(loaded, run_names(path))}
        return in_float32(Resolved(loaded, loaded.name, path.parent, str(path), metadata))
    if path.suffix == ".ckpt":
        _refuse_options(path, model, weights)
        return in_float32(_from_lightning(path, quiet))
    if path.suffix in SPEC_SUFFIXES:
        return in_float32(_from_spec(LoadedSpec.of(path, include), str(path), model, weights, quiet, seed))
    raise ExportError("not a spec (.net), a run folder or a .keras file", file=str(path))


def _is_spec(source: Any) -> bool:
    return isinstance(source, Program) or (
        isinstance(source, (str, os.PathLike)) and Path(source).suffix in SPEC_SUFFIXES
    )


def _tensorflow(quiet: bool) -> None:
    """Keras on TensorFlow: every converter here starts from a TensorFlow graph (BackendError if Keras runs JAX)."""
    from netdsl.backend.runtime import init_backend

    init_backend("tensorflow", mute_stderr=quiet)


def _from_spec(
    spec: LoadedSpec, label: str, model: str | None, weights: Any, quiet: bool, seed: int | None = None
) -> Resolved:
    from netdsl.backend.compiler import build_one
    from netdsl.training.run.settings import spec_sha256

    checked = spec.model(model)  # picked once; checked once, when built
    name = checked.name
    if weights is not None and not Path(weights).is_file():
        raise ExportError("no such weights file", file=str(weights))
    _tensorflow(quiet)
    if seed is not None:
        import keras

        keras.utils.set_random_seed(seed)  # right before building, as `netdsl train --seed` does
    built = build_one(checked)
    _refuse_unadapted(built, name)
    if weights is not None:
        _load_weights(built, Path(weights))
    metadata = {"netdsl_version": __version__, "netdsl_model": name, "netdsl_spec_sha256": spec_sha256(spec.program)}
    return Resolved(built, name, None, label, metadata | data_names_metadata(built, DataNames()))


def _refuse_unadapted(built: keras.Model, name: str) -> None:
    """A spec whose train section adapts layers to data: built from the spec alone their state is empty, and a
    weights file does not hold it (a vocabulary is no weight): the run folder does."""
    from netdsl.backend.compiler import adapted_layers

    adapted = adapted_layers(built)
    if adapted:
        raise ExportError(
            f"'{name}' adapts {', '.join(repr(a) for a in adapted)} to its training data (adapt in "
            "its train section), which the spec alone does not hold; train it and export the run "
            "folder"
        )


def _from_run(path: Path, checkpoint: str | None, quiet: bool) -> Resolved:
    folder = RunFolder.existing(path)
    file = folder.weights(checkpoint).path
    saved = folder.read_json(CONFIG)
    spec = saved.get("spec", {})
    loaded = _load_keras(file, quiet)
    metadata = {"netdsl_version": __version__, **data_names_metadata(loaded, saved_names(saved))}
    if isinstance(spec.get("model"), str):
        metadata["netdsl_model"] = spec["model"]
    if isinstance(spec.get("sha256"), str):
        metadata["netdsl_spec_sha256"] = spec["sha256"]
    return Resolved(loaded, metadata.get("netdsl_model", loaded.name), path, str(file), metadata)


def _from_lightning(path: Path, quiet: bool) -> Resolved:
    """A `SpecModule` checkpoint: its recorded spec built on TensorFlow, its weights assigned by state name."""
    from netdsl.backend.compiler import build_one
    from netdsl.errors import LightningError
    from netdsl.lightning.checkpoint import read_checkpoint

    try:
        checkpointed = read_checkpoint(path)
        checked = LoadedSpec(checkpointed.program).model(checkpointed.model)
        name = checked.name
        _tensorflow(quiet)
        built = build_one(checked)
        checkpointed.assign(built)
    except LightningError as exc:
        raise ExportError(str(exc), file=str(path)) from None
    metadata = {"netdsl_version": __version__, "netdsl_model": name, "netdsl_spec_sha256": checkpointed.sha256}
    return Resolved(built, name, path.parent, str(path), metadata)


def data_names_metadata(model: keras.Model, names: DataNames) -> dict[str, str]:
    """`netdsl_classes` ({output: class names}, JSON) for a model with classifier outputs (the names its run
    recorded, else "0", "1", ... by its loss) and `netdsl_columns` ({input: CSV columns}, JSON) for a run
    trained on a CSV file."""
    units = {name: (t.shape[-1] if len(t.shape) > 1 else 1) for name, t in zip(model.output_names, model.outputs)}
    classes = class_names(units, keras_loss_names(model), names.classes)
    found = {}
    if classes:
        found["netdsl_classes"] = json.dumps({k: list(v) for k, v in classes.items()})
    if names.features is not None and len(model.inputs) == 1:
        found["netdsl_columns"] = json.dumps({_input_name(model): list(names.features)})
    return found


def _input_name(model: keras.Model) -> str:
    return str(getattr(model.inputs[0], "name", "input")).split(":")[0]


def _refuse_options(path: Path, model: str | None, weights: Any) -> None:
    if model is not None or weights is not None:
        flag = "--model" if model is not None else "--weights"
        raise ExportError(f"{flag} does not apply to a {path.suffix} file", file=str(path))


def _load_keras(path: Path, quiet: bool) -> keras.Model:
    if not zipfile.is_zipfile(path):
        raise ExportError("not a .keras file (not a zip archive)", file=str(path))
    _tensorflow(quiet)
    import keras

    try:
        return keras.saving.load_model(path, safe_mode=True, compile=False)
    except Exception as exc:  # Keras' errors for a broken archive are of many types
        raise ExportError(f"cannot load the model ({_first_line(exc)})", file=str(path)) from None


def _load_weights(model: keras.Model, path: Path) -> None:
    """`--weights FILE`: read by netdsl's own weights reader, as `build --weights` reads it (arrays only,
    nothing outside the file, shapes and types matched; `.keras` and `.weights.h5` only: Keras' legacy
    `.h5` loader has none of its checks). The reader matches the weights a layer keeps itself; a model
    whose layers keep theirs in sub-layers (an attention's query, key and value) is loaded by Keras,
    which knows their order, once the reader has checked every array of the file."""
    from netdsl.backend.fine_tuning import check_weights_file, load_weights_file
    from netdsl.errors import FileRefused, UsageError

    try:
        check_weights_file(path)
        load_weights_file(model, path)
    except FileRefused as exc:  # the file's own error, escaped once where it is printed
        raise ExportError(exc.message, file=str(path)) from None
    except UsageError as exc:  # a file of another model, or not a weights file: the mismatch named
        if "has no weights for layer" not in exc.message or not _keeps_sub_layers(model):
            raise ExportError(f"cannot load these weights into the model ({exc.message})", file=str(path)) from None
        try:
            model.load_weights(path)
        except Exception as keras_exc:  # noqa: BLE001 - Keras names the mismatch
            raise ExportError(
                f"cannot load these weights into the model ({_first_line(keras_exc)})", file=str(path)
            ) from None


def _keeps_sub_layers(model: keras.Model) -> bool:
    """Whether a layer of the model keeps weights in layers of its own (MultiHeadAttention, a wrapper)."""
    import keras

    return any(
        isinstance(sub, keras.layers.Layer) and sub is not layer and sub.weights
        for layer in model._flatten_layers(include_self=False)
        for sub in layer._flatten_layers(include_self=False, recursive=False)
    )


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return json.dumps(lines[0])[1:-1] if lines else type(exc).__name__
