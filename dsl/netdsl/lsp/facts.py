"""What the checker's graph says about a statement: its output shapes and parameter count.

Every node of the graph carries the span that made it and the block instance
it came from; a statement's nodes are those whose span (or whose outermost
block instance's call) lies inside the statement.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from netdsl.cost.model import ModelCost, model_cost
from netdsl.cost.readout import costed, flops_text
from netdsl.diagram.view import Params
from netdsl.errors import Span
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.graph import Graph, Node
from netdsl.semantics.values import UNKNOWN
from netdsl.syntax import ir


def format_shape(shape: Any) -> str:
    """A shape as Keras prints one, the batch axis first: `(None, 28, 28, 1)`."""
    if shape is UNKNOWN or not isinstance(shape, tuple):
        return "(unknown)"
    dims = ["None"] + ["?" if d is UNKNOWN else str(d) for d in shape]
    return f"({', '.join(dims)})"


def format_count(count: int | None, complete: bool = True) -> str:
    """`1,248`; `≥ 640` when some layer's count is not known without building it."""
    if count is None or (not complete and count == 0):
        return "unknown"
    return f"{count:,}" if complete else f"≥ {count:,}"


@dataclass
class Produced:
    """What one statement makes: its tensors' shapes and the parameters of its layers."""

    shapes: list[Any]
    params: int  # the layers' parameters (shared layers once), as far as known
    complete: bool  # whether every layer's count was known
    layers: int
    certain: bool  # False where the check had to guess (see Graph.uncertain)
    flops: int | None = None  # one sample through its layers (netdsl.cost); None when not costed
    flops_complete: bool = True  # False when a layer had no cost rule: `flops` is then a lower bound

    @property
    def params_text(self) -> str:
        return format_count(self.params, self.complete)

    @property
    def flops_text(self) -> str:
        """`1.2 MFLOPs a sample`, `≥ …` when a layer could not be costed; '' when nothing was."""
        if self.flops is None or (not self.flops_complete and self.flops == 0):
            return ""
        return f"{'' if self.flops_complete else '≥ '}{flops_text(self.flops)} a sample"

    def summary(self) -> str:
        shapes = ", ".join(format_shape(s) for s in self.shapes)
        approx = "" if self.certain else "~"
        return f"{approx}{shapes} · {self.params_text} params"


class GraphFacts:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.params = Params(graph)
        anchored = sorted(((_anchor(graph, node), node.id) for node in graph.nodes), key=lambda a: a[0])
        self._keys = [key for key, _ in anchored]
        self._ids = [node_id for _, node_id in anchored]
        self._costs: dict[int, ModelCost | None] = {}

    def cost(self, batch: int | None = 1) -> ModelCost | None:
        """The model's cost (netdsl.cost) for `batch` samples (None: the train section's batch_size),
        computed once; None when the graph cannot be costed."""
        key = 0 if batch is None else batch
        if key not in self._costs:
            try:
                fill_estimates(self.graph)  # the parameter counts summary shows
                self._costs[key] = costed(self.graph) if batch is None else model_cost(self.graph, batch=batch)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError):
                self._costs[key] = None  # a graph the check left partial: no figures rather than a failure
        return self._costs[key]

    def nodes_in(self, span: Span) -> list[Node]:
        lo = bisect.bisect_left(self._keys, (span.file, span.line, span.col))
        hi = bisect.bisect_right(self._keys, (span.file, span.end_line, span.end_col))
        return [self.graph.nodes[i] for i in sorted(self._ids[lo:hi])]

    def produced(self, stmt: Any, targets: int = 1) -> Produced | None:
        """The tensors a statement binds (`targets` of them) and what its layers weigh."""
        if isinstance(stmt, ir.InputItem):
            nodes = [n for n in self.nodes_in(stmt.span) if n.op == "input" and n.name == stmt.name]
            if not nodes:
                return None
            return Produced([nodes[0].output_shapes[0] if nodes[0].output_shapes else UNKNOWN], 0, True, 0, True)
        nodes = [n for n in self.nodes_in(stmt.span) if n.op != "input"]
        if not nodes:
            return None
        last = nodes[-1]
        shapes = list(last.output_shapes[:targets]) if last.output_shapes else [UNKNOWN]
        total, complete = self.params.of_nodes(nodes)
        flops, flops_complete = self._flops(nodes)
        return Produced(shapes, total, complete, len(nodes), not self.graph.uncertain, flops, flops_complete)

    def _flops(self, nodes: list[Node]) -> tuple[int | None, bool]:
        cost = self.cost()
        if cost is None:
            return None, False
        index = {id(node): position for position, node in enumerate(self.graph.nodes)}
        steps = [cost.steps[index[id(node)]] for node in nodes if id(node) in index]
        return sum(step.flops for step in steps), all(step.unknown is None for step in steps)


def _anchor(graph: Graph, node: Node) -> tuple[str, int, int]:
    span = graph.clusters[node.cluster[:1]].span if node.cluster and node.cluster[:1] in graph.clusters else node.span
    return span.file, span.line, span.col


def statements(body: list) -> Iterator[Any]:
    """Every statement of a body, those inside `if` branches included, in text order."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ir.If):
            yield from statements(stmt.then)
            yield from statements(stmt.orelse or [])


def statement_at(body: list, line: int, col: int) -> Any:
    """The innermost statement of a body around a position."""
    found = None
    for stmt in statements(body):
        s = stmt.span
        if (s.line, s.col) <= (line, col) <= (s.end_line, s.end_col) and not isinstance(stmt, ir.If):
            found = stmt
    return found


def binding_facts(facts: GraphFacts, stmt: Any, name: str) -> Produced | None:
    """What the statement `stmt` binds to `name`: one of its targets, an input or an output."""
    if isinstance(stmt, ir.Input):
        item = next((i for i in stmt.items if i.name == name), None)
        return facts.produced(item) if item is not None else None
    if isinstance(stmt, ir.Assign) and name in stmt.targets:
        produced = facts.produced(stmt, len(stmt.targets))
        if produced is not None and len(produced.shapes) == len(stmt.targets):
            produced.shapes = [produced.shapes[stmt.targets.index(name)]]
        return produced
    if isinstance(stmt, ir.Output):
        out = next((i for i in stmt.items if i.name == name and i.value is not None), None)
        return facts.produced(out) if out is not None else None
    return None
