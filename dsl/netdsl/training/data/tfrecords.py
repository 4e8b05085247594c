"""TFRecord files of `tf.train.Example`: one feature per spec input and output, by name.

The first record is read up front to check the features (present, numeric,
the right number of values), so a mismatch is reported before training,
not in the middle of it. Before TensorFlow opens the file, its record
headers are walked in Python (`count_records`: one 12-byte read and one
seek per record): a header whose CRC is wrong or whose length runs past the
end of the file is refused with one line, because TensorFlow's reader
crashes the process on such a length (issue 22). The walk also gives the
record count the split and the shuffle use.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator

import numpy as np
import tensorflow as tf

from netdsl.files import Refused, open_regular
from netdsl.training.data.signature import Batch, Signature, TensorSpec
from netdsl.training.data.tf_data import EpochOrder, finish, model_structure, numpy_batches, once_per_epoch
from netdsl.training.errors import DataError, tensorflow_message

SHUFFLE_BUFFER = 10_000
GRAPH_SEED = 1  # the shuffle's graph-level seed: fixed, so that the epoch's seed alone decides the order


def _shuffled_by(records: tf.data.Dataset, buffer: int) -> Callable[[tf.Tensor], tf.data.Dataset]:
    """The records shuffled by a seed tensor (the epoch's), the same whatever the process's global seed.

    TensorFlow mixes the global seed into every op seed; with a global seed of 0 (`--seed 0`)
    it then compares the tensor seed as a Python bool and refuses to trace the function
    (OperatorNotAllowedInGraphError). Setting the seed of the function's own graph, while
    it is traced, leaves the process's seed alone."""

    def shuffled(seed: tf.Tensor) -> tf.data.Dataset:
        tf.random.set_seed(GRAPH_SEED)
        return records.shuffle(buffer, seed=seed)

    return shuffled


class TFRecordSource:
    def __init__(self, path: str, signature: Signature, need_targets: bool):
        self.origin, self.signature = path, signature
        self.n = count_records(path)
        example = _first_example(path)
        features = example.features.feature
        self._inputs = {spec.name: _input_feature(path, spec, features) for spec in signature.inputs}
        present = [spec for spec in signature.outputs if spec.name in features]
        if need_targets or len(present) == len(signature.outputs):
            self._targets: dict[str, tuple] | None = {
                spec.name: _target_feature(path, spec, features) for spec in signature.outputs
            }
        else:
            self._targets = None
        self.classes: dict[str, tuple[str, ...]] = {}  # labels are numbers in a TFRecord file
        self.columns: dict[str, tuple[str, ...]] = {}

    @property
    def has_targets(self) -> bool:
        return self._targets is not None

    def row_names(self, rows: np.ndarray) -> list[str]:
        """A record by its index in the file."""
        return [str(i) for i in rows]

    def dataset(
        self, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True
    ) -> tf.data.Dataset:
        records = tf.data.TFRecordDataset(self.origin)
        if len(rows) != self.n:
            keep = np.zeros(self.n, dtype=bool)
            keep[rows] = True
            keep = tf.constant(keep)
            records = records.enumerate().filter(lambda i, _: tf.gather(keep, i)).map(lambda _, r: r)
        if order is not None:
            buffer = min(len(rows), SHUFFLE_BUFFER)
            seeds = once_per_epoch(order.epoch_seed, ())
            records = seeds.flat_map(_shuffled_by(records, buffer))
        wanted = {**self._inputs, **((self._targets or {}) if with_targets else {})}
        parse_spec = {name: tf.io.FixedLenFeature((size,), dtype) for name, (size, dtype, _, _) in wanted.items()}
        signature, inputs = self.signature, self._inputs
        targets = self._targets if with_targets else None

        def parse(batch: tf.Tensor):
            parsed = tf.io.parse_example(batch, parse_spec)

            def shaped(name: str, table: dict) -> tf.Tensor:
                _, _, shape, dtype = table[name]
                return tf.cast(tf.reshape(parsed[name], (-1, *shape)), dtype)

            x = {name: shaped(name, inputs) for name in inputs}
            y = None if targets is None else {name: shaped(name, targets) for name in targets}
            return model_structure(signature, x, y)

        return finish(records.batch(batch_size).map(parse, num_parallel_calls=tf.data.AUTOTUNE), len(rows), batch_size)

    def batches(self, rows: np.ndarray, batch_size: int, with_targets: bool = True) -> Iterator[Batch]:
        """The batches of `dataset`, as NumPy (read through tf.data: no NumPy reader of its own)."""
        return numpy_batches(self.dataset(rows, batch_size, with_targets=with_targets), self.signature, with_targets)


HEADER = struct.Struct("<QI")  # a record: length, masked CRC32C of the length, data, masked CRC32C of the data


def count_records(path: str) -> int:
    """The number of records of a TFRecord file whose every header is sound; DataError otherwise."""
    try:
        with open_regular(path, "TFRecord file") as fd:
            size = os.fstat(fd).st_size
            count = _walk(mmap.mmap(fd, size, access=mmap.ACCESS_READ), size, path) if size else 0
    except Refused as exc:
        raise DataError(str(exc), file=path) from None
    except OSError as exc:
        raise DataError(f"cannot read file: {exc.strerror or exc}", file=path) from None
    if count == 0:
        raise DataError("no records", file=path)
    return count


def _walk(data: mmap.mmap, size: int, path: str) -> int:
    at, count, sound = 0, 0, set[bytes]()  # sound: headers already checked (records of one size repeat them)
    with data:
        while at < size:
            if size - at < HEADER.size:
                raise DataError(f"not a readable TFRecord file (truncated record header at byte {at:,})", file=path)
            header = data[at : at + HEADER.size]
            length, crc = HEADER.unpack(header)
            if header not in sound and crc != _masked_crc32c(header[:8]):
                raise DataError(f"not a readable TFRecord file (corrupted record header at byte {at:,})", file=path)
            end = at + HEADER.size + length + 4
            if end > size:
                raise DataError(
                    f"not a readable TFRecord file (record {count + 1} at byte {at:,} declares "
                    f"{length:,} bytes; only {max(size - at - HEADER.size - 4, 0):,} follow)",
                    file=path,
                )
            at, count = end, count + 1
            if len(sound) < 4096:
                sound.add(header)
    return count


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def _masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: CRC-32C (Castagnoli), rotated and offset ("masked")."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _first_example(path: str) -> tf.train.Example:
    try:
        first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.OpError as exc:
        raise DataError(f"not a readable TFRecord file ({tensorflow_message(exc)})", file=path) from None
    if first is None:
        raise DataError("no records", file=path)
    try:
        return tf.train.Example.FromString(first.numpy())
    except Exception:  # protobuf's DecodeError: not an Example
        raise DataError("the first record is not a tf.train.Example", file=path) from None


def _kind(feature: tf.train.Feature) -> tuple[str | None, int]:
    kind = feature.WhichOneof("kind")
    values = getattr(feature, kind).value if kind else []
    return kind, len(values)


def _input_feature(path: str, spec: TensorSpec, features) -> tuple:
    if spec.name not in features:
        found = ", ".join(sorted(features.keys())) or "none"
        raise DataError(f"no feature for input '{spec.name}'; features found: {found}", file=path)
    kind, count = _kind(features[spec.name])
    if kind == "bytes_list" or (spec.is_integer and kind == "float_list"):
        found = "bytes" if kind == "bytes_list" else "floats"
        raise DataError(
            f"input '{spec.name}' expects {spec.dtype} numbers, found {found} in feature '{spec.name}'", file=path
        )
    if spec.size is None or count != spec.size:
        raise DataError(
            f"input '{spec.name}' expects shape {spec.shape_text()} ({spec.size} values), "
            f"found {count} values in feature '{spec.name}'",
            file=path,
        )
    dtype = tf.float32 if kind == "float_list" else tf.int64
    return count, dtype, spec.shape, spec.dtype


def _target_feature(path: str, spec: TensorSpec, features) -> tuple:
    if spec.name not in features:
        found = ", ".join(sorted(features.keys())) or "none"
        raise DataError(f"no feature for output '{spec.name}'; features found: {found}", file=path)
    kind, count = _kind(features[spec.name])
    if kind not in ("float_list", "int64_list") or count == 0:
        raise DataError(
            f"output '{spec.name}' expects numbers as targets, found "
            f"{'bytes' if kind == 'bytes_list' else 'no values'} in feature '{spec.name}'",
            file=path,
        )
    dtype = tf.float32 if kind == "float_list" else tf.int64
    shape = () if count == 1 else (count,)
    return count, dtype, shape, "float32" if kind == "float_list" else "int64"
