"""The library API: `parse`, `parse_file`, `check`, `format`, `build`, `build_all`, `fit_kwargs`, `render`, `decompile`,
`export`, `train`, `evaluate`, `predict`.

Everything here is cheap to import; `build`, `fit_kwargs`, `render` with
shapes the pure-Python inference cannot be sure of, `decompile` of a live model and `export`
import Keras (and only they do) when called.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from netdsl.errors import RESOURCE_ERRORS, Diagnostic, SpecError, out_of_resources
from netdsl.semantics.analysis import analyze, checked_graphs
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.graph import Graph
from netdsl.syntax.loader import Program, Source, as_program, load_file, load_text, pick_model
from netdsl.training import evaluate, predict, train  # cheap: TensorFlow loads when they are called

__all__ = ["parse", "parse_file", "check", "format", "build", "build_all", "fit_kwargs", "render", "model_graphs",
           "decompile", "export", "train", "evaluate", "predict"]


def parse(text: str | bytes, filename: str = "<string>", include: list = ()) -> Program:
    """Parse spec text (and the files it imports) into a Program; SpecError on syntax errors."""
    return load_text(text, filename, include)


def parse_file(path: str | os.PathLike, include: list = ()) -> Program:
    """Parse a spec file (and the files it imports) into a Program."""
    return load_file(path, include)


def check(source: Source | str, filename: str | None = None, include: list = ()) -> list[Diagnostic]:
    """All diagnostics of a spec (empty when it is clean). `source`: a path, a Program, or text with filename=.

    Never raises for what a spec holds: whatever it is, the answer is a list of diagnostics."""
    try:
        program = load_text(source, filename, include) if filename is not None else as_program(source, include)
        return analyze(program).diagnostics
    except SpecError as exc:
        return exc.diagnostics
    except RESOURCE_ERRORS as exc:  # the last resort: netdsl.limits should stop such a spec first
        return [out_of_resources(exc, _display_name(source, filename))]


def _display_name(source: Any, filename: str | None) -> str:
    if filename is not None:
        return filename
    return source.root if isinstance(source, Program) else os.fspath(source)


def format(text: str, filename: str = "<string>") -> str:  # noqa: A001 - the API's name
    """The canonical formatting of spec text (comments kept)."""
    from netdsl.syntax.formatter import format_text

    return format_text(text, filename)


def build(source: Source, model: str | None = None, **options: Any) -> Any:
    """Build one model of a spec as a `keras.Model` (compiled when it has a train section).

    Options: `include`, `param_limit`, and `backend` ("tensorflow" or "jax"): Keras' backend for
    this process, which must be chosen before Keras is first imported (a `BackendError` otherwise).
    """
    from netdsl.backend.compiler import build_model

    return build_model(source, model, **options)


def build_all(source: Source, **options: Any) -> dict[str, Any]:
    """Build every model of a spec: {name: keras.Model}."""
    from netdsl.backend.compiler import build_models

    return build_models(source, **options)


def fit_kwargs(model: Any) -> dict[str, Any]:
    """`model.fit` keyword arguments from a built model's train section (batch_size, epochs,
    validation_split, shuffle, callbacks): `model.fit(x, y, **netdsl.fit_kwargs(model))`."""
    from netdsl.backend import compiler

    return compiler.fit_kwargs(model)


def render(source: Source, model: str | None = None, *, shapes: bool = True, depth: int | None = None,
           collapse_repeats: bool = True, include: list = ()) -> Any:
    """The architecture diagram of one model as a `graphviz.Digraph`.

    `shapes=True` shows each layer's output shape and parameter count, as
    Keras reports them: inferred in pure Python when that is certain, else
    from building the model with Keras (importing TensorFlow); `shapes=False`
    draws the checked topology only. `depth`: fold block instances nested deeper than this.
    `collapse_repeats`: draw `STEP * N` as one box marked xN. Raises
    `SpecError` when the spec has errors.
    """
    from netdsl.diagram.render import render_graph

    if depth is not None and depth < 0:
        raise ValueError(f"Expected a depth of 0 or more, received: {depth}")
    program = as_program(source, include)
    name = pick_model(program, model)
    graphs = model_graphs(program, [name], shapes)
    return render_graph(graphs[name], shapes=shapes, depth=depth, collapse_repeats=collapse_repeats)


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
    unsure = [name for name, graph in graphs.items() if not fill_estimates(graph)]
    if unsure:
        from netdsl.backend.compiler import compile_program
        from netdsl.backend.runtime import quiet_tensorflow

        quiet_tensorflow(mute_stderr=mute_tensorflow)
        analysis, _ = compile_program(program, models=unsure)
        graphs.update({name: analysis.graphs[name] for name in unsure})
    return graphs


def decompile(trained: str | os.PathLike | Any, *, flat: bool = False) -> str:  # Any: a keras.Model
    """The spec of a Keras model, in `netdsl fmt` form: `trained` is a live keras.Model or the path
    of a `.keras` file (read as data, without importing TensorFlow). Repeated structure comes
    back as blocks and `* N` repeats unless `flat`. SpecError names every layer a spec cannot express."""
    from netdsl.decompiler import decompile_model

    return decompile_model(trained, flat=flat)


def export(source: Source | Any, *, format: Literal["onnx", "saved_model", "litert"],  # noqa: A002 - the CLI flag
           out: str | os.PathLike | None = None, model: str | None = None, weights: str | os.PathLike | None = None,
           last: bool = False, verify: bool = True, include: list = ()) -> Path:
    """Export a model to ONNX, SavedModel or LiteRT and (with `verify`) check the file in that format's runtime.

    `source`: a spec (path or Program; built with fresh weights, or those of `weights=FILE.keras`; `model` picks
    one of its models), a run folder (its best.keras, or model.keras with `last=True`), a `.keras` file, or a
    live keras.Model. `out`: the file (a folder for saved_model); by default `<model>.onnx`,
    `<model>_saved_model` or `<model>.tflite` in the run folder, beside the .keras file, or in the current folder.
    Returns the path written. Raises `netdsl.deploy.ExportError` (one line) for what cannot be exported,
    `VerifyFailed` when the file's outputs differ from Keras' beyond the format's tolerance (1e-5; LiteRT 1e-4).
    """
    from netdsl.deploy import export_model

    return export_model(source, format=format, out=out, model=model, weights=weights, last=last, check=verify,
                        include=include).path
