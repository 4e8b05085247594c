"""LiteRT (.tflite) through TensorFlow's LiteRT converter, from the SavedModel of `saved_model_format`.

Only LiteRT's built-in ops are allowed: a model that would need TensorFlow ops
("select TF ops", the Flex delegate) does not run in the plain LiteRT interpreter,
so it is refused with the op's name instead. The signature `serving_default` keeps
the spec's input and output names; the batch axis stays open (-1 in the signature).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from netdsl.atomic import write_bytes
from netdsl.deploy.errors import ExportError
from netdsl.deploy.saved_model_format import write_saved_model_to

if TYPE_CHECKING:
    import keras


def litert_bytes(model: keras.Model, metadata: dict[str, str]) -> bytes:
    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="netdsl-litert-") as tmp:
        folder = Path(tmp) / "saved_model"
        write_saved_model_to(model, folder, metadata)
        converter = tf.lite.TFLiteConverter.from_saved_model(str(folder))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        try:
            return converter.convert()
        except Exception as exc:  # the converter's ConverterError lists the ops it could not lower
            raise ExportError(_refusal(model, str(exc))) from None


def write_litert(model: keras.Model, out: Path, metadata: dict[str, str]) -> None:
    write_bytes(out, litert_bytes(model, metadata), links="refuse")


def _refusal(model: keras.Model, text: str) -> str:
    """One line from the converter's report: the first op it could not lower, and the layer it came from."""
    from netdsl.deploy.onnx_format import layer_of

    found = re.search(r'fused\["[^"]*", "([^"@]+)@[^\n]*error: \'tf\.(\w+)\' op is neither a custom op nor a flex op',
                      text)
    if found is None:
        first = next((line.strip() for line in text.splitlines() if "error:" in line), text.strip().split("\n")[0])
        return f"the model cannot be exported to litert: {first[:300]}"
    layer = layer_of(model, found.group(1))
    reason = f"TensorFlow op {found.group(2)} is not a LiteRT built-in op"
    if layer is None:
        return f"the model cannot be exported to litert: {reason}"
    return f"layer '{layer.name}' ({type(layer).__name__}) cannot be exported to litert: {reason}"
