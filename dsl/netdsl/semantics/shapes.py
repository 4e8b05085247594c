"""Shape inference in pure Python, for `check` and topology diagrams.

A registry layer's shapes come from its anatomy (`netdsl.registry.layers`,
one rule per layer beside its parameter count); this module adds the nodes
that are not registry layers (activations, declared layers, nested models)
and the checker's `UNKNOWN`. A layer without a rule gives an unknown shape,
and the checker then treats what depends on it as unknown (checking both
branches of an `if`), so a valid spec is never rejected for want of a rule.
Shapes exclude the batch axis; `None` is a dimension of unknown size.
"""

from __future__ import annotations

from typing import Any

from netdsl import registry
from netdsl.semantics import tensor_ops
from netdsl.semantics.graph import Graph, Node
from netdsl.semantics.shapes_declared import declared_activation_shape, declared_output_shapes
from netdsl.semantics.values import UNKNOWN

Shape = tuple[Any, ...]


class ShapeBackend:
    """The expander's backend for `check`: handles are inferred shapes."""

    def input(self, node: Node, shape: tuple[Any, ...], dtype: str) -> Any:
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
    if node.op == "activation":
        return [inputs[0]]
    if node.op == "declared_activation":
        return [declared_activation_shape(node.decl.config, inputs[0])]
    if node.op == "tensor_op":
        return tensor_ops.output_shapes(node.decl, inputs)
    if any(s is UNKNOWN for s in inputs):
        return [UNKNOWN] * node.n_outputs
    if node.op == "declared_layer":
        return declared_output_shapes(node.decl.config, inputs)
    entry = registry.lookup("layer", node.kind)
    shapes = None if entry is None else registry.output_shapes(entry, node.args, inputs)
    if shapes is None:
        return [UNKNOWN] * node.n_outputs
    return [UNKNOWN if s is None else s for s in shapes]
