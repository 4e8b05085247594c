"""`netdsl build` and `netdsl summary`.

    netdsl build SPEC.net [-o DIR] [--model NAME] [--plugin MODULE] [--no-diagram] [--param-limit N]
                          [--weights FILE] [--backend tensorflow|jax|torch]
    netdsl summary SPEC.net [--model NAME] [--json] [--plugin MODULE] [--weights FILE]
                            [--backend tensorflow|jax|torch] [--cost [--batch B] [--precision P]]

`build` builds every model (or `--model`), then writes `DIR/<model>.keras`
atomically (a temporary file in the same folder, then `os.replace`: a failed
build writes nothing and leaves earlier outputs untouched) and
`DIR/<model>.svg` unless `--no-diagram`, and prints a summary table per
model. `summary` prints the tables only; with `--json`, per model:
`{"params", "trainable_params", "non_trainable_params", "layers", "outputs": {name: shape}}` where
`layers` is the number of layers the spec makes (inputs excluded; a shared
instance or a nested model counts once) and shapes leave out the batch axis (`null`: unknown size).
`--backend` picks the Keras backend (default: KERAS_BACKEND, else TensorFlow);
the same spec gives the same model, and a `.keras` file, on both.

`summary` imports no backend when the pure-Python inference is sure of every
model (`pipeline.inferred_splits`: render's decision, and the trainable split
of `semantics/trainable.py`); the output is byte for byte the Keras build's.
`--backend`, `--weights` and `--plugin` build with Keras (a plugin registers
Keras objects; installed plugins' layers make the check fail without them, and
the spec is then built with Keras, which loads them).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from netdsl import pipeline
from netdsl.cli.common import load_plugins, load_spec
from netdsl.cost import ModelCost
from netdsl.cost.readout import bytes_text, cost_json, cost_lines, costed, flops_text
from netdsl.errors import Diagnostic, RenderError, SpecError
from netdsl.registry import shape_text
from netdsl.semantics.trainable import ParamSplit

__all__ = ["run_build", "run_summary", "summary_table", "summary_json"]


def run_build(args: argparse.Namespace) -> int:
    from netdsl.backend.saving import save_atomic

    analysis, models = _compile(args, args.param_limit)
    out_dir = Path(args.out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        message = f"cannot create {out_dir}: {exc.strerror}"
        raise SpecError(Diagnostic.for_file(analysis.program.root, message)) from None
    for name, model in models.items():
        target = out_dir / f"{name}.keras"
        try:
            save_atomic(model, target)
        except OSError as exc:
            raise SpecError(Diagnostic.for_file(analysis.program.root,
                                                f"cannot write {target}: {exc.strerror or exc}")) from None
        except Exception as exc:  # e.g. a plugin layer Keras cannot serialize
            from netdsl.backend.builder import reason  # Keras is loaded by now

            raise SpecError(Diagnostic.for_file(analysis.program.root,
                                                f"cannot save model '{name}' as {target}: {reason(exc)}")) from None
        print(summary_table(analysis.graphs[name], pipeline.built_split(model)))
        for line in pipeline.init_report(model):
            print(line)
        print(f"wrote {target}")
        if not args.no_diagram:
            _diagram(analysis.graphs[name], out_dir / name)
        print()
    return 0


def run_summary(args: argparse.Namespace) -> int:
    found = _summaries(args)
    costs = {name: _cost(args, graph) for name, (graph, _) in found.items()} if args.cost else {}
    if args.json:
        print(json.dumps({name: _with_cost(summary_json(graph, split), costs.get(name))
                          for name, (graph, split) in found.items()}, indent=2))
        return 0
    print("\n\n".join(summary_table(graph, split, costs.get(name)) for name, (graph, split) in found.items()))
    return 0



def _cost(args: argparse.Namespace, graph: Any) -> ModelCost:
    return costed(graph, batch=args.batch, precision=args.precision)


def _with_cost(summary: dict[str, Any], cost: ModelCost | None) -> dict[str, Any]:
    if cost is not None:
        summary["cost"] = cost_json(cost)
    return summary


def _summaries(args: argparse.Namespace) -> dict[str, tuple[Any, ParamSplit]]:
    """Each model's graph and parameters: from the pure-Python inference (no backend imported) unless
    the spec needs Keras to say them, or a flag asks for Keras (`--backend`, `--weights`, `--plugin`)."""
    program = load_spec(args.spec, args)
    if args.backend is None and args.weights is None and not args.plugin:
        inferred = pipeline.inferred_splits(program, pipeline.pick_models(program, args.model))
        if inferred is not None:
            return inferred
    analysis, models = _compile(args, None, program)
    return {name: (analysis.graphs[name], pipeline.built_split(model)) for name, model in models.items()}


def _compile(args: argparse.Namespace, param_limit: int | None, program: Any = None) -> tuple[Any, dict[str, Any]]:
    if program is None:
        program = load_spec(args.spec, args)  # syntax errors before TensorFlow
    names = pipeline.pick_models(program, args.model)
    pipeline.start_backend(args.backend)
    load_plugins(args.plugin, program.root)  # after Keras: a plugin importing it stays quiet too
    return pipeline.build(pipeline.LoadedSpec(program).models(names, param_limit=param_limit), backend=args.backend,
                          weights=args.weights)


# ------------------------------------------------------------------ files


def _diagram(graph: Any, path_without_suffix: Path) -> None:
    try:  # the model is written; a broken graphviz install only costs the picture
        from netdsl.diagram.render import write_diagram
    except ImportError as exc:
        print(f"diagram skipped: netdsl.diagram.render is not available ({exc})")
        return
    if shutil.which("dot") is None:
        print("diagram skipped: Graphviz's 'dot' program was not found (install Graphviz, e.g. "
              "`apt-get install graphviz` or `brew install graphviz`)")
        return
    try:
        path = write_diagram(graph, path_without_suffix, "svg")
    except RenderError as exc:
        print(f"diagram skipped: {exc}")
        return
    except Exception as exc:  # a diagram is a convenience; the model is written
        print(f"diagram skipped: {type(exc).__name__}: {exc}".splitlines()[0])
        return
    print(f"wrote {path}")


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
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    widths = [min(w, 48) for w in widths[:3]] + widths[3:]

    def line(row: tuple) -> str:
        cells = [_fit(row[i], widths[i]).ljust(widths[i]) for i in range(3)]
        return "  ".join(cells + [row[i].rjust(widths[i]) for i in range(3, len(header))]).rstrip()

    total, trainable = split.total, split.trainable
    rule = "-" * len(line(tuple("-" * w for w in widths)))
    out = [f"model {graph.name}", rule, line(header), rule, *(line(r) for r in rows), rule,
           f"params: {total:,} (trainable {trainable:,}, non-trainable {total - trainable:,})"]
    frozen = split.frozen
    if frozen:
        out.append(f"frozen: {_fit(', '.join(frozen), 100)}")
    outputs = ", ".join(f"{name} {shape_text(graph.node_of(ref).output_shapes[ref.index])}"
                        for name, ref in graph.outputs)
    out.append(f"outputs: {outputs}")
    if cost is not None:
        out += cost_lines(cost)
    return "\n".join(out)


def summary_json(graph: Any, split: ParamSplit) -> dict[str, Any]:
    """One model's numbers (`netdsl summary --json`, `netdsl.summary`)."""
    return dict(pipeline.model_summary(graph, split))


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"

