"""netdsl's own layers (`custom/layers.py` builds them): linear, scale, scaled_sigmoid, layer_scale, attention,
residual."""

from __future__ import annotations

import math
from typing import Any

from netdsl.errors import BuildError
from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, no_weights, same, size
from netdsl.registry.layers.attention import scores_shape
from netdsl.registry.layers.core import LAYERS as CORE


def _linear_params(args: Args, shapes: list[Shape]) -> int:
    return size(shapes[0][-1]) * size(args["units"])  # a kernel without bias


def _scale_params(args: Args, shapes: list[Shape]) -> int:
    return 1 if args["trainable"] else 0  # a learned scalar, or a constant that is no weight


def _layer_scale_shape(args: Args, shapes: list[Shape]) -> Shape:
    channels, width = shapes[0][-1], args["projection_dim"]
    if isinstance(channels, int) and isinstance(width, int) and channels != width:
        raise BuildError(f"projection_dim is {width}, but its input has {channels} channels (the last axis)")
    return shapes[0]


def _layer_scale_params(args: Args, shapes: list[Shape]) -> int:
    return size(args["projection_dim"])  # gamma: one scale per channel


def _attention_outputs(args: Args) -> int:
    return 2 if args["return_weights"] else 1


def _attention_shapes(args: Args, shapes: list[Shape]) -> Any:
    out = shapes[0][:-1] + (args["d_model"],)
    if args["return_weights"]:
        key = shapes[1] if len(shapes) > 1 else shapes[0]
        return [out, scores_shape(args["heads"], shapes[0], key, True)]
    return out


def _attention_params(args: Args, shapes: list[Shape]) -> int:
    width = size(args["d_model"])
    query = shapes[0]
    key = shapes[1] if len(shapes) > 1 else query
    value = shapes[2] if len(shapes) > 2 else key
    return width * (size(query[-1]) + size(key[-1]) + size(value[-1])) + (3 * width if args["use_bias"] else 0)


def _residual_shapes(args: Args, shapes: list[Shape]) -> Shape:
    h, w, _ = shapes[0]
    stride = args["stride"]
    return (None if h is None else math.ceil(h / stride), None if w is None else math.ceil(w / stride), args["filters"])


def _residual_params(args: Args, shapes: list[Shape]) -> int:
    shape = shapes[0]
    fan_in, filters = size(shape[-1]), size(args["filters"])
    kernel: int = size(args["kernel_size"]) ** (len(shape) - 1)
    total = kernel * fan_in * filters + 4 * filters + kernel * filters * filters + 4 * filters  # two conv + BN
    if fan_in != filters or args["stride"] != 1:
        total += fan_in * filters + 4 * filters  # the 1x1 projection of the shortcut, and its BN
    return total


LAYERS: dict[str, Anatomy] = {
    "linear": Anatomy(CORE["dense"].shapes, _linear_params),
    "scale": Anatomy(same, _scale_params),
    "scaled_sigmoid": Anatomy(same, no_weights),
    "layer_scale": Anatomy(_layer_scale_shape, _layer_scale_params),
    "attention": Anatomy(_attention_shapes, _attention_params, _attention_outputs),
    "residual": Anatomy(_residual_shapes, _residual_params),
}

UNKNOWN: dict[str, str] = {}
