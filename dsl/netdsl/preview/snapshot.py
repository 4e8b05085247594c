"""What the preview page shows of a spec at one moment: its diagram, diagnostics and layer details.

`make_snapshot` reads the spec, checks it as `netdsl check` does (the same
diagnostics, printed the same way) and, when it is clean, draws the model as
SVG with the shapes and parameter counts the pure-Python inference knows
(`semantics.estimates`; no Keras here: an unknown one shows as `?` or `N+`).
When the spec has errors the previous snapshot's diagram is kept, marked
stale, so the page keeps showing the last good drawing beside the errors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from netdsl import pipeline
from netdsl.cost.model import ModelCost
from netdsl.cost.readout import costed
from netdsl.diagram.dot import item_cost, shape_text, to_digraph
from netdsl.diagram.render import INSTALL_HINT, pipe_image
from netdsl.diagram.view import Item, View, build_view
from netdsl.errors import Diagnostic, DotNotFound, RenderError, Sources, SpecError, render_all
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.graph import Graph
from netdsl.semantics.values import describe_value

__all__ = ["Snapshot", "make_snapshot", "diagnostics_text"]


@dataclass(frozen=True)
class Snapshot:
    version: int  # counts the snapshots made; the page redraws when it changes
    spec: str
    model: str | None  # the model drawn (None before any clean check)
    models: list[str]
    diagnostics: str  # as `netdsl check` prints them; "" when clean
    errors: int
    svg: str | None  # the diagram of the last spec without errors
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # drawn node id -> its details
    stale: bool = False  # the diagram is from an earlier version: the spec has errors now
    certain: bool = True  # every shape and parameter count of the diagram is known
    files: list[str] = field(default_factory=list)  # the spec and what it imports (watched)

    def to_json(self) -> str:
        data = asdict(self)
        del data["files"]  # paths on this machine the page has no use for
        return json.dumps(data, ensure_ascii=True, separators=(",", ":"))


def diagnostics_text(diagnostics: list[Diagnostic], sources: Sources | None) -> str:
    """The diagnostics as `netdsl check` prints them (with the error count when there are several)."""
    if not diagnostics:
        return ""
    text = render_all(diagnostics, sources)
    errors = sum(1 for d in diagnostics if d.severity == "error")
    return f"{text}\n{errors} errors" if errors > 1 else text


def make_snapshot(
    spec: str,
    model: str | None,
    previous: Snapshot | None,
    *,
    include: Sequence[str | os.PathLike] = (),
    depth: int | None = None,
    defines: dict | None = None,
    cost: bool = False,
    batch: int | None = None,
) -> Snapshot:
    """Check `spec` and draw `model` (default: the spec's first model) unless it has errors; with `cost`
    (`preview --cost`), each box's FLOPs a sample and output memory for `batch`, filled by FLOPs, as
    `render --cost` draws them, and each layer's details say its cost."""
    version = previous.version + 1 if previous is not None else 1
    checked = pipeline.check(pipeline.TypedPath(spec), include=include, defines=defines)
    if checked.program is None:
        files = list(dict.fromkeys([*(previous.files if previous is not None else [spec]), *checked.files]))
        return _broken(previous, version, spec, checked.diagnostics, checked.sources, files)
    program, analysis, files = checked.program, checked.analysis, checked.files
    models = program.model_names
    diagnostics = checked.diagnostics
    name = None
    if not checked.errors:  # with errors, exactly what `netdsl check` prints; else why nothing is drawn
        try:
            name = pipeline.LoadedSpec(program).model_or_first(model)
        except SpecError as exc:
            diagnostics = diagnostics + exc.diagnostics
    if name is None or analysis is None:
        return _broken(previous, version, spec, diagnostics, checked.sources, files, models)
    graph = analysis.graphs[name]
    certain = fill_estimates(graph)
    view = build_view(graph, depth=depth)
    costs = costed(graph, batch=batch) if cost else None
    try:
        svg = _svg(view, costs)
    except RenderError as exc:
        failed = Diagnostic.for_file(spec, _why_not_drawn(exc))
        return _broken(previous, version, spec, diagnostics + [failed], checked.sources, files, models)
    return Snapshot(
        version,
        spec,
        name,
        models,
        diagnostics_text(diagnostics, checked.sources),
        0,
        svg,
        node_details(graph, view, costs),
        stale=False,
        certain=certain,
        files=files,
    )


def _broken(
    previous: Snapshot | None,
    version: int,
    spec: str,
    diagnostics: list[Diagnostic],
    sources: Sources | None,
    files: list[str],
    models: list[str] | None = None,
) -> Snapshot:
    errors = sum(1 for d in diagnostics if d.severity == "error")
    text = diagnostics_text(diagnostics, sources)
    if previous is None:
        return Snapshot(version, spec, None, models or [], text, errors, None, files=files)
    return replace(
        previous,
        version=version,
        models=models or previous.models,
        diagnostics=text,
        errors=errors,
        stale=previous.svg is not None,
        files=files,
    )


def _why_not_drawn(exc: RenderError) -> str:
    if isinstance(exc, DotNotFound):
        return f"{exc}, so the diagram cannot be drawn; {INSTALL_HINT}"
    return str(exc)


def _svg(view: View, cost: ModelCost | None = None) -> str:
    digraph = to_digraph(view, shapes=True, cost=cost)
    for item in view.items:  # SVG ids the page finds the layers by (DOT names them n<k>, b<k>, out<k>)
        digraph.node(item.key, id=f"node-{item.key}")
    text = pipe_image(digraph, "svg").decode("utf-8")
    return text[text.find("<svg") :]  # the element alone: no XML prolog or doctype inside the page


# ------------------------------------------------------------------ details of a drawn node


def node_details(graph: Graph, view: View, cost: ModelCost | None = None) -> dict[str, dict[str, Any]]:
    """What clicking a drawn node shows: every argument, the shapes in and out, the parameters, the source;
    with a `cost`, its FLOPs a sample and output memory."""
    return {item.key: _details(graph, item, cost) for item in view.items}


def _details(graph: Graph, item: Item, cost: ModelCost | None = None) -> dict[str, Any]:
    first = graph.nodes[item.members[0]] if item.members else None
    if item.role == "block" or first is None:
        args = item.args
    else:
        args = list(first.args.items())
    name = item.name if not item.last_name else f"{item.name} \u2026 {item.last_name}"
    details: dict[str, Any] = {
        "kind": item.title,
        "role": item.role,
        "name": name,
        "args": [[key, describe_value(value)] for key, value in args],
        "inputs": [shape_text(s) for s in item.in_shapes],
        "outputs": [shape_text(s) for s in item.out_shapes],
        "params": "" if item.role == "output" else _params(item),
        "block": ".".join(first.cluster) if first is not None else "",
        "where": f"{first.span.file}:{first.span.line}:{first.span.col}" if first is not None else "",
    }
    if item.count > 1:
        details["copies"] = item.count
    if item.calls > 1:
        details["calls"] = item.calls
    if item.dtype:
        details["dtype"] = item.dtype
    if cost is not None and item.role not in ("output", "op"):
        details["cost"] = item_cost(item, cost)[0]
    return details


def _params(item: Item) -> str:
    if item.params is None:
        return "unknown"
    return f"{item.params:,}" + ("" if item.params_complete else "+ (some unknown)")
