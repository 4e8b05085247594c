"""A built keras.Model seen from outside, for `netdsl decompile` and its round-trip proof.

The decompiler room imports no Keras; what it needs from a live model comes from here:
the model's config exactly as `model.save` writes it to `config.json`, loading a
`.keras` file to compare against (`--verify`), and the measurements of the round
trip (layer classes, weight shapes, outputs on seeded random inputs).
"""

from __future__ import annotations

import json
from typing import Any

import keras
import numpy as np

from netdsl.errors import Diagnostic, SpecError

__all__ = ["saved_config", "load_saved", "layer_classes", "weight_shapes", "max_output_difference"]


def saved_config(model: Any) -> dict:
    """The model's config as `config.json` holds it (through JSON: tuples become lists)."""
    if not isinstance(model, keras.Model):
        raise SpecError(
            Diagnostic.for_file(
                "<model>", f"expected a keras.Model or the path of a .keras file, received: {type(model).__name__}"
            )
        )
    try:
        return json.loads(json.dumps(keras.saving.serialize_keras_object(model)))
    except Exception as exc:  # a subclassed model without get_config, for one
        raise SpecError(
            Diagnostic.for_file(
                model.name,
                f"cannot read the model's config: {exc}",
                "only functional and Sequential models can be decompiled",
            )
        ) from None


def load_saved(path: str) -> Any:
    """A `.keras` file as a model, with Keras' safe mode on (no code from the file runs)."""
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as exc:
        raise SpecError(Diagnostic.for_file(str(path), f"Keras cannot load the model to compare with: {exc}")) from None


# Weightless layers that stand for Keras operation nodes (which Keras does not list among a
# model's layers): a spec's `h * 0.5` is a TensorOp and `a + b` an Add layer where the Keras
# code wrote operations; weights, parameters and outputs still prove the round trip.
_ARITHMETIC = ("TensorOp", "Add")


def layer_classes(model: Any) -> list[str]:
    """Class names in layer order, nested models opened (`Model[...]`), inputs and weightless
    arithmetic left out."""
    names = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            names.append("Model[" + ",".join(layer_classes(layer)) + "]")
        elif type(layer).__name__ != "InputLayer" and not (type(layer).__name__ in _ARITHMETIC and not layer.weights):
            names.append(type(layer).__name__)
    return names


def weight_shapes(model: Any) -> list[tuple]:
    return [tuple(w.shape) for w in model.weights]


def random_inputs(model: Any, seed: int, batch: int = 1) -> list:
    """Seeded inputs for every model input: normal floats, or 0/1 for integer inputs."""
    rng = np.random.default_rng(seed)
    arrays = []
    for tensor in model.inputs:
        shape = (batch,) + tuple(8 if d is None else d for d in tensor.shape[1:])
        if "int" in str(tensor.dtype):
            arrays.append(rng.integers(0, 2, size=shape).astype(str(tensor.dtype)))
        else:
            arrays.append(rng.standard_normal(shape).astype("float32"))
    return arrays


def max_output_difference(original: Any, rebuilt: Any, seed: int) -> float:
    """The largest |difference| between the two models' outputs on the same seeded inputs."""
    inputs = random_inputs(original, seed)
    feed = inputs[0] if len(inputs) == 1 else inputs
    expected = keras.tree.flatten(original(feed, training=False))
    actual = keras.tree.flatten(rebuilt(feed, training=False))
    if len(expected) != len(actual):
        return float("inf")
    worst = 0.0
    for a, b in zip(expected, actual):
        a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
        if a.shape != b.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(a - b))) if a.size else 0.0)
    return worst
