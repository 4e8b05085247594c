"""From a model's call graph to statements of chains (`y = x -> a -> b`).

`build_program` maps every call to its step, then (unless the export is flat)
folds each single-entry, single-exit region whose last op combines chains from
the entry (a residual add, an Inception concat, a squeeze-and-excite multiply)
into one `Merge` unit, innermost first, and finally cuts the graph into chains:
a tensor gets a name where it is an input or output of the model, is used more
than once, feeds a multi-input op or comes from a multi-output one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netdsl import registry
from netdsl.decompiler.graph import Call, KModel, Ref
from netdsl.decompiler.layer_steps import Step, layer_step
from netdsl.decompiler.op_steps import is_operation, op_step
from netdsl.decompiler.problems import Problems
from netdsl.decompiler.units import Leaf, Merge, ModelProgram, Op, Statement
from netdsl.limits import MAX_REGION_OPS


@dataclass(eq=False)
class _Node:
    inputs: list[Ref]
    outputs: list[Ref]
    op: Op | None = None  # a single op
    merge: Merge | None = None  # or a folded region

    def unit(self):
        if self.merge is not None:
            return self.merge
        return Leaf(self.op.step, 1, self.op.in_channels, self.op)


@dataclass
class _Graph:
    nodes: list[_Node]
    uses: dict[Ref, list[_Node]] = field(default_factory=dict)  # distinct consumer nodes
    outputs: set[Ref] = field(default_factory=set)

    def index(self) -> None:
        self.uses = {}
        for node in self.nodes:
            for ref in dict.fromkeys(node.inputs):
                self.uses.setdefault(ref, []).append(node)


def build_program(
    model: KModel, model_names: dict[int, str], shared_names: dict[str, str], problems: Problems, flat: bool
) -> ModelProgram:
    """The model as statements. `model_names` names nested models (by id of their KModel),
    `shared_names` the layers called more than once (by layer name)."""
    ops, shared = _ops(model, model_names, shared_names, problems)
    graph = _Graph([_Node(list(op.inputs), [Ref(op.index, i) for i in range(op.n_outputs)], op=op) for op in ops])
    graph.outputs = set(model.outputs)
    graph.index()
    if not flat:
        _fold_merges(graph, [i.ref for i in model.inputs])
    statements = _chains(graph, [i.ref for i in model.inputs])
    outputs = list(zip(model.output_names, model.outputs))
    return ModelProgram(model.name, model.inputs, shared, statements, outputs)


def _ops(
    model: KModel, model_names: dict[int, str], shared_names: dict[str, str], problems: Problems
) -> tuple[list[Op], list[tuple[str, Step]]]:
    ops: list[Op] = []
    shared: dict[str, Step] = {}
    for index, call in enumerate(model.calls):
        layer = call.layer
        if layer.class_name == "InputLayer":
            continue
        entry, made_kwargs = None, ()  # the registry layer it calls (its call may take tensors by keyword)
        if layer.model is not None:
            step = Step("model", model_names[id(layer.model)])
        elif is_operation(layer):
            operation = op_step(layer, call, problems)
            if operation is None:
                continue
            step = operation
        else:
            made = layer_step(layer, call, problems)
            if made is None:
                continue
            step, entry, made_kwargs = made, made.entry, made.kwargs
            if layer.name in shared_names:
                name = shared_names[layer.name]
                shared.setdefault(name, step)
                step = Step("shared", name)
        shape = call.input_shapes[0] if call.input_shapes else None
        channels = shape[-1] if shape and isinstance(shape[-1], int) else None
        inputs, keywords = _placed(entry, call)
        ops.append(Op(index, step, inputs, _output_count(entry, made_kwargs, call), layer.name, channels, keywords))
    return ops, list(shared.items())


def _output_count(entry: registry.Entry | None, kwargs: tuple, call: Call) -> int:
    """How many tensors the layer's call gives: all of them, also those the model leaves unused (keras.io's
    `decoder_outputs, _, _ = decoder_lstm(...)`), so that the spec names as many as its step gives."""
    count = registry.output_count(entry, dict(kwargs)) if entry is not None else None
    return max(call.n_outputs, count or 0)


def _placed(entry: registry.Entry | None, call: Call) -> tuple[list[Ref], tuple[tuple[str, int, bool], ...]]:
    """A call's inputs and the keywords among them, multi_head_attention's `value=` and `key=` put in
    their places in the tuple (`mha(q, value=v)` is `(q, v) -> multi_head_attention`, as the spec writes it)."""
    inputs, keywords = list(call.inputs), list(call.keywords)
    if entry is None or not keywords:
        return inputs, tuple(keywords)
    positional = len(inputs) - sum(count for _, count, _ in keywords)
    placed, rest, start = inputs[:positional], [], positional
    for name, count, listed in keywords:
        tensor = entry.call_tensor(name)
        taken = inputs[start : start + count]
        start += count
        if tensor is not None and tensor.position == len(placed) and count == 1 and not listed:
            placed += taken
        else:
            rest.append(((name, count, listed), taken))
    return placed + [ref for _, taken in rest for ref in taken], tuple(keyword for keyword, _ in rest)


# ---------------------------------------------------------------- merges


def _fold_merges(graph: _Graph, inputs: list[Ref]) -> None:
    """Fold every foldable region, the innermost (latest fork) first."""
    position = {ref: -1 for ref in inputs}
    for i, node in enumerate(graph.nodes):
        for ref in node.outputs:
            position[ref] = i
    forks = [ref for ref, users in graph.uses.items() if len(users) >= 2]
    forks.sort(key=lambda ref: (position.get(ref, -1), ref.index), reverse=True)
    for fork in forks:
        start = next((i for i, node in enumerate(graph.nodes) if fork in node.outputs), -1) + 1
        region = _region(graph, fork, start)
        if region is None:
            continue
        merge = _merge(graph, fork, region)
        if merge is None:
            continue
        members = set(map(id, region))
        exit_ref = region[-1].outputs[0]
        folded = _Node([fork], [exit_ref], merge=merge)
        graph.nodes = [
            folded if node is region[-1] else node
            for node in graph.nodes
            if id(node) not in members or node is region[-1]
        ]
        # Only the fork enters the region and only the exit leaves it.
        graph.uses[fork] = [n for n in graph.uses[fork] if id(n) not in members] + [folded]
        for node in region:
            for ref in node.outputs:
                if ref != exit_ref:
                    graph.uses.pop(ref, None)


def _region(graph: _Graph, fork: Ref, start: int) -> list[_Node] | None:
    """The nodes from `fork` to the first tensor where every path from it meets again,
    when nothing else enters or leaves on the way."""
    pending = {fork: len(graph.uses[fork]) + (fork in graph.outputs)}
    included: list[_Node] = []
    for node in graph.nodes[start:]:
        inputs = set(node.inputs)
        hit = [ref for ref in inputs if ref in pending]
        if not hit:
            continue
        if len(hit) != len(inputs) or len(included) >= MAX_REGION_OPS:
            return None
        included.append(node)
        for ref in hit:
            pending[ref] -= 1
        for ref in node.outputs:
            users = len(graph.uses.get(ref, ())) + (ref in graph.outputs)
            if users:
                pending[ref] = users
        live = [ref for ref, left in pending.items() if left > 0]
        if not live:
            return None
        if len(live) == 1 and live[0] != fork:
            if live[0] not in node.outputs or len(node.outputs) != 1:
                return None
            return included
    return None


def _merge(graph: _Graph, fork: Ref, region: list[_Node]) -> Merge | None:
    """The region as a Merge: its last op combining one chain per input, each from `fork`."""
    last = region[-1]
    if last.op is None or len(last.inputs) < 2 or last.op.step.kind not in ("layer", "activation", "op"):
        return None
    if last.op.keywords:  # its inputs are not branches to merge: the call takes some by keyword
        return None
    producer = {ref: node for node in region for ref in node.outputs}
    covered: set[int] = {id(last)}
    branches = []
    for ref in last.inputs:
        chain = []
        while ref != fork:
            node = producer.get(ref)
            if (
                node is None
                or len(node.inputs) != 1
                or len(node.outputs) != 1
                or id(node) in covered
                or len(graph.uses.get(ref, ())) != 1
                or ref in graph.outputs
            ):
                return None
            covered.add(id(node))
            chain.append(node)
            ref = node.inputs[0]
        branches.append([node.unit() for node in reversed(chain)])
    if len(covered) != len(region):
        return None
    first_channels = _channels_of(region, fork)
    return Merge(last.op.step, branches, first_channels, last.op)


def _channels_of(region: list[_Node], fork: Ref) -> int | None:
    for node in region:
        if fork in node.inputs:
            unit = node.unit()
            return unit.in_channels
    return None


# ---------------------------------------------------------------- chains


def _chains(graph: _Graph, inputs: list[Ref]) -> list[Statement]:
    """Statements: each chain runs until a tensor that needs a name."""
    named = set(inputs) | set(graph.outputs)
    for ref, users in graph.uses.items():
        if len(users) != 1 or len(users[0].inputs) != 1:
            named.add(ref)
    for node in graph.nodes:
        if len(node.outputs) != 1:
            named.update(node.outputs)
    consumer = {ref: users[0] for ref, users in graph.uses.items() if len(users) == 1}
    absorbed: set[int] = set()
    statements = []
    for node in graph.nodes:
        if id(node) in absorbed:
            continue
        simple = len(node.inputs) == 1 and len(node.outputs) == 1
        statement = Statement(
            list(node.inputs), None if simple else node.op, [node.unit()] if simple else [], list(node.outputs)
        )
        current = node
        while len(current.outputs) == 1 and current.outputs[0] not in named and current.outputs[0] in consumer:
            current = consumer[current.outputs[0]]
            absorbed.add(id(current))
            statement.units.append(current.unit())
        statement.targets = list(current.outputs)
        statements.append(statement)
    return statements
