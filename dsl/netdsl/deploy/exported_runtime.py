"""An exported file run in its own runtime, for `predict`, `evaluate` and `export --verify`.

    model.onnx           onnxruntime.InferenceSession (CPU)
    model.tflite         ai_edge_litert's Interpreter, signature runner "serving_default"
    model_saved_model/   tf.saved_model.load(...).signatures["serving_default"]

Each is its format's module's `load` (`onnx_format.py`, ...; `formats.FORMATS` names them).

Neither ONNX nor LiteRT loads Keras or TensorFlow here: a deployed file is checked the
way it is served. The file's inputs and outputs carry the spec's names (export keeps
them), so its `Signature` (names, per-sample shapes, dtypes; None for an open size)
reads data exactly as the Keras model's does. The batch axis is open in every
exported file; LiteRT's signature runner resizes its inputs to each batch.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from netdsl.deploy.errors import ExportError, MissingPackage
from netdsl.deploy.formats import INSTALL_HINT, ExportedModel, Format, format_of

SIGNATURE_KEY = "serving_default"  # the signature SavedModel and LiteRT exports are run by

__all__ = ["SIGNATURE_KEY", "ExportedModel", "exported_format", "first_line", "load", "open_exported"]


def exported_format(path: Path) -> Format | None:
    """The format of an exported file by what it is: `.onnx`, `.tflite`, or a folder holding saved_model.pb."""
    return format_of(path)


def open_exported(path: Path, fmt: Format | None = None, trust: bool = False) -> ExportedModel:
    """Load `path` in its format's runtime; ExportError (one line) when the runtime refuses the file or
    netdsl does not run it (`refuse_untrusted`), MissingPackage (exit 2) when the runtime is not installed."""
    fmt = fmt or exported_format(path)
    if fmt is None:
        raise ExportError("not an exported model (.onnx, .tflite or a SavedModel folder)", file=str(path))
    if importlib.util.find_spec(fmt.runtime_module) is None:
        article = "an" if fmt.name[0] in "aeiou" else "a"
        package = fmt.runtime_module.replace("_", "-")
        raise MissingPackage(
            f"running {article} {fmt.name} file needs {package}, which is not installed", hint=INSTALL_HINT
        )
    if not (path.is_dir() if fmt.is_folder else path.is_file()):
        raise ExportError(f"no such {fmt.name} {'folder' if fmt.is_folder else 'file'}", file=str(path))
    refuse_untrusted(path, fmt, trust)
    try:
        return load(path, fmt)
    except (ExportError, MissingPackage):
        raise
    except Exception as exc:  # each runtime raises its own types for a file it cannot read
        raise ExportError(f"{fmt.runtime} cannot load it ({first_line(exc)})", file=str(path)) from None


def refuse_untrusted(path: Path, fmt: Format, trust: bool = False) -> None:
    """RunError or ExportError (one line) unless `path` may run: the run folder it sits in (or a SavedModel
    folder that is itself one) is this user's own, as `--resume` requires (`runs.untrusted`); so is a
    SavedModel folder, a program; and its graph holds only the ops of `saved_model_ops.ALLOWED_OPS`,
    unless `trust`. An .onnx or .tflite file is data, run by its interpreter: only its run folder counts."""
    from netdsl.training.run.runs import CONFIG, RunFolder, untrusted

    for folder in (path, path.parent) if fmt.is_folder else (path.parent,):
        if (folder / CONFIG).is_file():
            RunFolder.existing(folder)  # RunError: another account's, world-writable, a link
    if not fmt.is_folder:
        return
    distrust = untrusted(path, f"{fmt.name} folder")
    if distrust is not None:
        raise ExportError(distrust, file=str(path), hint=f"netdsl runs only {fmt.name} folders you made")
    if fmt.name == "saved_model" and not trust:
        from netdsl.deploy.saved_model_ops import check_saved_model

        check_saved_model(path)


def load(path: Path, fmt: Format) -> ExportedModel:
    """The file in its runtime, the runtime's own exception when it refuses it (`open_exported` makes it one line)."""
    return fmt.implementation().load(path, fmt)


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return json.dumps(lines[0][:300])[1:-1] if lines else type(exc).__name__
