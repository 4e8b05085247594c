"""Source positions, diagnostics, and every error type netdsl raises, under one root.

A `Diagnostic` is data (printable as text or JSON); `SpecError` carries a list
of them so that all the errors of a file reach the user in one run.

    NetdslError            the root: `except NetdslError` catches anything netdsl raises on purpose
    ├── SpecError          what a user sees: diagnostics (+ the source text to show them)
    ├── Fail               inside a stage: one diagnostic, caught at the statement that caused it
    │   │                  (`Fail.reported()`: none, the error was reported where it happened)
    │   └── CyclicDefinition  a constant defined in terms of itself (each constant of the cycle reports it)
    ├── Exhausted          a check ran past one of its budgets (netdsl.limits): one diagnostic, the check stops
    ├── BuildError         a backend refused a layer's arguments or inputs (becomes a Fail)
    ├── LayoutError        the parser's bracket/newline layout refused a token
    ├── RenderError        a diagram could not be made as an image (DotNotFound, DotFailed)
    ├── BackendError       the Keras backend asked for cannot be had in this process
    ├── UsageError         a function or command asked for something that cannot work (spec text given as a path)
    └── ReportedError      one line a user caused outside a spec: `FILE[:LINE[:COL]]: error: MESSAGE`, exit 1
        ├── DataError      the data does not fit the model
        ├── RunError       a run folder cannot be made, found, locked or resumed
        ├── ExportError    an export cannot be written
        │   └── VerifyFailed  the exported file computes something else than the Keras model
        └── ScoringError   (scoring/) targets a metric cannot be computed on

`TrainingError` (training/errors.py) is the old name of `ReportedError`, kept for one release.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Span(BaseModel):
    """Where a piece of source text is: 1-based line and column, end exclusive."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    @classmethod
    def at(cls, file: str, line: int, col: int, length: int = 1) -> Span:
        return cls.model_construct(file=file, line=line, col=col, end_line=line, end_col=col + max(length, 1))


class Diagnostic(BaseModel):
    """One problem in a spec: where (1-based line and column, end exclusive), how bad, what, and a hint."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    severity: Literal["error", "warning"] = "error"
    message: str
    hint: str | None = None

    @classmethod
    def at(
        cls, span: Span, message: str, hint: str | None = None, severity: Literal["error", "warning"] = "error"
    ) -> Diagnostic:
        # Built from a Span and netdsl's own text: nothing to validate (pydantic's validation
        # took 4 s of a 37 s profile of a file that declares one name 200,000 times), and made
        # as `model_construct` makes it, without its per-field lookups (a third of the rest).
        diagnostic: Diagnostic = _new_object(cls)
        _set_dict(
            diagnostic,
            {
                "file": span.file,
                "line": span.line,
                "col": span.col,
                "end_line": span.end_line,
                "end_col": span.end_col,
                "severity": severity,
                "message": message,
                "hint": hint,
            },
        )
        _set_fields_set(diagnostic, _DIAGNOSTIC_FIELDS)
        _set_extra(diagnostic, None)
        _set_private(diagnostic, None)
        return diagnostic

    @classmethod
    def for_file(cls, file: str, message: str, hint: str | None = None) -> Diagnostic:
        """A file-level error (unreadable, too large, not UTF-8 at an unknown place)."""
        return cls(file=file, line=1, col=1, end_line=1, end_col=1, message=message, hint=hint)

    @property
    def text(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


# What `Diagnostic.model_construct` sets, set directly: BaseModel's four slots. The models are
# frozen, so every diagnostic shares one fields-set (pydantic copies it before any change).
_new_object = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_DIAGNOSTIC_FIELDS = set(Diagnostic.model_fields)


class NetdslError(Exception):
    """The root of every error netdsl raises on purpose."""

    # The folder of the training run this error ended (status: failed), where one was made:
    # set as the error leaves the run (training/run/engine.py), printed by the CLI after the error.
    run_dir: Path | None = None


class SpecError(NetdslError):
    """A spec could not be read, checked or built. `.diagnostics` says why."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic, sources: Sources | None = None):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        self.sources = sources  # the text of the files, for printing source lines
        super().__init__("\n".join(f"{d.file}:{d.line}:{d.col}: {d.severity}: {d.text}" for d in self.diagnostics))


class Fail(NetdslError):
    """A diagnostic raised inside a stage, caught at the statement that caused it.

    `Fail.reported()` is the one without a diagnostic: what it stops (a use of a
    constant, a block or a name whose own error was reported where it happened)
    adds nothing, so one mistake is reported once."""

    # Independent errors found with the first (every unknown keyword of one call):
    # reported together, so one run shows them all. Replaced, never changed in place.
    more: tuple[Diagnostic, ...] = ()
    # What to report; None for a `Fail.reported()`.
    diagnostic: Diagnostic | None

    def __init__(self, span: Span, message: str, hint: str | None = None):
        super().__init__(message)
        self.diagnostic = Diagnostic.at(span, message, hint)

    @classmethod
    def reported(cls) -> Fail:
        """A failure whose diagnostic was reported already: it stops what met it, and shows nothing."""
        fail = cls.__new__(cls)
        NetdslError.__init__(fail, "reported already")
        fail.diagnostic = None
        return fail

    @classmethod
    def of(cls, fails: list[Fail]) -> Fail:
        """One Fail carrying several: the first, and the others in `more`."""
        first = fails[0]
        first.more = first.more + tuple(d for f in fails[1:] for d in f.all_diagnostics())
        return first

    def all_diagnostics(self) -> list[Diagnostic]:
        """This Fail's diagnostic and those found with it (none for a silent, poisoned Fail)."""
        return ([self.diagnostic] if self.diagnostic is not None else []) + list(self.more)


class CyclicDefinition(Fail):
    """A constant defined in terms of itself. Unlike other failures it is not remembered
    as the constant's value: each constant of the cycle reports it from its own side."""


class Exhausted(NetdslError):
    """A check spent one of its budgets (`netdsl.limits`). Not a `Fail`: it is not
    caught at a statement (every later statement would spend more), but where the
    check began, which reports it once and stops."""

    def __init__(self, span: Span, message: str, hint: str | None = None):
        super().__init__(message)
        self.diagnostic = Diagnostic.at(span, message, hint)

    def moved(self, span: Span) -> Exhausted:
        """The same error at `span` (the use of the block where it was spent)."""
        return Exhausted(span, self.diagnostic.message, self.diagnostic.hint)


class BuildError(NetdslError):
    """Raised by a backend when a layer rejects its arguments or inputs."""


class BackendError(NetdslError):
    """The Keras backend asked for cannot be had in this process (not installed, or Keras
    already imported with another one: Keras picks its backend once, at import)."""


class UsageError(NetdslError):
    """netdsl was asked for something that cannot work: spec text passed where a path goes, two
    arguments that exclude each other, a bad flag, a missing optional package. The one usage error
    of every room; the CLI prints it as argparse does (`netdsl train: error: ...`) and exits 2.

    `str()` is the message and its hint, escaped (`printable`): one line."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        self.message, self.hint = message, hint
        super().__init__(message)

    def __str__(self) -> str:
        return printable(self.message) + (f"; {printable(self.hint)}" if self.hint else "")


class FileRefused(UsageError):
    """A file given by path (`--weights`, `--init-from`) that netdsl refuses for what it holds: a
    weights file that reads outside itself, declares more than it stores, or cannot be read. The
    CLI prints it as `PATH: error: MESSAGE` and exits 1, as for a spec's errors; a UsageError still."""

    exit_code = 1

    def __init__(self, file: str, message: str, hint: str | None = None):
        super().__init__(message, hint)
        self.file = file


class ReportedError(NetdslError):
    """Something a user caused outside a spec (the data, a run folder, an export, a file read or
    written); `str()` is the one line to print: `FILE[:LINE[:COL]]: error: MESSAGE[; HINT]`, every
    piece of outside text escaped (`printable`). The CLI prints it (after `netdsl CMD: ` when it names
    no file) and exits 1."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
    ):
        self.message, self.file, self.line, self.col, self.hint = message, file, line, col, hint
        super().__init__(self.text)

    @property
    def text(self) -> str:
        where = ""  # file names and messages may quote outside text (data values, column names): escaped
        if self.file is not None:
            where = printable(self.file)
            if self.line is not None:
                where += f":{self.line}" + (f":{self.col}" if self.col is not None else "")
            where += ": "
        return f"{where}error: {printable(self.message)}" + (f"; {printable(self.hint)}" if self.hint else "")

    def __str__(self) -> str:
        return self.text


class DataError(ReportedError):
    """The data does not fit the model: a missing array, a wrong shape, a cell that is not a number."""


class RunError(ReportedError):
    """A run folder that cannot be created, found, locked or resumed."""


class ExportError(ReportedError):
    """Something in the source or the output that stops an export; exit 1."""


class VerifyFailed(ExportError):
    """The exported file computes something else than the Keras model (beyond the format's tolerance)."""


class LightningError(NetdslError):
    """What `netdsl.lightning` cannot do with a spec or a batch (an optimizer without a torch
    equivalent, a batch without the spec's inputs); `str()` is one line saying why."""


class LayoutError(NetdslError):
    """The parser's layout pass refused a token (brackets nested too deep, one left open)."""

    def __init__(self, token: Any, message: str):
        super().__init__(message)
        self.token = token
        self.message = message


class RenderError(NetdslError):
    """A diagram could not be made as an image. `.path`: the `.dot` source written instead."""

    def __init__(self, message: str, path: Any):
        super().__init__(message)
        self.path = path


class DotNotFound(RenderError):
    """Graphviz's `dot` program is not installed; the `.dot` source was written instead."""


class DotFailed(RenderError):
    """`dot` ran but failed on this graph; the `.dot` source was written instead."""


class Sources:
    """The text of every file read in this run, for printing source lines."""

    def __init__(self, texts: dict[str, str] | None = None) -> None:
        self._lines: dict[str, list[str]] = {}
        for file, text in (texts or {}).items():
            self.add(file, text)

    def add(self, file: str, text: str) -> None:
        self._lines[file] = text.splitlines()

    def update(self, other: Sources | None) -> None:
        """Take in every file another `Sources` holds."""
        if other is not None:
            self._lines.update(other._lines)

    def line(self, file: str, line: int) -> str | None:
        lines = self._lines.get(file)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """`text` safe to print on a terminal: every character that is not printable (ESC, BEL, CR,
    newline, bidi controls, lone surrogates...) written as an escape (`\\x1b`, `\\n`, `\\u202e`),
    so that text from outside (spec strings, names read from a .keras file, messages from another
    process, data values) can neither move the cursor, recolour, retitle the terminal nor fake a
    line. Every printer of such text goes through here; printable text is returned unchanged."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _ESCAPES.get(c) or _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def render(diagnostic: Diagnostic, sources: Sources | None = None) -> str:
    """`path:line:col: error: message`, then the source line and a caret underline
    (the file name and the message escaped: `printable`)."""
    d = diagnostic
    head = f"{printable(d.file)}:{d.line}:{d.col}: {d.severity}: {printable(d.text)}"
    source_line = sources.line(d.file, d.line) if sources else None
    if source_line is None or not source_line.strip():
        return head
    shown, offset = _display_line(source_line)
    start = max(_display_width(source_line[: d.col - 1]) - offset, 0)
    if d.end_line == d.line:
        width = _display_width(source_line[d.col - 1 : d.end_col - 1])
    else:  # a span over several lines is underlined to the end of its first
        width = _display_width(source_line[d.col - 1 :].rstrip())
    shown, start, width = _window(shown, start, max(width, 1))
    return f"{head}\n  {shown}\n  {' ' * start}{'^' * width}"


def render_all(diagnostics: Iterable[Diagnostic], sources: Sources | None = None) -> str:
    return "\n".join(render(d, sources) for d in diagnostics)


def _display_line(line: str) -> tuple[str, int]:
    """The line as shown (tabs expanded, indentation dropped) and how much was dropped."""
    expanded = line.expandtabs(4)
    stripped = expanded.lstrip()
    shown = "".join(c if c.isprintable() else "?" for c in stripped.rstrip())
    return shown, len(expanded) - len(stripped)


MAX_SHOWN = 100


def _window(shown: str, start: int, width: int) -> tuple[str, int, int]:
    """Cut a very long source line down to the part around the caret."""
    if len(shown) <= MAX_SHOWN:
        return shown, start, width
    left = max(0, min(start - 20, len(shown) - MAX_SHOWN))
    cut = shown[left : left + MAX_SHOWN]
    prefix = "..." if left else ""
    suffix = "..." if left + MAX_SHOWN < len(shown) else ""
    start = start - left + len(prefix)
    width = max(1, min(width, MAX_SHOWN - (start - len(prefix))))
    return prefix + cut + suffix, start, width


def _display_width(text: str) -> int:
    return len(text.expandtabs(4))


# The suggestion work left in this context (see `suggestions_limited`), None: no limit.
_suggestion_budget: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "netdsl_suggestion_budget", default=None
)


@contextlib.contextmanager
def suggestions_limited(candidates: int) -> Iterator[None]:
    """Within this block `did_you_mean` looks at `candidates` names in all, then suggests
    nothing more: a spec with thousands of misspelt names among thousands of names
    checks in linear time (each suggestion compares a name with every candidate)."""
    token = _suggestion_budget.set([candidates])
    try:
        yield
    finally:
        _suggestion_budget.reset(token)


RESOURCE_ERRORS = (RecursionError, MemoryError)


def out_of_resources(exc: BaseException, file: str) -> Diagnostic:
    """The last resort for a RecursionError or MemoryError that no limit of
    `netdsl.limits` caught first: one line about the spec, never a traceback."""
    what = "nests too deeply" if isinstance(exc, RecursionError) else "needs more memory than there is"
    return Diagnostic.for_file(
        file,
        f"the spec {what} for netdsl to process it",
        "netdsl's limits should have refused it first: please report this spec",
    )


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """`did you mean 'dense'?` for the nearest candidate, or None when none is close.

    `candidates` may be lazy (a generator): it is not read once the suggestion
    budget of `suggestions_limited` is spent."""
    import difflib

    budget = _suggestion_budget.get()
    if budget is not None and budget[0] <= 0:
        return None
    unique = set(candidates)
    if budget is not None:
        budget[0] -= len(unique)
    # Only names of a length that can reach the cutoff (difflib's real_quick_ratio,
    # its first test) can be suggested: sort and compare those only.
    pool = sorted(c for c in unique if _close_in_length(c, name) or _close_in_length(c.lower(), name.lower()))
    lowered = {c.lower(): c for c in pool}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return f"did you mean '{lowered[name.lower()]}'?"
    close = difflib.get_close_matches(name, pool, n=1, cutoff=_CUTOFF)
    if not close:
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=_CUTOFF)
        close = [lowered[c] for c in close]
    return f"did you mean '{close[0]}'?" if close else None


_CUTOFF = 0.75

# Names a Python or Keras habit writes where a spec has its own word (`True` -> `true`).
_HABITS = {
    "True": "names are lowercase in a spec: write true",
    "False": "names are lowercase in a spec: write false",
    "None": "names are lowercase in a spec: write none",
    "Lambda": "a spec cannot run Python code; declare the function: activation NAME(x) = ...",
}


def habit_hint(name: str) -> str | None:
    """A hint for a name a Python habit writes (`True`, `None`, `Lambda`), or None."""
    return _HABITS.get(name)


# Keyword names of Keras 2 and PyTorch that Keras 3 spells otherwise.
_OLD_KEYWORDS = {
    "lr": "learning_rate",
    "nb_filter": "filters",
    "output_dim": "units",
    "border_mode": "padding",
    "subsample": "strides",
    "init": "kernel_initializer",
    "p": "rate",
    "in_features": "units",
    "out_features": "units",
    "out_channels": "filters",
    "stride": "strides",
    "eps": "epsilon",
}


def parameter_hint(name: str, known: Iterable[str]) -> str | None:
    """`did you mean 'learning_rate'?` for a keyword misspelt or spelt as in Keras 2 / PyTorch."""
    known = list(known)
    old = _OLD_KEYWORDS.get(name)
    if old is not None and old in known:
        return f"did you mean '{old}'?"
    return did_you_mean(name, known)


def _close_in_length(candidate: str, name: str) -> bool:
    """difflib's real_quick_ratio(candidate, name) >= the cutoff."""
    total = len(candidate) + len(name)
    return (2.0 * min(len(candidate), len(name)) / total if total else 1.0) >= _CUTOFF


def sort_diagnostics(diagnostics: Iterable[Diagnostic], file_order: list[str]) -> list[Diagnostic]:
    """Diagnostics without repeats, in file order (as the files were read), then line and column."""
    order = {name: i for i, name in enumerate(file_order)}
    seen, unique = set(), []
    for d in diagnostics:
        key = (d.file, d.line, d.col, d.message)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return sorted(unique, key=lambda d: (order.get(d.file, len(order)), d.line, d.col))
