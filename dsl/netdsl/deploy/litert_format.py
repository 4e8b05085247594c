"""LiteRT (.tflite) through TensorFlow's LiteRT converter, from the SavedModel of `saved_model_format`.

Only LiteRT's built-in ops are allowed: a model that would need TensorFlow ops
("select TF ops", the Flex delegate) does not run in the plain LiteRT interpreter,
so it is refused with the op's name instead. The signature `serving_default` keeps
the spec's input and output names; the batch axis stays open (-1 in the signature).
netdsl's version, the model's name and the spec's hash go in the model's metadata table,
entry `netdsl` (a buffer holding JSON), read back without TensorFlow (`read_metadata`).
`load` runs a file in ai_edge_litert's interpreter, which needs neither Keras nor TensorFlow.
"""

from __future__ import annotations

import json
import re
import struct
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from netdsl.atomic import write_bytes
from netdsl.deploy.errors import ExportError
from netdsl.deploy.formats import ExportedModel, Format
from netdsl.deploy.saved_model_format import write_saved_model_to
from netdsl.limits import MAX_EXPORT_METADATA_BYTES, MAX_EXPORT_METADATA_ENTRIES
from netdsl.training.data.signature import Signature, TensorSpec

if TYPE_CHECKING:
    import keras

METADATA_NAME = "netdsl"


def litert_bytes(model: keras.Model, metadata: dict[str, str]) -> bytes:
    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="netdsl-litert-") as tmp:
        folder = Path(tmp) / "saved_model"
        write_saved_model_to(model, folder, metadata)
        converter = tf.lite.TFLiteConverter.from_saved_model(str(folder))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        try:
            flatbuffer = converter.convert()
        except Exception as exc:  # the converter's ConverterError lists the ops it could not lower
            raise ExportError(_refusal(model, str(exc))) from None
    return with_metadata(flatbuffer, metadata)


def with_metadata(flatbuffer: bytes, metadata: dict[str, str]) -> bytes:
    """The model with a metadata entry `netdsl` (a buffer holding `metadata` as JSON), the model format's
    own place for what tools record about a model (`read_metadata` reads it back)."""
    return with_entry(flatbuffer, json.dumps(metadata, sort_keys=True).encode())


def with_entry(flatbuffer: bytes, data: bytes) -> bytes:
    """The model with a metadata entry `netdsl` holding `data` (`with_metadata`'s JSON; a test's damaged bytes)."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(data, dtype=np.uint8)
    model.buffers = [*(model.buffers or []), buffer]
    entry = schema.MetadataT()
    entry.name = METADATA_NAME
    entry.buffer = len(model.buffers) - 1
    model.metadata = [*(model.metadata or []), entry]
    builder = flatbuffers.Builder(len(flatbuffer) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def read_metadata(flatbuffer: bytes) -> dict[str, str]:
    """What `with_metadata` recorded ({} when nothing, or nothing netdsl can read: a file another tool wrote).

    Read with the schema `ai_edge_litert` ships (it needs the pure-Python `flatbuffers`), so that
    running a file needs no TensorFlow. A buffer may hold its bytes inline or, in a model over
    2 GB, at an offset in the file."""
    from ai_edge_litert import schema_py_generated as schema

    try:
        model = schema.Model.GetRootAsModel(flatbuffer, 0)
        count = min(model.MetadataLength(), MAX_EXPORT_METADATA_ENTRIES)  # a table may declare millions
        entries = (model.Metadata(i) for i in range(count))
        entry = next((e for e in entries if e.Name() == METADATA_NAME.encode()), None)
        if entry is None:
            return {}
        buffer = model.Buffers(entry.Buffer())
        offset = buffer.Offset()
        data = (
            bytes(flatbuffer[offset : offset + buffer.Size()])
            if offset > 1
            else buffer.DataAsNumpy().tobytes()
            if buffer.DataLength()
            else b""
        )
        if len(data) > MAX_EXPORT_METADATA_BYTES:  # netdsl's entry is a few hundred bytes
            return {}
        recorded = json.loads(data)
    # Not JSON (or nested deeper than the parser recurses), a damaged table (an offset flatbuffers refuses
    # with TypeError: the .tflite fuzz campaign): no metadata.
    except (ValueError, IndexError, AttributeError, TypeError, OverflowError, struct.error, RecursionError):
        return {}
    if not isinstance(recorded, dict):
        return {}
    return {key: value for key, value in recorded.items() if isinstance(key, str) and isinstance(value, str)}


def write(model: keras.Model, out: Path, metadata: dict[str, str]) -> None:
    write_bytes(out, litert_bytes(model, metadata), links="refuse")


def load(path: Path, fmt: Format) -> ExportedModel:
    """The file's `serving_default` signature runner in the LiteRT interpreter, the `netdsl` entry of its
    metadata table as the metadata (the model's name: `evaluate` needs no --model)."""
    from ai_edge_litert.interpreter import Interpreter

    from netdsl.deploy.exported_runtime import SIGNATURE_KEY

    interpreter = Interpreter(model_path=str(path))
    listed = interpreter.get_signature_list()
    if SIGNATURE_KEY not in listed:
        raise ExportError(
            f"no signature '{SIGNATURE_KEY}' (netdsl export writes one; found: {', '.join(listed) or 'none'})",
            file=str(path),
        )
    runner = interpreter.get_signature_runner(SIGNATURE_KEY)
    details = {**runner.get_input_details(), **runner.get_output_details()}

    def spec(name: str) -> TensorSpec:
        shape = tuple(int(d) if d >= 0 else None for d in details[name]["shape_signature"][1:])
        return TensorSpec(name, shape, np.dtype(details[name]["dtype"]).name)

    signature = Signature(
        tuple(map(spec, listed[SIGNATURE_KEY]["inputs"])), tuple(map(spec, listed[SIGNATURE_KEY]["outputs"]))
    )

    def run(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: np.asarray(value) for name, value in runner(**inputs).items()}  # resizes to the batch

    return ExportedModel(path, fmt, signature, run, read_metadata(path.read_bytes()))


def _refusal(model: keras.Model, text: str) -> str:
    """One line from the converter's report: the first op it could not lower, and the layer it came from."""
    from netdsl.deploy.onnx_format import layer_of

    found = re.search(r'fused\["[^"]*", "([^"@]+)@[^\n]*\'tf\.(\w+)\' op is neither a custom op nor a flex op', text)
    if found is None:
        first = next((line.strip() for line in text.splitlines() if "error:" in line), text.strip().split("\n")[0])
        return f"the model cannot be exported to litert: {first[:300]}"
    layer = layer_of(model, found.group(1))
    reason = f"TensorFlow op {found.group(2)} is not a LiteRT built-in op"
    if layer is None:
        return f"the model cannot be exported to litert: {reason}"
    return f"layer '{layer.name}' ({type(layer).__name__}) cannot be exported to litert: {reason}"
