"""Ctrl-C (SIGINT) and SIGTERM stop a run cleanly.

While training, the signal raises `Stopped` at once (Python runs signal
handlers between two steps, so it lands at a step boundary), except inside
`critical()`, the writing of an epoch's state: there it waits for the
block to end, so the files on disk always form one consistent state. A run
stopped this way resumes from its last finished epoch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
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
    """Installs the handlers for the `with` block (main thread only; elsewhere it does nothing).

    A signal's exception is raised wherever Python is, and a few places swallow whatever is raised
    in them: a garbage-collector callback (JAX registers one), a `__del__`, a weakref callback.
    Python reports such an exception to `sys.unraisablehook` and goes on, so a Ctrl-C landing there
    was printed as "Exception ignored in: ..." and the run trained to its end and exited 0. While
    the block runs, netdsl's hook prints nothing for a swallowed stop and sends the signal again a
    moment later (it lands in the code that was interrupted); `check()` at each epoch's end is the
    backstop: a stop asked for is never lost."""

    def __init__(self) -> None:
        self._depth = 0
        self._pending: int | None = None
        self._requested: int | None = None
        self._saved: dict[int, Any] = {}
        self._saved_hook: Any = None
        self._resend: threading.Timer | None = None  # a swallowed stop, on its way again

    def __enter__(self) -> StopSignals:
        self._requested = None
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._saved[signum] = signal.signal(signum, self._handle)
            self._saved_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._resend is not None:  # the run has ended: the stop has nothing left to stop
            self._resend.cancel()
            self._resend = None
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved.clear()
        if self._saved_hook is not None:
            sys.unraisablehook, self._saved_hook = self._saved_hook, None

    def _handle(self, signum: int, frame: Any) -> None:
        self._requested = signum
        if self._depth:
            self._pending = signum
            return
        raise Stopped(signum)

    def _unraisable(self, unraisable: Any) -> None:
        """A stop raised where Python swallows exceptions: sent again a moment later, from another thread,
        so that it lands once this hook has returned to the interrupted code (sent from here, its
        handler would run inside the hook, which swallows too)."""
        if isinstance(unraisable.exc_value, Stopped) and self._saved:
            self._resend = threading.Timer(0.01, os.kill, (os.getpid(), unraisable.exc_value.signum))
            self._resend.daemon = True
            self._resend.start()
            return
        self._saved_hook(unraisable)

    def check(self) -> None:
        """Raise the stop asked for, if one was and it has not ended the run yet (outside `critical()`)."""
        if self._requested is not None and not self._depth:
            raise Stopped(self._requested)

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
