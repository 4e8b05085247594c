"""The proof that an exported spec is the model: `netdsl decompile --verify` and the tests.

The spec must check clean and rebuild a model with the same parameter count, layer
classes (in order) and weight shapes; the original's weights must load into it, and
on seeded random inputs both must give outputs within `TOLERANCE`. Exporting the
rebuilt model again must give the same text (a fixed point). Models are built and
measured by the backend (`netdsl.backend.inspection`); this module imports no Keras.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import SpecError
from netdsl.semantics.session import LoadedSpec
from netdsl.syntax.loader import load_text

TOLERANCE = 1e-5


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
        return (
            not self.problems
            and self.params[0] == self.params[1]
            and self.same_classes
            and self.same_weight_shapes
            and self.weights_loaded
            and self.max_difference <= TOLERANCE
            and self.fixed_point
        )

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
            f"decompile of the rebuilt model: {'the same text' if self.fixed_point else 'DIFFERENT text'} "
            f"({mark(self.fixed_point)})",
        ] + [f"problem: {p}" for p in self.problems]


def verify_round_trip(
    original: Any, text: str, *, flat: bool = False, seed: int = 0, filename: str = "<decompile>"
) -> tuple[RoundTrip, Any]:
    """Check the exported `text` against the `original` keras.Model; (result, rebuilt model or None)."""
    from netdsl.backend.compiler import build_one
    from netdsl.backend.inspection import layer_classes, max_output_difference, weight_shapes
    from netdsl.decompiler import decompile_model

    result = RoundTrip()
    spec = LoadedSpec(load_text(text, filename))
    names = spec.program.model_names
    errors = [d for d in spec.models(names).analysis.diagnostics if d.severity == "error"]
    if errors:
        result.problems += [f"the spec does not check: {d.line}:{d.col}: {d.text}" for d in errors]
        return result, None
    try:
        rebuilt = build_one(spec.model(names[-1]))
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
    result.fixed_point = decompile_model(rebuilt, flat=flat) == text
    return result, rebuilt
