"""DOT for a diagram's view: node, cluster and edge labels, styles, escaping.

Every piece of text taken from a spec (names, string arguments) passes
through `_esc` into an HTML-like label; DOT ids are our own (`n<k>`, `b<k>`,
`out<k>`, `t<k>`, `cluster_<k>`), so nothing from a spec can reach DOT
syntax. See `render.py` for what a diagram shows.
"""

from __future__ import annotations

from typing import Any

import graphviz

from netdsl import registry
from netdsl.cost.model import ModelCost
from netdsl.cost.readout import bytes_text, flops_text
from netdsl.diagram.view import ClusterView, Edge, Item, View
from netdsl.semantics.values import Resolved, describe_value

FONT = "Helvetica,Arial,sans-serif"

MAX_VALUE = 32  # characters of one argument value shown
LINE = 44  # characters of arguments on one line of a label
TITLE_LINE = 28  # the same, in a cluster's title

_STYLE = {
    "input": {"shape": "box", "style": "rounded,filled", "fillcolor": "#d3f0dc", "color": "#2b8a3e", "penwidth": "1.5"},
    "output": {
        "shape": "box",
        "style": "rounded,filled",
        "fillcolor": "#ffe3c2",
        "color": "#d9480f",
        "penwidth": "1.5",
    },
    "layer": {"shape": "box", "style": "filled", "fillcolor": "#e7effb", "color": "#4c6e9e"},
    "activation": {"shape": "box", "style": "rounded,filled", "fillcolor": "#f1f3f5", "color": "#868e96"},
    "model": {"shape": "component", "style": "filled", "fillcolor": "#fff3bf", "color": "#b08900"},
    "op": {
        "shape": "ellipse",
        "style": "filled",
        "fillcolor": "#f8f9fa",
        "color": "#adb5bd",
        "fontsize": "9",
        "margin": "0.04,0.02",
        "height": "0.22",
    },
    "block": {"shape": "tab", "style": "filled", "fillcolor": "#ece2fb", "color": "#6741d9", "penwidth": "1.3"},
}
_CLUSTER_FILL = ("#f6f8fc", "#edf1f8")
_MUTED = "#5c6570"


def to_digraph(view: View, shapes: bool, cost: ModelCost | None = None) -> graphviz.Digraph:
    """The Digraph of a view; `shapes=False` leaves shapes and parameter counts out. With a `cost`
    (`render --cost`), each box shows its FLOPs a sample and output memory for the batch, filled the
    deeper the larger its share of the model's FLOPs, and the title the model's totals."""
    title = f"<B>{_esc(view.name)}</B>"
    if shapes:
        title += f"  {_esc(_params_text(view.params, view.params_complete, 'parameters'))}"
    if cost is not None:
        title += f"<BR/>{_esc(_cost_title(cost))}"
    dot = graphviz.Digraph(
        name=view.name,
        graph_attr={
            "rankdir": "TB",
            "fontname": FONT,
            "fontsize": "12",
            "label": f"<{title}>",
            "labelloc": "t",
            "nodesep": "0.25",
            "ranksep": "0.32",
            "newrank": "true",
            "outputorder": "edgesfirst",
            "bgcolor": "white",
        },
        node_attr={"fontname": FONT, "fontsize": "10", "margin": "0.12,0.05", "height": "0.3"},
        edge_attr={"fontname": FONT, "fontsize": "8", "fontcolor": _MUTED, "color": "#6c757d", "arrowsize": "0.6"},
    )
    children: dict[tuple, list[ClusterView]] = {}
    for cluster in view.clusters:
        children.setdefault(cluster.path[:-1], []).append(cluster)
    placed: dict[tuple, list[Item]] = {}
    for item in view.items:
        placed.setdefault(item.cluster, []).append(item)
    numbers = {cluster.path: k for k, cluster in enumerate(view.clusters)}

    entries = _entries(view)

    def fill(container: graphviz.Digraph, path: tuple) -> None:
        for item in placed.get(path, []):
            label = _node_label(item, path, shapes)
            style = _node_style(item)
            if cost is not None and item.role not in ("output", "op"):
                label, style = _costed(item, label, style, cost)
            container.node(item.key, label=label, **style)
        for cluster in children.get(path, []):
            k = numbers[cluster.path]
            with container.subgraph(name=f"cluster_{k}") as sub:
                sub.attr(
                    label="",
                    style="rounded,filled",
                    fillcolor=_CLUSTER_FILL[(len(cluster.path) - 1) % 2],
                    color="#8a9bb8",
                    margin="8",
                )
                # The title is a node beside the cluster's first layer (same rank, to its
                # left), so no edge entering the cluster crosses it.
                sub.node(f"t{k}", label=_cluster_label(cluster, shapes), shape="plaintext", margin="0.04,0.02")
                first = entries.get(cluster.path, [None])[0]
                if first is not None:
                    with sub.subgraph() as rank:
                        rank.attr(rank="same")
                        rank.edge(f"t{k}", first, style="invis")
                fill(sub, cluster.path)

    fill(dot, ())
    inputs = [item.key for item in view.items if item.role == "input" and not item.cluster]
    if len(inputs) > 1:
        with dot.subgraph() as top:  # every input on the first row
            top.attr(rank="min")
            for key in inputs:
                top.node(key)
    for edge in view.edges:
        label = _edge_label(edge, shapes)
        attrs = {"label": label} if label else {}
        dot.edge(edge.src, edge.dst, **attrs)
    return dot


def _entries(view: View) -> dict[tuple, list[str]]:
    """For each cluster, its items that no edge from inside the same cluster enters."""
    where = {item.key: item.cluster for item in view.items}
    fed_from: dict[str, list[tuple]] = {}
    for edge in view.edges:
        if edge.src in where and edge.src != edge.dst:
            fed_from.setdefault(edge.dst, []).append(where[edge.src])
    entries: dict[tuple, list[str]] = {}
    for item in view.items:
        sources = fed_from.get(item.key, [])
        for i in range(1, len(item.cluster) + 1):
            path = item.cluster[:i]
            if not any(src[:i] == path for src in sources):
                entries.setdefault(path, []).append(item.key)
    return entries


def _node_style(item: Item) -> dict[str, str]:
    style = dict(_STYLE[item.role])
    if item.count > 1:
        style["shape"] = "box3d"
        style["margin"] = "0.14,0.09"  # clear of the 3-D ridge
    if item.calls > 1:
        style["peripheries"] = "2"
    return style


def _node_label(item: Item, cluster: tuple, shapes: bool) -> str:
    if item.role == "op":  # an operator of a tensor expression: small, its symbol and its shape
        shown = f"<B>{_esc(item.title)}</B>"
        return f"<{shown}  {_esc(_shapes_text(item.out_shapes))}>" if shapes else f"<{shown}>"
    head, width = f"<B>{_esc(item.title)}</B>", len(item.title)
    if item.count > 1:
        head += f" \u00d7{item.count}"
        width += 3
    if item.calls > 1:
        head += f' <FONT COLOR="{_MUTED}">shared, {item.calls} calls</FONT>'
        width += 17
    name = _relative(item.name, cluster)
    if item.count > 1 and item.last_name:
        name += " \u2026 " + _relative(item.last_name, cluster)
    shown = f'<FONT POINT-SIZE="9" COLOR="{_MUTED}">{_esc(name)}</FONT>'
    if not name:
        rows = [head]
    elif width + 2 + len(name) <= LINE:  # the name beside the kind
        rows = [f"{head}  {shown}"]
    else:
        rows = [head, shown]
    rows.extend(_esc(line) for line in _wrap([f"{k}={_value_text(v)}" for k, v in item.args]))
    if item.dtype and item.dtype != "float32":
        rows.append(_esc(item.dtype))
    if shapes:
        facts = []
        if item.role == "block":
            facts.append(f"{_shapes_text(item.in_shapes)} \u2192 {_shapes_text(item.out_shapes)}")
        else:
            facts.append(_shapes_text(item.out_shapes))
        if item.params:
            facts.append(_params_text(item.params, item.params_complete, "params"))
        rows.append(_esc("  \u00b7  ".join(facts)))
    return "<" + "<BR/>".join(rows) + ">"


def _cost_title(cost: ModelCost) -> str:
    at_least = "at least " if cost.lower_bound else ""
    return (
        f"{at_least}{flops_text(cost.flops)} a sample; batch {cost.batch}, {cost.precision}: inference "
        f"{at_least}{bytes_text(cost.inference_memory_bytes)}, training {at_least}"
        f"{bytes_text(cost.train_memory_bytes)}"
    )


_HEAT = ((0xFF, 0xF4, 0xE6), (0xF7, 0x8C, 0x3C))  # no FLOPs .. the model's largest step


def item_cost(item: Item, cost: ModelCost) -> tuple[str, int]:
    """A drawn item's cost as its box shows it (`201 KFLOPs  ·  2.0 KiB`: FLOPs a sample, output memory for
    the batch; `+` or `?` where a step could not be costed) and its FLOPs a sample."""
    steps = [cost.steps[member] for member in item.members if 0 <= member < len(cost.steps)]
    flops = sum(step.flops for step in steps)
    unknown = any(step.unknown is not None for step in steps)
    memory = sum(step.output_bytes for step in steps) * cost.batch
    line = (
        f"{'?' if unknown and not flops else flops_text(flops)}{'+' if unknown and flops else ''}"
        f"  \u00b7  {bytes_text(memory)}"
    )
    return line, flops


def _costed(item: Item, label: str, style: dict[str, str], cost: ModelCost) -> tuple[str, dict[str, str]]:
    """The item's label with its cost line, and its fill by its share of the largest step's FLOPs."""
    line, flops = item_cost(item, cost)
    largest = max((step.flops for step in cost.steps), default=0)
    share = min(flops / largest, 1.0) if largest else 0.0
    shade = "#" + "".join(f"{round(a + (b - a) * share**0.5):02x}" for a, b in zip(*_HEAT))
    styled = style if item.role == "input" else {**style, "fillcolor": shade}  # an input keeps its colour
    return label[:-1] + f'<BR/><FONT COLOR="{_MUTED}">{_esc(line)}</FONT>>', styled


def _cluster_label(cluster: ClusterView, shapes: bool) -> str:
    rows = [f'<B>{_esc(cluster.block)}</B>  <FONT COLOR="{_MUTED}">{_esc(cluster.path[-1])}</FONT>']
    rows.extend(_esc(line) for line in _wrap([f"{k}={_value_text(v)}" for k, v in cluster.args.items()], TITLE_LINE))
    if shapes and cluster.params:
        rows.append(
            f'<FONT COLOR="{_MUTED}">{_esc(_params_text(cluster.params, cluster.params_complete, "params"))}</FONT>'
        )
    return "<" + "<BR/>".join(rows) + ">"


def _edge_label(edge: Edge, shapes: bool) -> str | None:
    parts = []
    if edge.out_call is not None and edge.in_call is not None:
        parts.append(f"#{edge.out_call}\u2192#{edge.in_call}")
    elif edge.out_call is not None or edge.in_call is not None:
        parts.append(f"#{edge.out_call or edge.in_call}")
    if edge.keyword is not None:  # `initial_state=[h, c]`: what the tensor is to the layer it feeds
        parts.append(edge.keyword)
    if edge.index is not None:
        parts.append(f"[{edge.index}]")
    if shapes and edge.shape is not None:
        parts.append(shape_text(edge.shape))
    return "<" + _esc(" ".join(parts)) + ">" if parts else None


def _relative(name: str, cluster: tuple) -> str:
    prefix = ".".join(cluster) + "."
    return name[len(prefix) :] if cluster and name.startswith(prefix) else name


def _wrap(parts: list[str], width: int = LINE) -> list[str]:
    lines, line = [], ""
    for part in parts:
        if line and len(line) + 2 + len(part) > width:
            lines.append(line)
            line = part
        else:
            line = f"{line}, {part}" if line else part
    if line:
        lines.append(line)
    return lines


def _value_text(value: Any) -> str:
    if isinstance(value, Resolved):
        text = value.name
    elif (
        isinstance(value, tuple)
        and len(value) > 1
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        text = "\u00d7".join(str(v) for v in value)
    else:
        text = describe_value(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "\u2026"


def shape_text(shape: Any) -> str:
    return registry.shape_text(shape, open_size="?")


def _shapes_text(shapes: list) -> str:
    if not shapes:
        return "?"
    return " | ".join(shape_text(s) for s in shapes)


def _params_text(count: int, complete: bool, word: str) -> str:
    return f"{count:,}{'' if complete else '+'} {word}"


def _esc(text: str) -> str:
    """Text for an HTML-like label, shown as is.

    Markup characters become entities; control characters are shown as
    escapes (a newline as the two characters \\n); a backslash is doubled,
    because Graphviz applies its escString substitutions (\\N, \\G, \\\\) to the
    text of HTML-like labels too (after decoding entities, so &#92; is no way out).
    """
    return "".join(_ESCAPED.get(ch) or (ch if ch.isprintable() else _control(ch)) for ch in text)


_ESCAPED = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
    "\\": "\\\\",
    "\n": "\\\\n",
    "\t": "\\\\t",
}


def _control(ch: str) -> str:
    return f"\\\\u{ord(ch):04x}" if ord(ch) > 0xFF else f"\\\\x{ord(ch):02x}"
