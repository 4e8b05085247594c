"""What Keras is fed: a tf.data pipeline on TensorFlow, batches netdsl makes itself on JAX and torch.

    feed(part.source, part.rows, batch_size=32, order=EpochOrder(7))

On TensorFlow a source's tf.data pipeline (`DataSource.dataset`) runs inside
the training graph's input stage, as Keras expects. On JAX and torch Keras
would pull that pipeline through a generator of its own
(`tf_dataset_adapter.get_jax_iterator`), converting every batch from
TensorFlow, and keep the previous epoch's generator — with the tf.data
iterator and its prefetch threads inside — alive until the next epoch's
first batch replaces it. Finalizing it there is where `netdsl train` on JAX
stalled 1–20 s of wall time with no thread of the process running
(docs/training.md, "Speed"). So on those backends netdsl hands Keras a
`keras.utils.PyDataset` it owns:

- `RowBatches`: sources held as arrays (`.npz`, `.csv`, arrays) gather each
  batch's rows in NumPy, in the epoch's order (`EpochOrder`: the same batches
  as the tf.data pipeline gives, so a run's curve does not depend on how it is
  fed); no TensorFlow runs while training.
- `PipelineBatches`: sources only TensorFlow can decode (image folders,
  TFRecord files) read their pipeline in order, and the epoch's iterator is
  closed at the epoch's end (`on_epoch_end`), not left to Keras.

Both make batches on the training thread (one worker, no queue), so the
shuffled order is read after the engine has set the epoch's number.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import keras
import numpy as np

from netdsl.backend import profiles
from netdsl.training.data.signature import Batch, Signature
from netdsl.training.data.tf_data import EpochOrder, model_structure

if TYPE_CHECKING:
    from netdsl.training.data.source import DataSource


@runtime_checkable
class RowSource(Protocol):
    """A source that can give any rows at once, in NumPy (`arrays.ArraySource`)."""

    signature: Signature

    def take(self, index: np.ndarray, with_targets: bool = True) -> Batch: ...


def feed(
    source: DataSource, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True
) -> Any:
    """The rows `rows` of `source` in batches, as the running Keras backend is best fed them."""
    profile = profiles.get(keras.backend.backend())
    if profile is not None and profile.feed == "tf.data":
        return source.dataset(rows, batch_size, order, with_targets)
    if isinstance(source, RowSource):
        return RowBatches(source, rows, batch_size, order, with_targets)
    return PipelineBatches(source.dataset(rows, batch_size, order, with_targets), len(rows), batch_size, with_targets)


class _EpochBatches(keras.utils.PyDataset):
    """`num_batches` batches an epoch, made when Keras asks for them (in order: it never shuffles them)."""

    def __init__(self, rows: int, batch_size: int, with_targets: bool):
        super().__init__()  # one worker, no queue: on the training thread, after the epoch's number is set
        self.rows, self.batch_size, self.with_targets = rows, batch_size, with_targets

    @property
    def num_batches(self) -> int:
        return math.ceil(self.rows / self.batch_size)

    def _keras_batch(self, x_and_y: Any) -> tuple:
        """(x, y) to train and evaluate, (x,) to predict: several inputs alone, a tuple, would read as (x, y)."""
        return x_and_y if self.with_targets else (x_and_y,)


class RowBatches(_EpochBatches):
    """Batches gathered from arrays by row index, in the epoch's order."""

    def __init__(
        self, source: RowSource, rows: np.ndarray, batch_size: int, order: EpochOrder | None, with_targets: bool
    ):
        super().__init__(len(rows), batch_size, with_targets)
        self.source, self.order = source, order
        self._rows = np.asarray(rows, dtype=np.int64)
        self._epoch: tuple[int, np.ndarray] | None = None  # (epoch number, its order of the rows)

    def __getitem__(self, index: int) -> tuple:
        start = index * self.batch_size
        inputs, targets = self.source.take(self._epoch_rows()[start : start + self.batch_size], self.with_targets)
        return self._keras_batch(model_structure(self.source.signature, inputs, targets))

    def _epoch_rows(self) -> np.ndarray:
        if self.order is None:
            return self._rows
        if self._epoch is None or self._epoch[0] != self.order.epoch:
            self._epoch = (self.order.epoch, self.order.permutation(self._rows))
        return self._epoch[1]


class PipelineBatches(_EpochBatches):
    """A tf.data pipeline's batches, read in order; each epoch's iterator is opened at its first
    batch and let go at its end, so nothing of TensorFlow's is left running between epochs."""

    def __init__(self, dataset: Any, rows: int, batch_size: int, with_targets: bool):
        super().__init__(rows, batch_size, with_targets)
        self._dataset = dataset
        self._iterator: Any = None
        self._next = 0

    def __getitem__(self, index: int) -> tuple:
        if index == 0 or self._iterator is None:
            self._close()
            self._iterator, self._next = self._dataset.as_numpy_iterator(), 0
        if index != self._next:
            raise RuntimeError(f"batch {index} asked for after batch {self._next - 1}: the pipeline reads in order")
        self._next += 1
        return self._keras_batch(next(self._iterator))

    def on_epoch_end(self) -> None:
        self._close()

    def _close(self) -> None:
        self._iterator, self._next = None, 0
