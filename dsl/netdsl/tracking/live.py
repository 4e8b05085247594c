"""`netdsl train --track URI` (and `netdsl.train(track=URI)`): a run pushed as it trains, through the
same code as `netdsl runs push`.

    tracker = Tracker("mlflow:sqlite:///mlflow.db")
    config.on_start = tracker.started(config.on_start)      # told the run folder
    config.callbacks.append(epoch_hook(tracker.epoch))      # after each epoch the keeper wrote
    ... run_training(config) ...
    tracker.finish()                                        # status, last epochs, artifacts

After each epoch (the run keeper has written history.csv by then: the hook sits after it) the run
folder is read back and pushed: the epochs the server lacks, the parameters, the status. The
artifacts go once, when the run ends. A tracking server that is down or refuses never fails the
run: one warning, no more tries until the run ends, then one more; the run folder stays the record
and a later `netdsl runs push` completes what is missing.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netdsl.errors import NetdslError
from netdsl.tracking.pushed import pushed_run, shown_uri
from netdsl.training.errors import DataWarning
from netdsl.training.run.record import open_run


class TrackingWarning(DataWarning):
    """A tracking server that could not be reached or refused: the run goes on (one line on the command line)."""


class Tracker:
    def __init__(self, uri: str, experiment: str = "netdsl"):
        from netdsl.tracking.push import open_target

        # a server that is down must not hold a run for minutes of retries (MLflow's default: 7, doubling)
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
        self.uri, self.experiment, self.open_target = uri, experiment, open_target
        self.target: Any = None
        self.folder: Path | None = None
        self.given_up = False  # after a failure: no more tries until the run ends

    @classmethod
    def attach(cls, uri: str, config: Any) -> Tracker:
        """A tracker for the run a `TrainConfig` describes: told its folder (`on_start`, chained) and each
        epoch (an epoch hook after the keeper); the caller calls `finish` when the run has ended."""
        from netdsl.tracking.push import check_uri
        from netdsl.training.run.epoch_hook import epoch_hook

        check_uri(uri, "--track")
        tracker = cls(uri)
        config.on_start = tracker.started(config.on_start)
        config.callbacks.append(epoch_hook(tracker.epoch))
        return tracker

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
        self.given_up = False
        self._push(artifacts=True)

    def _push(self, artifacts: bool) -> None:
        if self.folder is None:
            return
        try:
            if self.target is None:
                self.target = self.open_target(self.uri, self.experiment)
            self.target.live, self.target.artifacts = True, artifacts
            self.target.push(pushed_run(open_run(self.folder)))
        except (NetdslError, Exception) as exc:  # noqa: BLE001 - a tracking server down or refusing never fails a run
            self.given_up = True
            message = exc.text if hasattr(exc, "text") else f"{type(exc).__name__}: {exc}"
            warnings.warn(f"{shown_uri(self.uri)}: not tracked now ({message.splitlines()[0][:300]}); the run "
                          f"goes on, and `netdsl runs push {self.folder} --to URI` sends it later", TrackingWarning,
                          stacklevel=2)
