"""Shapes and parameter counts without Keras, and whether they can be trusted.

`fill_estimates(graph)` sets every node's `params` from pure-Python
estimates (the registry's formulas, a declared layer's weight shapes, a
nested model's own nodes) and answers whether the graph now holds everything
a Keras build would report: True only when the expansion guessed nowhere
(`Graph.uncertain`), every output shape is fully inferred and every
parameter count is known. A diagram drawn from such a graph is byte for byte
the one drawn after building with Keras (tests/diagram/test_render_keras.py checks
it on every spec); when the answer is False the caller builds with Keras, or
shows what is known.
"""

from __future__ import annotations

from typing import Any

from netdsl import registry
from netdsl.semantics.graph import Graph, Node
from netdsl.semantics.shapes_declared import declared_param_count
from netdsl.semantics.values import UNKNOWN

__all__ = ["fill_estimates", "shape_known"]

_WEIGHTLESS = ("input", "activation", "declared_activation", "tensor_op")


def fill_estimates(graph: Graph) -> bool:
    """Fill `node.params` where it can be estimated; True when every shape and count is known."""
    return _fill(graph, set())


def _fill(graph: Graph, seen: set[int]) -> bool:
    if id(graph) in seen:  # a model nested in itself is refused by the checker; never loop on it
        return False
    seen = seen | {id(graph)}
    complete = not graph.uncertain
    for node in graph.nodes:
        if node.params is None:
            node.params = _estimate(graph, node, seen)
        complete = complete and node.params is not None and _outputs_known(node)
    return complete


def _estimate(graph: Graph, node: Node, seen: set[int]) -> int | None:
    if node.op in _WEIGHTLESS:
        return 0
    inputs = [_shape_of(graph, ref) for ref in node.positional(node.inputs)]  # a layer's weights follow these
    if not all(shape_known(s) for s in inputs):
        return None
    if node.op == "layer":
        entry = registry.lookup("layer", node.kind)
        return None if entry is None else registry.estimate_params(entry, node.args, inputs)
    if node.op == "declared_layer":
        return declared_param_count(node.decl.config, inputs)
    if node.op == "model" and isinstance(node.decl, Graph):
        if not _fill(node.decl, seen):
            return None
        return _distinct_total(node.decl)
    return None


def _distinct_total(graph: Graph) -> int:
    """A model's parameters as Keras' count_params counts them: each shared layer once, an unused step
    (one no output depends on, which Keras leaves out of the model) not at all."""
    total, shared = 0, set()
    for node in graph.kept_nodes():
        if node.shared is not None:
            if node.shared in shared:
                continue
            shared.add(node.shared)
        total += node.params or 0  # every count is known when this runs (see _fill)
    return total


def _outputs_known(node: Node) -> bool:
    return len(node.output_shapes) == node.n_outputs and all(shape_known(s) for s in node.output_shapes)


def shape_known(shape: Any) -> bool:
    """A shape fully inferred: a tuple of sizes (None where the size varies, as Keras has it)."""
    return isinstance(shape, tuple) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0) for d in shape
    )


def _shape_of(graph: Graph, ref: Any) -> Any:
    shapes = graph.nodes[ref.node].output_shapes
    return shapes[ref.index] if ref.index < len(shapes) else UNKNOWN
