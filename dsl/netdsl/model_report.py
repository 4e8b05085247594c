"""What `netdsl build` and `netdsl summary` print: each model's table (name, kind, output shape, parameters;
with a cost, FLOPs and memory), its numbers as JSON, and the files `build` writes (`<model>.keras`
atomically, `<model>.svg`). The command line reaches these through `netdsl.api`.

`summaries` imports no backend when the pure-Python inference is sure of every model
(`pipeline.inferred_splits`: render's decision, and the trainable split of `semantics/trainable.py`);
the numbers are byte for byte the Keras build's. A backend, weights or plugins build with Keras (a plugin
registers Keras objects; installed plugins' layers make the check fail without them).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from netdsl import pipeline
from netdsl.cost import ModelCost
from netdsl.cost.readout import bytes_text, cost_json, cost_lines, costed, flops_text
from netdsl.errors import Diagnostic, RenderError, SpecError
from netdsl.registry import shape_text
from netdsl.semantics.trainable import ParamSplit
from netdsl.syntax.loader import Program, paused_gc

LoadPlugins = Callable[[], None]  # the plugins a command was given, loaded after the backend (quiet then)


def summaries(
    program: Program,
    model: str | None,
    *,
    backend: str | None,
    weights: str | None,
    plugins: bool,
    load_plugins: LoadPlugins,
) -> dict[str, tuple[Any, ParamSplit]]:
    """Each model's graph and parameters: from the pure-Python inference (no backend imported) unless
    the spec needs Keras to say them, or a backend, weights or plugins are asked for."""
    if backend is None and weights is None and not plugins:
        inferred = pipeline.inferred_splits(program, pipeline.pick_models(program, model))
        if inferred is not None:
            return inferred
    analysis, models = built(
        program, model, backend=backend, weights=weights, param_limit=None, load_plugins=load_plugins
    )
    return {name: (analysis.graphs[name], pipeline.built_split(keras_model)) for name, keras_model in models.items()}


def summary_report(
    found: dict[str, tuple[Any, ParamSplit]], *, cost: bool, batch: int | None, precision: str | None
) -> dict[str, tuple[dict[str, Any], str]]:
    """Per model: its numbers (`summary --json`, with "cost" when asked) and its table (the collector paused,
    as for the check: a 10,000-layer model's costs are tens of thousands of objects that all stay alive)."""
    with paused_gc():
        return _summary_report(found, cost=cost, batch=batch, precision=precision)


def _summary_report(
    found: dict[str, tuple[Any, ParamSplit]], *, cost: bool, batch: int | None, precision: str | None
) -> dict[str, tuple[dict[str, Any], str]]:
    report = {}
    for name, (graph, split) in found.items():
        model_cost = costed(graph, batch=batch, precision=precision, trainable=split.trainable) if cost else None
        numbers = summary_json(graph, split)
        if model_cost is not None:
            numbers["cost"] = cost_json(model_cost)
        report[name] = (numbers, summary_table(graph, split, model_cost))
    return report


def built(
    program: Program,
    model: str | None,
    *,
    backend: str | None,
    weights: str | None,
    param_limit: int | None,
    load_plugins: LoadPlugins,
) -> tuple[Any, dict[str, Any]]:
    """The models built with Keras on `backend` (the plugins loaded after it: a plugin importing Keras stays
    quiet too)."""
    names = pipeline.pick_models(program, model)
    pipeline.start_backend(backend)
    load_plugins()
    return pipeline.build(
        pipeline.LoadedSpec(program).models(names, param_limit=param_limit), backend=backend, weights=weights
    )


def build_files(
    program: Program,
    model: str | None,
    out: str,
    *,
    backend: str | None,
    weights: str | None,
    param_limit: int | None,
    diagram: bool,
    load_plugins: LoadPlugins,
) -> Iterator[str]:
    """Build, write `out/<model>.keras` (atomically: a failed build writes nothing and leaves earlier outputs
    untouched) and `out/<model>.svg`; the lines to print, model by model, as each file is written."""
    from netdsl.backend.saving import save_atomic

    analysis, models = built(
        program, model, backend=backend, weights=weights, param_limit=param_limit, load_plugins=load_plugins
    )
    out_dir = Path(out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        message = f"cannot create {out_dir}: {exc.strerror}"
        raise SpecError(Diagnostic.for_file(analysis.program.root, message)) from None
    for name, keras_model in models.items():
        target = out_dir / f"{name}.keras"
        try:
            save_atomic(keras_model, target)
        except OSError as exc:
            raise SpecError(
                Diagnostic.for_file(analysis.program.root, f"cannot write {target}: {exc.strerror or exc}")
            ) from None
        except Exception as exc:  # e.g. a plugin layer Keras cannot serialize
            from netdsl.backend.builder import reason  # Keras is loaded by now

            raise SpecError(
                Diagnostic.for_file(analysis.program.root, f"cannot save model '{name}' as {target}: {reason(exc)}")
            ) from None
        yield summary_table(analysis.graphs[name], pipeline.built_split(keras_model))
        yield from pipeline.init_report(keras_model)
        yield f"wrote {target}"
        if diagram:
            yield _diagram(analysis.graphs[name], out_dir / name)
        yield ""


def _diagram(graph: Any, path_without_suffix: Path) -> str:
    try:  # the model is written; a broken graphviz install only costs the picture
        from netdsl.diagram.render import write_diagram
    except ImportError as exc:
        return f"diagram skipped: netdsl.diagram.render is not available ({exc})"
    if shutil.which("dot") is None:
        return (
            "diagram skipped: Graphviz's 'dot' program was not found (install Graphviz, e.g. "
            "`apt-get install graphviz` or `brew install graphviz`)"
        )
    try:
        path = write_diagram(graph, path_without_suffix, "svg")
    except RenderError as exc:
        return f"diagram skipped: {exc}"
    except Exception as exc:  # a diagram is a convenience; the model is written
        return f"diagram skipped: {type(exc).__name__}: {exc}".splitlines()[0]
    return f"wrote {path}"


# ------------------------------------------------------------------ tables


def _node_rows(graph: Any, cost: ModelCost | None = None) -> list[tuple[str, ...]]:
    rows, seen = [], set()
    for index, node in enumerate(graph.nodes):
        if node.op == "input":
            kind = f"input {node.dtype}" if node.dtype and node.dtype != "float32" else "input"
        elif node.op == "model":
            kind = f"model {node.kind}"
        elif node.op in ("declared_layer", "declared_activation"):
            kind = f"{node.kind} (declared)"
        else:
            kind = node.kind
        shapes = ", ".join(shape_text(s) for s in node.output_shapes)
        if node.shared is not None and node.shared in seen:
            params = "shared"
        else:
            params = f"{node.params:,}" if node.params is not None else "?"
        if node.shared is not None:
            seen.add(node.shared)
        rows.append((node.name, kind, shapes, params) + (() if cost is None else _cost_cells(cost, index)))
    return rows


def _cost_cells(cost: ModelCost, index: int) -> tuple[str, str]:
    step = cost.steps[index]
    memory = bytes_text(step.output_bytes * cost.batch) if step.output_bytes or step.unknown is None else "?"
    return ("?" if step.unknown is not None else flops_text(step.flops)), memory


def summary_table(graph: Any, split: ParamSplit, cost: ModelCost | None = None) -> str:
    """The layers of one model: name, kind, output shape (batch axis left out), parameters; with a
    `cost`, each layer's FLOPs (a sample) and output memory (the batch), and the model's cost below."""
    header: tuple[str, ...] = ("Layer", "Kind", "Output shape", "Params")
    if cost is not None:
        header += ("FLOPs", "Memory")
    rows = _node_rows(graph, cost)
    widths = [max(map(len, column)) for column in zip(header, *rows)]
    widths = [min(w, 48) for w in widths[:3]] + widths[3:]

    left, right = widths[:3], widths[3:]  # names, kinds and shapes fitted and left-aligned; numbers right

    def line(row: tuple) -> str:
        cells = [_fit(text, width).ljust(width) for text, width in zip(row[:3], left)]
        cells += [text.rjust(width) for text, width in zip(row[3:], right)]
        return "  ".join(cells).rstrip()

    total, trainable = split.total, split.trainable
    rule = "-" * len(line(tuple("-" * w for w in widths)))
    out = [
        f"model {graph.name}",
        rule,
        line(header),
        rule,
        *(line(r) for r in rows),
        rule,
        f"params: {total:,} (trainable {trainable:,}, non-trainable {total - trainable:,})",
    ]
    frozen = split.frozen
    if frozen:
        out.append(f"frozen: {_fit(', '.join(frozen), 100)}")
    outputs = ", ".join(
        f"{name} {shape_text(graph.node_of(ref).output_shapes[ref.index])}" for name, ref in graph.outputs
    )
    out.append(f"outputs: {outputs}")
    if cost is not None:
        out += cost_lines(cost)
    return "\n".join(out)


def summary_json(graph: Any, split: ParamSplit) -> dict[str, Any]:
    """One model's numbers (`netdsl summary --json`, `netdsl.summary`)."""
    return dict(pipeline.model_summary(graph, split))


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"
