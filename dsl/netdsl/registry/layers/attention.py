"""Keras' attention layers: multi-head, grouped-query, dot-product and additive attention."""

from __future__ import annotations

import math
from typing import Any

from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, size


def scores_shape(heads: Any, query: Shape, key: Shape, sequence_axis: bool) -> Shape | None:
    """Attention scores of sequences (steps, features): (heads, query steps, key steps); other ranks unknown."""
    if not sequence_axis or len(query) != 2 or len(key) != 2 or not isinstance(heads, int):
        return None
    return (heads, query[0], key[0])


def _with_scores(args: Args) -> int:
    return 2 if args["return_attention_scores"] else 1


def _mha_shapes(args: Args, shapes: list[Shape]) -> Any:
    output_shape = args["output_shape"]
    if output_shape is not None and not isinstance(output_shape, int):
        raise ValueError("a tuple output shape: left to Keras")
    out = shapes[0][:-1] + (output_shape or shapes[0][-1],)
    if args["return_attention_scores"]:
        key = shapes[2] if len(shapes) > 2 else shapes[1] if len(shapes) > 1 else shapes[0]
        # Keras 3's symbolic scores take the query's length for the key's too (its
        # compute_output_spec): left unknown where the two differ, so nothing disagrees.
        if key[0] != shapes[0][0]:
            return [out, None]
        return [out, scores_shape(args["num_heads"], shapes[0], key, args["attention_axes"] is None)]
    return out


def _qkv(shapes: list[Shape]) -> tuple[int, int, int]:
    """Feature sizes of query, key and value; Keras' call order is (query, value, key)."""
    query = shapes[0]
    value = shapes[1] if len(shapes) > 1 else query
    key = shapes[2] if len(shapes) > 2 else value
    return size(query[-1]), size(key[-1]), size(value[-1])


def _mha_params(args: Args, shapes: list[Shape]) -> int:
    qd, kd, vd = _qkv(shapes)
    bias = args["use_bias"]
    heads, key_dim = size(args["num_heads"]), size(args["key_dim"])
    value_dim = size(args["value_dim"]) if args["value_dim"] is not None else key_dim
    out: int = args["output_shape"]
    if out is None:
        out = qd
    elif isinstance(out, tuple):
        out = math.prod(size(d) for d in out)
    else:
        out = size(out)
    total = (
        qd * heads * key_dim
        + kd * heads * key_dim
        + vd * heads * value_dim
        + heads * value_dim * out
        + (2 * heads * key_dim + heads * value_dim + out if bias else 0)
    )
    if args["use_gate"]:
        total += qd * heads * value_dim + (heads * value_dim if bias else 0)
    return total


def _gqa_params(args: Args, shapes: list[Shape]) -> int:
    qd, kd, vd = _qkv(shapes)
    bias = args["use_bias"]
    width = size(args["head_dim"])
    queries, keys = size(args["num_query_heads"]), size(args["num_key_value_heads"])
    total = (
        qd * queries * width
        + kd * keys * width
        + vd * keys * width
        + queries * width * qd
        + (queries * width + 2 * keys * width + qd if bias else 0)
    )
    if args["use_gate"]:
        total += qd * queries * width + (queries * width if bias else 0)
    return total


def _dot_product_params(args: Args, shapes: list[Shape]) -> int:
    return (1 if args["use_scale"] else 0) + (1 if args["score_mode"] == "concat" else 0)


def _additive_params(args: Args, shapes: list[Shape]) -> int:
    return size(shapes[0][-1]) if args["use_scale"] else 0


LAYERS: dict[str, Anatomy] = {
    "multi_head_attention": Anatomy(_mha_shapes, _mha_params, _with_scores),
    "group_query_attention": Anatomy(None, _gqa_params, _with_scores),
    "dot_product_attention": Anatomy(None, _dot_product_params, _with_scores),
    "additive_attention": Anatomy(None, _additive_params, _with_scores),
}

UNKNOWN: dict[str, str] = {
    name: "shape: no shape rule written yet (count and outputs are known)"
    for name in ("group_query_attention", "dot_product_attention", "additive_attention")
}
