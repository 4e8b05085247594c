"""Which parameters of a model Keras counts as trainable, in pure Python (`netdsl summary`).

`split_params(graph, freeze)` answers what `model.weights`,
`model.trainable_weights` and the frozen top-level layers of the built model
would say, for a graph whose every count `fill_estimates` knows:

- a batch normalization's moving mean and variance, and a spectral
  normalization's `vector_u`, are non-trainable weights of a trainable layer;
- a step given `trainable=false`, a declared layer's `weight ... trainable=false`,
  and every layer, nested model or block instance a train section's `freeze`
  names (`semantics/fine_tuning.part_layer_names`, the build's rule too) are
  frozen: all their weights;
- a shared layer or a nested model counts once, and steps no output depends
  on are not in the model (Keras leaves them out of `model.weights`).

It answers None where it cannot be sure (a LoRA kernel, a layer it has no
rule for, a graph deeper than it walks); the caller then builds with Keras.
tests/cli/test_summary_inference.py compares the answers with Keras on every spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netdsl import registry
from netdsl.registry.layers.anatomy import Args, axis_size, params_of, size
from netdsl.registry.layers.wrappers import nested
from netdsl.semantics.fine_tuning import INSIDE, part_layer_names
from netdsl.semantics.graph import Graph, Node, keras_layer_name
from netdsl.semantics.shapes_declared import declared_non_trainable_count

__all__ = ["ParamSplit", "split_params", "keras_layer_name", "non_trainable_params"]

_WEIGHTLESS = ("input", "activation", "declared_activation", "tensor_op")
_CANNOT_TELL = (
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    AttributeError,
    ZeroDivisionError,
    OverflowError,
    RecursionError,
)


@dataclass(frozen=True)
class ParamSplit:
    """A model's parameters as Keras counts them once built."""

    total: int
    trainable: int
    frozen: tuple[str, ...]  # top-level layers holding weights that are frozen, in `model.layers` order


def split_params(graph: Graph, freeze: Sequence[str] = ()) -> ParamSplit | None:
    """The split of a graph `fill_estimates` completed, with the layers `freeze` names frozen; None when unsure."""
    try:
        split = _split(graph, _keras_order(graph), set(part_layer_names(graph, freeze, nested=True)))
    except _CANNOT_TELL:
        return None
    if split is not None and len(split.frozen) > 1 and _mixed_precision(graph):
        return None  # float32 casts Keras adds after the outputs move layers in `model.layers`: left to Keras
    return split


def _split(graph: Graph, order: list[Node], frozen_names: set[str]) -> ParamSplit | None:
    total = non_trainable = 0
    frozen: list[str] = []
    for node in order:  # one node per Keras layer, in model.layers order
        name = keras_layer_name(node)
        counts = _node_split(graph, node, _inside(name, frozen_names))
        if counts is None:
            return None
        params, fixed, frozen_inside = counts
        if name in frozen_names or _frozen_step(node):
            fixed = params
            if params:
                frozen.append(name)
        else:
            frozen += [f"{name}{INSIDE}{inner}" for inner in frozen_inside]
        total += params
        non_trainable += fixed
    return ParamSplit(total, total - non_trainable, tuple(frozen))


def _inside(model: str, frozen_names: set[str]) -> set[str]:
    """The frozen layers of a nested model called `model`, by their names inside it."""
    prefix = model + INSIDE
    return {name[len(prefix) :] for name in frozen_names if name.startswith(prefix)}


def _node_split(graph: Graph, node: Node, frozen_inside: set[str]) -> tuple[int, int, tuple[str, ...]] | None:
    """(parameters, non-trainable parameters, its frozen layers) of one layer, with a nested model's
    `frozen_inside` layers frozen (`freeze = ["backbone.stage_4*"]`) and no other `freeze`."""
    if node.op in _WEIGHTLESS:
        return 0, 0, ()
    if node.params is None:
        return None
    if node.op == "layer":
        entry = registry.lookup("layer", node.kind)
        if entry is None or entry.source == "plugin":
            return None
        fixed = node.params if _frozen_step(node) else _statistics(Args(entry, node.args), _input_shapes(graph, node))
        return (node.params, fixed, ()) if fixed is not None else None
    if node.op == "declared_layer":
        fixed = declared_non_trainable_count(node.decl.config, _input_shapes(graph, node))
        return (node.params, fixed, ()) if fixed is not None else None
    if node.op == "model" and isinstance(node.decl, Graph):
        inner = _split(node.decl, _keras_order(node.decl), frozen_inside)
        if inner is None or inner.total != node.params:  # a count of another origin (a Keras build) that differs
            return None
        return inner.total, inner.total - inner.trainable, inner.frozen
    return None


def non_trainable_params(entry: registry.Entry, kwargs: dict[str, Any], input_shapes: list[Any]) -> int | None:
    """How many of a registry layer's parameters Keras keeps out of training; None when it cannot tell."""
    try:
        return _statistics(Args(entry, kwargs), [tuple(s) for s in input_shapes])
    except _CANNOT_TELL:
        return None


def _frozen_step(node: Node) -> bool:
    return node.op == "layer" and node.args.get("trainable") is False


def _statistics(args: Args, shapes: list[Any]) -> int | None:
    """The weights a trainable layer keeps out of training (moving statistics, `vector_u`)."""
    if args["trainable"] is False:
        return params_of(args, shapes)
    if args.entry.param("lora_rank") is not None and args["lora_rank"]:
        return None  # Keras freezes the kernel under LoRA; left to Keras
    name = args.name
    if name == "batch_normalization":
        return 2 * axis_size(shapes[0], args["axis"])
    if name == "residual":  # two batch normalizations, a third on a projected shortcut
        filters = size(args["filters"])
        projected = size(shapes[0][-1]) != filters or args["stride"] != 1
        return 2 * filters * (3 if projected else 2)
    if name == "normalization":
        return params_of(args, shapes)  # its weights are its adapted mean, variance and count, none trained
    if name in ("time_distributed", "bidirectional", "spectral_normalization"):
        return _wrapper_statistics(args, shapes)
    return 0


def _wrapper_statistics(args: Args, shapes: list[Any]) -> int | None:
    inner = nested(args["layer"])
    if inner is None:
        return None
    if args.name == "time_distributed":
        return _statistics(inner, [tuple(shapes[0][1:])])
    if args.name == "bidirectional":
        backward = nested(args["backward_layer"]) or inner
        forward_fixed, backward_fixed = _statistics(inner, shapes), _statistics(backward, shapes)
        return None if forward_fixed is None or backward_fixed is None else forward_fixed + backward_fixed
    inner_fixed = _statistics(inner, shapes)  # spectral normalization: the layer's own, and vector_u
    return None if inner_fixed is None else inner_fixed + params_of(args, shapes) - params_of(inner, shapes)


def _input_shapes(graph: Graph, node: Node) -> list[Any]:
    """The shapes of the inputs a layer's weights follow (not those its call takes by keyword)."""
    return [graph.node_of(ref).output_shapes[ref.index] for ref in node.positional(node.inputs)]


def _mixed_precision(graph: Graph) -> bool:
    policy = graph.train.mixed_precision if graph.train is not None else None
    return policy not in (None, "float32")


# ---------------------------------------------------------------- Keras' order of a model's layers


def _keras_order(graph: Graph) -> list[Node]:
    """One node per Keras layer the model holds (shared layers once, unused steps left out), in the order
    `model.layers` lists them: Keras' `map_graph` (keras/src/ops/function.py), deepest first, then in the
    order a depth-first walk from the outputs met them."""
    keys: list[Any] = [node.shared or node.id for node in graph.nodes]
    first: dict[Any, int] = {}  # layer key -> traversal index
    finished: set[int] = set()
    post_order: list[int] = []

    def visit(start: int) -> None:
        """Depth first from `start`, inputs in order: each node's traversal index on entry, its place in
        `post_order` once its inputs are done. With a stack, not recursion: a chain of 10,000 layers is a
        spec netdsl takes (a recursive walk ran out of Python's stack and the summary fell back to Keras)."""
        if start in finished:
            return
        first.setdefault(keys[start], len(first))
        stack = [(start, 0)]
        while stack:
            index, next_input = stack[-1]
            inputs = graph.nodes[index].inputs
            if next_input < len(inputs):
                stack[-1] = (index, next_input + 1)
                child = inputs[next_input].node
                if child not in finished:  # a DAG: a node on the stack is never met again before it is done
                    first.setdefault(keys[child], len(first))
                    stack.append((child, 0))
            else:
                stack.pop()
                finished.add(index)
                post_order.append(index)

    identities = _identity_outputs(graph)
    identity_parents: dict[int, int] = {}  # an Identity layer's index (after the nodes') -> the node it follows
    for name, ref in graph.outputs:
        if name in identities:  # an Identity layer after the output (builder._renamed_outputs)
            index = len(keys)
            keys.append(("identity", name))
            identity_parents[index] = ref.node
            first.setdefault(keys[index], len(first))
            visit(ref.node)
            finished.add(index)
            post_order.append(index)
        else:
            visit(ref.node)
    node_depth: dict[int, int] = {}
    layer_depth: dict[Any, int] = {}
    for index in reversed(post_order):
        depth = max(node_depth.setdefault(index, 0), layer_depth.get(keys[index], 0))
        layer_depth[keys[index]] = node_depth[index] = depth
        # (the inputs read in place: a table of every node's parents, built per call, cost more than the walk)
        if index in identity_parents:
            node_depth[identity_parents[index]] = max(depth + 1, node_depth.get(identity_parents[index], 0))
            continue
        for ref in graph.nodes[index].inputs:
            node_depth[ref.node] = max(depth + 1, node_depth.get(ref.node, 0))
    for index in graph.inputs:  # an input no output depends on: still a layer of the model
        if keys[index] not in layer_depth:
            layer_depth[keys[index]], first[keys[index]] = 0, -1
    representative: dict[Any, Node] = {}
    for index, key in enumerate(keys[: len(graph.nodes)]):
        if key in layer_depth:
            representative.setdefault(key, graph.nodes[index])
    ranked = sorted(layer_depth, key=lambda key: (-layer_depth[key], first[key]))
    return [representative[key] for key in ranked if key in representative]


def _identity_outputs(graph: Graph) -> set[str]:
    """The outputs of a multi-output step that the builder passes through an `Identity` of their name."""
    used = {node.name for node in graph.nodes} | {keras_layer_name(graph.node_of(ref)) for _, ref in graph.outputs}
    found = set()
    for name, ref in graph.outputs:
        node = graph.node_of(ref)
        if node.n_outputs > 1 and keras_layer_name(node) != name and name not in used:
            used.add(name)
            found.add(name)
    return found
