"""One check of one open document: what `netdsl check` says about its text.

Runs in the worker thread, never on the message loop: it reads only its
arguments (the text, the overlay of open buffers taken when it was
scheduled), so it needs no locks.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from netdsl import pipeline
from netdsl.errors import Diagnostic, SpecError
from netdsl.files import Refused, read_regular
from netdsl.lsp.facts import GraphFacts
from netdsl.lsp.names import NameIndex, build_index
from netdsl.semantics.analysis import Analysis
from netdsl.semantics.estimates import fill_estimates
from netdsl.syntax.loader import Overlay, Program
from netdsl.syntax.parser import MAX_FILE_BYTES, decode_source

BOM = "\ufeff"


@dataclass
class Snapshot:
    """A document's text at one version, and what the checker made of it."""

    version: int
    text: str
    display: str
    diagnostics: list[Diagnostic]
    program: Program | None = None
    analysis: Analysis | None = None
    index: NameIndex | None = None
    seconds: float = 0.0
    files: set[Path] = field(default_factory=set)  # every file read, resolved: a change to one re-checks
    error: str | None = None  # a bug of netdsl's own met while checking, with its traceback, for the log
    facts: dict[str, GraphFacts] = field(default_factory=dict)  # per model, for hover and inlay hints

    @property
    def parsed(self) -> bool:
        return self.program is not None


class Abandoned(Exception):
    """The text changed while it was being checked: the rest of the work would be thrown away."""


@contextlib.contextmanager
def built_then_frozen():
    """No garbage collection while a check builds its objects, and none of them scanned after.

    A check of a 1,000-line spec makes some 100,000 objects. Collected as they
    come, or all at once when the collector is switched back on, they cost
    collections of up to 0.8 s, and a collection holds the interpreter: the
    message loop stopped answering hovers meanwhile. Frozen (`gc.freeze`),
    they are freed by reference counting like any object, and never scanned;
    `diagnostics.Checks` unfreezes and collects now and then, when the user pauses."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def check_text(
    text: str,
    version: int,
    display: str,
    real: Path,
    overlay: Overlay,
    include: Sequence[str] = (),
    wanted: Callable[[], bool] = lambda: True,
) -> Snapshot:
    """The diagnostics `netdsl check` prints for this text, with the program and graphs behind them.

    `wanted` is asked between stages; once it says no, `Abandoned` is raised."""
    with built_then_frozen():
        return _check_text(text, version, display, real, overlay, include, wanted)


def _check_text(
    text: str,
    version: int,
    display: str,
    real: Path,
    overlay: Overlay,
    include: Sequence[str],
    wanted: Callable[[], bool],
) -> Snapshot:
    start = time.perf_counter()
    snapshot = Snapshot(version, text, display, [])
    source = text[1:] if text.startswith(BOM) else text  # read_source drops it too
    try:
        _refuse_like_read_source(source, display, real)
    except SpecError as exc:
        snapshot.diagnostics = exc.diagnostics
    else:
        checked = pipeline.check(
            text=source, filename=display, include=include, real=real, overlay=overlay, loaded=lambda: _still(wanted)
        )
        snapshot.diagnostics = checked.diagnostics
        if checked.program is not None and checked.analysis is not None:  # read and checked
            snapshot.program = checked.program
            snapshot.analysis = checked.analysis
            snapshot.files = {real_of(name, display, real) for name in checked.program.files}
    if source is not text:  # columns of line 1 count the mark the editor still shows
        snapshot.diagnostics = [_shift_first_line(d, display) for d in snapshot.diagnostics]
    snapshot.seconds = time.perf_counter() - start
    return snapshot


def add_names(snapshot: Snapshot) -> Snapshot:
    """What navigation, hover and inlay hints read: the name index and each graph's facts.

    Built after the diagnostics are published (it is not needed for them)."""
    program, analysis = snapshot.program, snapshot.analysis  # set together, once the text is read and checked
    if program is not None and analysis is not None and snapshot.index is None:
        with built_then_frozen():
            _add_names(snapshot, program, analysis)
    return snapshot


def _add_names(snapshot: Snapshot, program: Program, analysis: Analysis) -> None:
    snapshot.index = build_index(program)
    for graph in analysis.graphs.values():
        fill_estimates(graph)  # parameter counts in pure Python, declared layers' included
    snapshot.facts = {name: GraphFacts(graph) for name, graph in analysis.graphs.items()}


def _still(wanted: Callable[[], bool]) -> None:
    if not wanted():
        raise Abandoned


def _refuse_like_read_source(text: str, display: str, real: Path) -> None:
    """What reading the file would have refused: too large, or (unchanged) not UTF-8 on disk."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise SpecError(
            Diagnostic.for_file(
                display, f"file is too large ({size:,} bytes); a spec may be at most {MAX_FILE_BYTES:,} bytes"
            )
        )
    if "\ufffd" not in text:
        return
    # An editor shows undecodable bytes as U+FFFD. While the buffer is the file
    # as shown, say what `netdsl check` says about the file: where the bad byte is.
    try:  # as the CLI reads it: a FIFO or a device would block the check worker or read forever
        data = read_regular(real, MAX_FILE_BYTES, "spec file")
    except Refused:
        return
    if data.decode("utf-8", "replace").lstrip(BOM) == text:
        decode_source(data, display)  # raises the invalid-byte diagnostic when there is one


def real_of(name: str, root_display: str, root_real: Path) -> Path:
    """Where an imported file's display name points (display names are relative to the root's)."""
    if name == root_display:
        return root_real
    relative = os.path.relpath(name, os.path.dirname(root_display) or ".")
    return (root_real.parent / relative).resolve()


def _shift_first_line(d: Diagnostic, display: str) -> Diagnostic:
    if d.file != display or d.line != 1:
        return d
    end_col = d.end_col + 1 if d.end_line == 1 else d.end_col
    return d.model_copy(update={"col": d.col + 1, "end_col": end_col})
