"""SavedModel through Keras' ExportArchive: one `serve` endpoint, also the `serving_default` signature.

The signature takes the spec's input names and returns a dict keyed by its output names,
batch axis open. netdsl's version and the spec's hash go to `assets.extra/netdsl.json`,
the folder TensorFlow leaves for files of the tools around a model. `load` runs the folder
in TensorFlow (`tf.saved_model.load`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.deploy.errors import ExportError
from netdsl.deploy.folders import replace_folder
from netdsl.deploy.formats import ExportedModel, Format
from netdsl.deploy.serving import forward, input_specs
from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_EXPORT_METADATA_BYTES
from netdsl.training.data.signature import Signature, TensorSpec

if TYPE_CHECKING:
    import keras

METADATA = Path("assets.extra") / "netdsl.json"


def write_saved_model_to(model: keras.Model, folder: Path, metadata: dict[str, str]) -> None:
    """Write the SavedModel into `folder` (which must not exist yet)."""
    from keras.export import ExportArchive

    archive = ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", forward(model), input_signature=input_specs(model))
    archive.write_out(str(folder), verbose=False)
    (folder / METADATA).parent.mkdir(exist_ok=True)
    (folder / METADATA).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def write(model: keras.Model, out: Path, metadata: dict[str, str]) -> None:
    replace_folder(out, lambda tmp: write_saved_model_to(model, tmp, metadata))


def load(path: Path, fmt: Format) -> ExportedModel:
    """The folder's `serving_default` signature in TensorFlow, `assets.extra/netdsl.json` as the metadata."""
    import tensorflow as tf

    from netdsl.deploy.exported_runtime import SIGNATURE_KEY

    loaded = tf.saved_model.load(str(path))
    if SIGNATURE_KEY not in loaded.signatures:
        raise ExportError(f"no signature '{SIGNATURE_KEY}' (netdsl export writes one)", file=str(path))
    serve = loaded.signatures[SIGNATURE_KEY]

    def spec(name: str, tensor: Any) -> TensorSpec:
        return TensorSpec(name, tuple(tensor.shape[1:]), tensor.dtype.name)

    inputs = serve.structured_input_signature[1]
    signature = Signature(
        tuple(spec(n, t) for n, t in inputs.items()), tuple(spec(n, t) for n, t in serve.structured_outputs.items())
    )

    def run(batch: dict[str, np.ndarray], keep: Any = loaded) -> dict[str, np.ndarray]:
        # `keep`: the signature's variables live as long as the loaded object does
        result = serve(**{name: tf.constant(value) for name, value in batch.items()})
        return {name: value.numpy() for name, value in result.items()}

    return ExportedModel(path, fmt, signature, run, _recorded(path / METADATA))


def _recorded(file: Path) -> dict[str, str]:
    """What the export recorded in the folder ({} when nothing netdsl can read: another tool's folder, a
    damaged or oversized record, a link)."""
    try:
        recorded = json.loads(read_regular(file, MAX_EXPORT_METADATA_BYTES, "metadata", follow_links=False))
    except (Refused, ValueError, RecursionError):
        return {}
    if not isinstance(recorded, dict):
        return {}
    return {key: value for key, value in recorded.items() if isinstance(key, str) and isinstance(value, str)}
