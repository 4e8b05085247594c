"""SavedModel through Keras' ExportArchive: one `serve` endpoint, also the `serving_default` signature.

The signature takes the spec's input names and returns a dict keyed by its output names,
batch axis open. netdsl's version and the spec's hash go to `assets.extra/netdsl.json`,
the folder TensorFlow leaves for files of the tools around a model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from netdsl.deploy.folders import replace_folder
from netdsl.deploy.serving import forward, input_specs

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


def write_saved_model(model: keras.Model, out: Path, metadata: dict[str, str]) -> None:
    replace_folder(out, lambda tmp: write_saved_model_to(model, tmp, metadata))
