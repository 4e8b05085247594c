"""Pooling: max and average windows, global pooling, adaptive pooling; none of them has weights."""

from __future__ import annotations

from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, ShapeRule, channels_last, conv_dim, ints, no_weights


def _window_rule(rank: int) -> ShapeRule:
    def rule(args: Args, shapes: list[Shape]) -> Shape:
        shape = shapes[0]
        if len(shape) != rank + 1 or not channels_last(args):
            raise ValueError("another rank or channels_first: left to Keras")
        pool = ints(args["pool_size"], rank)
        strides = ints(args["strides"] or pool, rank)
        padding = str(args["padding"]).lower()
        spatial = tuple(conv_dim(s, k, st, padding) for s, k, st in zip(shape[:-1], pool, strides))
        return spatial + (shape[-1],)

    return rule


def _global(args: Args, shapes: list[Shape]) -> Shape:
    shape = shapes[0]
    if not channels_last(args):
        raise ValueError("channels_first: left to Keras")
    if args["keepdims"]:
        return (1,) * (len(shape) - 1) + (shape[-1],)
    return (shape[-1],)


def _adaptive_rule(rank: int) -> ShapeRule:
    def rule(args: Args, shapes: list[Shape]) -> Shape:
        shape = shapes[0]
        if len(shape) != rank + 1 or not channels_last(args):
            raise ValueError("another rank or channels_first: left to Keras")
        return ints(args["output_size"], rank) + (shape[-1],)

    return rule


LAYERS: dict[str, Anatomy] = {}
UNKNOWN: dict[str, str] = {}
for _rank in (1, 2, 3):
    for _kind in ("max", "average"):
        LAYERS[f"{_kind}_pooling{_rank}d"] = Anatomy(_window_rule(_rank), no_weights)
        LAYERS[f"global_{_kind}_pooling{_rank}d"] = Anatomy(_global, no_weights)
        LAYERS[f"adaptive_{_kind}_pooling{_rank}d"] = Anatomy(_adaptive_rule(_rank), no_weights)
