"""What one layer of the allow-list computes per sample: multiply-adds and FLOPs, from its arguments and shapes.

The conventions (docs/cost.md says them to users):

- a multiply-add (MAC) is 2 FLOPs; MACs count every tap of a kernel, as the
  layer's configuration has it (`output elements x kernel size x input channels`),
  padding included;
- an elementwise operation is 1 FLOP per output element; a bias add, a residual
  add, a scale are each one; a function is counted as its definition's operations,
  a transcendental one (exp, tanh, erf, rsqrt) counting 1 (`ACTIVATION_FLOPS`);
- a reduction over n elements is n - 1 FLOPs (a mean adds 1 for the division);
- moving data (reshape, padding, concatenation, dropout at inference, lookups) is 0.

`layer_counts(args, inputs, outputs)` answers `(macs, flops)` for one sample,
inputs and outputs without the batch axis, every size known; `NoRule` when the
layer has no rule (the caller reports it as unknown, naming the layer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from netdsl.registry.layers.anatomy import Args, Shape, channels, dims, size
from netdsl.registry.layers.conv import conv_rank
from netdsl.semantics.array_ops import COMPARISONS

__all__ = [
    "ACTIVATION_FLOPS",
    "Counts",
    "NoRule",
    "LAYER_RULES",
    "activation_flops",
    "layer_counts",
    "elements",
    "function_flops",
    "tree_flops_per_element",
]

Counts = tuple[int, int]  # (multiply-adds, FLOPs) of one sample

# Image augmentations that give their input back unchanged at inference, as dropout does, so 0 as dropout
# is (tests/cost/test_cost.py holds each to it with Keras). `auto_contrast` and the histogram equalization
# work at inference too: they have no rule.
INFERENCE_IDENTITIES = (
    "aug_mix cut_mix equalization max_num_bounding_boxes mix_up rand_augment random_brightness "
    "random_color_degeneration random_color_jitter random_contrast random_elastic_transform random_erasing "
    "random_flip random_gaussian_blur random_grayscale random_hue random_invert random_perspective "
    "random_posterization random_rotation random_saturation random_sharpness random_shear random_translation "
    "random_zoom solarization"
).split()


class NoRule(Exception):
    """A layer (or an activation) the cost model has no rule for; the message says which and why."""


# FLOPs per element of each activation, as its definition computes it (a transcendental function is 1).
ACTIVATION_FLOPS: dict[str, int] = {
    "linear": 0,
    "identity": 0,
    "relu": 1,
    "relu6": 1,
    "leaky_relu": 2,
    "elu": 3,
    "selu": 4,
    "celu": 4,
    "glu": 5,
    "sigmoid": 4,
    "hard_sigmoid": 3,
    "hard_silu": 4,
    "hard_swish": 4,
    "silu": 5,
    "swish": 5,
    "tanh": 1,
    "hard_tanh": 1,
    "tanh_shrink": 2,
    "soft_shrink": 3,
    "hard_shrink": 2,
    "squareplus": 4,
    "softplus": 3,
    "softsign": 3,
    "mish": 5,
    "gelu": 64,
    "exponential": 1,
    "sparse_plus": 4,
    "softmax": 5,
    "log_softmax": 5,
    "sparsemax": 10,
    "log_sigmoid": 5,
    "threshold": 1,
    "sin": 1,
    "cos": 1,
    "exp": 1,
    "log": 1,
    "log1p": 1,
    "sqrt": 1,
    "abs": 1,
    "square": 1,
    "erf": 60,
    "sine": 1,
    "smooth_relu": 3,
    "sigmoid_tanh": 2,
    "linear_fn": 0,
}


def activation_flops(name: str) -> int:
    """FLOPs per element of the activation `name`; NoRule when it has no count."""
    if name not in ACTIVATION_FLOPS:
        raise NoRule(f"the activation '{name}' has no cost rule")
    return ACTIVATION_FLOPS[name]


REDUCTIONS = frozenset({"sum", "mean", "max", "min"})
MOVES = frozenset({"transpose", "reshape", "concatenate", "linear", "get_item", "split", "unstack"})


def function_flops(name: str) -> int:
    """FLOPs per element of a function of op expressions (an activation, or an elementwise one)."""
    if name in ACTIVATION_FLOPS:
        return ACTIVATION_FLOPS[name]
    if name in ("minimum", "maximum", "where", "logical_not", *COMPARISONS):
        return 1
    if name == "cast":
        return 0
    if name == "clip":
        return 2
    raise NoRule(f"the function '{name}' has no cost rule")


def tree_flops_per_element(tree: Any) -> int:
    """FLOPs per element of an elementwise body (a declared activation): each operator and function once."""
    kind = tree[0]
    if kind in ("var", "num", "const"):
        return 0
    if kind == "neg":
        return 1 + tree_flops_per_element(tree[1])
    if kind == "bin":
        if tree[1] == "@":
            raise NoRule("a matrix product in an activation has no cost rule")
        return 1 + tree_flops_per_element(tree[2]) + tree_flops_per_element(tree[3])
    if kind == "call":
        if tree[1] in REDUCTIONS or tree[1] in MOVES or tree[1] == "matmul":
            raise NoRule(f"'{tree[1]}' in an activation has no cost rule")
        return function_flops(tree[1]) + sum(tree_flops_per_element(a) for a in tree[2])
    raise NoRule(f"the expression node '{kind}' has no cost rule")


def elements(shape: Shape) -> int:
    """The elements of one sample's tensor; ValueError for a size that varies."""
    count = 1
    for dim in shape:  # the common case without a call per axis
        if type(dim) is not int or dim < 0:
            return math.prod(size(d) for d in shape)  # ValueError, naming the size
        count *= dim
    return count


def _activation(args: Args, out: Shape) -> int:
    """The FLOPs of a layer's own `activation=` argument (a name, or a checked `Resolved`)."""
    value = args["activation"]
    if value is None:
        return 0
    if isinstance(value, str):
        return activation_flops(value) * elements(out)
    name = getattr(value, "name", None)
    decl = getattr(value, "decl", None)
    if getattr(value, "kind", None) == "declared_activation" and decl is not None:
        return tree_flops_per_element(decl.body) * elements(out)
    if isinstance(name, str):
        return activation_flops(name) * elements(out)
    raise NoRule("its activation has no cost rule")


def _bias(args: Args, out: Shape) -> int:
    return elements(out) if args["use_bias"] else 0


# ---------------------------------------------------------------- weighted layers


def _dense(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    macs = elements(ins[0]) * size(args["units"])
    return macs, 2 * macs + _bias(args, outs[0]) + _activation(args, outs[0])


def _linear(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    macs = elements(ins[0]) * size(args["units"])  # netdsl's linear: a kernel, no bias
    return macs, 2 * macs


def _conv(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    fan_in = channels(args, ins[0])
    if args.name.endswith("transpose"):  # every input element meets the whole kernel
        macs = elements(ins[0]) * kernel * size(args["filters"])
    else:
        macs = elements(outs[0]) * kernel * (fan_in // size(args["groups"]))
    return macs, 2 * macs + _bias(args, outs[0]) + _activation(args, outs[0])


def _depthwise(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    macs = elements(outs[0]) * kernel  # each output channel sees one input channel
    return macs, 2 * macs + _bias(args, outs[0]) + _activation(args, outs[0])


def _separable(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    kernel = math.prod(dims(args["kernel_size"], conv_rank(args.name)))
    middle = channels(args, ins[0]) * size(args["depth_multiplier"])
    positions = elements(outs[0]) // size(args["filters"])
    macs = positions * middle * kernel + positions * middle * size(args["filters"])
    return macs, 2 * macs + _bias(args, outs[0]) + _activation(args, outs[0])


_GATES = {"simple_rnn": 1, "gru": 3, "lstm": 4}


def _recurrent(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    steps, fan_in = size(ins[0][0]), size(ins[0][-1])
    units, gates = size(args["units"]), _GATES[args.name]
    macs = steps * gates * units * (fan_in + units)
    # per step: the gates' bias adds and input + recurrent sums, their activations, the state update
    per_step = {"simple_rnn": 3, "gru": 3 * 6 + 4, "lstm": 4 * 6 + 4}[args.name] * units
    return macs, 2 * macs + steps * per_step


def _mha(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    query = ins[0]
    value = ins[1] if len(ins) > 1 else query
    key = ins[2] if len(ins) > 2 else value
    heads, key_dim = size(args["num_heads"]), size(args["key_dim"])
    value_dim = size(args["value_dim"]) if args["value_dim"] is not None else key_dim
    n_q, n_k = elements(query[:-1]), elements(key[:-1])
    out_width = elements(outs[0]) // n_q
    projections = (
        n_q * size(query[-1]) * heads * key_dim
        + n_k * size(key[-1]) * heads * key_dim
        + n_k * size(value[-1]) * heads * value_dim
        + n_q * heads * value_dim * out_width
    )
    scores = heads * n_q * n_k
    macs = projections + scores * key_dim + scores * value_dim
    biases = n_q * heads * key_dim + n_k * heads * (key_dim + value_dim) + n_q * out_width if args["use_bias"] else 0
    scaling = n_q * heads * key_dim  # the query times 1/sqrt(key_dim)
    flops = 2 * macs + biases + scaling + ACTIVATION_FLOPS["softmax"] * scores
    if args["use_gate"]:
        raise NoRule("a gated multi_head_attention has no cost rule")
    return macs, flops


def _netdsl_attention(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    query = ins[0]
    key = ins[1] if len(ins) > 1 else query
    value = ins[2] if len(ins) > 2 else key
    width, heads = size(args["d_model"]), size(args["heads"])
    n_q, n_k = elements(query[:-1]), elements(key[:-1])
    projections = width * (n_q * size(query[-1]) + n_k * size(key[-1]) + n_k * size(value[-1]))
    scores = heads * n_q * n_k
    macs = projections + 2 * scores * (width // heads)
    biases = width * (n_q + 2 * n_k) if args["use_bias"] else 0
    return macs, 2 * macs + biases + n_q * width + ACTIVATION_FLOPS["softmax"] * scores


def _residual(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    shape, out = ins[0], outs[0]
    fan_in, filters = size(shape[-1]), size(args["filters"])
    kernel = size(args["kernel_size"]) ** (len(shape) - 1)
    positions = elements(out) // filters
    macs = positions * filters * kernel * (fan_in + filters)  # two convolutions
    flops = 2 * macs + 2 * elements(out) * 3 + elements(out) * 2  # biases+BN of each conv; the add and relu
    if fan_in != filters or args["stride"] != 1:
        macs += positions * fan_in * filters
        flops += 2 * positions * fan_in * filters + 3 * elements(out)
    return macs, flops


def _embedding(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, 0  # a lookup: no arithmetic


# ---------------------------------------------------------------- weightless layers


def _free(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, 0  # data moved, nothing computed


def _per_element(count: int) -> Callable[[Args, list[Shape], list[Shape]], Counts]:
    def rule(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
        return 0, count * elements(outs[0])

    return rule


def _activation_layer(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, _activation(args, outs[0])


def _merge(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    extra = 1 if args.name == "average" else 0
    return 0, (len(ins) - 1 + extra) * elements(outs[0])


def _pool(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    window = math.prod(dims(args["pool_size"], conv_rank(args.name)))
    per_output = window if args.name.startswith("average") else window - 1
    return 0, per_output * elements(outs[0])


def _global_pool(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    reduced = elements(ins[0]) - elements(outs[0])
    return 0, reduced + (elements(outs[0]) if "average" in args.name else 0)


def _rescaling(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    offset = args["offset"]
    return 0, (2 if offset not in (0, 0.0, None) else 1) * elements(outs[0])


def _scale(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, elements(outs[0])


def _scaled_sigmoid(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, (ACTIVATION_FLOPS["sigmoid"] + 1) * elements(outs[0])


def _softmax_layer(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, ACTIVATION_FLOPS["softmax"] * elements(outs[0])


def _relu_layer(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, ACTIVATION_FLOPS["relu"] * elements(outs[0])


def _inner(args: Args) -> Args:
    from netdsl.registry.layers.wrappers import nested

    inner = nested(args["layer"])
    if inner is None:
        raise NoRule(f"'{args.name}' wraps a layer the cost model cannot see")
    return inner


def _time_distributed(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    steps = size(ins[0][0])
    macs, flops = layer_counts(_inner(args), [s[1:] for s in ins], [s[1:] for s in outs])
    return steps * macs, steps * flops


def _bidirectional(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    inner = _inner(args)
    forward_args = Args(inner.entry, {**inner.given, "return_state": False})
    one_way = outs[0]
    if args["merge_mode"] == "concat":
        one_way = outs[0][:-1] + (outs[0][-1] // 2,)
    macs, flops = layer_counts(forward_args, ins, [one_way])
    merge = 0 if args["merge_mode"] in (None, "concat") else elements(one_way)
    return 2 * macs, 2 * flops + merge


def _spectral_normalization(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return layer_counts(_inner(args), ins, outs)  # at inference; training adds a power iteration


def _normalization(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    return 0, (4 if args["invert"] else 2) * elements(outs[0])  # (x - mean) / std, with its mean and std


LAYER_RULES: dict[str, Callable[[Args, list[Shape], list[Shape]], Counts]] = {
    "dense": _dense,
    "linear": _linear,
    "conv1d": _conv,
    "conv2d": _conv,
    "conv3d": _conv,
    "conv1d_transpose": _conv,
    "conv2d_transpose": _conv,
    "conv3d_transpose": _conv,
    "depthwise_conv1d": _depthwise,
    "depthwise_conv2d": _depthwise,
    "separable_conv1d": _separable,
    "separable_conv2d": _separable,
    "simple_rnn": _recurrent,
    "gru": _recurrent,
    "lstm": _recurrent,
    "multi_head_attention": _mha,
    "attention": _netdsl_attention,
    "residual": _residual,
    "embedding": _embedding,
    # normalisation, as Keras computes it at inference: batch norm folded to a scale and a shift per element;
    # layer, group and RMS norm: the statistics of each row, then normalise, scale and shift
    "batch_normalization": _per_element(2),
    "layer_normalization": _per_element(9),
    "group_normalization": _per_element(9),
    "rms_normalization": _per_element(5),
    "unit_normalization": _per_element(3),
    "activation": _activation_layer,
    "softmax": _softmax_layer,
    "relu": _relu_layer,
    "leaky_relu": _per_element(ACTIVATION_FLOPS["leaky_relu"]),
    "elu": _per_element(ACTIVATION_FLOPS["elu"]),
    "prelu": _per_element(2),
    "add": _merge,
    "subtract": _merge,
    "multiply": _merge,
    "maximum": _merge,
    "minimum": _merge,
    "average": _merge,
    "max_pooling1d": _pool,
    "max_pooling2d": _pool,
    "max_pooling3d": _pool,
    "average_pooling1d": _pool,
    "average_pooling2d": _pool,
    "average_pooling3d": _pool,
    "global_max_pooling1d": _global_pool,
    "global_max_pooling2d": _global_pool,
    "global_max_pooling3d": _global_pool,
    "global_average_pooling1d": _global_pool,
    "global_average_pooling2d": _global_pool,
    "global_average_pooling3d": _global_pool,
    "time_distributed": _time_distributed,
    "bidirectional": _bidirectional,
    "normalization": _normalization,
    "spectral_normalization": _spectral_normalization,
    "rescaling": _rescaling,
    "scale": _scale,
    "layer_scale": _scale,  # one multiplication per element
    "scaled_sigmoid": _scaled_sigmoid,
    **{
        name: _free
        for name in (
            "flatten",
            "reshape",
            "permute",
            "repeat_vector",
            "concatenate",
            "dropout",
            "spatial_dropout1d",
            "spatial_dropout2d",
            "spatial_dropout3d",
            "alpha_dropout",
            "gaussian_dropout",
            "gaussian_noise",
            "identity",
            "masking",
            "activity_regularization",
            "zero_padding2d",
            "cropping1d",
            "cropping2d",
            "cropping3d",
            "up_sampling2d",
            "up_sampling1d",
            "up_sampling3d",
            "zero_padding1d",
            "zero_padding3d",
            *INFERENCE_IDENTITIES,
        )
    },
}
"""Layers whose rule is written (the others are unknown, named): canonical registry name -> rule."""


# ---------------------------------------------------------------- padding taps

PADDED = frozenset(
    {
        "conv1d",
        "conv2d",
        "conv3d",
        "depthwise_conv1d",
        "depthwise_conv2d",
        "separable_conv1d",
        "separable_conv2d",
        "residual",
    }
)


def padding_macs(args: Args, ins: list[Shape], outs: list[Shape], macs: int) -> int:
    """Of a convolution's `macs` (every tap of the kernel at every output position, as the layer's
    configuration has it), those that multiply the zeros of its padding ("same", "causal"): XLA's
    count leaves them out. 0 for "valid" padding and for a layer that is no convolution."""
    if args.name == "residual":
        return _residual_padding(args, ins, outs)
    if args.name not in PADDED or args["padding"] == "valid":
        return 0
    rank = conv_rank(args.name)
    kernel, strides = dims(args["kernel_size"], rank), dims(args["strides"], rank)
    dilation = dims(args["dilation_rate"], rank)
    first = 1 if args["data_format"] == "channels_first" else 0
    sides = [size(d) for d in ins[0][first : first + rank]]
    positions = [size(d) for d in outs[0][first : first + rank]]
    taps = [
        _inside(n, m, k, s, d, causal=args["padding"] == "causal")
        for n, m, k, s, d in zip(sides, positions, kernel, strides, dilation)
    ]
    every = math.prod(m * k for m, k in zip(positions, kernel))
    if args.name.startswith("separable"):  # only its depthwise part sees the padding
        middle = channels(args, ins[0]) * size(args["depth_multiplier"])
        depthwise = math.prod(positions) * middle * math.prod(kernel)
        return depthwise - depthwise // every * math.prod(taps)
    return macs - macs // every * math.prod(taps)


def _residual_padding(args: Args, ins: list[Shape], outs: list[Shape]) -> int:
    """netdsl's residual: its two "same" convolutions' padding taps (the 1x1 shortcut has none)."""
    kernel, stride, filters = size(args["kernel_size"]), size(args["stride"]), size(args["filters"])
    fan_in = size(ins[0][-1])
    sides, positions = [size(d) for d in ins[0][:-1]], [size(d) for d in outs[0][:-1]]
    every = math.prod(positions) * kernel ** len(positions)
    first = math.prod(_inside(n, m, kernel, stride, 1, causal=False) for n, m in zip(sides, positions))
    second = math.prod(_inside(m, m, kernel, 1, 1, causal=False) for m in positions)
    return (every - first) * fan_in * filters + (every - second) * filters * filters


def _inside(side: int, positions: int, kernel: int, stride: int, dilation: int, causal: bool) -> int:
    """How many (output position, kernel tap) pairs of one axis land inside the input, not on padding."""
    reach = (kernel - 1) * dilation + 1
    total = max((positions - 1) * stride + reach - side, 0)
    before = total if causal else total // 2
    return sum(1 for o in range(positions) for k in range(kernel) if 0 <= o * stride - before + k * dilation < side)


def layer_counts(args: Args, ins: list[Shape], outs: list[Shape]) -> Counts:
    """(MACs, FLOPs) of one sample through the layer; NoRule when it has none (or a size varies)."""
    rule = LAYER_RULES.get(args.name)
    if rule is None or args.entry.source == "plugin":
        raise NoRule(f"'{args.name}' has no cost rule")
    try:
        return rule(args, ins, outs)
    except NoRule:
        raise
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as exc:
        raise NoRule(f"'{args.name}' cannot be costed: a size is not known") from exc
