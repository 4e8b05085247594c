"""The operator nodes of tensor expressions (`x * relu6(x + 3) / 6`) and their shape rules.

Each operator of a tensor expression in a model or block body becomes one
graph node of op `"tensor_op"` whose `decl` is an `OpSpec`: the expression
tree of that one operator over its inputs `x0, x1, ...` (the tree language of
`netdsl.custom.expr`) and what the diagram shows; Keras builds it as netdsl's
`TensorOp`. Pure Python: the shapes here are what `check`
infers, and they equal what Keras computes (`tests/semantics/test_tensor_exprs.py`).

Shapes exclude the batch axis; axes given to a function count it as 0, as
Keras layers' `axis` arguments do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netdsl.errors import BuildError
from netdsl.semantics import array_ops, slicing
from netdsl.semantics.values import UNKNOWN, describe_value, is_unknown

# Operator -> (node kind, verb of the error message, diagram symbol).
OPERATORS = {
    "+": ("add", "add", "+"),
    "-": ("subtract", "subtract", "\u2212"),
    "*": ("multiply", "multiply", "\u00d7"),
    "/": ("divide", "divide", "\u00f7"),
    "**": ("power", "raise", "**"),
    "@": ("matmul", "matrix-multiply", "@"),
}
REDUCTIONS = frozenset({"sum", "mean", "max", "min"})
_BROADCASTING_CALLS = frozenset({"minimum", "maximum", "where", *array_ops.COMPARISONS})
MULTI_OUTPUT = frozenset({"split", "unstack"})  # functions that give several tensors
# `arange(n)` in a model body: the runtime's `per_sample(arange(...), x0)`, x0 lending its batch size.
PER_SAMPLE = "per_sample"


@dataclass(frozen=True)
class OpSpec:
    """One operator: `expression` over `inputs` tensors named x0, x1, ... (`node.decl`)."""

    expression: Any  # the tree, JSON data; constants may be UNKNOWN while `check` runs a block alone
    inputs: int
    label: str  # what the diagram shows: "+ 3", "\u00d7", "sigmoid", "mean axis=1"
    outputs: int = 1  # tensors it gives: several for `split` and `unstack`

    @property
    def config(self) -> Any:
        """What `GraphWriter.emit` looks at for unknown constants."""
        return self.expression


def output_shape(spec: OpSpec, shapes: list[Any]) -> Any:
    """The output shape of one operator node, or UNKNOWN; BuildError names the operands' shapes."""
    if any(s is UNKNOWN or not isinstance(s, tuple) for s in shapes):
        return UNKNOWN
    return _shape(spec.expression, shapes)


def output_shapes(spec: OpSpec, shapes: list[Any]) -> list[Any]:
    """The shapes of an operator node's outputs: several for `split`, `unstack`, the spectral
    functions and `top_k`, one otherwise."""
    tree = spec.expression
    if tree[0] == "call" and (tree[1] in array_ops.SIGNATURES or tree[1] == PER_SAMPLE):
        return _array_shapes(tree, shapes, spec.outputs)
    if tree[0] != "call" or tree[1] not in MULTI_OUTPUT:
        return [output_shape(spec, shapes)]
    if any(s is UNKNOWN or not isinstance(s, tuple) for s in shapes) or is_unknown(tree):
        return [UNKNOWN] * spec.outputs
    whole = (None, *shapes[0])
    axis = tree[3]["axis"][1]
    if tree[1] == "split":
        parts = slicing.split_shapes(whole, tree[2][1][1], axis)
    else:
        parts = slicing.unstack_shapes(whole, axis)
    return [part[1:] for part in parts]


def _array_shapes(tree: Any, shapes: list[Any], outputs: int) -> list[Any]:
    """A spectral or index function's outputs (`semantics.array_ops`); `per_sample(arange(...), x0)` is
    `arange` in a model body: its values for every sample of the batch."""
    if tree[1] == PER_SAMPLE:
        tree, shapes = tree[2][0], []  # the anchor lends its batch size only
    if any(s is UNKNOWN or not isinstance(s, tuple) for s in shapes) or is_unknown(tree):
        return [UNKNOWN] * outputs
    params = {key: value[1] for key, value in tree[3].items()}
    found = array_ops.output_shapes(tree[1], [(None, *s) for s in shapes], array_ops.bind(tree[1], params))
    return [shape[1:] for shape in found]


def _shape(tree: Any, shapes: list[tuple[Any, ...]]) -> Any:
    kind = tree[0]
    if kind == "var":
        return shapes[int(tree[1][1:])]
    if kind in ("num", "const"):
        return None  # a constant scalar: broadcasts with anything
    if kind == "neg":
        return _shape(tree[1], shapes)
    if kind == "bin":
        op, left, right = tree[1], _shape(tree[2], shapes), _shape(tree[3], shapes)
        if op == "@":
            return _matmul(left, right)
        return broadcast(left, right, OPERATORS[op][1])
    return _call_shape(tree, shapes)


def _call_shape(tree: Any, shapes: list[tuple[Any, ...]]) -> Any:
    name, args, kwargs = tree[1], tree[2], tree[3] if len(tree) > 3 else {}
    operands = [_shape(a, shapes) for a in args]
    if name in REDUCTIONS:
        axes = kwargs["axis"][1]
        keep = bool(kwargs.get("keepdims", ["const", False])[1])
        return reduced(operands[0], tuple(axes) if isinstance(axes, (list, tuple)) else (axes,), keep)
    if name == "matmul":
        return _matmul(operands[0], operands[1])
    if name == "transpose":  # the perm counts the batch axis as 0 (checked where it was written)
        perm = args[1][1]
        return tuple(operands[0][p - 1] for p in perm[1:])
    if name == "get_item":  # `x[:, :256]`: the key names the batch axis first
        key = args[1][1]
        if slicing.has_unknown(key):
            return UNKNOWN
        return slicing.sliced_shape((None, *operands[0]), key)[1:]
    if name in _BROADCASTING_CALLS or name == "clip":
        result = operands[0]
        for other in operands[1:]:
            result = broadcast(result, other, _verb(name))
        return result
    return operands[0]  # elementwise functions and softmax keep the shape


def _verb(name: str) -> str:
    """What a broadcasting function does to its operands, for "cannot ... tensors of shapes"."""
    if name == "clip":
        return "clip"
    if name.startswith("logical_"):
        return f"take the logical {name[len('logical_') :]} of"
    return "compare" if name in array_ops.COMPARISONS else f"take the {name} of"


def broadcast(left: Any, right: Any, verb: str) -> Any:
    """Two operands' shape broadcast over the axes after the batch axis (None: a constant scalar).

    The lower rank gets size-1 axes after the batch axis, as Keras' merge
    layers do. A size Keras cannot know is the other operand's size when that
    is not 1 (numpy's rule, as `keras.ops` has it)."""
    if left is None or right is None:
        return right if left is None else left
    rank = max(len(left), len(right))
    a, b = (1,) * (rank - len(left)) + left, (1,) * (rank - len(right)) + right
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y and 1 not in (x, y):
            raise BuildError(f"cannot {verb} tensors of shapes {_show(left)} and {_show(right)}")
        if x is None or y is None:
            other = y if x is None else x
            out.append(None if other in (None, 1) else other)
        else:
            out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(out)


def _matmul(left: Any, right: Any) -> tuple[Any, ...]:
    if left is None or right is None:
        raise BuildError("'@' multiplies two tensors, not a tensor and a number; scale with '*'")
    if len(left) < 2 or len(right) < 2:
        raise BuildError(
            f"'@' needs tensors with at least 2 dimensions besides the batch axis, "
            f"received shapes {_show(left)} and {_show(right)}"
        )
    inner_a, inner_b = left[-1], right[-2]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise BuildError(
            f"cannot matrix-multiply tensors of shapes {_show(left)} and {_show(right)}: "
            f"{inner_a} columns against {inner_b} rows"
        )
    lead = broadcast(left[:-2], right[:-2], "matrix-multiply") if left[:-2] or right[:-2] else ()
    return lead + (left[-2], right[-1])


def reduced(shape: tuple[Any, ...], axes: Sequence[Any], keepdims: bool) -> tuple[Any, ...]:
    """The shape after reducing `axes` (which count the batch axis as 0)."""
    rank = len(shape) + 1
    dropped = set()
    for axis in axes:
        if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
            raise BuildError(
                f"axis {describe_value(axis)} is out of range for a tensor of shape {_show(shape)} "
                "(axes count the batch axis as 0)"
            )
        index = axis % rank
        if index == 0:
            raise BuildError("a tensor expression cannot reduce over the batch axis (axis 0)")
        dropped.add(index - 1)
    if keepdims:
        return tuple(1 if i in dropped else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dropped)


def _show(shape: Any) -> str:
    return describe_value(shape) if isinstance(shape, tuple) else "?"
