"""Core layers: dense and embeddings, activations, dropout and noise, normalization, reshaping."""

from __future__ import annotations

import math
from typing import Any

from netdsl.errors import BuildError
from netdsl.registry.layers.anatomy import (
    Anatomy,
    Args,
    Shape,
    ShapeRule,
    axis_size,
    channels_last,
    ints,
    no_weights,
    same,
    shape_text,
    size,
)


def lora(args: Args, fan_in: int, fan_out: int) -> int:
    """The two low-rank factors Keras adds to a kernel when `lora_rank` is set."""
    rank = args["lora_rank"]
    return 0 if not rank else size(rank) * (fan_in + fan_out)


def _dense_shape(args: Args, shapes: list[Shape]) -> Shape:
    return shapes[0][:-1] + (args["units"],)


def _dense_params(args: Args, shapes: list[Shape]) -> int:
    fan_in, units = size(shapes[0][-1]), size(args["units"])
    return fan_in * units + (units if args["use_bias"] else 0) + lora(args, fan_in, units)


def _embedding_shape(args: Args, shapes: list[Shape]) -> Shape:
    return shapes[0] + (args["output_dim"],)


def _embedding_params(args: Args, shapes: list[Shape]) -> int:
    vocabulary, width = size(args["input_dim"]), size(args["output_dim"])
    if args.name == "reversible_embedding" and not args["tie_weights"]:
        return 2 * vocabulary * width
    return vocabulary * width + lora(args, vocabulary, width)


def _batch_norm_params(args: Args, shapes: list[Shape]) -> int:
    features = axis_size(shapes[0], args["axis"])
    return features * (2 + bool(args["center"]) + bool(args["scale"]))  # + moving mean and variance


def _norm_params(args: Args, shapes: list[Shape]) -> int:
    axis = args["axis"]
    axes = axis if isinstance(axis, tuple) else (axis,)
    return math.prod(axis_size(shapes[0], a) for a in axes) * (bool(args["center"]) + bool(args["scale"]))


def _rms_norm_params(args: Args, shapes: list[Shape]) -> int:
    return axis_size(shapes[0], args["axis"])


def _prelu_params(args: Args, shapes: list[Shape]) -> int:
    alphas = [size(d) for d in shapes[0]]
    shared = args["shared_axes"]
    if shared is not None:
        for axis in shared if isinstance(shared, tuple) else (shared,):
            alphas[size(axis) - 1] = 1
    return math.prod(alphas)


def _flatten(args: Args, shapes: list[Shape]) -> Shape:
    shape = shapes[0]
    if any(d is None for d in shape):
        return (None,)
    return (math.prod(shape),)


def _reshape(args: Args, shapes: list[Shape]) -> Shape:
    source, target = shapes[0], tuple(args["target_shape"])
    if -1 in target and all(d is not None for d in source):
        known = math.prod(d for d in target if d != -1)
        total = math.prod(source)
        if known == 0 or total % known:
            raise BuildError(f"cannot reshape {shape_text(source)} to {shape_text(target)}")
        target = tuple(total // known if d == -1 else d for d in target)
    elif all(d is not None for d in source) and -1 not in target and math.prod(target) != math.prod(source):
        raise BuildError(
            f"cannot reshape {shape_text(source)} ({math.prod(source)} values) to "
            f"{shape_text(target)} ({math.prod(target)} values)"
        )
    return tuple(None if d == -1 else d for d in target)  # -1 beside a varying size: unknown, as in Keras


def _permute(args: Args, shapes: list[Shape]) -> Shape:
    return tuple(shapes[0][d - 1] for d in args["dims"])


def _repeat_vector(args: Args, shapes: list[Shape]) -> Shape:
    return (args["n"],) + shapes[0]


def _pairs(value: Any, rank: int) -> tuple[tuple[int, int], ...]:
    """Padding or cropping per spatial axis as (before, after): an int, one int per axis, or a pair per axis
    (Keras' three spellings; a 1D layer's pair is (before, after) of its one axis)."""
    if isinstance(value, int):
        return ((value, value),) * rank
    items = tuple(value)
    if rank == 1 and len(items) == 2 and all(isinstance(v, int) for v in items):
        return ((items[0], items[1]),)
    if len(items) != rank:
        raise ValueError(value)
    return tuple((v, v) if isinstance(v, int) else (int(v[0]), int(v[1])) for v in items)


def _spatial(args: Args, shape: Shape, rank: int) -> tuple[Shape, Any]:
    """(the spatial sizes, the channels) of a channels_last input of `rank` spatial axes."""
    if len(shape) != rank + 1 or (rank > 1 and not channels_last(args)):
        raise ValueError("another rank or channels_first: left to Keras")
    return shape[:-1], shape[-1]


def _zero_padding(rank: int) -> ShapeRule:
    def rule(args: Args, shapes: list[Shape]) -> Shape:
        spatial, c = _spatial(args, shapes[0], rank)
        pads = _pairs(args["padding"], rank)
        return tuple(None if s is None else s + a + b for s, (a, b) in zip(spatial, pads)) + (c,)

    return rule


def _cropping(rank: int) -> ShapeRule:
    def rule(args: Args, shapes: list[Shape]) -> Shape:
        spatial, c = _spatial(args, shapes[0], rank)
        crops = _pairs(args["cropping"], rank)
        out = tuple(None if s is None else s - a - b for s, (a, b) in zip(spatial, crops))
        for left, before, (a, b) in zip(out, spatial, crops):
            if left is not None and left <= 0:
                raise BuildError(f"cropping {a} and {b} leaves nothing of an axis of size {before}")
        return out + (c,)

    return rule


def _up_sampling(rank: int) -> ShapeRule:
    def rule(args: Args, shapes: list[Shape]) -> Shape:
        spatial, c = _spatial(args, shapes[0], rank)
        factor = ints(args["size"], rank)
        return tuple(None if s is None else s * f for s, f in zip(spatial, factor)) + (c,)

    return rule


def _normalization_params(args: Args, shapes: list[Shape]) -> int:
    """A mean and a variance over the kept axes and a count, as weights (none when given as arguments)."""
    if args["mean"] is not None or args["variance"] is not None:
        return 0
    shape, axis = shapes[0], args["axis"]
    kept = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    sizes = [axis_size(shape, a) for a in kept]
    return 2 * math.prod(sizes) + 1


_SAME_AND_WEIGHTLESS = """
    activation relu softmax elu leaky_relu identity masking activity_regularization rescaling
    dropout spatial_dropout1d spatial_dropout2d spatial_dropout3d gaussian_noise gaussian_dropout alpha_dropout
    unit_normalization
""".split()

LAYERS: dict[str, Anatomy] = {
    **{name: Anatomy(same, no_weights) for name in _SAME_AND_WEIGHTLESS},
    "dense": Anatomy(_dense_shape, _dense_params),
    "embedding": Anatomy(_embedding_shape, _embedding_params),
    "reversible_embedding": Anatomy(None, _embedding_params),
    "prelu": Anatomy(same, _prelu_params),
    "batch_normalization": Anatomy(same, _batch_norm_params),
    "layer_normalization": Anatomy(same, _norm_params),
    "group_normalization": Anatomy(same, _norm_params),
    "rms_normalization": Anatomy(same, _rms_norm_params),
    "normalization": Anatomy(same, _normalization_params),
    "flatten": Anatomy(_flatten, no_weights),
    "reshape": Anatomy(_reshape, no_weights),
    "permute": Anatomy(_permute, no_weights),
    "repeat_vector": Anatomy(_repeat_vector, no_weights),
    **{f"zero_padding{r}d": Anatomy(_zero_padding(r), no_weights) for r in (1, 2, 3)},
    **{f"cropping{r}d": Anatomy(_cropping(r), no_weights) for r in (1, 2, 3)},
    **{f"up_sampling{r}d": Anatomy(_up_sampling(r), no_weights) for r in (1, 2, 3)},
    "einsum_dense": Anatomy(None, None),
}

UNKNOWN: dict[str, str] = {
    "reversible_embedding": "shape: its call may reverse (logits over the vocabulary); no shape rule yet",
    "einsum_dense": "shape and parameters follow its `equation`; no einsum parser here",
}
