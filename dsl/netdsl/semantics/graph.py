"""The expanded graph of one model: what the compiler builds and the renderer draws.

Blocks are gone (expanded into nodes), constants are folded, and every node
remembers the source span that made it and the block instance (cluster) it
came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from netdsl.errors import Diagnostic, Span


@dataclass(frozen=True)
class TensorRef:
    node: int  # index into Graph.nodes
    index: int = 0  # which output of that node


@dataclass
class Cluster:
    """One block instance: `path` is the instance names from the model down."""

    path: tuple[str, ...]
    block: str
    span: Span
    args: dict[str, Any]


@dataclass(frozen=True)
class KeywordInput:
    """Tensors a layer's call takes by keyword (`lstm(64, initial_state=[h, c])`): they are the last
    inputs of the node, after the tensors it takes by position, `count` of them for each keyword in
    order. Keeping them among `Node.inputs` keeps every edge in one list (what an output depends on,
    what the diagram draws); `Node.call_inputs` tells the two apart."""

    name: str
    count: int
    listed: bool  # a list (`[h, c]`, as Keras takes an RNN's states), else one tensor


Item = TypeVar("Item")


@dataclass
class Node:
    id: int
    name: str  # unique, deterministic layer name
    op: str  # "input" | "layer" | "activation" | "declared_layer" | "declared_activation" | "model"
    kind: str  # registry name, declared name or model name
    args: dict[str, Any]  # checked arguments (constants or values.Resolved)
    inputs: list[TensorRef]
    n_outputs: int
    cluster: tuple[str, ...]
    span: Span
    shared: str | None = None  # nodes with the same key reuse one layer (and its weights)
    repeat: tuple[int, int, int] | None = None  # (group id, copy index, copies)
    dtype: str | None = None  # inputs only
    decl: Any = None  # a declared layer/activation, or the sub-Graph of a nested model
    output_shapes: list[Any] = field(default_factory=list)  # without the batch axis
    params: int | None = None  # parameter count, when known
    keywords: tuple[KeywordInput, ...] = ()  # the inputs its call takes by keyword, after the others

    @property
    def positional_count(self) -> int:
        """How many of `inputs` the call takes by position (the layer's inputs proper)."""
        return len(self.inputs) - sum(k.count for k in self.keywords)

    def positional(self, items: list[Item]) -> list[Item]:
        """Of one thing per input (refs, shapes, Keras tensors), those the call takes by position."""
        return items[: self.positional_count] if self.keywords else items

    def call_inputs(self, items: list[Item]) -> tuple[list[Item], dict[str, Item | list[Item]]]:
        """One thing per input split as the layer's call takes them: by position, and by keyword
        (a list for a keyword given a list, `initial_state=[h, c]`)."""
        start = self.positional_count
        keywords: dict[str, Item | list[Item]] = {}
        for keyword in self.keywords:
            part = items[start : start + keyword.count]
            keywords[keyword.name] = list(part) if keyword.listed else part[0]
            start += keyword.count
        return items[: self.positional_count], keywords


@dataclass
class Graph:
    name: str
    span: Span
    nodes: list[Node] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[tuple[str, TensorRef]] = field(default_factory=list)
    clusters: dict[tuple[str, ...], Cluster] = field(default_factory=dict)
    train: Any = None  # train.TrainSpec, when the model has a `train` section
    built: Any = None  # what the backend made of it (a keras.Model), for nested use
    uncertain: bool = False  # check had to guess somewhere (see ExpansionState.uncertain)
    # A zoo backbone's: its layers carry keras.applications' names, and parts are named by them alone
    # (its block instances are the decompiler's, `top_activation.stage_3`: a `top_*` would name them all).
    keras_application: bool = False
    # A zoo backbone called with `include_top=true` (`semantics/backbone_call.py`): its published weights are
    # the file with the classifier, `zoo:NAME/top`.
    classifier: bool = False
    # The calls of zoo backbones with `weights="imagenet"` in its body: `init` parts of its train section, which
    # load only where it is the model built (not nested in another).
    weights_by_call: list[Span] = field(default_factory=list)
    # Its last `taps` outputs are layers a caller taps by name (`semantics/taps.py`), not declared ones.
    taps: int = 0

    def node_of(self, ref: TensorRef) -> Node:
        return self.nodes[ref.node]

    @property
    def output_names(self) -> list[str]:
        return [name for name, _ in self.outputs]

    def kept_nodes(self) -> list[Node]:
        """The nodes a Keras model of this graph holds, in graph order: its inputs and every step an
        output depends on. Keras' functional model leaves out a step no output uses (an unused step)
        and its weights, so a model's parameter count is the sum over these."""
        kept = set(self.inputs)
        waiting = [ref.node for _, ref in self.outputs if isinstance(ref, TensorRef)]
        while waiting:
            index = waiting.pop()
            if index in kept or not 0 <= index < len(self.nodes):
                continue
            kept.add(index)
            waiting.extend(ref.node for ref in self.nodes[index].inputs)
        return [node for index, node in enumerate(self.nodes) if index in kept]


def keras_layer_name(node: Node) -> str:
    """The name of the Keras layer a node becomes (`backend/builder.py`): a nested model's name,
    the one a layer is given (`dense(8, name="hid")`), a shared instance's (`shared proj = dense(8)`:
    every use is the one layer "proj"), else the node's."""
    if node.op == "model" and isinstance(node.decl, Graph):
        return node.decl.name
    if node.op == "layer" and isinstance(node.args.get("name"), str):
        return str(node.args["name"])  # the builder passes it to the layer as written
    if node.op in ("layer", "declared_layer") and node.shared is not None and node.shared.startswith("shared:"):
        return node.shared[len("shared:") :]
    return node.name


def repeated_layer_names(graph: Graph) -> list[Diagnostic]:
    """One error per layer of the model whose Keras name another layer already has: Keras refuses to
    assemble such a model ("The name ... is used 2 times"). It happens with a `name=` inside a block
    used more than once, or in a repeat, or naming another step. The uses of one shared instance,
    and of one nested model, are one layer."""
    first: dict[str, Node] = {}
    found = []
    for node in graph.kept_nodes():
        name = keras_layer_name(node)
        other = first.setdefault(name, node)
        if other is node or _same_layer(other, node):
            continue
        in_one_block = node.cluster and node.span == other.span
        hint = (
            "a name= inside a block used twice names every use alike: leave it out, or make it a block parameter"
            if in_one_block
            else f"give one of them another name= than '{name}'"
        )
        found.append(
            Diagnostic.at(
                node.span,
                f"the layer name '{name}' is given to two layers, '{other.name}' and "
                f"'{node.name}'; Keras needs each name once",
                hint,
            )
        )
    return found


def _same_layer(a: Node, b: Node) -> bool:
    if a.shared is not None and a.shared == b.shared:
        return True
    return a.op == b.op == "model" and a.decl is b.decl
