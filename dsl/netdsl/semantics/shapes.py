"""Shape inference in pure Python, for `check` and topology diagrams.

The rules cover the layers people use most; any other layer gives an unknown
shape, and the checker then treats what depends on it as unknown (checking
both branches of an `if`), so a valid spec is never rejected for want of a
rule. Shapes exclude the batch axis; `None` is a dimension of unknown size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from netdsl.errors import BuildError
from netdsl.semantics import tensor_ops
from netdsl.semantics.graph import Graph, Node
from netdsl.semantics.shapes_declared import declared_output_shapes
from netdsl.semantics.values import UNKNOWN, Resolved

Shape = tuple


class ShapeBackend:
    """The expander's backend for `check`: handles are inferred shapes."""

    def input(self, node: Node, shape: tuple, dtype: str) -> Any:
        return tuple(None if d is UNKNOWN else d for d in shape) if UNKNOWN not in shape else UNKNOWN

    def apply(self, node: Node, inputs: list[Any]) -> list[Any]:
        shapes = infer(node, inputs)
        if len(shapes) != node.n_outputs and node.op == "layer":
            shapes = (shapes + [UNKNOWN] * node.n_outputs)[: node.n_outputs]
        return shapes

    def shape(self, handle: Any) -> Any:
        return handle

    def finish(self, graph: Graph) -> Any:
        return None


def infer(node: Node, inputs: list[Any]) -> list[Any]:
    if node.op == "model":
        sub: Graph = node.decl
        return [sub.node_of(ref).output_shapes[ref.index] for _, ref in sub.outputs]
    if node.op in ("activation", "declared_activation"):
        return [inputs[0]]
    if node.op == "tensor_op":
        return [tensor_ops.output_shape(node.decl, inputs)]
    if node.op == "declared_layer":
        if any(s is UNKNOWN for s in inputs):
            return [UNKNOWN] * node.n_outputs
        return declared_output_shapes(node.decl.config, inputs)
    if any(s is UNKNOWN for s in inputs):
        return [UNKNOWN] * node.n_outputs
    rule = _RULES.get(node.kind)
    if rule is None:
        return [UNKNOWN] * node.n_outputs
    try:
        out = rule(node.args, inputs)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return [UNKNOWN] * node.n_outputs
    return out if isinstance(out, list) else [out]


# ---------------------------------------------------------------- rules


def _same(args, shapes):
    return shapes[0]


def _ints(value, n: int) -> tuple:
    if isinstance(value, int):
        return (value,) * n
    return tuple(value)


def _conv_dim(size, kernel, stride, padding, dilation=1):
    if size is None:
        return None
    if padding in ("same", "causal"):
        return math.ceil(size / stride)
    effective = (kernel - 1) * dilation + 1
    out = (size - effective) // stride + 1
    if out <= 0:
        raise BuildError(f"the input is too small for the kernel: size {size}, kernel {kernel}")
    return out


def _channels_last(args) -> bool:
    return args.get("data_format") in (None, "channels_last")


def _conv(rank: int, transpose: bool = False, depthwise: bool = False):
    def rule(args, shapes):
        shape = shapes[0]
        if len(shape) != rank + 1:
            raise BuildError(f"expected an input of rank {rank + 2} (batch included), received shape "
                             f"{_show(shape)}")
        if not _channels_last(args):
            raise ValueError  # channels_first: leave it unknown
        kernel = _ints(args.get("kernel_size", 1), rank)
        strides = _ints(args.get("strides", 1), rank)
        dilation = _ints(args.get("dilation_rate", 1), rank)
        padding = str(args.get("padding", "valid")).lower()
        if transpose and args.get("output_padding") is not None:
            raise ValueError  # leave it to Keras
        if transpose:
            spatial = tuple(
                None if s is None else (s * st if padding == "same" else (s - 1) * st + k)
                for s, k, st in zip(shape[:-1], kernel, strides))
        else:
            spatial = tuple(_conv_dim(s, k, st, padding, d)
                            for s, k, st, d in zip(shape[:-1], kernel, strides, dilation))
        if depthwise:
            channels = shape[-1] * args.get("depth_multiplier", 1) if shape[-1] else None
        else:
            channels = args["filters"]
        return spatial + (channels,)
    return rule


def _pool(rank: int):
    def rule(args, shapes):
        shape = shapes[0]
        if len(shape) != rank + 1 or not _channels_last(args):
            raise ValueError
        pool = _ints(args.get("pool_size", 2), rank)
        strides = args.get("strides") or pool
        strides = _ints(strides, rank)
        padding = str(args.get("padding", "valid")).lower()
        spatial = tuple(_conv_dim(s, k, st, padding) for s, k, st in zip(shape[:-1], pool, strides))
        return spatial + (shape[-1],)
    return rule


def _global_pool(args, shapes):
    shape = shapes[0]
    if not _channels_last(args):
        raise ValueError
    if args.get("keepdims"):
        return (1,) * (len(shape) - 1) + (shape[-1],)
    return (shape[-1],)


def _dense(args, shapes):
    return shapes[0][:-1] + (args["units"],)


def _flatten(args, shapes):
    shape = shapes[0]
    if any(d is None for d in shape):
        return (None,)
    return (math.prod(shape),)


def _reshape(args, shapes):
    target = tuple(args["target_shape"])
    if -1 in target and all(d is not None for d in shapes[0]):
        known = math.prod(d for d in target if d != -1)
        total = math.prod(shapes[0])
        if known == 0 or total % known:
            raise BuildError(f"cannot reshape {_show(shapes[0])} to {_show(target)}")
        target = tuple(total // known if d == -1 else d for d in target)
    elif all(d is not None for d in shapes[0]) and -1 not in target and math.prod(target) != math.prod(shapes[0]):
        raise BuildError(f"cannot reshape {_show(shapes[0])} ({math.prod(shapes[0])} values) to "
                         f"{_show(target)} ({math.prod(target)} values)")
    return tuple(None if d == -1 else d for d in target)  # -1 beside a varying size: unknown, as in Keras


def _merge(args, shapes):
    first = shapes[0]
    for other in shapes[1:]:
        if len(other) != len(first):
            raise BuildError(f"cannot combine shapes {' and '.join(_show(s) for s in shapes)}")
        for a, b in zip(first, other):
            if a is not None and b is not None and a != b and 1 not in (a, b):
                raise BuildError(f"cannot combine shapes {' and '.join(_show(s) for s in shapes)}")
    # As Keras' merge layers: a size varying in any input varies in the output; 1 broadcasts.
    return tuple(None if any(s[i] is None for s in shapes) else max(s[i] for s in shapes) for i in range(len(first)))


def _concatenate(args, shapes):
    axis = args.get("axis", -1)
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise BuildError(f"concatenate needs inputs of one rank, received {', '.join(_show(s) for s in shapes)}")
    axis = axis - 1 if axis > 0 else axis + rank  # spec axes count the batch axis
    out = list(shapes[0])
    for i in range(rank):
        if i == axis:
            continue
        dims = {s[i] for s in shapes if s[i] is not None}
        if len(dims) > 1:
            raise BuildError(f"concatenate on axis {args.get('axis', -1)} needs matching shapes elsewhere, "
                             f"received {', '.join(_show(s) for s in shapes)}")
    sizes = [s[axis] for s in shapes]
    out[axis] = None if None in sizes else sum(sizes)
    return tuple(out)


def _embedding(args, shapes):
    return shapes[0] + (args["output_dim"],)


def _rnn(args, shapes):
    units = args["units"]
    shape = shapes[0]
    seq = shape[:-1] + (units,) if args.get("return_sequences") else (units,)
    if args.get("return_state"):
        states = 2 if args.get("_kind") == "lstm" else 1
        return [seq] + [(units,)] * states
    return seq


def _lstm(args, shapes):
    return _rnn({**args, "_kind": "lstm"}, shapes)


def _bidirectional(args, shapes):
    return UNKNOWN


def _padding2d(args, shapes):
    pad = args.get("padding", 1)
    shape = shapes[0]
    if isinstance(pad, int):
        pads = ((pad, pad), (pad, pad))
    else:
        pads = tuple((p, p) if isinstance(p, int) else tuple(p) for p in pad)
    h, w, c = shape
    return (None if h is None else h + sum(pads[0]), None if w is None else w + sum(pads[1]), c)


def _upsampling2d(args, shapes):
    size = _ints(args.get("size", 2), 2)
    h, w, c = shapes[0]
    return (None if h is None else h * size[0], None if w is None else w * size[1], c)


def _mha(args, shapes):
    output_shape = args.get("output_shape")
    if output_shape is not None and not isinstance(output_shape, int):
        raise ValueError  # a tuple output shape: leave it to Keras
    out = shapes[0][:-1] + (output_shape or shapes[0][-1],)
    if args.get("return_attention_scores"):
        key = shapes[2] if len(shapes) > 2 else shapes[1] if len(shapes) > 1 else shapes[0]
        # Keras 3's symbolic scores take the query's length for the key's too (its
        # compute_output_spec): left unknown where the two differ, so nothing disagrees.
        if key[0] != shapes[0][0]:
            return [out, UNKNOWN]
        return [out, _scores(args.get("num_heads"), shapes[0], key, args.get("attention_axes") is None)]
    return out


def _attention(args, shapes):
    out = shapes[0][:-1] + (args["d_model"],)
    if args.get("return_weights"):
        key = shapes[1] if len(shapes) > 1 else shapes[0]
        return [out, _scores(args.get("heads", 1), shapes[0], key, True)]
    return out


def _scores(heads, query, key, sequence_axis: bool):
    """Attention scores of sequences (steps, features): (heads, query steps, key steps); other ranks unknown."""
    if not sequence_axis or len(query) != 2 or len(key) != 2 or not isinstance(heads, int):
        return UNKNOWN
    return (heads, query[0], key[0])


def _residual(args, shapes):
    h, w, c = shapes[0]
    stride = args.get("stride", 1)
    return (None if h is None else math.ceil(h / stride), None if w is None else math.ceil(w / stride),
            args["filters"])


def _permute(args, shapes):
    return tuple(shapes[0][d - 1] for d in args["dims"])


def _repeat_vector(args, shapes):
    return (args["n"],) + shapes[0]


def _show(shape) -> str:
    inner = ", ".join("none" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


_RULES: dict[str, Callable] = {
    "dense": _dense, "linear": _dense,
    "flatten": _flatten, "reshape": _reshape, "permute": _permute, "repeat_vector": _repeat_vector,
    "conv1d": _conv(1), "conv2d": _conv(2), "conv3d": _conv(3),
    "conv1d_transpose": _conv(1, transpose=True), "conv2d_transpose": _conv(2, transpose=True),
    "conv3d_transpose": _conv(3, transpose=True),
    "separable_conv1d": _conv(1), "separable_conv2d": _conv(2),
    "depthwise_conv1d": _conv(1, depthwise=True), "depthwise_conv2d": _conv(2, depthwise=True),
    "max_pooling1d": _pool(1), "max_pooling2d": _pool(2), "max_pooling3d": _pool(3),
    "average_pooling1d": _pool(1), "average_pooling2d": _pool(2), "average_pooling3d": _pool(3),
    "global_average_pooling1d": _global_pool, "global_average_pooling2d": _global_pool,
    "global_average_pooling3d": _global_pool, "global_max_pooling1d": _global_pool,
    "global_max_pooling2d": _global_pool, "global_max_pooling3d": _global_pool,
    "add": _merge, "subtract": _merge, "multiply": _merge, "average": _merge, "maximum": _merge,
    "minimum": _merge, "concatenate": _concatenate,
    "embedding": _embedding, "lstm": _lstm, "gru": _rnn, "simple_rnn": _rnn,
    "bidirectional": _bidirectional,
    "zero_padding2d": _padding2d, "up_sampling2d": _upsampling2d,
    "multi_head_attention": _mha, "attention": _attention, "residual": _residual,
}
for _name in (
    "batch_normalization", "layer_normalization", "group_normalization", "unit_normalization",
    "dropout", "spatial_dropout1d", "spatial_dropout2d", "spatial_dropout3d", "gaussian_noise",
    "gaussian_dropout", "alpha_dropout", "activation", "relu", "softmax", "elu", "leaky_relu", "prelu",
    "scale", "scaled_sigmoid", "identity", "masking", "activity_regularization", "rescaling",
    "normalization",
):
    _RULES[_name] = _same


def describe_shape(shape: Any) -> str:
    if shape is UNKNOWN or not isinstance(shape, tuple):
        return "?"
    return _show(shape)


_ = Resolved  # re-exported for type checkers of rule arguments
