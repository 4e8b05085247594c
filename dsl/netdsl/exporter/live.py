"""The config of a live keras.Model, as `model.save` would write it to config.json.

The only exporter module that touches Keras (and only for a model the caller
already holds, so Keras is imported already).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import Diagnostic, SpecError


def live_config(model: Any) -> dict:
    import keras
    from keras.saving import serialize_keras_object

    if not isinstance(model, keras.Model):
        raise SpecError(Diagnostic.for_file("<model>", f"expected a keras.Model or a .keras path, "
                                                       f"received: {type(model).__name__}"))
    try:
        # Through JSON, as `model.save` writes it: tuples become lists, the same data as a file.
        return json.loads(json.dumps(serialize_keras_object(model)))
    except Exception as exc:  # a subclassed model without get_config, for one
        raise SpecError(Diagnostic.for_file(model.name, f"cannot read the model's config: {exc}",
                                            "only functional and Sequential models can be exported")) from None
