"""One handle for a spec: read once, its models picked and checked once, then handed on.

    spec = LoadedSpec.load("cnn.net", include=["lib"], defines={"width": 64})   # or text=..., filename=...
    checked = spec.check()                       # `netdsl check`: every diagnostic, never an exception
    model = spec.model("classifier")             # picked now (SpecError for a name the file lacks)
    model.graph, model.train, model.sweep        # checked on first use, once (SpecError on errors)

Every room that takes a spec (build, train, sweep, export, evaluate, the
Lightning module, the language server, the preview) is handed a `LoadedSpec`
or a `CheckedModel` by the front door it came through, instead of reading,
picking and checking the spec again. The compiler's one build door
(`backend.compiler.build`) replays the checked graphs of a `CheckedModels`:
the pure-Python check is not run a second time to build.

The check of a picked model runs when it is first asked for, so that a
command checks what it can without the spec (a missing weights file, a flag)
in the order it always did. It lives here, just above the checker, so that
every library room may import it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from netdsl.errors import RESOURCE_ERRORS, Diagnostic, Sources, SpecError, UsageError, out_of_resources
from netdsl.semantics.analysis import Analysis, analyze
from netdsl.semantics.defines import apply_defines
from netdsl.semantics.graph import Graph
from netdsl.semantics.sweep_space import SweepSpace
from netdsl.semantics.train_checks import TrainSpec
from netdsl.syntax.loader import Overlay, Program, Source, as_program, load_file, load_text, pick_model, pick_models

__all__ = [
    "Spec",
    "LoadedSpec",
    "CheckedModels",
    "CheckedModel",
    "Checked",
    "check",
    "load",
    "spec_path",
    "TypedPath",
    "looks_like_text",
]

# What a function taking a spec accepts as its first argument: the path of a
# `.net` file, or a `Program` (from `parse`/`parse_file`). Spec text goes in `text=`.
Spec = str | os.PathLike[str] | Program


def looks_like_text(value: str) -> bool:
    """Spec text, not a path: a path holds no line break and (in practice) no brace."""
    return "\n" in value or "{" in value


def load(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    include: Sequence[str | os.PathLike[str]] = (),
    real: Path | None = None,
    overlay: Overlay | None = None,
    defines: Mapping[str, object] | None = None,
) -> Program:
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
        program = load_text(
            text, filename if filename is not None else "<string>", list(include), real=real, overlay=overlay
        )
    elif isinstance(spec, Program):
        program = spec
    else:
        program = load_file(spec_path(spec, filename), list(include))
    return apply_defines(program, defines) if defines else program


def spec_path(spec: object, filename: str | None = None) -> str | os.PathLike[str]:
    """`spec` as the path of a spec file; `UsageError` for anything else (spec text above all)."""
    if spec is None:
        raise UsageError("no spec given: pass the path of a .net file, a Program, or the spec's text as text=")
    if isinstance(spec, bytes):
        raise UsageError("a spec given as bytes is spec text: pass it as text=")
    if not isinstance(spec, (str, os.PathLike)):
        raise UsageError(f"a spec is a path or a Program (its text goes in text=), not {type(spec).__name__}")
    if isinstance(spec, str) and looks_like_text(spec) and not os.path.exists(spec):
        raise UsageError(
            "this looks like spec text, not the path of a .net file: pass it as text= "
            '(e.g. netdsl.check(text=source, filename="my.net"))'
        )
    if filename is not None:
        raise UsageError("filename= names spec text given as text=; a spec file is shown by its path")
    return spec


class TypedPath(os.PathLike[str]):
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


class CheckedModels:
    """Models of one spec, picked: their check (`analysis`) runs once, when first asked for."""

    def __init__(self, program: Program, names: list[str], param_limit: int | None = None) -> None:
        self.program = program
        self.names = names
        self.param_limit = param_limit  # refuse a layer with more parameters (None: limits.MAX_PARAMS)
        self._analysis: Analysis | None = None
        self._taken = False  # a build replayed this analysis's graphs (they hold its Keras objects now)

    @property
    def analysis(self) -> Analysis:
        """The pure-Python check of these models (never raises for what the spec holds)."""
        if self._analysis is None:
            self._analysis = analyze(self.program, models=self.names, param_limit=self.param_limit)
        return self._analysis

    @property
    def errors(self) -> list[Diagnostic]:
        return self.analysis.errors

    def graphs(self) -> dict[str, Graph]:
        """The checked graphs, in the order picked; SpecError with every error found."""
        analysis = self.analysis
        if analysis.errors:
            raise SpecError(analysis.errors, self.program.sources())
        return {name: analysis.graphs[name] for name in self.names}

    def to_build(self) -> Analysis:
        """The analysis a build replays. The first build takes this handle's own; a build writes
        its Keras objects into the graphs, so a second build of the same handle checks afresh
        (two builds never share a layer)."""
        if self._taken:
            return analyze(self.program, models=self.names, param_limit=self.param_limit)
        self._taken = True
        return self.analysis


class CheckedModel(CheckedModels):
    """One model of a spec, picked: its graph, train section and sweep, checked once."""

    def __init__(self, program: Program, name: str, param_limit: int | None = None) -> None:
        super().__init__(program, [name], param_limit)
        self.name = name

    @property
    def graph(self) -> Graph:
        """The model's checked graph; SpecError with every error found."""
        return self.graphs()[self.name]

    @property
    def train(self) -> TrainSpec | None:
        """The model's checked `train` section, None without one (SpecError on errors)."""
        train: TrainSpec | None = self.graph.train
        return train

    @property
    def sweep(self) -> SweepSpace | None:
        """The model's checked `sweep` section, None without one (SpecError on errors)."""
        self.graph  # noqa: B018 (errors first: a sweep of a spec that does not check is no sweep)
        return self.analysis.sweeps.get(self.name)


class LoadedSpec:
    """A spec read once (a `Program`, its -D overrides applied), handed to whatever picks its models."""

    def __init__(self, program: Program) -> None:
        self.program = program

    @classmethod
    def load(
        cls,
        spec: Spec | None = None,
        *,
        text: str | bytes | None = None,
        filename: str | None = None,
        include: Sequence[str | os.PathLike[str]] = (),
        real: Path | None = None,
        overlay: Overlay | None = None,
        defines: Mapping[str, object] | None = None,
    ) -> LoadedSpec:
        """What a front door was given (`load`'s rules: a path, a `Program` or `text=`)."""
        return cls(
            load(spec, text=text, filename=filename, include=include, real=real, overlay=overlay, defines=defines)
        )

    @classmethod
    def of(
        cls, source: Source, include: Sequence[str | os.PathLike[str]] = (), defines: Mapping[str, object] | None = None
    ) -> LoadedSpec:
        """What a library room was handed: a `Program`, or the path of a spec file (read with `include`)."""
        return cls(apply_defines(as_program(source, include), defines))

    @property
    def root(self) -> str:
        return self.program.root

    def check(self, loaded: Callable[[], None] | None = None) -> Checked:
        """Every diagnostic of the whole file (`netdsl check`); never raises for what the spec holds."""
        program = self.program
        if loaded is not None:
            loaded()
        try:
            analysis = analyze(program)
        except RESOURCE_ERRORS as exc:
            # about the whole file: no source line under it (it would point at 1:1 as if something were there)
            return Checked(program.root, [out_of_resources(exc, program.root)], Sources(), program)
        return Checked(program.root, analysis.diagnostics, program.sources(), program, analysis)

    def model(self, name: str | None, *, param_limit: int | None = None) -> CheckedModel:
        """The model named, or the file's only model (SpecError saying why there is none to pick)."""
        return CheckedModel(self.program, pick_model(self.program, name), param_limit)

    def models(self, names: Sequence[str] | None = None, *, param_limit: int | None = None) -> CheckedModels:
        """The models named, each picked (an unknown name is a SpecError); None: every model of the file."""
        wanted = (
            [pick_model(self.program, name) for name in names] if names is not None else pick_models(self.program, None)
        )
        return CheckedModels(self.program, wanted, param_limit)

    def names(self, model: str | None) -> list[str]:
        """The models a command means: the one named, or every model of the file (at least one)."""
        return pick_models(self.program, model)

    def model_or_first(self, model: str | None) -> str:
        """The model named, or the file's first (the preview draws one model whatever the file holds)."""
        if model is None and len(self.program.model_names) > 1:
            return self.program.model_names[0]
        return pick_model(self.program, model)


def check(
    spec: Spec | None = None,
    *,
    text: str | bytes | None = None,
    filename: str | None = None,
    include: Sequence[str | os.PathLike[str]] = (),
    real: Path | None = None,
    overlay: Overlay | None = None,
    loaded: Callable[[], None] | None = None,
    defines: Mapping[str, object] | None = None,
) -> Checked:
    """Read and check a spec: every diagnostic, never an exception for what the spec holds.

    `loaded` is called between reading and checking (the language server
    abandons a check there when the text changed meanwhile)."""
    name = _display_name(spec, filename)
    try:
        spec_read = LoadedSpec.load(
            spec, text=text, filename=filename, include=include, real=real, overlay=overlay, defines=defines
        )
    except SpecError as exc:
        return Checked(name, exc.diagnostics, exc.sources or Sources())
    except RESOURCE_ERRORS as exc:  # the last resort: netdsl.limits should stop such a spec first
        return Checked(name, [out_of_resources(exc, name)])
    return spec_read.check(loaded)


def _display_name(spec: Spec | None, filename: str | None) -> str:
    if filename is not None:
        return filename
    if isinstance(spec, Program):
        return spec.root
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return "<string>"
