"""`netdsl train --track URI` / `netdsl sweep --track URI` (and `track=` in the library): a run or a
sweep pushed as it trains, through the same code as `netdsl runs push`.

    tracker = Tracker.attach(uri, config)         # a TrainConfig: told its run folder, then each epoch
    tracker = Tracker.attach_sweep(uri, config)   # a SweepConfig: each epoch of each trial
    ... run_training(config) / run_sweep(config) ...
    tracker.finish()                              # status, last epochs, artifacts

After each epoch (the run keeper has written history.csv by then: the hook sits after it) the
folder is read back and pushed: the epochs the server lacks, the parameters, the status. The
artifacts go once, when the run ends (a sweep's trial: once it has ended). With `--workers K` the
trials train in other processes, which track nothing (two processes would create one run twice):
the starting process looks at the trials folder every `WATCH_SECONDS` while they work and pushes
the sweep whenever a trial's history or report changed. A tracking server that is down or refuses never fails the
run: one warning line, no more tries until the run ends, then one more (silent); the folder stays
the record and a later `netdsl runs push` completes what is missing, adding nothing twice.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netdsl.errors import printable
from netdsl.tracking.found import open_sweep
from netdsl.tracking.push import quick_failing
from netdsl.tracking.pushed import Pushed, pushed_run, pushed_sweep, shown_uri
from netdsl.training.errors import DataWarning
from netdsl.training.run.record import open_run

WATCH_SECONDS = 2.0  # how often the starting process of `--workers K` looks at its workers' trials


class TrackingWarning(DataWarning):
    """A tracking server that could not be reached or refused: the run goes on (one line on the command line)."""


class Tracker:
    def __init__(self, uri: str, read: Callable[[Path], Pushed], what: str, experiment: str = "netdsl"):
        self.uri, self.read, self.what, self.experiment = uri, read, what, experiment
        self.target: Any = None
        self.folder: Path | None = None
        self.given_up = False  # after a failure: no more tries until the run ends
        self.warned = False  # one warning a run, however often the server fails
        self.lock = threading.Lock()  # one push at a time: the epoch hook's and the watcher's
        self.watcher: tuple[threading.Thread, threading.Event] | None = None

    @classmethod
    def attach(cls, uri: str, config: Any) -> Tracker:
        """A tracker for the run a `TrainConfig` describes: told its folder (`on_start`, chained) and each
        epoch (an epoch hook after the keeper); the caller calls `finish` when the run has ended."""
        from netdsl.tracking.push import check_uri
        from netdsl.training.run.epoch_hook import epoch_hook

        check_uri(uri, "--track")
        tracker = cls(uri, lambda folder: pushed_run(open_run(folder)), "run")
        config.on_start = tracker.started(config.on_start)
        config.callbacks.append(epoch_hook(tracker.epoch))
        return tracker

    @classmethod
    def attach_sweep(cls, uri: str, config: Any) -> Tracker:
        """A tracker for the sweep a `SweepConfig` describes (its folder made): the whole sweep pushed after
        each epoch of each trial this process trains; the caller calls `finish` when the sweep has ended."""
        from netdsl.tracking.push import check_uri
        from netdsl.training.run.epoch_hook import epoch_hook

        check_uri(uri, "--track")
        tracker = cls(uri, lambda folder: pushed_sweep(open_sweep(folder)), "sweep")
        tracker.folder = config.folder.path
        config.request.callbacks.append(epoch_hook(tracker.epoch))
        if config.request.workers > 1 and config.request.join is None:  # its trials train in the workers
            tracker.watch(config.folder.trials)
        return tracker

    def watch(self, trials: Path) -> None:
        """Push whenever a trial under `trials` changed (its history.csv or report.json), looking every
        WATCH_SECONDS in a thread of this process until `finish`."""
        stop = threading.Event()

        def look() -> None:
            seen = _state(trials)
            while not stop.wait(WATCH_SECONDS):
                now = _state(trials)
                if now != seen and not self.given_up:
                    seen = now
                    self._push(artifacts=False)

        thread = threading.Thread(target=look, name="netdsl-track-workers", daemon=True)
        self.watcher = (thread, stop)
        thread.start()

    def started(self, then: Callable[[Path, int], None] | None) -> Callable[[Path, int], None]:
        """An `on_start` that keeps the run folder, then calls `then` (the CLI's announcement)."""

        def on_start(folder: Path, first_epoch: int) -> None:
            self.folder = folder
            if then is not None:
                then(folder, first_epoch)

        return on_start

    def epoch(self, epoch: int, logs: dict[str, Any]) -> None:
        """epoch_hook's listener: push what the folder holds now (never stops the run)."""
        if not self.given_up:
            self._push(artifacts=False)

    def finish(self) -> None:
        """The run ended (finished, stopped or failed): push it whole, once more even after a failure."""
        if self.watcher is not None:
            thread, stop = self.watcher
            stop.set()
            thread.join()
            self.watcher = None
        self.given_up = False
        self._push(artifacts=True)

    def _push(self, artifacts: bool) -> None:
        with self.lock:
            self._push_now(artifacts)

    def _push_now(self, artifacts: bool) -> None:
        if self.folder is None:  # a process of --processes N that writes no folder, or a run that never started
            return
        try:
            with quick_failing(retries=0):  # one try a push (a failed one is tried again when the run ends)
                if self.target is None:
                    from netdsl.tracking.push import open_target

                    self.target = open_target(self.uri, self.experiment)
                self.target.live, self.target.artifacts = True, artifacts
                count = self.target.push(self.read(self.folder))
        except Exception as exc:  # noqa: BLE001 - a tracking server down or refusing never fails a run
            self.given_up = True
            if not self.warned:
                self.warned = True
                reason = str(getattr(exc, "message", "") or f"{type(exc).__name__}: {exc}")  # RunError's: no file
                warnings.warn(
                    f"{shown_uri(self.uri)}: not tracked ({printable(reason.splitlines()[0][:300])}); "
                    f"the {self.what} goes on, and `netdsl runs push {printable(self.folder)} --to URI` "
                    f"completes it later",
                    TrackingWarning,
                    stacklevel=2,
                )
            return
        for line in count.warnings:  # what was sent without (a diagram whose spec changed meanwhile)
            warnings.warn(line, TrackingWarning, stacklevel=2)


def _state(trials: Path) -> list[tuple[str, int, int]]:
    """What the trials' histories and reports are now (name, size, time), to tell whether one changed."""
    found = []
    with contextlib.suppress(OSError):
        for entry in sorted(os.scandir(trials), key=lambda e: e.name):
            for name in ("history.csv", "report.json"):
                with contextlib.suppress(OSError):
                    info = os.stat(os.path.join(entry.path, name), follow_symlinks=False)
                    found.append((f"{entry.name}/{name}", info.st_size, info.st_mtime_ns))
    return found
