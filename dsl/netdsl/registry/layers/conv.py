"""Convolutions: plain, transposed, depthwise and separable, of rank 1 to 3 (conv_lstm is in `rnn`)."""

from __future__ import annotations

import math
import re

from netdsl.errors import BuildError
from netdsl.registry.layers.anatomy import (
    Anatomy,
    Args,
    Shape,
    ShapeRule,
    channels,
    channels_last,
    conv_dim,
    dims,
    ints,
    shape_text,
    size,
)


def conv_rank(name: str) -> int:
    """1, 2 or 3: the digit before the `d` of conv2d, depthwise_conv1d, conv_lstm3d."""
    found = re.search(r"(\d)d", name)
    if found is None:
        raise ValueError(name)
    return int(found.group(1))


def _shape_rule(rank: int, transpose: bool = False, depthwise: bool = False) -> ShapeRule:
    def rule(args: Args, shapes: list[Shape]) -> Shape:
        shape = shapes[0]
        if len(shape) != rank + 1:
            raise BuildError(
                f"expected an input of rank {rank + 2} (batch included), received shape {shape_text(shape)}"
            )
        if not channels_last(args):
            raise ValueError("channels_first: left to Keras")
        kernel = ints(args["kernel_size"], rank)
        strides = ints(args["strides"], rank)
        padding = str(args["padding"]).lower()
        if transpose:
            if args["output_padding"] is not None:
                raise ValueError("output_padding: left to Keras")
            spatial = tuple(
                None if s is None else (s * st if padding == "same" else (s - 1) * st + k)
                for s, k, st in zip(shape[:-1], kernel, strides)
            )
        else:
            dilation = ints(args["dilation_rate"], rank)
            spatial = tuple(
                conv_dim(s, k, st, padding, d) for s, k, st, d in zip(shape[:-1], kernel, strides, dilation)
            )
        if depthwise:
            out = shape[-1] * args["depth_multiplier"] if shape[-1] else None
        else:
            out = args["filters"]
        return spatial + (out,)

    return rule


def _bias(args: Args, count: int) -> int:
    return count if args["use_bias"] else 0


def _conv_params(args: Args, shapes: list[Shape]) -> int:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    fan_in, filters = channels(args, shapes[0]), size(args["filters"])
    groups = 1 if args.name.endswith("transpose") else size(args["groups"])
    return kernel * (fan_in // groups) * filters + _bias(args, filters)


def _depthwise_params(args: Args, shapes: list[Shape]) -> int:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    out = channels(args, shapes[0]) * size(args["depth_multiplier"])
    return kernel * out + _bias(args, out)


def _separable_params(args: Args, shapes: list[Shape]) -> int:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    middle = channels(args, shapes[0]) * size(args["depth_multiplier"])
    filters = size(args["filters"])
    return kernel * middle + middle * filters + _bias(args, filters)


LAYERS: dict[str, Anatomy] = {}
for _rank in (1, 2, 3):
    LAYERS[f"conv{_rank}d"] = Anatomy(_shape_rule(_rank), _conv_params)
    LAYERS[f"conv{_rank}d_transpose"] = Anatomy(_shape_rule(_rank, transpose=True), _conv_params)
for _rank in (1, 2):
    LAYERS[f"depthwise_conv{_rank}d"] = Anatomy(_shape_rule(_rank, depthwise=True), _depthwise_params)
    LAYERS[f"separable_conv{_rank}d"] = Anatomy(_shape_rule(_rank), _separable_params)

UNKNOWN: dict[str, str] = {}
