"""The one pipeline under every front end: spec -> `Program` -> checked graphs -> Keras models / diagrams.

    program = load("cnn.net")                        # or load(text=..., filename="cnn.net")
    checked = check(program)                          # .diagnostics, .sources, .analysis (never raises)
    name = pick_model(program, None)                  # the file's only model (or a SpecError that says why)
    graphs = model_graphs(program, [name], shapes=True)
    digraph = draw(graphs[name], depth=1)             # a graphviz.Digraph

The library (`netdsl.api`), the command line (`netdsl.cli`), the language
server (`netdsl.lsp`) and the preview (`netdsl.preview`) all go through these
functions, so a spec reads, checks, picks its model and draws the same way
everywhere. Nothing here imports Keras at import time; `model_graphs` with
shapes the pure-Python inference cannot be sure of, and `compile_models`, do
when called.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from netdsl.cost.budget import budget_warnings
from netdsl.cost.model import ModelCost
from netdsl.cost.readout import CostSummary
from netdsl.errors import RESOURCE_ERRORS, Diagnostic, Sources, SpecError, UsageError, out_of_resources
from netdsl.semantics.analysis import Analysis, analyze, checked_graphs
from netdsl.semantics.defines import apply_defines
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.graph import Graph
from netdsl.semantics.trainable import ParamSplit, split_params
from netdsl.syntax.loader import Overlay, Program, load_file, load_text, pick_model, pick_models

if TYPE_CHECKING:
    import graphviz
    import keras

__all__ = ["Spec", "TypedPath", "Checked", "load", "spec_path", "load_file", "check", "pick_model", "pick_models",
           "pick_model_or_first", "model_graphs", "start_backend", "compile_models", "ModelSummary", "model_summary",
           "param_counts", "draw", "unsure_models", "summaries", "inferred_splits", "built_split", "ParamSplit"]

# What a function taking a spec accepts as its first argument: the path of a
# `.net` file, or a `Program` (from `parse`/`parse_file`). Spec text goes in `text=`.
Spec = str | os.PathLike | Program


def looks_like_text(value: str) -> bool:
    """Spec text, not a path: a path holds no line break and (in practice) no brace."""
    return "\n" in value or "{" in value


def load(spec: Spec | None = None, *, text: str | bytes | None = None, filename: str | None = None,
         include: Sequence[str | os.PathLike] = (), real: Path | None = None,
         overlay: Overlay | None = None, defines: Mapping[str, object] | None = None) -> Program:
    """The `Program` of a spec given as a path, a `Program`, or `text=` (shown as `filename=`).

    One rule for every function that takes a spec, like `tomllib.load`/`loads`:
    a `str` is always a path; spec text goes in `text=`. A `str` that is
    plainly spec text (a line break or a brace, and no such file) gets a
    `UsageError` saying so rather than "no such file" with the whole text as
    its name. `real`/`overlay`: see `syntax.loader.load_text` (the language server's).
    `defines`: file-level constants replaced before the check (`-D NAME=VALUE`).
    """
    if text is not None:
        if spec is not None:
            raise UsageError("give the spec once: a path or a Program as `spec`, or its text as `text=`")
        program = load_text(text, filename if filename is not None else "<string>", list(include), real=real,
                            overlay=overlay)
    elif isinstance(spec, Program):
        program = spec
    else:
        program = load_file(spec_path(spec, filename), list(include))
    return apply_defines(program, defines) if defines else program


def spec_path(spec: object, filename: str | None = None) -> str | os.PathLike:
    """`spec` as the path of a spec file; `UsageError` for anything else (spec text above all)."""
    if spec is None:
        raise UsageError("no spec given: pass the path of a .net file, a Program, or the spec's text as text=")
    if isinstance(spec, bytes):
        raise UsageError("a spec given as bytes is spec text: pass it as text=")
    if not isinstance(spec, (str, os.PathLike)):
        raise UsageError(f"a spec is a path or a Program (its text goes in text=), not {type(spec).__name__}")
    if isinstance(spec, str) and looks_like_text(spec) and not os.path.exists(spec):
        raise UsageError("this looks like spec text, not the path of a .net file: pass it as text= "
                         "(e.g. netdsl.check(text=source, filename=\"my.net\"))")
    if filename is not None:
        raise UsageError("filename= names spec text given as text=; a spec file is shown by its path")
    return spec


class TypedPath(os.PathLike):
    """A path exactly as the user typed it (a command-line argument): never read as spec text,
    and shown in diagnostics unchanged (`pathlib` would turn `./a.net` into `a.net`)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path


@dataclass
class Checked:
    """What `netdsl check` says about one spec, with what it was made from."""

    name: str  # the spec as shown in diagnostics
    diagnostics: list[Diagnostic]
    sources: Sources = field(default_factory=Sources)  # the text of every file read, for source lines
    program: Program | None = None  # None when the spec could not be read or parsed
    analysis: Analysis | None = None

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    @property
    def files(self) -> list[str]:
        """The spec and every file it imports (those read so far when it could not be read whole)."""
        if self.program is not None:
            return list(self.program.files)
        return list(dict.fromkeys([self.name, *(d.file for d in self.diagnostics)]))


def check(spec: Spec | None = None, *, text: str | bytes | None = None, filename: str | None = None,
          include: Sequence[str | os.PathLike] = (), real: Path | None = None, overlay: Overlay | None = None,
          loaded: Callable[[], None] | None = None, defines: Mapping[str, object] | None = None) -> Checked:
    """Read and check a spec: every diagnostic, never an exception for what the spec holds.

    `loaded` is called between reading and checking (the language server
    abandons a check there when the text changed meanwhile)."""
    name = _display_name(spec, filename)
    try:
        program = load(spec, text=text, filename=filename, include=include, real=real, overlay=overlay,
                       defines=defines)
    except SpecError as exc:
        return Checked(name, exc.diagnostics, exc.sources or Sources())
    except RESOURCE_ERRORS as exc:  # the last resort: netdsl.limits should stop such a spec first
        return Checked(name, [out_of_resources(exc, name)])
    if loaded is not None:
        loaded()
    try:
        analysis = analyze(program)
    except RESOURCE_ERRORS as exc:
        # about the whole file: no source line under it (it would point at 1:1 as if something were there)
        return Checked(program.root, [out_of_resources(exc, program.root)], Sources(), program)
    warnings = [] if analysis.errors else budget_warnings(analysis.graphs)  # a train section's max_memory
    return Checked(program.root, analysis.diagnostics + warnings, program.sources(), program, analysis)


def _display_name(spec: Spec | None, filename: str | None) -> str:
    if filename is not None:
        return filename
    if isinstance(spec, Program):
        return spec.root
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return "<string>"


def model_graphs(program: Program, names: list[str], shapes: bool, *, mute_tensorflow: bool = False
                 ) -> dict[str, Graph]:
    """The checked, expanded graphs of `names` (SpecError on errors).

    With `shapes`, each node also holds the output shapes and parameter count
    Keras reports: estimated in pure Python where that is certain
    (`semantics.estimates`), and only the other models built with Keras
    (`mute_tensorflow`: TensorFlow's start-up notices kept off stderr, for the CLI).
    """
    graphs = checked_graphs(program, names)
    if not shapes:
        return graphs
    unsure = unsure_models(graphs)
    if unsure:
        from netdsl.backend.compiler import compile_program
        from netdsl.backend.runtime import quiet_tensorflow

        quiet_tensorflow(mute_stderr=mute_tensorflow)
        try:
            analysis, _ = compile_program(program, models=unsure)
        except SpecError:
            return graphs  # a value only Keras refuses: drawn as checked, what is unknown shown as ?
        graphs.update({name: analysis.graphs[name] for name in unsure})
    return graphs


def unsure_models(graphs: Mapping[str, Graph]) -> list[str]:
    """The models whose shapes and parameter counts the pure-Python inference cannot be sure of
    (`semantics.estimates.fill_estimates`, which fills in the counts of the others)."""
    return [name for name, graph in graphs.items() if not fill_estimates(graph)]


def start_backend(backend: str | None, *, mute_stderr: bool = True) -> str:
    """Import Keras on `backend` ("tensorflow", "jax"; None: KERAS_BACKEND, else TensorFlow), its
    start-up notices kept off stderr when `mute_stderr` (the CLI). `BackendError` when it cannot be had."""
    from netdsl.backend.runtime import init_backend

    return init_backend(backend, mute_stderr=mute_stderr)


def compile_models(program: Program, names: list[str] | None = None, *, param_limit: int | None = None,
                   backend: str | None = None, weights: str | os.PathLike[str] | None = None,
                   ) -> tuple[Analysis, dict[str, keras.Model]]:
    """Check and build `names` (default: every model of the file) with Keras on `backend`:
    the analysis (graphs with shapes and parameter counts) and `{name: keras.Model}`.
    `weights`: a `.keras` or `.weights.h5` file each model's weights are loaded from, as
    a train section's `init = "FILE"` loads them (`UsageError` when a layer does not match)."""
    from netdsl.backend.compiler import compile_program, load_weights

    start_backend(backend, mute_stderr=False)
    analysis, models = compile_program(program, pick_models(program, None) if names is None else names, param_limit)
    if weights is not None:
        for model in models.values():
            load_weights(model, weights)
    return analysis, models


def init_report(model: keras.Model) -> list[str]:
    """What was loaded into a model built in this process (`init`, `weights`): "init: N layers of ... from FILE"."""
    from netdsl.backend.compiler import init_report as report

    return report(model)


class _CostPart(TypedDict, total=False):
    cost: CostSummary  # with `cost=True` (`summary --cost`): FLOPs and memory (cost/readout.py)


class ModelSummary(_CostPart):
    """One model in numbers (`netdsl summary --json`): shapes leave out the batch axis, None an unknown size."""

    params: int
    trainable_params: int
    non_trainable_params: int  # frozen (a train section's `freeze`, `trainable=false`) and statistics (batch norm)
    layers: int  # the layers the spec makes: inputs left out, a shared instance or a nested model once
    outputs: dict[str, list[int | None] | None]  # output name -> shape (None: not known)


def summaries(program: Program, names: list[str], *, param_limit: int | None = None,
              backend: str | None = None, weights: str | os.PathLike[str] | None = None,
              ) -> dict[str, tuple[Graph, ParamSplit]]:
    """Each model's graph (shapes and counts filled in) and its parameters as Keras counts them.

    From the pure-Python inference when it is sure of every model (no backend
    is imported), else by building them with Keras (`compile_models`): when a
    `backend` or `weights` is asked for, when the check finds an error (Keras
    words it), and when `inferred_splits` is unsure."""
    if backend is None and weights is None:
        inferred = inferred_splits(program, names, param_limit=param_limit)
        if inferred is not None:
            return inferred
    analysis, models = compile_models(program, names, param_limit=param_limit, backend=backend, weights=weights)
    return {name: (analysis.graphs[name], built_split(model)) for name, model in models.items()}


def inferred_splits(program: Program, names: list[str], *, param_limit: int | None = None
                    ) -> dict[str, tuple[Graph, ParamSplit]] | None:
    """What building `names` with Keras would count, from the pure-Python inference; None when it is unsure.

    Unsure: a spec with errors; a model `unsure_models` names (the same decision
    as `render`'s); a train section's `init` (weights read from files); several
    models where one's `freeze` could reach another through a nested model or a
    shared layer (Keras builds them as one object); a train section under
    KERAS_BACKEND=torch (refused there); a layer `split_params` has no rule for."""
    try:
        graphs = checked_graphs(program, names, param_limit)
    except SpecError:
        return None
    if unsure_models(graphs) or not _split_is_local(list(graphs.values())):
        return None
    found: dict[str, tuple[Graph, ParamSplit]] = {}
    for name, graph in graphs.items():
        split = split_params(graph, [p.text for p in graph.train.freeze] if graph.train is not None else [])
        if split is None:
            return None
        found[name] = (graph, split)
    return found


def _split_is_local(graphs: list[Graph]) -> bool:
    """Whether each model's trainable weights follow from its own graph and train section alone."""
    trains = [graph.train for graph in graphs if graph.train is not None]
    if any(train.init for train in trains):
        return False
    if trains and os.environ.get("KERAS_BACKEND", "").strip().lower() == "torch":
        return False
    shares = any(node.op == "model" or node.shared is not None for graph in graphs for node in graph.nodes)
    return not (len(graphs) > 1 and shares and any(train.freeze for train in trains))


def built_split(model: keras.Model) -> ParamSplit:
    """A built model's parameters: all, trainable, and its frozen top-level layers."""
    total, trainable = param_counts(model)
    return ParamSplit(total, trainable, tuple(frozen_layers(model)))


def model_summary(graph: Graph, split: ParamSplit) -> ModelSummary:
    """The numbers of one model: its graph and its parameters (`summaries`)."""
    total, trainable = split.total, split.trainable
    layers = {node.shared or node.id for node in graph.nodes if node.op != "input"}
    outputs: dict[str, list[int | None] | None] = {}
    for name, ref in graph.outputs:
        shape = graph.node_of(ref).output_shapes[ref.index]
        outputs[name] = list(shape) if isinstance(shape, tuple) else None
    return {"params": total, "trainable_params": trainable, "non_trainable_params": total - trainable,
            "layers": len(layers), "outputs": outputs}


def frozen_layers(model: keras.Model) -> list[str]:
    """The names of a built model's layers (nested models as one) that hold weights and are frozen."""
    return [layer.name for layer in model.layers if layer.weights and not layer.trainable]


def param_counts(model: keras.Model) -> tuple[int, int]:
    """(all parameters, trainable parameters) of a built model."""
    total = sum(math.prod(w.shape) for w in model.weights)
    trainable = sum(math.prod(w.shape) for w in model.trainable_weights)
    return int(total), int(trainable)


def draw(graph: Graph, *, shapes: bool = True, depth: int | None = None,
         collapse_repeats: bool = True, cost: ModelCost | None = None) -> graphviz.Digraph:
    """The diagram of one expanded graph (`diagram.render.render_graph`: ValueError for a negative `depth`);
    with `cost` (netdsl.cost), each box's FLOPs and memory."""
    from netdsl.diagram.render import render_graph  # graphviz: only when drawing

    return render_graph(graph, shapes=shapes, depth=depth, collapse_repeats=collapse_repeats, cost=cost)


def pick_model_or_first(program: Program, model: str | None) -> str:
    """The model named, or the file's first (the preview draws one model whatever the file holds)."""
    if model is None and len(program.model_names) > 1:
        return program.model_names[0]
    return pick_model(program, model)
