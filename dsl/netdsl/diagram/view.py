"""What a diagram draws, worked out from an expanded graph: items, clusters, edges.

Pure Python: no Graphviz, no Keras. `dot.py` turns a `View` into DOT.

- An *item* is one drawn node: a layer, an input, an output terminal, a
  shared instance (every call of it drawn as one node), a run of identical
  repeated steps (`dense(64) * 3` drawn once, marked x3), or a block instance
  folded away by `depth`.
- Clusters are the block instances still drawn open (`len(path) <= depth`).
- Edges join items; an edge carries the tensor's shape where the item it
  leaves changed the shape, and the call number where it enters or leaves a
  shared instance used more than once.

Everything is ordered by the graph's node order, so the same graph always
gives the same view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl import registry
from netdsl.semantics.graph import Cluster, Graph, Node, TensorRef
from netdsl.semantics.values import describe_value

MAX_ARGS = 6  # arguments shown on a node whose kind has no key-argument list


@dataclass
class Item:
    key: str  # the DOT node id: n<node id>, b<k> (a folded block), out<k> (an output)
    role: str  # input | output | layer | activation | model | block | op (an operator of a tensor expression)
    title: str  # what it is: conv2d, bottleneck, input, output
    name: str  # the full name of its (first) layer, block instance or tensor
    cluster: tuple[str, ...]  # the open cluster it is drawn in
    members: list[int] = field(default_factory=list)  # graph node ids
    args: list[tuple[str, Any]] = field(default_factory=list)
    count: int = 1  # copies of a repeated step drawn as this one item
    calls: int = 1  # uses of a shared instance
    params: int | None = None  # None: unknown
    params_complete: bool = True  # False: some member's count is unknown (params is a lower bound)
    in_shapes: list[Any] = field(default_factory=list)
    out_shapes: list[Any] = field(default_factory=list)
    dtype: str | None = None
    last_name: str | None = None  # the last copy's name, for a repeated step


@dataclass
class Edge:
    src: str
    dst: str
    shape: Any = None  # shown on the edge; None when the shape did not change
    index: int | None = None  # which output of a multi-output item
    out_call: int | None = None  # the call of a shared instance whose output this is
    in_call: int | None = None  # the call of a shared instance this feeds
    keyword: str | None = None  # the keyword its call takes it by (`initial_state`), if any


@dataclass
class ClusterView:
    path: tuple[str, ...]
    block: str
    args: dict[str, Any]
    params: int
    params_complete: bool


@dataclass
class View:
    name: str
    items: list[Item]
    edges: list[Edge]
    clusters: list[ClusterView]  # parents before children, in graph order
    params: int
    params_complete: bool


# ------------------------------------------------------------------ parameter counts


class Params:
    """Parameter counts of nodes and node sets (shared layers counted once)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._sub: dict[int, tuple[int, bool]] = {}

    def node(self, node: Node, graph: Graph | None = None) -> int | None:
        graph = graph or self.graph
        if node.params is not None:
            return node.params
        if node.op in ("input", "activation", "declared_activation", "tensor_op"):
            return 0
        if node.op == "model" and isinstance(node.decl, Graph):
            total, complete = self.of_graph(node.decl)
            return total if complete else None
        if node.op == "layer":
            entry = registry.lookup("layer", node.kind)
            shapes = [_shape_of(graph, ref) for ref in node.positional(node.inputs)]
            if entry is None or not all(isinstance(s, tuple) for s in shapes):
                return None
            return registry.estimate_params(entry, node.args, shapes)
        return None

    def of_nodes(self, nodes: list[Node], graph: Graph | None = None) -> tuple[int, bool]:
        total, complete, seen = 0, True, set()
        for node in nodes:
            if node.shared is not None:
                if node.shared in seen:
                    continue
                seen.add(node.shared)
            count = self.node(node, graph)
            if count is None:
                complete = False
            else:
                total += count
        return total, complete

    def of_graph(self, graph: Graph) -> tuple[int, bool]:
        key = id(graph)  # a cache key only; never shown
        if key not in self._sub:
            self._sub[key] = (0, False)  # guards against a cycle
            self._sub[key] = self.of_nodes(graph.kept_nodes(), graph)
        return self._sub[key]


def _shape_of(graph: Graph, ref: TensorRef) -> Any:
    shapes = graph.nodes[ref.node].output_shapes
    return shapes[ref.index] if ref.index < len(shapes) else None


# ------------------------------------------------------------------ units


@dataclass
class _Unit:
    kind: str  # node | shared | fold
    members: list[int]
    cluster: tuple[str, ...]  # where it is drawn
    fold: tuple[str, ...] | None = None  # the folded cluster's path
    count: int = 1
    copies: list[list[int]] = field(default_factory=list)  # members of each copy, for a collapsed repeat


def build_view(graph: Graph, *, depth: int | None = None, collapse_repeats: bool = True) -> View:
    """The items, clusters and edges that draw `graph`.

    `depth`: block instances nested deeper than `depth` are folded into one
    item each (0 folds every block; None folds none). `collapse_repeats`: a
    step repeated `* N` whose copies are each a single item (a layer, or a
    folded block) and identical is drawn as one item marked xN.
    """
    if depth is not None and depth < 0:
        raise ValueError(f"Expected a depth of 0 or more, received: {depth}")
    params = Params(graph)
    unit_of, units = _units(graph, depth)
    if collapse_repeats:
        _collapse_repeats(graph, unit_of, units)
    keys = _keys(units)
    uses = _uses(graph)
    items = [_item(graph, params, keys[uid], unit, unit_of, uses) for uid, unit in units.items()]
    by_key = {item.key: item for item in items}
    outputs = []
    for k, (name, ref) in enumerate(graph.outputs):
        shape = _shape_of(graph, ref)
        outputs.append(Item(f"out{k}", "output", "output", name, (), [], in_shapes=[shape], out_shapes=[shape]))
    edges = _edges(graph, unit_of, units, keys, by_key)
    inside: dict[tuple, list[Node]] = {}  # every cluster path -> its nodes, nested ones included
    for node in graph.nodes:
        for i in range(1, len(node.cluster) + 1):
            inside.setdefault(node.cluster[:i], []).append(node)
    open_paths = {item.cluster[:i] for item in items for i in range(1, len(item.cluster) + 1)}
    clusters = []
    for path in sorted(open_paths, key=lambda p: (inside[p][0].id if p in inside else len(graph.nodes), len(p))):
        info = graph.clusters.get(path) or Cluster(path, path[-1], graph.span, {})
        total, complete = params.of_nodes(inside.get(path, []))
        clusters.append(ClusterView(path, info.block, dict(info.args), total, complete))
    total, complete = params.of_nodes(graph.kept_nodes())  # the model's count, as Keras': unused steps left out
    return View(graph.name, items + outputs, edges, clusters, total, complete)


def _uses(graph: Graph) -> dict[int, list[tuple[int, int, TensorRef]]]:
    """For each node, where its outputs are used: (consumer id, input position, ref), in graph order."""
    uses: dict[int, list[tuple[int, int, TensorRef]]] = {}
    for node in graph.nodes:
        for position, ref in enumerate(node.inputs):
            uses.setdefault(ref.node, []).append((node.id, position, ref))
    return uses


def _units(graph: Graph, depth: int | None) -> tuple[dict[int, tuple], dict[tuple, _Unit]]:
    unit_of: dict[int, tuple] = {}
    units: dict[tuple, _Unit] = {}
    for node in graph.nodes:
        if depth is not None and len(node.cluster) > depth:
            fold = node.cluster[: depth + 1]
            uid: tuple = ("fold", fold)
            if uid not in units:
                units[uid] = _Unit("fold", [], fold[:-1], fold=fold)
        elif node.shared is not None:
            uid = ("shared", node.shared)
            if uid not in units:
                units[uid] = _Unit("shared", [], node.cluster)
            else:  # drawn in the innermost cluster holding every call
                units[uid].cluster = _common_prefix(units[uid].cluster, node.cluster)
        else:
            uid = ("node", node.id)
            units[uid] = _Unit("node", [], node.cluster)
        units[uid].members.append(node.id)
        unit_of[node.id] = uid
    return unit_of, units


def _common_prefix(a: tuple, b: tuple) -> tuple:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _collapse_repeats(graph: Graph, unit_of: dict[int, tuple], units: dict[tuple, _Unit]) -> None:
    """Merge the copies of `STEP * N` into one unit when each copy is one identical, chained unit."""
    groups: dict[int, dict[tuple, None]] = {}  # group -> its units, in order
    for node in graph.nodes:
        if node.repeat is not None:
            groups.setdefault(node.repeat[0], {})[unit_of[node.id]] = None
    sources, consumers = _links(graph, unit_of)
    produces_output = {unit_of[ref.node] for _, ref in graph.outputs}
    for group, members in groups.items():
        uids = list(members)
        copies = [units[uid] for uid in uids]
        tags = [tag for tag in (_repeat_tag(graph, unit) for unit in copies) if tag is not None]
        if len(tags) != len(copies) or any(tag[0] != group for tag in tags):
            continue
        n = tags[0][2]
        if n < 2 or [tag[1] for tag in tags] != list(range(n)):
            continue
        signatures = [_signature(graph, unit) for unit in copies]
        if signatures[0] is None or any(s != signatures[0] for s in signatures):
            continue
        if any(unit.cluster != copies[0].cluster for unit in copies):
            continue
        chained = all(sources.get(uids[i]) == {uids[i - 1]} for i in range(1, n)) and all(
            consumers.get(uids[i]) == {uids[i + 1]} and uids[i] not in produces_output for i in range(n - 1)
        )
        if not chained:
            continue
        first = copies[0]
        first.count = n
        first.copies = [list(unit.members) for unit in copies]
        for uid, unit in zip(uids[1:], copies[1:]):
            first.members.extend(unit.members)
            for member in unit.members:
                unit_of[member] = uids[0]
            del units[uid]


def _fold_path(unit: _Unit) -> tuple[str, ...]:
    """The path of the block a "fold" unit draws (`_units` gives every fold unit its path)."""
    assert unit.fold is not None, unit
    return unit.fold


def _repeat_tag(graph: Graph, unit: _Unit) -> tuple | None:
    tags = {graph.nodes[m].repeat for m in unit.members}
    return tags.pop() if len(tags) == 1 else None


def _signature(graph: Graph, unit: _Unit) -> tuple | None:
    if unit.kind == "fold":
        fold = _fold_path(unit)
        info = graph.clusters.get(fold)
        if info is None:
            return None
        nested = sorted({graph.nodes[m].cluster for m in unit.members})  # the same shape inside
        return ("block", info.block, _args_key(info.args), len(unit.members), tuple(len(p) - len(fold) for p in nested))
    if unit.kind != "node":
        return None
    node = graph.nodes[unit.members[0]]
    if node.op not in ("layer", "activation", "declared_layer", "declared_activation") or node.n_outputs != 1:
        return None
    return (node.op, node.kind, _args_key(node.args), len(node.inputs))


def _args_key(args: dict) -> str:
    return repr([(k, describe_value(v, limit=None)) for k, v in args.items()])


def _links(graph: Graph, unit_of: dict[int, tuple]) -> tuple[dict[tuple, set], dict[tuple, set]]:
    """The units feeding each unit, and the units each unit feeds (edges between different units)."""
    sources: dict[tuple, set] = {}
    consumers: dict[tuple, set] = {}
    for node in graph.nodes:
        dst = unit_of[node.id]
        for ref in node.inputs:
            src = unit_of[ref.node]
            if src != dst:
                sources.setdefault(dst, set()).add(src)
                consumers.setdefault(src, set()).add(dst)
    return sources, consumers


def _keys(units: dict[tuple, _Unit]) -> dict[tuple, str]:
    keys, folds = {}, 0
    for uid, unit in units.items():
        if unit.kind == "fold":
            keys[uid] = f"b{folds}"
            folds += 1
        else:
            keys[uid] = f"n{unit.members[0]}"
    return keys


# ------------------------------------------------------------------ items


def _item(
    graph: Graph,
    params: Params,
    key: str,
    unit: _Unit,
    unit_of: dict[int, tuple],
    uses: dict[int, list[tuple[int, int, TensorRef]]],
) -> Item:
    members = [graph.nodes[m] for m in unit.members]
    first = members[0]
    uid = unit_of[first.id]
    inside = set(unit.members)
    external_in = _dedup(ref for n in members for ref in n.inputs if ref.node not in inside)
    if unit.kind == "fold":
        fold = _fold_path(unit)
        info = graph.clusters.get(fold) or Cluster(fold, fold[-1], graph.span, {})
        used = sorted(use for m in unit.members for use in uses.get(m, []) if unit_of[use[0]] != uid)
        used_outside = _dedup(ref for _, _, ref in used)
        used_outside += [ref for _, ref in graph.outputs if ref.node in inside and ref not in used_outside]
        total, complete = params.of_nodes(members)
        item = Item(
            key,
            "block",
            info.block,
            ".".join(fold),
            unit.cluster,
            list(unit.members),
            list(info.args.items()),
            params=total,
            params_complete=complete,
            in_shapes=[_shape_of(graph, r) for r in external_in],
            out_shapes=[_shape_of(graph, r) for r in used_outside],
        )
        if unit.copies:
            item.count = len(unit.copies)
            item.last_name = ".".join(graph.nodes[unit.copies[-1][0]].cluster[: len(fold)])
    else:
        role = {
            "input": "input",
            "model": "model",
            "activation": "activation",
            "declared_activation": "activation",
            "tensor_op": "op",
        }.get(first.op, "layer")
        count = params.node(first)
        last = graph.nodes[unit.copies[-1][-1]] if unit.copies else first
        title = first.decl.label if first.op == "tensor_op" else first.kind
        item = Item(
            key,
            role,
            title,
            first.name,
            unit.cluster,
            list(unit.members),
            _shown_args(first),
            params=count,
            params_complete=count is not None,
            in_shapes=[_shape_of(graph, r) for r in first.positional(first.inputs)],
            out_shapes=list(last.output_shapes),
            dtype=first.dtype,
        )
        if unit.copies:
            item.count = len(unit.copies)
            item.last_name = last.name
            total, complete = params.of_nodes(members)
            item.params, item.params_complete = total, complete
        if unit.kind == "shared":
            item.calls = len(members)
        if first.op == "input":
            item.args = []
            item.in_shapes = []
    if item.params is not None and not item.params_complete and item.params == 0:
        item.params = None
    return item


def _shown_args(node: Node) -> list[tuple[str, Any]]:
    """A layer's key arguments (the registry's per-kind list), in that order; others: all, up to a few."""
    if node.op == "layer":
        entry = registry.lookup("layer", node.kind)
        if entry is not None:
            return [(k, node.args[k]) for k in entry.key_args if k in node.args]
    if node.op in ("input", "model", "tensor_op"):
        return []
    return list(node.args.items())[:MAX_ARGS]


def _dedup(refs) -> list[TensorRef]:
    return list(dict.fromkeys(refs))


# ------------------------------------------------------------------ edges


def _edges(
    graph: Graph, unit_of: dict[int, tuple], units: dict[tuple, _Unit], keys: dict[tuple, str], items: dict[str, Item]
) -> list[Edge]:
    edges: list[Edge] = []
    seen: set = set()
    call_of: dict[int, int] = {}
    for unit in units.values():
        if unit.kind == "shared" and len(unit.members) > 1:
            for k, member in enumerate(unit.members):
                call_of[member] = k + 1

    def add(src_ref: TensorRef, dst_key: str, in_call: int | None, keyword: str | None = None) -> None:
        src_key = keys[unit_of[src_ref.node]]
        out_call = call_of.get(src_ref.node)
        seen_key = (src_key, src_ref.node, src_ref.index, dst_key, in_call, keyword)
        if seen_key in seen:
            return
        seen.add(seen_key)
        shape = _shape_of(graph, src_ref)
        changed = not _unchanged(graph, src_ref, items[src_key], shape)
        index = src_ref.index if graph.nodes[src_ref.node].n_outputs > 1 else None
        edges.append(Edge(src_key, dst_key, shape if changed else None, index, out_call, in_call, keyword))

    for node in graph.nodes:
        dst_uid = unit_of[node.id]
        for ref, keyword in zip(node.inputs, _keywords_of(node)):
            if unit_of[ref.node] == dst_uid and units[dst_uid].kind != "shared":
                continue  # inside a folded block or a collapsed repeat
            add(ref, keys[dst_uid], call_of.get(node.id), keyword)
    for k, (_, ref) in enumerate(graph.outputs):
        add(ref, f"out{k}", None)
    return edges


def _keywords_of(node: Node) -> list[str | None]:
    """For each input of a node, the keyword its call takes it by (None: by position)."""
    names: list[str | None] = [None] * node.positional_count
    for keyword in node.keywords:
        names += [keyword.name] * keyword.count
    return names


def _unchanged(graph: Graph, ref: TensorRef, item: Item, shape: Any) -> bool:
    """True when the item the tensor leaves kept its input's shape (or is an input, or the shape is unknown)."""
    if item.role == "input" or not isinstance(shape, tuple):
        return True
    node = graph.nodes[ref.node]
    if item.role == "block" or item.count > 1:
        before = item.in_shapes[0] if item.in_shapes else None
    else:
        before = _shape_of(graph, node.inputs[0]) if node.inputs else None
    return before == shape and graph.nodes[ref.node].n_outputs == 1
