"""The one pipeline under every front end: spec -> `Program` -> checked graphs -> Keras models / diagrams.

    program = load("cnn.net")                        # or load(text=..., filename="cnn.net")
    checked = check(program)                          # .diagnostics, .sources, .analysis (never raises)
    name = LoadedSpec(program).model(None).name       # the file's only model (or a SpecError that says why)
    graphs = model_graphs(program, [name], shapes=True)
    digraph = draw(graphs[name], depth=1)             # a graphviz.Digraph

The library (`netdsl.api`), the command line (`netdsl.cli`), the language
server (`netdsl.lsp`) and the preview (`netdsl.preview`) all go through these
functions, so a spec reads, checks, picks its model and draws the same way
everywhere. Nothing here imports Keras at import time; `model_graphs` with
shapes the pure-Python inference cannot be sure of, and `build`, do
when called.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from netdsl.cost.budget import budget_warnings
from netdsl.cost.model import ModelCost
from netdsl.cost.readout import CostSummary
from netdsl.errors import SpecError
from netdsl.semantics.analysis import Analysis, checked_graphs
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.fine_tuning import zoo_weights
from netdsl.semantics.graph import Graph
from netdsl.semantics.session import Checked, CheckedModels, LoadedSpec, Spec, TypedPath, load, spec_path
from netdsl.semantics.session import check as check_spec
from netdsl.semantics.trainable import ParamSplit, split_params
from netdsl.syntax.loader import Program, load_file, paused_gc, pick_models

if TYPE_CHECKING:
    import graphviz
    import keras

__all__ = [
    "Spec",
    "TypedPath",
    "Checked",
    "LoadedSpec",
    "CheckedModels",
    "load",
    "spec_path",
    "load_file",
    "check",
    "pick_models",
    "model_graphs",
    "start_backend",
    "build",
    "ModelSummary",
    "model_summary",
    "param_counts",
    "draw",
    "unsure_models",
    "summaries",
    "inferred_splits",
    "built_split",
    "ParamSplit",
]


def check(spec: Spec | None = None, **how: Any) -> Checked:
    """`semantics.session.check` (every diagnostic of a spec, never an exception for what it holds), and a
    warning at a train section's `max_memory` that its batch exceeds (cost/budget.py, a room above semantics)."""
    checked = check_spec(spec, **how)
    if checked.analysis is not None and not checked.errors:
        checked.diagnostics = checked.diagnostics + budget_warnings(checked.analysis.graphs)
    return checked


def model_graphs(
    program: Program, names: list[str], shapes: bool, *, mute_tensorflow: bool = False
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


def build(
    checked: CheckedModels,
    *,
    backend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
) -> tuple[Analysis, dict[str, keras.Model]]:
    """The compiler's one build door (`backend.compiler.build`), reached without importing Keras before
    it is called: the picked models built with Keras on `backend`, `weights` loaded into each."""
    from netdsl.backend.compiler import build as build_checked

    return build_checked(checked, backend=backend, weights=weights)


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


def summaries(
    program: Program,
    names: list[str],
    *,
    param_limit: int | None = None,
    backend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
) -> dict[str, tuple[Graph, ParamSplit]]:
    """Each model's graph (shapes and counts filled in) and its parameters as Keras counts them.

    From the pure-Python inference when it is sure of every model (no backend
    is imported), else by building them with Keras (`build`): when a
    `backend` or `weights` is asked for, when the check finds an error (Keras
    words it), and when `inferred_splits` is unsure."""
    if backend is None and weights is None:
        inferred = inferred_splits(program, names, param_limit=param_limit)
        if inferred is not None:
            return inferred
    analysis, models = build(
        LoadedSpec(program).models(names, param_limit=param_limit), backend=backend, weights=weights
    )
    return {name: (analysis.graphs[name], built_split(model)) for name, model in models.items()}


def inferred_splits(
    program: Program, names: list[str], *, param_limit: int | None = None
) -> dict[str, tuple[Graph, ParamSplit]] | None:
    """What building `names` with Keras would count, from the pure-Python inference; None when it is unsure.

    Unsure: a spec with errors; a model `unsure_models` names (the same decision
    as `render`'s); a train section's `init` (weights read from files); several
    models where one's `freeze` could reach another through a nested model or a
    shared layer (Keras builds them as one object); a train section under
    KERAS_BACKEND=torch (refused there); a layer `split_params` has no rule for."""
    with paused_gc():  # as the check itself: the splits of a 10,000-layer model allocate what stays alive
        return _inferred_splits(program, names, param_limit)


def _inferred_splits(
    program: Program, names: list[str], param_limit: int | None
) -> dict[str, tuple[Graph, ParamSplit]] | None:
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
    # a file's weights are checked against the model by loading them; a zoo family's published
    # weights are the backbone's own (proved when its spec was written): summary fetches nothing
    if any(zoo_weights(init.path) is None for train in trains for init in train.init):
        return False
    from netdsl.backend import profiles

    profile = profiles.get(os.environ.get("KERAS_BACKEND", "").strip().lower())
    if trains and profile is not None and profile.train_limits:  # its build may refuse a train section
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
    return {
        "params": total,
        "trainable_params": trainable,
        "non_trainable_params": total - trainable,
        "layers": len(layers),
        "outputs": outputs,
    }


def frozen_layers(model: keras.Model) -> list[str]:
    """The names of a built model's layers that hold weights and are frozen: a frozen nested model as
    one, the frozen layers of one that trains as `backbone/conv1` (`freeze`'s names for them)."""
    found = []
    for layer in model.layers:
        if layer.weights and not layer.trainable:
            found.append(layer.name)
        elif hasattr(layer, "get_layer"):  # a nested model
            found += [f"{layer.name}/{inner}" for inner in frozen_layers(layer)]
    return found


def param_counts(model: keras.Model) -> tuple[int, int]:
    """(all parameters, trainable parameters) of a built model."""
    total = sum(math.prod(w.shape) for w in model.weights)
    trainable = sum(math.prod(w.shape) for w in model.trainable_weights)
    return int(total), int(trainable)


def draw(
    graph: Graph,
    *,
    shapes: bool = True,
    depth: int | None = None,
    collapse_repeats: bool = True,
    cost: ModelCost | None = None,
) -> graphviz.Digraph:
    """The diagram of one expanded graph (`diagram.render.render_graph`: ValueError for a negative `depth`);
    with `cost` (netdsl.cost), each box's FLOPs and memory."""
    from netdsl.diagram.render import render_graph  # graphviz: only when drawing

    return render_graph(graph, shapes=shapes, depth=depth, collapse_repeats=collapse_repeats, cost=cost)
