"""Ctrl-C (SIGINT) and SIGTERM stop a run cleanly.

While training, the signal raises `Stopped` at once (Python runs signal
handlers between two steps, so it lands at a step boundary), except inside
`critical()`, the writing of an epoch's state: there it waits for the
block to end, so the files on disk always form one consistent state. A run
stopped this way resumes from its last finished epoch.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

EXIT_STOPPED = 130  # a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it): resumable
SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


class Stopped(BaseException):
    """Training was asked to stop (Ctrl-C or SIGTERM).

    A BaseException, as KeyboardInterrupt is: the signal lands wherever Python is, and code there
    that catches `Exception` must not swallow it (TensorFlow's AutoGraph does, while it converts
    the data pipeline's functions: the run went on to its end and exited 0)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class StopSignals:
    """Installs the handlers for the `with` block (main thread only; elsewhere it does nothing)."""

    def __init__(self) -> None:
        self._depth = 0
        self._pending: int | None = None
        self._saved: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._saved[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self._depth:
            self._pending = signum
            return
        raise Stopped(signum)

    @contextlib.contextmanager
    def critical(self, closing: bool = False) -> Iterator[None]:
        """A block a stop request does not cut in two; the request is honoured when it ends —
        unless the block is `closing` the run, which then ends anyway."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._pending is not None:
                signum, self._pending = self._pending, None
                if not closing:
                    raise Stopped(signum)
