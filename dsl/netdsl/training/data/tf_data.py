"""tf.data pieces every data source shares: batches of row indices, the epoch's order, model structure.

A source picks its rows by index (`rows`, sorted). Without shuffling every
epoch reads them in that order, as `model.fit(x, y, shuffle=False)` does.
With shuffling, epoch `e` reads them in the order of
`numpy.random.default_rng([seed, e]).permutation(rows)`: it depends on the
seed and the epoch number only, so a resumed run reads epoch `e` exactly as
an uninterrupted one. The epoch number comes from `EpochOrder.epoch`, which
the engine sets at the start of each epoch (before Keras opens the epoch's
iterator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from netdsl.training.data.signature import Batch, Signature

AUTOTUNE = tf.data.AUTOTUNE


@dataclass
class EpochOrder:
    """The shuffled order of an epoch, from the run's seed and the epoch number."""

    seed: int
    epoch: int = 0

    def permutation(self, rows: np.ndarray) -> np.ndarray:
        return np.random.default_rng([self.seed, self.epoch]).permutation(rows)

    def epoch_seed(self) -> int:
        """One int64 seed per (seed, epoch), for sources that shuffle through a buffer."""
        return int(np.random.default_rng([self.seed, self.epoch]).integers(1, 2**62))


def once_per_epoch(compute: Callable[[], np.ndarray | int], shape: tuple[int, ...]) -> tf.data.Dataset:
    """A dataset of one int64 tensor, `compute()`d each time an iterator opens it (once per epoch).

    Not `tf.data.Dataset.from_generator`: on JAX a stream holding one doubled the CPU time
    of every training step (the small CNN of bench/bench_backends.py: 0.047 against 0.023
    CPU-s a step; `tf.numpy_function` here costs nothing measurable)."""

    def value(_: tf.Tensor) -> tf.Tensor:
        return tf.ensure_shape(
            tf.numpy_function(lambda: np.asarray(compute(), dtype=np.int64), [], tf.int64, stateful=True), shape
        )

    return tf.data.Dataset.from_tensors(np.int64(0)).map(value)


def index_batches(rows: np.ndarray, batch_size: int, order: EpochOrder | None) -> tf.data.Dataset:
    """A dataset of int64 index vectors, `batch_size` long (the last one may be shorter)."""
    rows = np.asarray(rows, dtype=np.int64)
    n = len(rows)
    if order is None:
        epoch = tf.data.Dataset.from_tensors(tf.constant(rows))
    else:
        epoch = once_per_epoch(lambda: order.permutation(rows), (n,))
    full = n // batch_size

    def slices(indices: tf.Tensor) -> tf.data.Dataset:
        batches = tf.data.Dataset.from_tensor_slices(tf.reshape(indices[: full * batch_size], (full, batch_size)))
        if n % batch_size:
            batches = batches.concatenate(tf.data.Dataset.from_tensors(indices[full * batch_size :]))
        return batches

    return epoch.flat_map(slices)


def model_structure(signature: Signature, inputs: dict[str, Any], targets: dict[str, Any] | None) -> Any:
    """(x, y) as Keras expects them: one tensor, or a tuple in the model's input/output order."""
    x = _one_or_tuple([inputs[name] for name in signature.input_names])
    if targets is None:
        return x
    return x, _one_or_tuple([targets[name] for name in signature.output_names])


def _one_or_tuple(values: list) -> Any:
    return values[0] if len(values) == 1 else tuple(values)


def finish(dataset: tf.data.Dataset, rows: int, batch_size: int) -> tf.data.Dataset:
    """Prefetch (the next batches are read while the model works on this one) and say the
    number of batches, so Keras knows an epoch's length from the first epoch on."""
    options = tf.data.Options()
    options.deterministic = True
    batches = -(-rows // batch_size)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    return dataset.with_options(options).prefetch(AUTOTUNE)


def numpy_batches(dataset: tf.data.Dataset, signature: Signature, with_targets: bool) -> Iterator[Batch]:
    """A source's tf.data pipeline (`model_structure`'s batches) as NumPy batches by name: the
    `batches` of a source that has no NumPy reader of its own (image folders, TFRecord files)."""
    for item in dataset.as_numpy_iterator():
        x, y = item if with_targets else (item, None)
        yield _named(signature.input_names, x), None if y is None else _named(signature.output_names, y)


def _named(names: list[str], values: Any) -> dict[str, np.ndarray]:
    """A batch as `model_structure` shaped it (one array, or a tuple in the model's order) -> {name: array}."""
    return dict(zip(names, values if isinstance(values, tuple) else (values,)))
