"""Merging layers: element-wise (add, subtract, multiply, average, maximum, minimum), concatenate, dot."""

from __future__ import annotations

from netdsl.errors import BuildError
from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, no_weights, shape_text


def _elementwise(args: Args, shapes: list[Shape]) -> Shape:
    first = shapes[0]
    for other in shapes[1:]:
        if len(other) != len(first):
            raise BuildError(f"cannot combine shapes {' and '.join(shape_text(s) for s in shapes)}")
        for a, b in zip(first, other):
            if a is not None and b is not None and a != b and 1 not in (a, b):
                raise BuildError(f"cannot combine shapes {' and '.join(shape_text(s) for s in shapes)}")
    # As Keras' merge layers: a size varying in any input varies in the output; 1 broadcasts.
    return tuple(None if any(s[i] is None for s in shapes) else max(s[i] for s in shapes) for i in range(len(first)))


def _concatenate(args: Args, shapes: list[Shape]) -> Shape:
    written = args["axis"]
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise BuildError(f"concatenate needs inputs of one rank, received {', '.join(shape_text(s) for s in shapes)}")
    axis = written - 1 if written > 0 else written + rank  # spec axes count the batch axis
    out = list(shapes[0])
    for i in range(rank):
        if i == axis:
            continue
        if len({s[i] for s in shapes if s[i] is not None}) > 1:
            raise BuildError(
                f"concatenate on axis {written} needs matching shapes elsewhere, "
                f"received {', '.join(shape_text(s) for s in shapes)}"
            )
    sizes = [s[axis] for s in shapes]
    out[axis] = None if None in sizes else sum(sizes)
    return tuple(out)


LAYERS: dict[str, Anatomy] = {
    **{
        name: Anatomy(_elementwise, no_weights)
        for name in ("add", "subtract", "multiply", "average", "maximum", "minimum")
    },
    "concatenate": Anatomy(_concatenate, no_weights),
    "dot": Anatomy(None, no_weights),
}

UNKNOWN: dict[str, str] = {
    "dot": "shape: no shape rule written yet for its `axes` (it has no weights)",
}
