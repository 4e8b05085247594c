"""The library API: `parse`, `parse_file`, `check`, `format`, `build`, `build_all`, `fit_kwargs`, `render`, `export`,
`train`, `evaluate`, `predict`.

Everything here is cheap to import; `build`, `fit_kwargs`, `render` with
shapes the pure-Python inference cannot be sure of, and `export` of a live model
import Keras (and only they do) when called.
"""

from __future__ import annotations

import os
from typing import Any

from netdsl.errors import RESOURCE_ERRORS, Diagnostic, SpecError, out_of_resources
from netdsl.semantics.analysis import analyze, checked_graphs
from netdsl.semantics.defines import apply_defines
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.graph import Graph
from netdsl.syntax.loader import Program, Source, as_program, load_file, load_text, pick_model
from netdsl.training import evaluate, predict, train  # cheap: TensorFlow loads when they are called
from netdsl.tuning import SweepResult, TrialRecord  # cheap: Optuna loads when a sweep starts

__all__ = ["parse", "parse_file", "check", "format", "build", "build_all", "fit_kwargs", "render", "model_graphs",
           "export", "train", "evaluate", "predict", "sweep", "show_sweep", "SweepResult", "TrialRecord"]


def parse(text: str | bytes, filename: str = "<string>", include: list = ()) -> Program:
    """Parse spec text (and the files it imports) into a Program; SpecError on syntax errors."""
    return load_text(text, filename, include)


def parse_file(path: str | os.PathLike, include: list = ()) -> Program:
    """Parse a spec file (and the files it imports) into a Program."""
    return load_file(path, include)


def check(source: Source | str, filename: str | None = None, include: list = (), *,
          defines: dict[str, Any] | None = None) -> list[Diagnostic]:
    """All diagnostics of a spec (empty when it is clean). `source`: a path, a Program, or text with filename=.
    `defines`: {constant: value} replacing file-level `let`s first (`-D NAME=VALUE`).

    Never raises for what a spec holds: whatever it is, the answer is a list of diagnostics."""
    try:
        program = load_text(source, filename, include) if filename is not None else as_program(source, include)
        return analyze(apply_defines(program, defines)).diagnostics
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


def build(source: Source, model: str | None = None, *, defines: dict[str, Any] | None = None,
          **options: Any) -> Any:
    """Build one model of a spec as a `keras.Model` (compiled when it has a train section).

    Options: `include`, `param_limit`, and `backend` ("tensorflow" or "jax"): Keras' backend for
    this process, which must be chosen before Keras is first imported (a `BackendError` otherwise).
    `defines`: {constant: value} replacing file-level `let`s first (`-D NAME=VALUE`).
    """
    from netdsl.backend.compiler import build_model

    if defines:
        source = apply_defines(as_program(source, options.get("include", ())), defines)
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
           collapse_repeats: bool = True, include: list = (), defines: dict[str, Any] | None = None) -> Any:
    """The architecture diagram of one model as a `graphviz.Digraph`.

    `shapes=True` shows each layer's output shape and parameter count, as
    Keras reports them: inferred in pure Python when that is certain, else
    from building the model with Keras (importing TensorFlow); `shapes=False`
    draws the checked topology only. `depth`: fold block instances nested deeper than this.
    `collapse_repeats`: draw `STEP * N` as one box marked xN. `defines`: {constant: value}
    replacing file-level `let`s first (`-D NAME=VALUE`). Raises `SpecError` when the spec has errors.
    """
    from netdsl.diagram.render import render_graph

    if depth is not None and depth < 0:
        raise ValueError(f"Expected a depth of 0 or more, received: {depth}")
    program = apply_defines(as_program(source, include), defines)
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


def export(model: Any, *, flat: bool = False) -> str:
    """The spec of a Keras model, in `netdsl fmt` form: `model` is a live keras.Model or the path
    of a `.keras` file (read as data, without importing TensorFlow). Repeated structure comes
    back as blocks and `* N` repeats unless `flat`. SpecError names every layer a spec cannot express."""
    from netdsl.exporter import export_model

    return export_model(model, flat=flat)


def sweep(spec: Source, *, model: str | None = None, data: Any = None, split: Any = None, train: Any = None,
          val: Any = None, test: Any = None, targets: dict[str, str] | None = None, trials: int | None = None,
          workers: int = 1, storage: str | None = None, study: str | None = None, seed: int | None = None,
          out: str | os.PathLike = "sweeps", resume: str | os.PathLike | None = None, epochs: int | None = None,
          batch_size: int | None = None, defines: dict[str, Any] | None = None, include: list = (),
          echo: bool = False) -> SweepResult:
    """Search the constants of a spec's `sweep MODEL { ... }` section with Optuna; the same as `netdsl sweep`.

    Each trial is an ordinary run in `<out>/<model>-sweep-N/trials/<k>/` trained with the trial's
    parameters as defines. `trials`: the study's total (default: the spec's `trials`, else 10);
    `workers`: processes sharing the study (the spec and data must then be paths); `storage`: a
    database URL (`postgresql://...`, `sqlite:///...`; default SQLite in the sweep folder) that
    workers on many machines share under one `study` name; `resume`: "auto" or a sweep folder, to
    finish a sweep that was stopped or killed. Returns a `SweepResult` (`.dir`, `.trials`, `.best`).
    Raises `SpecError` (the spec or its sweep section) or `TrainingError` (data, flags, storage).
    """
    from netdsl.training.settings import DataRequest
    from netdsl.tuning.runner import SweepRequest, resolve_sweep, run_sweep

    request = SweepRequest(
        spec=spec, model=model, trials=trials, workers=workers, storage=storage, study=study, seed=seed, out=out,
        resume=resume, epochs=epochs, batch_size=batch_size, defines=dict(defines or {}), include=list(include),
        echo=echo, data=DataRequest(data=data, split=tuple(split) if split is not None else None, train=train,
                                    val=val, test=test, targets=dict(targets or {})))
    return run_sweep(resolve_sweep(request))


def show_sweep(folder: str | os.PathLike, *, storage: str | None = None) -> SweepResult:
    """The whole study of a sweep folder (every worker's trials), read from its storage."""
    from netdsl.tuning.show import read_sweep

    return read_sweep(folder, storage=storage)
