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

from dataclasses import replace
from typing import Any

from netdsl import registry
from netdsl.errors import BuildError
from netdsl.semantics import tensor_ops
from netdsl.semantics.graph import Graph, Node, keras_layer_name
from netdsl.semantics.shapes_declared import declared_activation_shape, declared_output_shapes
from netdsl.semantics.values import UNKNOWN

Shape = tuple[Any, ...]


class ShapeBackend:
    """The expander's backend for `check`: handles are inferred shapes."""

    def input(self, node: Node, shape: tuple[Any, ...], dtype: str) -> Any:
        return tuple(None if d is UNKNOWN else d for d in shape) if UNKNOWN not in shape else UNKNOWN

    def apply(self, node: Node, inputs: list[Any]) -> list[Any]:
        shapes = infer(node, node.positional(inputs))  # tensors given by keyword leave the shapes as they are
        if len(shapes) != node.n_outputs and node.op == "layer":
            shapes = (shapes + [UNKNOWN] * node.n_outputs)[: node.n_outputs]
        return shapes

    def shape(self, handle: Any) -> Any:
        return handle

    def finish(self, graph: Graph) -> Any:
        return None


def infer(node: Node, inputs: list[Any]) -> list[Any]:
    if node.op == "model":
        return called_shapes(node.decl, inputs)
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


def called_shapes(sub: Graph, inputs: list[Any]) -> list[Any]:
    """A nested model's output shapes on the caller's tensors, as Keras computes them when it calls
    the model: a zoo backbone declared `(none, none, 3)` gives `(5, 5, 1280)` on a 160x160 picture,
    not `(none, none, 1280)`. Where the caller's shapes tell less than the model's own check (a
    layer without a rule), the model's own shape stands."""
    own = [sub.node_of(ref).output_shapes[ref.index] for _, ref in sub.outputs]
    called = called_graph(sub, inputs)
    found = [called.node_of(ref).output_shapes[ref.index] for _, ref in called.outputs]
    return [mine if mine is not UNKNOWN else theirs for mine, theirs in zip(found, own)]


def called_graph(sub: Graph, inputs: list[Any]) -> Graph:
    """`sub` with every node's shapes inferred again from the caller's input shapes (`sub` itself when
    they are its declared ones or unknown): what the model is, shape by shape, at that call. The cost
    model costs a nested model on it. Raises `BuildError` naming the layer inside that cannot take
    the caller's shapes (a picture too small for a backbone)."""
    declared = [
        sub.nodes[index].output_shapes[0] if sub.nodes[index].output_shapes else UNKNOWN for index in sub.inputs
    ]
    if len(inputs) != len(sub.inputs) or any(s is UNKNOWN for s in inputs) or list(inputs) == declared:
        return sub
    nodes = list(sub.nodes)
    for index, shape in zip(sub.inputs, inputs):
        nodes[index] = replace(nodes[index], output_shapes=[shape])
    kept = {node.id for node in sub.kept_nodes()}
    for index, node in enumerate(nodes):
        if node.op == "input" or index not in kept:
            continue
        arrived = [nodes[ref.node].output_shapes[ref.index] for ref in node.positional(node.inputs)]
        try:
            nodes[index] = replace(node, output_shapes=infer(node, arrived))
        except BuildError as exc:
            raise BuildError(f"in model '{sub.name}', its layer '{keras_layer_name(node)}': {exc}") from None
    return replace(sub, nodes=nodes)
