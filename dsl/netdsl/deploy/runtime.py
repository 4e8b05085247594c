"""An exported file run in its own runtime, for `predict`, `evaluate` and `export --verify`.

    model.onnx           onnxruntime.InferenceSession (CPU)
    model.tflite         ai_edge_litert's Interpreter, signature runner "serving_default"
    model_saved_model/   tf.saved_model.load(...).signatures["serving_default"]

Neither ONNX nor LiteRT loads Keras or TensorFlow here: a deployed file is checked the
way it is served. The file's inputs and outputs carry the spec's names (export keeps
them), so its `Signature` (names, per-sample shapes, dtypes; None for an open size)
reads data exactly as the Keras model's does. The batch axis is open in every
exported file; LiteRT's signature runner resizes its inputs to each batch.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from netdsl.deploy.errors import ExportError, MissingPackage
from netdsl.deploy.folders import MARKER
from netdsl.deploy.formats import FORMATS, INSTALL_HINT, Format
from netdsl.training.data.signature import Signature, TensorSpec

SIGNATURE_KEY = "serving_default"
# ONNX's element types (as onnxruntime spells them) -> NumPy's names.
ONNX_TYPES = {"float": "float32", "double": "float64", "float16": "float16", "int8": "int8", "int16": "int16",
              "int32": "int32", "int64": "int64", "uint8": "uint8", "bool": "bool"}


@dataclass
class ExportedModel:
    """An exported file, loaded in its runtime: `run` maps {input name: batch} to {output name: batch}."""

    path: Path
    format: Format
    signature: Signature
    run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    metadata: dict[str, str] = field(default_factory=dict)  # what export recorded (netdsl_model, ...)


def exported_format(path: Path) -> Format | None:
    """The format of an exported file by what it is: `.onnx`, `.tflite`, or a folder holding saved_model.pb."""
    if path.is_dir():
        return FORMATS["saved_model"] if (path / MARKER).is_file() else None
    return {".onnx": FORMATS["onnx"], ".tflite": FORMATS["litert"]}.get(path.suffix.lower())


def open_exported(path: Path, fmt: Format | None = None) -> ExportedModel:
    """Load `path` in its format's runtime; ExportError (one line) when the runtime refuses the file,
    MissingPackage (exit 2) when the runtime is not installed."""
    fmt = fmt or exported_format(path)
    if fmt is None:
        raise ExportError("not an exported model (.onnx, .tflite or a SavedModel folder)", file=str(path))
    if importlib.util.find_spec(fmt.runtime_module) is None:
        article = "an" if fmt.name[0] in "aeiou" else "a"
        package = fmt.runtime_module.replace("_", "-")
        raise MissingPackage(f"running {article} {fmt.name} file needs {package}, which is not installed",
                             hint=INSTALL_HINT)
    if not (path.is_dir() if fmt.is_folder else path.is_file()):
        raise ExportError(f"no such {fmt.name} {'folder' if fmt.is_folder else 'file'}", file=str(path))
    try:
        return load(path, fmt)
    except (ExportError, MissingPackage):
        raise
    except Exception as exc:  # each runtime raises its own types for a file it cannot read
        raise ExportError(f"{fmt.runtime} cannot load it ({first_line(exc)})", file=str(path)) from None


def load(path: Path, fmt: Format) -> ExportedModel:
    """The file in its runtime, the runtime's own exception when it refuses it (`open_exported` makes it one line)."""
    return _OPENERS[fmt.name](path, fmt)


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return json.dumps(lines[0][:300])[1:-1] if lines else type(exc).__name__


def _open_onnx(path: Path, fmt: Format) -> ExportedModel:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def spec(arg: Any) -> TensorSpec:
        shape = tuple(d if isinstance(d, int) else None for d in arg.shape[1:])
        return TensorSpec(arg.name, shape, ONNX_TYPES.get(arg.type[len("tensor("):-1], arg.type))

    signature = Signature(tuple(map(spec, session.get_inputs())), tuple(map(spec, session.get_outputs())))
    names = signature.output_names

    def run(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(names, inputs)))

    metadata = dict(session.get_modelmeta().custom_metadata_map)
    return ExportedModel(path, fmt, signature, run, metadata)


def _open_litert(path: Path, fmt: Format) -> ExportedModel:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    listed = interpreter.get_signature_list()
    if SIGNATURE_KEY not in listed:
        raise ExportError(f"no signature '{SIGNATURE_KEY}' (netdsl export writes one; found: "
                          f"{', '.join(listed) or 'none'})", file=str(path))
    runner = interpreter.get_signature_runner(SIGNATURE_KEY)
    details = {**runner.get_input_details(), **runner.get_output_details()}

    def spec(name: str) -> TensorSpec:
        shape = tuple(int(d) if d >= 0 else None for d in details[name]["shape_signature"][1:])
        return TensorSpec(name, shape, np.dtype(details[name]["dtype"]).name)

    signature = Signature(tuple(map(spec, listed[SIGNATURE_KEY]["inputs"])),
                          tuple(map(spec, listed[SIGNATURE_KEY]["outputs"])))

    def run(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: np.asarray(value) for name, value in runner(**inputs).items()}  # resizes to the batch

    return ExportedModel(path, fmt, signature, run)


def _open_saved_model(path: Path, fmt: Format) -> ExportedModel:
    import tensorflow as tf

    loaded = tf.saved_model.load(str(path))
    if SIGNATURE_KEY not in loaded.signatures:
        raise ExportError(f"no signature '{SIGNATURE_KEY}' (netdsl export writes one)", file=str(path))
    serve = loaded.signatures[SIGNATURE_KEY]

    def spec(name: str, tensor: Any) -> TensorSpec:
        return TensorSpec(name, tuple(tensor.shape[1:]), tensor.dtype.name)

    inputs = serve.structured_input_signature[1]
    signature = Signature(tuple(spec(n, t) for n, t in inputs.items()),
                          tuple(spec(n, t) for n, t in serve.structured_outputs.items()))

    def run(batch: dict[str, np.ndarray], keep: Any = loaded) -> dict[str, np.ndarray]:
        # `keep`: the signature's variables live as long as the loaded object does
        result = serve(**{name: tf.constant(value) for name, value in batch.items()})
        return {name: value.numpy() for name, value in result.items()}

    recorded = path / "assets.extra" / "netdsl.json"
    metadata = json.loads(recorded.read_text(encoding="utf-8")) if recorded.is_file() else {}
    return ExportedModel(path, fmt, signature, run, metadata)


_OPENERS = {"onnx": _open_onnx, "litert": _open_litert, "saved_model": _open_saved_model}
