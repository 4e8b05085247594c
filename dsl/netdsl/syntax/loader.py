"""Reading a spec and everything it imports into a `Program`.

Imports are data: a relative path that must stay inside the root spec's
folder (or a folder given with `--include`), symlinks resolved before the
test. Each file is read once however many files import it (diamonds), and a
cycle is reported with its chain.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from netdsl.errors import Diagnostic, Sources, SpecError, did_you_mean
from netdsl.limits import MAX_IMPORT_DEPTH, MAX_IMPORTED_FILES
from netdsl.syntax import ir
from netdsl.syntax.parser import decode_source
from netdsl.syntax.source import read_source
from netdsl.syntax.transform import to_ir

# Text to read instead of the file on disk, by resolved path (an editor's open,
# unsaved buffers); None where the file on disk is to be read.
Overlay = Callable[[Path], "str | None"]


class ImportLink(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    alias: str | None
    target: str  # display path of the imported file
    decl: ir.Import


class Program(BaseModel):
    """A root spec file and the files it imports, parsed."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True)

    root: str
    files: dict[str, ir.File]
    imports: dict[str, list[ImportLink]]
    texts: dict[str, str]

    @property
    def root_file(self) -> ir.File:
        return self.files[self.root]

    @property
    def model_names(self) -> list[str]:
        return [d.name for d in self.root_file.decls if isinstance(d, ir.ModelDecl)]

    def sources(self) -> Sources:
        return Sources(self.texts)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Parsing and expanding allocate hundreds of thousands of nodes that all
    stay alive; collecting them over and over made a 10,000-layer check
    grow faster than linearly (0.76 s vs 0.50 s). The previous state is
    restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_file(path: str | os.PathLike[str], include: Sequence[str | os.PathLike[str]] = ()) -> Program:
    display = os.fspath(path)
    text = read_source(Path(display), display)
    with paused_gc():
        return _Loader(Path(display).resolve().parent, include).load(text, display, Path(display).resolve())


def load_text(
    text: str | bytes,
    filename: str = "<string>",
    include: Sequence[str | os.PathLike[str]] = (),
    *,
    real: Path | None = None,
    overlay: Overlay | None = None,
) -> Program:
    """Load spec text shown as `filename`.

    `real`: where the text lives when `filename` is only a display name (the
    language server shows workspace-relative names whatever its working folder).
    `overlay`: the text of imported files to read before the disk's; every
    import is still refused the same way (escaping the folder, absolute paths).
    """
    if isinstance(text, bytes):
        text = decode_source(text, filename)
    if real is None:
        real = Path(filename).resolve() if filename != "<string>" else Path.cwd() / filename
    with paused_gc():
        return _Loader(real.parent, include, overlay).load(text, filename, real)


Source = str | os.PathLike[str] | Program  # what the API accepts: a spec path or a loaded Program


def as_program(source: Source, include: Sequence[str | os.PathLike[str]] = ()) -> Program:
    """A loaded `Program`: `source` itself, or the spec file it names."""
    if isinstance(source, Program):
        return source
    return load_file(source, list(include))


def spec_sha256(program: Program) -> str:
    """One hash over the spec and every file it imports (path-independent: by import order)."""
    digest = hashlib.sha256()
    for file in [program.root, *sorted(f for f in program.texts if f != program.root)]:
        digest.update(program.texts[file].encode())
        digest.update(b"\0")
    return digest.hexdigest()


def pick_model(program: Program, model: str | None) -> str:
    """The model a command means: the one named, or the file's only model."""
    names = program.model_names
    if model is not None:
        if model not in names:
            hint = did_you_mean(model, names) or (f"models: {', '.join(names)}" if names else None)
            raise SpecError(Diagnostic.for_file(program.root, f"no model named '{model}'", hint))
        return model
    if len(names) == 1:
        return names[0]
    if not names:
        raise SpecError(Diagnostic.for_file(program.root, "the spec declares no model"))
    raise SpecError(
        Diagnostic.for_file(
            program.root,
            f"the spec declares {len(names)} models; pick one with --model NAME (model=NAME in the library)",
            f"models: {', '.join(names)}",
        )
    )


def pick_models(program: Program, model: str | None) -> list[str]:
    """The models a command means: the one named, or every model of the file (at least one)."""
    if model is not None:
        return [pick_model(program, model)]
    if not program.model_names:
        raise SpecError(Diagnostic.for_file(program.root, "the spec declares no model"))
    return program.model_names


class _Loader:
    def __init__(
        self, root_dir: Path, include: Sequence[str | os.PathLike[str]], overlay: Overlay | None = None
    ) -> None:
        self.overlay = overlay
        self.allowed = [root_dir.resolve()] + [Path(p).resolve() for p in include]
        self.files: dict[str, ir.File] = {}
        self.texts: dict[str, str] = {}
        self.imports: dict[str, list[ImportLink]] = {}
        self.by_real: dict[Path, str] = {}
        self.diagnostics: list[Diagnostic] = []

    def load(self, text: str, display: str, real: Path) -> Program:
        self._visit(text, display, real, chain=[])
        if self.diagnostics:
            raise SpecError(self.diagnostics, Sources(self.texts))
        return Program.model_construct(root=display, files=self.files, imports=self.imports, texts=self.texts)

    def _visit(self, text: str, display: str, real: Path, chain: list[str]) -> None:
        self.texts[display] = text
        self.by_real[real] = display
        try:
            file = to_ir(text, display)
        except SpecError as exc:
            self.diagnostics.extend(exc.diagnostics)
            return
        self.files[display] = file
        links: list[ImportLink] = []
        self.imports[display] = links
        for decl in file.decls:
            if isinstance(decl, ir.Import):
                target = self._follow(decl, display, real, chain + [display])
                if target is not None:
                    # constructed, not validated (as Program is): netdsl's own values, and validating would
                    # build ImportLink's pydantic schema (and scan every installed package for pydantic
                    # plugins) on the first import of a check: 80-150 ms of a zoo spec's check
                    links.append(ImportLink.model_construct(alias=decl.alias, target=target, decl=decl))

    def _follow(self, decl: ir.Import, display: str, real: Path, chain: list[str]) -> str | None:
        """Load the file an import names; its display path, or None after an error."""
        if decl.path.startswith(ZOO_IMPORT):
            return self._zoo(decl, chain)
        error = self._refuse_path(decl)
        if error:
            self.diagnostics.append(Diagnostic.at(decl.span, error))
            return None
        target_real = (real.parent / decl.path).resolve()
        if not any(_inside(target_real, folder) for folder in self.allowed):
            self.diagnostics.append(
                Diagnostic.at(
                    decl.span,
                    f"import '{decl.path}' leaves the spec's folder",
                    "imports must stay inside the root spec's folder or a folder given with --include",
                )
            )
            return None
        if not decl.path.endswith(".net"):
            self.diagnostics.append(Diagnostic.at(decl.span, f"import '{decl.path}' does not name a .net file"))
            return None
        target_display = os.path.normpath(os.path.join(os.path.dirname(display), decl.path))
        if target_real in self.by_real:
            known = self.by_real[target_real]
            if known in chain:
                cycle = " -> ".join(chain[chain.index(known) :] + [known])
                self.diagnostics.append(Diagnostic.at(decl.span, f"import cycle: {cycle}"))
                return None
            return known  # a diamond: already loaded
        if len(self.by_real) >= MAX_IMPORTED_FILES:
            self.diagnostics.append(Diagnostic.at(decl.span, f"too many imported files (at most {MAX_IMPORTED_FILES})"))
            return None
        if len(chain) > MAX_IMPORT_DEPTH:
            self.diagnostics.append(Diagnostic.at(decl.span, f"imports nested more than {MAX_IMPORT_DEPTH} deep"))
            return None
        text = self.overlay(target_real) if self.overlay is not None else None
        if text is None:
            if not target_real.exists():
                self.diagnostics.append(Diagnostic.at(decl.span, f"cannot import '{decl.path}': no such file"))
                return None
            try:
                text = read_source(target_real, target_display)
            except SpecError as exc:
                self.diagnostics.extend(exc.diagnostics)
                return None
        self._visit(text, target_display, target_real, chain)
        return target_display

    def _zoo(self, decl: ir.Import, chain: list[str]) -> str | None:
        """`import "zoo:NAME"`: a backbone spec shipped with netdsl (its model joins the scope, see
        semantics/scope.py), read from the package; display name `zoo:NAME`."""
        name = decl.path[len(ZOO_IMPORT) :]
        known = zoo_specs()
        if name not in known:
            hint = did_you_mean(name, known) or "`netdsl zoo list` lists the families"
            self.diagnostics.append(Diagnostic.at(decl.span, f"no zoo family is called '{name}'", hint))
            return None
        target_real = known[name]
        if target_real in self.by_real:
            return self.by_real[target_real]
        self._visit(read_source(target_real, decl.path), decl.path, target_real, chain)
        return decl.path

    @staticmethod
    def _refuse_path(decl: ir.Import) -> str | None:
        path = decl.path
        if not path:
            return "import path is empty"
        if "\x00" in path:
            return "import path contains a NUL character"
        if os.path.isabs(path) or path.startswith(("/", "\\", "~")) or (len(path) > 1 and path[1] == ":"):
            return f"import '{path}' is an absolute path; imports are relative to the importing file"
        return None


ZOO_IMPORT = "zoo:"  # import "zoo:resnet50": a backbone spec that ships with netdsl
# The zoo's specs, a folder of the package (the zoo room sits above this one: found by path, not imported).
ZOO_SPECS = Path(__file__).resolve().parent.parent / "zoo" / "specs"


def zoo_specs() -> dict[str, Path]:
    """The backbone specs shipped with netdsl, by family name."""
    return {path.stem: path for path in sorted(ZOO_SPECS.glob("*.net"))}


def is_zoo_file(display: str) -> bool:
    return display.startswith(ZOO_IMPORT)


def zoo_keras_names(file: str, model: str) -> dict[str, str]:
    """{the spec's layer name: keras.applications' name} for the zoo backbone `model` of `file` (imported
    as `zoo:NAME`, or the spec opened by its path); {} for any other model. Written beside the spec by
    scripts/zoo_specs.py, which paired the two models' layers; a file of the package, read once."""
    if is_zoo_file(file):
        family = file[len(ZOO_IMPORT) :]
    elif file.endswith(".net") and _inside(Path(file).resolve(), ZOO_SPECS.resolve()):
        family = Path(file).stem
    else:
        return {}
    return dict(_zoo_names(family)) if family == model else {}


@functools.cache
def _zoo_names(family: str) -> tuple[tuple[str, str], ...]:
    path = ZOO_SPECS / f"{family}.names.json"
    if not path.is_file():
        return ()
    return tuple(sorted(json.loads(path.read_text(encoding="utf-8")).items()))


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False
