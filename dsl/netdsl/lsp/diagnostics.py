"""Diagnostics: debounced, checked off the message loop, published with their version.

Each change re-arms a per-document timer. When it fires, the newest text is
checked in the one worker thread (`checking.check_text`); a result whose
version is no longer the document's is dropped, since a newer check is
already on its way. The delay adapts to typing: while keys arrive faster
than `MAX_DELAY`, it is three times the gap between them, so a burst of
typing costs one check after its last key instead of one per key; the first
key after a pause waits a quarter of the document's last check, so that on a
big spec it does not start a long check the second key makes stale. A check
that becomes stale anyway stops at its next stage. The name index that
navigation and hover read is built after the diagnostics are out.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from lsprotocol import types

from netdsl.errors import Diagnostic, Span
from netdsl.lsp.checking import Abandoned, Snapshot, add_names, check_text, real_of
from netdsl.lsp.documents import Documents
from netdsl.lsp.positions import Lines

MIN_DELAY = 0.03  # seconds after a change before checking (no typing seen)
MAX_DELAY = 0.3  # the longest wait, however slow the typing
COLLECT_EVERY = 50  # checks between full garbage collections (each when the user pauses)
IDLE = 5.0  # seconds without a change that count as a pause (a full collection may take 0.3 s)
SOURCE = "netdsl"
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


class Checks:
    """The newest check of every open document, and the machinery that keeps it so."""

    def __init__(self, server, documents: Documents, include: Sequence[str] = ()):
        self.server = server
        self.documents = documents
        self.include = list(include)
        self.snapshots: dict[str, Snapshot] = {}  # the newest check of the current text, per uri
        self.parsed: dict[str, Snapshot] = {}  # the newest check whose text parsed (hover, completion)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="netdsl-check")
        self._lock: asyncio.Lock | None = None
        self._tasks: dict[str, asyncio.Task] = {}
        self._last_change: dict[str, float] = {}
        self._gap: dict[str, float] = {}
        self._cost: dict[str, float] = {}  # seconds the document's last check took
        self._reads: dict[str, set] = {}  # the files the document's last check read (resolved paths)
        self._waiters: dict[str, list[asyncio.Future]] = {}
        self._stored = 0

    # ------------------------------------------------------------ events
    def opened(self, uri: str) -> None:
        self.schedule(uri, 0.0)
        self._dependents_changed(uri, 0.0)

    def changed(self, uri: str) -> None:
        delay = self._delay(uri)
        self.schedule(uri, delay)
        self._dependents_changed(uri, delay)

    def saved(self, uri: str) -> None:
        self.schedule(uri, 0.0)  # files it imports may have changed on disk

    def closed(self, uri: str) -> None:
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        self.snapshots.pop(uri, None)
        self.parsed.pop(uri, None)
        self._last_change.pop(uri, None)
        self._gap.pop(uri, None)
        self._cost.pop(uri, None)
        self._reads.pop(uri, None)
        for waiter in self._waiters.pop(uri, []):
            if not waiter.done():
                waiter.set_result(None)
        self.documents.forget(uri)
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        self._dependents_changed(uri, 0.0)  # they now read the file on disk

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------ reading
    async def current(self, uri: str, timeout: float = 5.0) -> Snapshot | None:
        """The check of the document's current text, waiting for it if it is under way."""
        snapshot = self.snapshots.get(uri)
        if snapshot is not None and snapshot.version == self.documents.version(uri):
            return snapshot
        if not self.documents.is_open(uri):
            return None
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(uri, []).append(waiter)
        if uri not in self._tasks:
            self.schedule(uri, 0.0)
        try:
            return await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            return self.snapshots.get(uri)

    def latest(self, uri: str) -> Snapshot | None:
        """The newest check that parsed, maybe of an older text (typing goes on meanwhile)."""
        return self.parsed.get(uri) or self.snapshots.get(uri)

    async def latest_or_first(self, uri: str, timeout: float = 5.0) -> Snapshot | None:
        """`latest`, except for a document opened and not checked yet: its first check, waited for
        (its diagnostics are published before its names are indexed, so a request sent on the
        publication found nothing and completed keywords only)."""
        snapshot = self.latest(uri)
        if snapshot is None and self.documents.is_open(uri):
            return await self.current(uri, timeout)
        return snapshot

    # ------------------------------------------------------------ scheduling
    def _delay(self, uri: str) -> float:
        now = time.monotonic()
        last = self._last_change.get(uri)
        self._last_change[uri] = now
        if last is not None and now - last < MAX_DELAY:
            previous = self._gap.get(uri, now - last)
            self._gap[uri] = 0.5 * previous + 0.5 * (now - last)
        elif last is not None:
            self._gap.pop(uri, None)
        gap = self._gap.get(uri)
        wait = 3.0 * gap if gap is not None else 0.25 * self._cost.get(uri, 0.0)
        return min(MAX_DELAY, max(MIN_DELAY, wait))

    def schedule(self, uri: str, delay: float) -> None:
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        self._tasks[uri] = asyncio.get_running_loop().create_task(self._check_later(uri, delay))

    def _dependents_changed(self, uri: str, delay: float) -> None:
        real = self.documents.real(uri)
        for other, files in list(self._reads.items()):
            if other != uri and real in files and self.documents.is_open(other):
                self.schedule(other, delay)

    async def _check_later(self, uri: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            snapshot = await self._check(uri)
            if snapshot is None:
                return
            self._cost[uri] = snapshot.seconds
            if snapshot.parsed:
                self._reads[uri] = snapshot.files
            self.publish(uri, snapshot)
            self.server.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Log,
                    message=f"checked {snapshot.display} version {snapshot.version} in {snapshot.seconds:.3f} s",
                )
            )
            if snapshot.parsed:
                await self._in_worker(add_names, snapshot)
                if self.documents.version(uri) != snapshot.version:
                    return
            self._store(uri, snapshot)
        except (asyncio.CancelledError, Abandoned):
            return
        finally:
            if self._tasks.get(uri) is asyncio.current_task():
                del self._tasks[uri]

    async def _check(self, uri: str) -> Snapshot | None:
        """Check the document's text as it is when the worker is free; None once it is stale."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one check at a time; the text is read once it is this one's turn
            if not self.documents.is_open(uri):
                return None
            version, text = self.documents.version(uri), self.documents.text(uri)
            job = (
                text,
                version,
                self.documents.display(uri),
                self.documents.real(uri),
                self.documents.overlay().get,
                self.include,
                lambda: self.documents.version(uri) == version,
            )
            snapshot = await asyncio.get_running_loop().run_in_executor(self._executor, _check_safely, *job)
        # stale: the text changed while it was checked, and that change scheduled a newer check
        return snapshot if self.documents.version(uri) == version else None

    async def _in_worker(self, function, *args):
        async with self._lock:
            return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def _store(self, uri: str, snapshot: Snapshot) -> None:
        self.snapshots[uri] = snapshot
        if snapshot.parsed:
            self.parsed[uri] = snapshot
        self._keep_out_of_gc()
        for waiter in self._waiters.pop(uri, []):
            if not waiter.done():
                waiter.set_result(snapshot)
        if snapshot.error:
            self.server.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=snapshot.error))

    def _keep_out_of_gc(self) -> None:
        """Keep the checks' objects out of the collector's sight (see `checking.built_then_frozen`).

        What only a collection can free (cycles: about 1,000 objects per check
        of specs/transformer.net, none for most specs) is collected every
        COLLECT_EVERY checks, once the user pauses."""
        gc.freeze()
        self._stored += 1
        if self._stored % COLLECT_EVERY == 0:
            asyncio.get_running_loop().call_later(IDLE, self._collect_when_idle)

    def _collect_when_idle(self) -> None:
        if self._tasks or any(time.monotonic() - t < IDLE for t in self._last_change.values()):
            asyncio.get_running_loop().call_later(IDLE, self._collect_when_idle)
            return
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    # ------------------------------------------------------------ publishing
    def publish(self, uri: str, snapshot: Snapshot) -> None:
        lines = Lines(snapshot.text, self.documents.encoding)
        diagnostics = [to_lsp(d, snapshot, lines, self.documents.real(uri)) for d in snapshot.diagnostics]
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=snapshot.version)
        )
        if _refresh_supported(self.server, "inlay_hint"):
            self.server.workspace_inlay_hint_refresh(None)


def _check_safely(text, version, display, real, overlay, include, wanted) -> Snapshot:
    """check_text, with a bug of netdsl's own reported as one diagnostic instead of a dead server."""
    try:
        return check_text(text, version, display, real, overlay, include, wanted)
    except Abandoned:
        raise
    except RecursionError:
        message = "spec nested too deeply to check"
    except Exception as exc:  # a bug in netdsl: keep serving, say so once, keep the details in the log
        message = f"internal error in netdsl's checker ({type(exc).__name__}: {exc}); please report it"
    snapshot = Snapshot(version, text, display, [Diagnostic.for_file(display, message)])
    snapshot.error = f"{message}\n{traceback.format_exc()}"
    return snapshot


def to_lsp(d: Diagnostic, snapshot: Snapshot, lines: Lines, real) -> types.Diagnostic:
    """The LSP form of a `netdsl check` diagnostic: same text (message; hint), client columns.

    A diagnostic in an imported file is shown on the import that leads to it,
    its own place given as related information."""
    severity = _SEVERITY.get(d.severity, types.DiagnosticSeverity.Error)
    if d.file == snapshot.display:
        rng = lines.range(_span(d))
        return types.Diagnostic(range=rng, message=d.text, severity=severity, source=SOURCE)
    anchor = _import_line(snapshot, d.file)
    line_text = lines.line(anchor)
    rng = lines.range(_line_span(d.file, anchor, line_text))
    where = types.Location(uri=_uri_of(d.file, snapshot, real), range=_other_file_range(d))
    return types.Diagnostic(
        range=rng,
        message=f"{d.file}:{d.line}:{d.col}: {d.text}",
        severity=severity,
        source=SOURCE,
        related_information=[types.DiagnosticRelatedInformation(location=where, message=d.text)],
    )


def _span(d: Diagnostic) -> Span:
    return Span.model_construct(file=d.file, line=d.line, col=d.col, end_line=d.end_line, end_col=d.end_col)


def _line_span(file: str, line: int, text: str) -> Span:
    start = len(text) - len(text.lstrip())
    return Span.at(file, line, start + 1, max(len(text.rstrip()) - start, 1))


def _other_file_range(d: Diagnostic) -> types.Range:
    """Code-point columns: the file is not open here, so its text (and UTF-16 columns) are not at hand."""
    return types.Range(
        start=types.Position(line=d.line - 1, character=d.col - 1),
        end=types.Position(line=d.end_line - 1, character=d.end_col - 1),
    )


def _import_line(snapshot: Snapshot, file: str) -> int:
    """The line of the root file's import that leads (maybe through others) to `file`."""
    program = snapshot.program
    root = snapshot.display
    if program is not None:
        for link in program.imports.get(root, []):
            if _reaches(program.imports, link.target, file, set()):
                return link.decl.span.line
    for number, line in enumerate(snapshot.text.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("import") and '"' in stripped:
            path = stripped.split('"')[1]
            if os.path.normpath(os.path.join(os.path.dirname(root), path)) == file:
                return number
    return 1


def _reaches(imports: dict, start: str, goal: str, seen: set[str]) -> bool:
    if start == goal:
        return True
    seen.add(start)
    return any(
        link.target not in seen and _reaches(imports, link.target, goal, seen) for link in imports.get(start, [])
    )


def _uri_of(file: str, snapshot: Snapshot, real) -> str:
    return real_of(file, snapshot.display, real).as_uri()


def _refresh_supported(server, feature: str) -> bool:
    try:
        workspace = server.client_capabilities.workspace
        capability = getattr(workspace, f"{feature}", None) if workspace else None
        return bool(capability and capability.refresh_support)
    except Exception:  # capabilities not negotiated yet
        return False
