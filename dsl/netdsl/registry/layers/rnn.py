"""Recurrent layers: lstm, gru, simple_rnn and the convolutional LSTMs."""

from __future__ import annotations

import math
from typing import Any

from netdsl.errors import BuildError
from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, channels, dims, shape_text, size
from netdsl.registry.layers.conv import conv_rank

# How many state tensors each returns after its output when `return_state` is set.
STATES = {"lstm": 2, "gru": 1, "simple_rnn": 1, "conv_lstm1d": 2, "conv_lstm2d": 2, "conv_lstm3d": 2}
_GATES = {"lstm": 4, "gru": 3, "simple_rnn": 1}


def _outputs(args: Args) -> int:
    return 1 + STATES[args.name] if args["return_state"] else 1


def _shapes(args: Args, shapes: list[Shape]) -> Any:
    if len(shapes[0]) != 2:  # (steps, features): Keras refuses any other rank
        raise BuildError(f"'{args.name}' takes sequences of (steps, features); received {shape_text(shapes[0])}")
    units = args["units"]
    sequence = shapes[0][:-1] + (units,) if args["return_sequences"] else (units,)
    if args["return_state"]:
        return [sequence] + [(units,)] * STATES[args.name]
    return sequence


def _params(args: Args, shapes: list[Shape]) -> int:
    fan_in, units = size(shapes[0][-1]), size(args["units"])
    gates = _GATES[args.name]
    biases = gates * units * (2 if args.name == "gru" and args["reset_after"] else 1)
    return gates * units * (fan_in + units) + (biases if args["use_bias"] else 0)


def _conv_lstm_params(args: Args, shapes: list[Shape]) -> int:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    fan_in, filters = channels(args, shapes[0]), size(args["filters"])
    return kernel * fan_in * 4 * filters + kernel * filters * 4 * filters + (4 * filters if args["use_bias"] else 0)


LAYERS: dict[str, Anatomy] = {
    **{name: Anatomy(_shapes, _params, _outputs) for name in _GATES},
    **{f"conv_lstm{rank}d": Anatomy(None, _conv_lstm_params, _outputs) for rank in (1, 2, 3)},
}

UNKNOWN: dict[str, str] = {
    f"conv_lstm{rank}d": "shape: no shape rule written yet (count and outputs are known)" for rank in (1, 2, 3)
}
