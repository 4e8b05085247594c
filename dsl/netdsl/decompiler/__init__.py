"""`netdsl decompile`: a Keras model back to a readable `.net` spec.

The pipeline, one module per stage:

    .keras file --archive--> config dict --graph--> calls of layers
        --layer_steps--> a registry step per layer (defaults left out)
        --program--> chains of units, residual/concat regions folded into merges
        --blocks--> repeated structure as parameterised blocks and `* N` repeats
        --emit/spec_ir--> IR --formatter.format_ir--> text in `netdsl fmt` form

A file is read as data (`config.json`); nothing from it reaches Keras, and TensorFlow
is not imported. `verify.py` proves the round trip (building models through the backend).
"""

from __future__ import annotations

import os
from typing import Any

from netdsl.decompiler.archive import read_model_config
from netdsl.decompiler.decompile_text import decompile_config

__all__ = ["decompile_model", "decompile_config", "read_model_config"]


def decompile_model(source: Any, *, flat: bool = False) -> str:
    """The spec of a Keras model: `source` is a path to a `.keras` file or a live keras.Model.

    Raises SpecError (with every layer that cannot be expressed) when the model has
    no spec form.
    """
    if isinstance(source, (str, os.PathLike)):
        return decompile_config(read_model_config(source), str(source), flat=flat)
    from netdsl.backend.inspection import saved_config  # a live model: Keras is imported already

    return decompile_config(saved_config(source), getattr(source, "name", "<model>"), flat=flat)
