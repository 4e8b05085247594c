"""The cost of op expressions: tensor expressions (`x * sigmoid(b)`), declared activations and declared layers.

The trees are `netdsl.custom.expr`'s plain data (`["bin", "+", a, b]`,
`["call", "tanh", [a], {}]`, `["var", "x"]`, `["num", 3]`). Each operator
counts as `layers.py` says: an elementwise one 1 FLOP per element of its
result (a function its `ACTIVATION_FLOPS`), `@` 2 FLOPs per multiply-add, a
reduction one per element reduced; transposes and reshapes move data only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from netdsl.cost.layers import MOVES, REDUCTIONS, Counts, NoRule, function_flops
from netdsl.cost.memory import OUTPUT_DERIVED
from netdsl.semantics import array_ops
from netdsl.semantics.slicing import sliced_shape
from netdsl.semantics.tensor_ops import PER_SAMPLE

__all__ = ["tensor_op_counts", "declared_layer_counts", "tensor_op_memory", "declared_layer_memory"]

_Shape = tuple[int, ...]


class _Walker:
    """Shapes (batch axis included, as 1) and counts of a tree's operators, numpy's broadcasting."""

    def __init__(self, tensors: Mapping[str, _Shape], values: Mapping[str, Any]) -> None:
        self.tensors = tensors
        self.values = values
        self.macs = 0
        self.flops = 0

    def shape(self, tree: Any) -> _Shape:
        kind = tree[0]
        if kind == "var":
            name = tree[1]
            if name in self.tensors:
                return self.tensors[name]
            if name in self.values:
                return ()
            raise NoRule(f"the name '{name}' cannot be costed")
        if kind in ("num", "const"):
            return ()
        if kind == "neg":
            out = self.shape(tree[1])
            self.flops += math.prod(out)
            return out
        if kind == "bin":
            left, right = self.shape(tree[2]), self.shape(tree[3])
            if tree[1] == "@":
                return self._matmul(left, right)
            out = _broadcast(left, right)
            self.flops += math.prod(out)
            return out
        if kind == "call":
            return self._call(tree)
        raise NoRule(f"the expression node '{kind}' has no cost rule")

    def _matmul(self, left: _Shape, right: _Shape) -> _Shape:
        if len(left) < 2 or len(right) < 2 or left[-1] != right[-2]:
            raise NoRule("a matrix product of these shapes cannot be costed")
        out = _broadcast(left[:-2], right[:-2]) + (left[-2], right[-1])
        macs = math.prod(out) * left[-1]
        self.macs += macs
        self.flops += 2 * macs
        return out

    def _call(self, tree: Any) -> _Shape:
        name, args = tree[1], tree[2]
        kwargs = tree[3] if len(tree) > 3 else {}
        shapes = [self.shape(a) for a in args]
        if name == "matmul":
            return self._matmul(shapes[0], shapes[1])
        if name == "transpose":
            perm = args[1][1]
            return tuple(shapes[0][p] for p in perm)
        if name == "get_item":  # a slice moves data only
            return sliced_shape(shapes[0], args[1][1], batch=False)
        if name in ("split", "unstack", "zeros_like", "ones_like"):  # parts of the input, or its shape: no arithmetic
            return shapes[0]
        if name in array_ops.SIGNATURES or name == PER_SAMPLE:
            return self._array(name, args, kwargs, shapes)
        if name in REDUCTIONS:
            axes = kwargs["axis"][1]
            axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
            rank = len(shapes[0])
            dropped = {a % rank for a in axes}
            keep = bool(kwargs.get("keepdims", ["const", False])[1])
            out = tuple(1 if i in dropped else d for i, d in enumerate(shapes[0]) if keep or i not in dropped)
            self.flops += math.prod(shapes[0]) - math.prod(out) + (math.prod(out) if name == "mean" else 0)
            return out
        if name in MOVES:
            raise NoRule(f"'{name}' in a declared layer has no cost rule")
        out = shapes[0]
        for other in shapes[1:]:
            out = _broadcast(out, other)
        self.flops += function_flops(name) * math.prod(out)
        return out

    def _array(self, name: str, args: Any, kwargs: Any, shapes: list[_Shape]) -> _Shape:
        """A spectral or index function: its shape by `semantics.array_ops`' rule (the batch axis of 1 as
        unknown there), its FLOPs by `_array_flops`. `per_sample(arange(...), x0)`: arange's, a sample's."""
        if name == PER_SAMPLE:
            return (1, *shapes[0])
        params = array_ops.bind(name, {key: value[1] for key, value in kwargs.items()})
        if name == "arange":
            return (array_ops.arange_length(params),)
        if any(not shape or shape[0] != 1 for shape in shapes):
            raise NoRule(f"'{name}' of a weight has no cost rule")
        found = array_ops.output_shapes(name, [(None, *shape[1:]) for shape in shapes], params)
        outs = [(1, *shape[1:]) for shape in found]
        self.flops += _array_flops(name, shapes[0], outs[0], params)
        return outs[0]


def _array_flops(name: str, shape: _Shape, out: _Shape, params: Mapping[str, Any]) -> int:
    """FLOPs of a spectral or index function on a tensor of `shape` (batch axis 1) giving `out`. A complex
    FFT of n points counts 5 n log2 n (the radix-2 count), a real one half that; a short-time transform
    its window's product and each frame's real FFT, its inverse the same; a running sum or product and
    argmax one per element; top_k one comparison per element and log2 k; the rest move data only."""
    if name in ("fft", "fft2", "ifft2"):
        points = shape[-1] if name == "fft" else shape[-1] * shape[-2]
        return int(5 * math.prod(shape) * math.log2(points)) if points > 1 else 0
    if name in ("rfft", "irfft"):
        n = out[-1] if name == "irfft" else params["fft_length"] or shape[-1]
        rows = math.prod(out[:-1])
        return int(2.5 * rows * n * math.log2(n)) if n > 1 else 0
    if name in ("stft", "istft"):
        length = params["fft_length"]
        spectrum = out if name == "stft" else shape
        frames = math.prod(spectrum[:-1])
        per_frame = length + (int(2.5 * length * math.log2(length)) if length > 1 else 0)
        return frames * per_frame
    if name in ("cumsum", "cumprod", "argmax", "argmin"):
        return math.prod(shape)
    if name == "top_k":
        return math.prod(shape) * max(1, math.ceil(math.log2(params["k"] + 1)))
    return 0  # arange, one_hot, zeros_like, ones_like: values written, no arithmetic


def _broadcast(left: _Shape, right: _Shape) -> _Shape:
    rank = max(len(left), len(right))
    a, b = (1,) * (rank - len(left)) + left, (1,) * (rank - len(right)) + right
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
        raise NoRule("operands of these shapes cannot be costed")
    return tuple(max(x, y) for x, y in zip(a, b))


def _known(shape: Any) -> _Shape:
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise NoRule("a size is not known")
    return shape


def tensor_op_counts(tree: Any, inputs: Sequence[Any]) -> Counts:
    """(MACs, FLOPs) per sample of a tensor-expression node over inputs x0, x1, ... (shapes without batch)."""
    walker = _Walker({f"x{i}": (1,) + _known(s) for i, s in enumerate(inputs)}, {})
    walker.shape(tree)
    return walker.macs, walker.flops


def _declared_layer_walker(config: Mapping[str, Any], inputs: Sequence[Any]) -> _Walker:
    """A walker over a declared layer's trees: its inputs (a batch of one) and its weights, by name."""
    names = config["inputs"]
    shapes = {name: _known(s) for name, s in zip(names, inputs)}
    params = config.get("params", {})
    tensors: dict[str, _Shape] = {name: (1,) + s for name, s in shapes.items()}
    for weight in config.get("weights", []):
        tensors[weight["name"]] = tuple(_dimension(d, shapes, params) for d in weight["shape"])
    return _Walker(tensors, params)


def declared_layer_counts(config: Mapping[str, Any], inputs: Sequence[Any]) -> Counts:
    """(MACs, FLOPs) per sample of a declared layer: its output trees over its inputs and weights."""
    walker = _declared_layer_walker(config, inputs)
    for tree in config["outputs"]:
        walker.shape(tree)
    return walker.macs, walker.flops


def tensor_op_memory(tree: Any, inputs: Sequence[Any]) -> tuple[int, int]:
    """(peak, intermediates) per sample of a tensor expression, in elements: see `_memory`."""
    tensors = {f"x{i}": (1,) + _known(s) for i, s in enumerate(inputs)}
    return _memory([tree], _Walker(tensors, {}))


def declared_layer_memory(config: Mapping[str, Any], inputs: Sequence[Any]) -> tuple[int, int]:
    """(peak, intermediates) per sample of a declared layer's output trees, in elements: see `_memory`."""
    return _memory(config["outputs"], _declared_layer_walker(config, inputs))


def _memory(trees: Sequence[Any], walker: _Walker) -> tuple[int, int]:
    """The results of the trees' operators below their roots, per sample (a result of the weights alone,
    without the batch axis, is made once): the most alive at once evaluating them depth first, a result
    living until its parent is computed; and those the backward pass keeps: a matrix product's operands
    (through a transpose or reshape, the result moved), and sigmoid's, tanh's, softmax's and exp's results
    (their derivatives are written in them). Elementwise results XLA recomputes inside the fused backward."""
    peak = kept = 0
    for tree in trees:
        _, tree_peak, tree_kept = _live(tree, walker, root=True)
        peak, kept = max(peak, tree_peak), kept + tree_kept
    return peak, kept


def _live(tree: Any, walker: _Walker, root: bool = False) -> tuple[int, int, int]:
    """(result, peak, kept) of `tree`, in elements per sample; a root's result is its step's output,
    counted there."""
    kind = tree[0]
    children = [tree[1]] if kind == "neg" else [tree[2], tree[3]] if kind == "bin" else []
    if kind == "call":
        children = [a for a in tree[2] if isinstance(a, list) and a and a[0] not in ("const", "num")]
    product = (kind == "bin" and tree[1] == "@") or (kind == "call" and tree[1] == "matmul")
    held = peak = kept = 0
    for child in children:
        result, child_peak, child_kept = _live(child, walker)
        peak = max(peak, held + child_peak)
        held += result
        kept += child_kept + (_moved(child, walker) if product else 0)
    shape = walker.shape(tree) if kind not in ("var", "num", "const") else ()
    result = math.prod(shape) if shape and shape[0] == 1 and kind != "var" and not root else 0
    if kind == "call" and tree[1] in OUTPUT_DERIVED:
        kept += result
    return result, max(peak, held + result), kept


def _moved(tree: Any, walker: _Walker) -> int:
    """The elements per sample a product's operand keeps: the tensor a transpose or reshape moved, an input
    or a weight nothing (its step or the weights hold it)."""
    while tree[0] == "call" and tree[1] in MOVES and tree[2]:
        tree = tree[2][0]
    if tree[0] in ("var", "num", "const"):
        return 0
    shape = walker.shape(tree)
    return math.prod(shape) if shape and shape[0] == 1 else 0


def _dimension(tree: Any, shapes: Mapping[str, _Shape], params: Mapping[str, Any]) -> int:
    if tree[0] == "dim":
        return shapes[tree[1]][tree[2]]
    if tree[0] == "var" and isinstance(params.get(tree[1]), int):
        return int(params[tree[1]])
    if tree[0] in ("num", "const") and isinstance(tree[1], int):
        return int(tree[1])
    raise NoRule("a weight's size cannot be costed")
