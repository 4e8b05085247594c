"""The proof that an exported spec is the model: `netdsl export --verify` and the tests.

The spec must check clean and rebuild a model with the same parameter count, layer
classes (in order) and weight shapes; the original's weights must load into it, and
on seeded random inputs both must give outputs within `TOLERANCE`. Exporting the
rebuilt model again must give the same text (a fixed point). This module imports
Keras: it builds models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..check import analyze
from ..errors import SpecError
from ..loader import load_text

TOLERANCE = 1e-5
BATCH = 2


@dataclass
class RoundTrip:
    """What the round trip found; `ok` when every point holds."""

    params: tuple[int, int] = (0, 0)  # original, rebuilt
    layers: tuple[int, int] = (0, 0)
    same_classes: bool = False
    same_weight_shapes: bool = False
    weights_loaded: bool = False
    max_difference: float = float("inf")
    fixed_point: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (not self.problems and self.params[0] == self.params[1] and self.same_classes
                and self.same_weight_shapes and self.weights_loaded
                and self.max_difference <= TOLERANCE and self.fixed_point)

    def lines(self) -> list[str]:
        def mark(good: bool) -> str:
            return "ok" if good else "FAILED"

        return [
            f"parameters: {self.params[0]:,} -> {self.params[1]:,} ({mark(self.params[0] == self.params[1])})",
            f"layer classes: {self.layers[0]} -> {self.layers[1]} in the same order ({mark(self.same_classes)})",
            f"weight shapes: {mark(self.same_weight_shapes)}",
            f"weights loaded: {mark(self.weights_loaded)}",
            f"outputs: max |difference| {self.max_difference:.3g} <= {TOLERANCE:g} "
            f"({mark(self.max_difference <= TOLERANCE)})",
            f"export of the rebuilt model: {'the same text' if self.fixed_point else 'DIFFERENT text'} "
            f"({mark(self.fixed_point)})",
        ] + [f"problem: {p}" for p in self.problems]


def verify_round_trip(original: Any, text: str, *, flat: bool = False, seed: int = 0,
                      filename: str = "<export>") -> tuple[RoundTrip, Any]:
    """Check the exported `text` against the `original` keras.Model; (result, rebuilt model or None)."""
    from ..compile import build_model
    from . import export_model

    result = RoundTrip()
    program = load_text(text, filename)
    errors = [d for d in analyze(program).diagnostics if d.severity == "error"]
    if errors:
        result.problems += [f"the spec does not check: {d.line}:{d.col}: {d.text}" for d in errors]
        return result, None
    try:
        rebuilt = build_model(program, program.model_names[-1])
    except SpecError as exc:
        result.problems += [f"the spec does not build: {d.text}" for d in exc.diagnostics]
        return result, None
    result.params = (original.count_params(), rebuilt.count_params())
    classes = (layer_classes(original), layer_classes(rebuilt))
    result.layers = (len(classes[0]), len(classes[1]))
    result.same_classes = classes[0] == classes[1]
    result.same_weight_shapes = weight_shapes(original) == weight_shapes(rebuilt)
    if result.same_weight_shapes:
        rebuilt.set_weights(original.get_weights())
        result.weights_loaded = True
        result.max_difference = max_output_difference(original, rebuilt, seed)
    result.fixed_point = export_model(rebuilt, flat=flat) == text
    return result, rebuilt


def layer_classes(model: Any) -> list[str]:
    """Class names in layer order, nested models opened (`Model[...]`), inputs left out."""
    import keras

    names = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            names.append("Model[" + ",".join(layer_classes(layer)) + "]")
        elif type(layer).__name__ != "InputLayer":
            names.append(type(layer).__name__)
    return names


def weight_shapes(model: Any) -> list[tuple]:
    return [tuple(w.shape) for w in model.weights]


def random_inputs(model: Any, seed: int) -> list:
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = []
    for tensor in model.inputs:
        shape = (BATCH,) + tuple(8 if d is None else d for d in tensor.shape[1:])
        if "int" in str(tensor.dtype):
            arrays.append(rng.integers(0, 2, size=shape).astype(str(tensor.dtype)))
        else:
            arrays.append(rng.standard_normal(shape).astype("float32"))
    return arrays


def max_output_difference(original: Any, rebuilt: Any, seed: int) -> float:
    import keras
    import numpy as np

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
