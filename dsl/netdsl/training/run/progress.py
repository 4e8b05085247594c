"""Progress a person can follow, on stderr.

`bar`: a bar per epoch, redrawn at most ten times a second (on a terminal);
`line`: one line per epoch (when stderr is not a terminal); `none`: nothing.
Only `bar` listens to batches: the others leave Keras free to run its
per-batch callbacks off the training thread.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import keras

from netdsl.training.run.report import logged_value, loss_first, shown_value


def resolve_mode(mode: str, stream: TextIO | None = None) -> str:
    if mode != "auto":
        return mode
    stream = stream or sys.stderr
    return "bar" if getattr(stream, "isatty", lambda: False)() else "line"


def progress_callback(mode: str, epochs: int, steps: int, stream: TextIO | None = None) -> Any:
    mode = resolve_mode(mode, stream)
    if mode == "none":
        return None
    cls = EpochBar if mode == "bar" else EpochLines
    return cls(epochs, steps, stream or sys.stderr)


def format_logs(logs: dict[str, Any]) -> str:
    train = loss_first([k for k in logs if not k.startswith("val_")])
    keys = train + [f"val_{k}" for k in train if f"val_{k}" in logs]
    values = {k: logged_value(logs[k]) for k in keys if k in logs}
    return "  ".join(f"{k} {shown_value(v, '.4g')}" for k, v in values.items() if isinstance(v, (int, float, list)))


class EpochLines(keras.callbacks.Callback):
    """`epoch 3/10  loss 0.3012  accuracy 0.91  val_loss 0.2954  val_accuracy 0.92  (2.1 s)`"""

    def __init__(self, epochs: int, steps: int, stream: TextIO):
        super().__init__()
        self.epochs, self.steps, self.stream = epochs, steps, stream
        self._start = 0.0

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        seconds = time.perf_counter() - self._start
        self._write(f"epoch {epoch + 1}/{self.epochs}  {format_logs(logs or {})}  ({seconds:.1f} s)\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class EpochBar(EpochLines):
    """`epoch 3/10 [=========>          ] 512/1875  loss 0.3012` redrawn in place."""

    WIDTH = 24

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        super().on_epoch_begin(epoch, logs)
        self._epoch, self._drawn = epoch, 0.0

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        now = time.perf_counter()
        if now - self._drawn < 0.1 and batch + 1 < self.steps:
            return
        self._drawn = now
        done = min(batch + 1, self.steps) if self.steps else batch + 1
        filled = int(self.WIDTH * done / self.steps) if self.steps else 0
        bar = "=" * max(filled - 1, 0) + (">" if filled else "") + " " * (self.WIDTH - filled)
        loss = f"  loss {logs['loss']:.4g}" if logs and isinstance(logs.get("loss"), (int, float)) else ""
        self._write(f"\r\x1b[2Kepoch {self._epoch + 1}/{self.epochs} [{bar}] {done}/{self.steps}{loss}")

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._write("\r\x1b[2K")
        super().on_epoch_end(epoch, logs)
