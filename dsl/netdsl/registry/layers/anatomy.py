"""What a layer's anatomy is: its output shapes, its parameter count, its number of outputs.

Keras answers these with `compute_output_shape` and `count_params` on a built
layer; netdsl answers them in pure Python from an `Entry` of the allow-list,
its constant arguments and its input shapes, so `check`, the editor and the
diagrams know them without importing Keras. Every family module beside this
one (`core`, `conv`, `pooling`, `rnn`, `attention`, `merge`, `wrappers`,
`netdsl`, `preprocessing`) maps layer names to an `Anatomy`, or lists a layer
in its `UNKNOWN` with the reason it has none; `netdsl.registry.layers` joins them.

Shapes exclude the batch axis and hold `None` for a size that varies. A rule
raises `BuildError` for inputs the layer refuses (a kernel larger than its
input) and any other error (`ValueError`, `TypeError`, ...) when it cannot
tell; the caller then reports "unknown".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from netdsl.errors import BuildError
from netdsl.registry.table import REQUIRED, Entry

__all__ = [
    "Anatomy",
    "Args",
    "Shape",
    "ShapeRule",
    "ParamRule",
    "OutputRule",
    "one",
    "same",
    "no_weights",
    "shape_text",
    "anatomy_of",
    "outputs_of",
    "params_of",
    "shapes_of",
    "size",
    "dims",
    "ints",
    "channels",
    "channels_last",
    "axis_size",
    "conv_dim",
]

Shape = tuple[Any, ...]
"""Sizes without the batch axis, `None` where a size varies (an unknown part passes through as it is)."""


class Args:
    """A layer's constant arguments as the spec gave them; a missing one reads as its registry default
    (a missing required one raises KeyError, a name the layer does not have reads as None)."""

    __slots__ = ("entry", "given")

    def __init__(self, entry: Entry, given: Mapping[str, Any]) -> None:
        self.entry = entry
        self.given = given

    def __getitem__(self, name: str) -> Any:
        if name in self.given:
            return self.given[name]
        param = self.entry.params_by_name.get(name)  # (the cost and the counts read every layer's arguments)
        if param is None:
            return None
        if param.default is REQUIRED:
            raise KeyError(name)
        return param.default

    @property
    def name(self) -> str:
        return self.entry.name


ShapeRule = Callable[[Args, list[Shape]], Any]
"""(args, input shapes) -> the output's shape, or a list with one per output (None: that one is unknown)."""
ParamRule = Callable[[Args, list[Shape]], int]
"""(args, input shapes) -> the parameter count, trainable and not, as Keras' `count_params` reports."""
OutputRule = Callable[[Args], "int | None"]
"""(args) -> how many tensors the layer returns; None when it cannot be told."""


def one(args: Args) -> int:
    """The output count of nearly every layer."""
    return 1


def same(args: Args, shapes: list[Shape]) -> Shape:
    """The output has the input's shape (activations, dropout, normalization)."""
    return shapes[0]


def no_weights(args: Args, shapes: list[Shape]) -> int:
    """A layer Keras builds without any weight."""
    return 0


@dataclass(frozen=True)
class Anatomy:
    """The three rules of one layer; `None` for a rule netdsl does not have (then the layer is in `UNKNOWN`)."""

    shapes: ShapeRule | None
    params: ParamRule | None
    outputs: OutputRule | None = one


# Filled by `netdsl.registry.layers` from every family module (wrappers read their inner layer's rules).
TABLE: dict[str, Anatomy] = {}


def anatomy_of(name: str) -> Anatomy | None:
    """The anatomy of the layer called `name` (canonical registry name), or None."""
    return TABLE.get(name)


def outputs_of(args: Args) -> int | None:
    """How many tensors the layer returns: 1 for a layer without an anatomy (a plugin's), None when unknown."""
    anatomy = TABLE.get(args.name)
    if anatomy is None or args.entry.source == "plugin":
        return 1
    return None if anatomy.outputs is None else anatomy.outputs(args)


def params_of(args: Args, shapes: list[Shape]) -> int:
    """The layer's parameter count; ValueError when it has no count rule."""
    anatomy = TABLE.get(args.name)
    if anatomy is None or anatomy.params is None or args.entry.source == "plugin":
        raise ValueError(f"no parameter count for {args.name}")
    return anatomy.params(args, shapes)


def shapes_of(args: Args, shapes: list[Shape]) -> Any:
    """The layer's output shape (or list of them); ValueError when it has no shape rule."""
    anatomy = TABLE.get(args.name)
    if anatomy is None or anatomy.shapes is None or args.entry.source == "plugin":
        raise ValueError(f"no shape rule for {args.name}")
    return anatomy.shapes(args, shapes)


# ---------------------------------------------------------------- helpers of the rules


def size(value: Any) -> int:
    """A known, non-negative size; anything else cannot be counted (ValueError)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(value)
    return value


def dims(value: Any, rank: int) -> tuple[int, ...]:
    """A per-axis argument (kernel_size, strides) of `rank` axes, given as one int or one per axis."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * rank
    value = tuple(value)
    if len(value) != rank:
        raise ValueError(value)
    return tuple(size(v) for v in value)


def ints(value: Any, rank: int) -> tuple[Any, ...]:
    """Like `dims`, without checking the sizes (shape rules pass unknown parts through)."""
    if isinstance(value, int):
        return (value,) * rank
    return tuple(value)


def channels_last(args: Args) -> bool:
    return args["data_format"] in (None, "channels_last")


def channels(args: Args, shape: Shape) -> int:
    """The input's channel count, wherever its data_format puts it."""
    return size(shape[0] if args["data_format"] == "channels_first" else shape[-1])


def axis_size(shape: Shape, axis: Any) -> int:
    """Size of `axis` (Keras numbering: 0 is the batch axis) of a shape given without its batch axis."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ValueError(axis)
    if axis == 0 or axis < -len(shape) or axis > len(shape):
        raise ValueError(axis)
    return size(shape[axis - 1] if axis > 0 else shape[axis])


def conv_dim(length: Any, kernel: int, stride: int, padding: str, dilation: int = 1) -> Any:
    """One spatial size after a convolution or pooling window (None stays None)."""
    if length is None:
        return None
    if padding in ("same", "causal"):
        return math.ceil(length / stride)
    effective = (kernel - 1) * dilation + 1
    out = (length - effective) // stride + 1
    if out <= 0:
        raise BuildError(f"the input is too small for the kernel: size {length}, kernel {kernel}")
    return out


def shape_text(shape: Any, open_size: str = "none") -> str:
    """A shape as the spec writes it: `(28, 28)`, `(10,)`, `()`; `open_size` for a size that varies
    (`none` in diagnostics, `?` in diagrams); anything that is not a tuple is `?`."""
    if not isinstance(shape, tuple):
        return "?"
    parts = [open_size if d is None else str(d) for d in shape]
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
