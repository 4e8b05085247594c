"""Every layer's anatomy in one place: its output shapes, parameter count and number of outputs.

Each family module (`core`, `conv`, `pooling`, `rnn`, `attention`, `merge`,
`wrappers`, `netdsl`, `preprocessing`) maps canonical registry names to an
`anatomy.Anatomy` of three rules, and lists in its `UNKNOWN` every rule it does
not have, with the reason; tests/registry/test_layer_anatomy.py checks that every layer
of the allow-list is covered one way or the other, and compares the rules with
Keras. Adding a layer is one entry in its family's `LAYERS`.

`output_count`, `estimate_params` and `output_shapes` are what the rest of
netdsl calls (`netdsl.registry` re-exports them); they take an `Entry`, its
constant kwargs and the input shapes, import no Keras, and answer None where a
rule is missing or cannot tell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netdsl.errors import BuildError
from netdsl.registry.layers import attention, conv, core, merge, netdsl, pooling, preprocessing, rnn, wrappers
from netdsl.registry.layers.anatomy import TABLE, Anatomy, Args, Shape, outputs_of, params_of, shapes_of
from netdsl.registry.table import Entry

__all__ = ["ANATOMY", "UNKNOWN", "Anatomy", "output_count", "estimate_params", "output_shapes"]

_FAMILIES = (core, conv, pooling, rnn, attention, merge, wrappers, netdsl, preprocessing)

for _family in _FAMILIES:
    TABLE.update(_family.LAYERS)
ANATOMY: Mapping[str, Anatomy] = TABLE
UNKNOWN: dict[str, str] = {name: reason for family in _FAMILIES for name, reason in family.UNKNOWN.items()}

# A rule that cannot tell (a value of the wrong type, an unknown size, a form it leaves to Keras) raises one of these.
_CANNOT_TELL = (
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    AttributeError,
    ZeroDivisionError,
    OverflowError,
    RecursionError,
)  # wrappers nested deep in wrappers


def output_count(entry: Entry, kwargs: Mapping[str, Any]) -> int | None:
    """How many tensors the step returns, given its constant kwargs; None when it cannot be told
    (a wrapper around a layer it cannot see)."""
    if entry.kind != "layer":
        return 1
    try:
        return outputs_of(Args(entry, kwargs))
    except _CANNOT_TELL:
        return None


def estimate_params(entry: Entry, kwargs: Mapping[str, Any], input_shapes: Sequence[Any]) -> int | None:
    """Cheap parameter count of a layer before any Keras constructor runs (trainable and non-trainable, as
    `count_params` reports), from its constant kwargs and its input shapes (batch axis excluded, may hold
    None). None when unknown: an unknown size, a value of the wrong type, or a layer without a count rule."""
    if entry.kind != "layer":
        return None
    try:
        return params_of(Args(entry, kwargs), [tuple(s) for s in input_shapes])
    except _CANNOT_TELL:
        return None


def output_shapes(entry: Entry, kwargs: Mapping[str, Any], input_shapes: list[Shape]) -> list[Shape | None] | None:
    """Each output's shape (None for one it cannot tell), or None when the layer has no shape rule or it
    cannot tell at all; raises BuildError for inputs the layer refuses."""
    try:
        out = shapes_of(Args(entry, kwargs), input_shapes)
    except BuildError:
        raise
    except _CANNOT_TELL:
        return None
    return out if isinstance(out, list) else [out]
