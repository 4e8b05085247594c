"""The callback that keeps a run's record while Keras trains: after each epoch the history
row, the best model, the checkpoint and the report, written as one uninterruptible step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from netdsl.training.data.tf_data import EpochOrder
from netdsl.training.run import checkpoint
from netdsl.training.run.report import RunWriter, logged_value
from netdsl.training.run.signals import StopSignals


class RunKeeper(keras.callbacks.Callback):
    """Sits after the spec's callbacks, so it saves their state as this epoch left it."""

    def __init__(
        self,
        writer: RunWriter,
        signals: StopSignals,
        spec_callbacks: list,
        order: EpochOrder | None,
        state: dict,
        report: Callable[[], dict],
        samples_per_epoch: int,
    ):
        super().__init__()
        self.writer, self.signals, self.spec_callbacks, self.order = writer, signals, spec_callbacks, order
        self.state = state  # epoch, history, best_val_loss, best_epoch, seconds, samples, epoch/write_seconds
        self.report, self.samples_per_epoch = report, samples_per_epoch
        self.restored: dict | None = None
        self.best_weights: list | None = None  # the best epoch's, for the test score (engine `_test`)
        self._started = 0.0

    def on_train_begin(self, logs: Any = None) -> None:
        if self.restored is not None:  # the spec's callbacks have just reset themselves
            checkpoint.apply_callback_state(self.spec_callbacks, self.restored)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        if self.order is not None:
            self.order.epoch = epoch  # before Keras opens the epoch's iterator: its shuffled order
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        state = self.state
        row = {"epoch": epoch + 1, **{k: logged_value(v) for k, v in (logs or {}).items()}}
        with self.signals.critical():
            state["history"].append(row)
            state["epoch"] = epoch + 1
            state["samples"] += self.samples_per_epoch
            val_loss = row.get("val_loss")
            if isinstance(val_loss, float) and not math.isnan(val_loss) and val_loss < state["best_val_loss"]:
                state["best_val_loss"], state["best_epoch"] = val_loss, epoch + 1
                self.writer.model(self.model, "best.keras")
                self.best_weights = self.model.get_weights()
            before_writes = time.perf_counter() - self._started
            state["seconds"] += before_writes
            state["epoch_seconds"].append(before_writes)
            if self.writer.folder is not None:
                self.writer.checkpoint(checkpoint.capture(self.model, self.spec_callbacks, state))
            self.writer.history(state["history"])
            self.writer.report(self.report())
        # The epoch's time includes what netdsl adds to it (the writes); the next write records it.
        total = time.perf_counter() - self._started
        state["seconds"] += total - before_writes
        state["epoch_seconds"][-1] = total
        state["write_seconds"].append(total - before_writes)
        if epoch + 1 < (self.params or {}).get("epochs", 0):
            self.signals.check()  # a stop asked for in this epoch and swallowed on its way (signals.py)


class TorchEpochSeed(keras.callbacks.Callback):
    """Keras' dropout on torch draws from torch's global generator when the layer has no seed of its
    own (on TensorFlow and JAX it draws from the layer's seed state, a model variable the checkpoint
    holds). Seeding that generator from (the run's seed, the epoch) as each epoch starts gives an epoch
    the same masks in a resumed run as in an uninterrupted one, as `EpochOrder` does for the order."""

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        import torch

        torch.manual_seed(int(np.random.default_rng([self.seed, epoch, 1]).integers(1, 2**62)))
