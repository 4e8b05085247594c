"""Wrappers of another layer: bidirectional, time_distributed, spectral_normalization.

The wrapped layer comes as the checker resolves a `layer` argument (an object
with `kind == "layer"`, a registry `name` and `kwargs` pairs) or, from Python,
as a pair (Entry, kwargs). A bidirectional RNN's outputs are counted from its
layer's (`return_state`: the merged sequence, then each direction's states);
time_distributed's take only the pair, and the checker leaves them to Keras.
"""

from __future__ import annotations

from typing import Any

from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, channels, outputs_of, params_of, shapes_of, size
from netdsl.registry.table import Entry, lookup


def nested(value: Any, resolved: bool = True) -> Args | None:
    """The wrapped layer's arguments: from the pair (Entry, kwargs), or (`resolved`) from the checker's form."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Entry) and isinstance(value[1], dict):
        return Args(value[0], value[1])
    if resolved and getattr(value, "kind", None) == "layer" and isinstance(getattr(value, "name", None), str):
        entry = lookup("layer", value.name)
        kwargs = getattr(value, "kwargs", ())
        if entry is not None and isinstance(kwargs, tuple):
            return Args(entry, dict(kwargs))
    return None


def _wrapped(args: Args, name: str = "layer") -> Args:
    inner = nested(args[name])
    if inner is None:
        raise ValueError(f"a wrapped layer netdsl cannot see: {args[name]!r}")
    return inner


# ---------------------------------------------------------------- time_distributed: the layer on every step


def _time_distributed_outputs(args: Args) -> int | None:
    inner = nested(args["layer"], resolved=False)
    return None if inner is None else outputs_of(inner)


def _time_distributed_shapes(args: Args, shapes: list[Shape]) -> Any:
    steps, *step_shape = shapes[0]
    if not step_shape:
        raise ValueError("time_distributed needs a time axis and a step of rank 1 or more")
    out = shapes_of(_wrapped(args), [tuple(step_shape)])
    if isinstance(out, list):
        return [None if o is None else (steps, *o) for o in out]
    return (steps, *out)


def _time_distributed_params(args: Args, shapes: list[Shape]) -> int:
    return params_of(_wrapped(args), [s[1:] for s in shapes])  # the inner layer sees one time step


# ---------------------------------------------------------------- bidirectional: forward and backward copies


def _bidirectional_outputs(args: Args) -> int | None:
    inner = nested(args["layer"])
    count = None if inner is None else outputs_of(inner)
    if count is None:
        return None
    merged = 2 if args["merge_mode"] is None else 1
    return merged + 2 * (count - 1)  # each direction's states


def _bidirectional_shapes(args: Args, shapes: list[Shape]) -> Any:
    """As Keras' `Bidirectional`: the sequence output merged (concat: last axes side by side;
    sum, ave, mul: as is; None: the two apart), then each direction's states."""
    forward = _direction_shapes(_wrapped(args), shapes)
    backward = _direction_shapes(nested(args["backward_layer"]) or _wrapped(args), shapes)
    (out, *states), (back, *back_states) = forward, backward
    mode = args["merge_mode"]
    if mode is None:
        merged = [out, back]
    elif mode == "concat":
        if out[:-1] != back[:-1]:
            raise ValueError("the two directions' outputs differ before the last axis")
        merged = [out[:-1] + (None if out[-1] is None or back[-1] is None else out[-1] + back[-1],)]
    elif mode in ("sum", "ave", "mul"):
        if out != back:
            raise ValueError("the two directions' outputs differ")
        merged = [out]
    else:
        raise ValueError(f"merge_mode {mode!r}")  # Keras refuses it
    found = merged + states + back_states
    return found if len(found) > 1 else found[0]


def _direction_shapes(inner: Args, shapes: list[Shape]) -> list[Shape]:
    out = shapes_of(inner, shapes)
    return list(out) if isinstance(out, list) else [out]


def _bidirectional_params(args: Args, shapes: list[Shape]) -> int:
    forward = _wrapped(args)
    backward = nested(args["backward_layer"]) or forward
    return params_of(forward, shapes) + params_of(backward, shapes)


# ---------------------------------------------------------------- spectral_normalization: a kernel's norm


def _spectral_params(args: Args, shapes: list[Shape]) -> int:
    """The wrapped layer's weights and `vector_u`, one row as long as its kernel's last axis."""
    inner = _wrapped(args)
    own = params_of(inner, shapes)
    name = inner.name
    if name == "dense":
        return own + size(inner["units"])
    if name == "embedding":
        return own + size(inner["output_dim"])
    if name in ("conv1d", "conv2d", "conv3d"):
        return own + size(inner["filters"])
    if name in ("conv1d_transpose", "conv2d_transpose", "conv3d_transpose"):  # its kernel ends with the inputs
        return own + channels(inner, shapes[0])
    if name in ("depthwise_conv1d", "depthwise_conv2d"):
        return own + size(inner["depth_multiplier"])
    return own  # Keras refuses a layer without a kernel; the inner count bounds it from below


def _spectral_shapes(args: Args, shapes: list[Shape]) -> Any:
    return shapes_of(_wrapped(args), shapes)


LAYERS: dict[str, Anatomy] = {
    "time_distributed": Anatomy(_time_distributed_shapes, _time_distributed_params, _time_distributed_outputs),
    "bidirectional": Anatomy(_bidirectional_shapes, _bidirectional_params, _bidirectional_outputs),
    "spectral_normalization": Anatomy(_spectral_shapes, _spectral_params),
}

UNKNOWN: dict[str, str] = {}
