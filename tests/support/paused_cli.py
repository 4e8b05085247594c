"""`python -m netdsl.cli ARGS`, stopped by itself at a chosen step: a moment a test can act on however busy
the machine is.

    python -m tests.support.paused_cli EPOCH BATCH ARGS...

runs the command line ARGS as `python -m netdsl.cli ARGS` does, with one Keras callback more: when the
first training step at or after BATCH (from 0) of epoch EPOCH (from 1) begins (Keras
reports the first step of each execution), the process sends itself SIGSTOP. The test
waits until the kernel says it is stopped (`wait_until_stopped`), then kills it, interrupts it, or leaves
it frozen, at exactly that step. Watching history.csv for an epoch and signalling when it appeared was a
race: on a loaded machine a 0.4 s epoch ended before the signal arrived, and the test saw one epoch more
than it expected.
"""

from __future__ import annotations

import importlib.abc
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STOPPED_STATES = frozenset("Tt")  # /proc/PID/stat: stopped by a signal, or by a tracer


def command(epoch: int, batch: int, *args: str) -> list[str]:
    """The command line that runs `netdsl ARGS` stopping itself at step `batch` of epoch `epoch`."""
    return [sys.executable, "-m", "tests.support.paused_cli", str(epoch), str(batch), *args]


def state(pid: int) -> str | None:
    """The process's state letter from /proc (R, S, T, Z, ...); None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]  # after the command name, which may hold spaces and parentheses


def wait_until_stopped(pid: int, timeout: float = 120) -> None:
    """Return once process `pid` is stopped; AssertionError if it ends or runs on past `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = state(pid)
        if now in STOPPED_STATES:
            return
        if now is None or now == "Z":
            raise AssertionError(f"process {pid} ended before it reached its stopping step")
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not reach its stopping step in {timeout} s")


def _stop_at(epoch: int, batch: int) -> None:
    """Give every `fit` of this process (netdsl's training runs) the stopping callback, last."""
    import keras

    class StopHere(keras.callbacks.Callback):
        def on_epoch_begin(self, index: int, logs: Any = None) -> None:
            self.epoch = index + 1

        def on_train_batch_begin(self, step: int, logs: Any = None) -> None:
            # Keras calls it once per execution: with 32 steps an execution, at steps 0, 32, 64, ...
            if getattr(self, "epoch", 0) == epoch and step >= batch and not getattr(self, "stopped", False):
                self.stopped = True
                sys.stdout.flush()
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGSTOP)

    fit = keras.Model.fit

    def fit_stopping(model: keras.Model, *args: Any, callbacks: Any = None, **kwargs: Any) -> Any:
        return fit(model, *args, callbacks=[*(callbacks or []), StopHere()], **kwargs)

    keras.Model.fit = fit_stopping  # type: ignore[method-assign]


class _AfterKeras:
    """A meta-path finder for `keras` alone: runs `then` once Keras has loaded (on the backend netdsl picks for
    the command: importing Keras here first would pick it instead)."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "keras":
            return None
        # Not removed yet: TensorFlow asks `importlib.util.find_spec("keras")` without importing it.
        index = sys.meta_path.index(self)
        spec = next(s for s in (f.find_spec(fullname, path, target) for f in sys.meta_path[index + 1 :]) if s)
        loader, finder = spec.loader, self

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                if finder in sys.meta_path:
                    sys.meta_path.remove(finder)
                    finder.then()

        spec.loader = Loader()
        return spec


def main(argv: list[str]) -> None:
    epoch, batch, *args = argv
    sys.argv = ["netdsl", *args]
    sys.meta_path.insert(0, _AfterKeras(lambda: _stop_at(int(epoch), int(batch))))
    import runpy

    runpy.run_module("netdsl.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
