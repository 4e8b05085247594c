"""TFRecord files of `tf.train.Example`: one feature per spec input and output, by name.

The first record is read up front to check the features (present, numeric,
the right number of values), so a mismatch is reported before training,
not in the middle of it. Records are counted once (a cheap pass that does
not parse them); the split and the shuffle use the count.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from netdsl.training.errors import DataError, tensorflow_message
from netdsl.training.pipeline import EpochOrder, finish, model_structure
from netdsl.training.signature import Signature, TensorSpec

SUFFIXES = (".tfrecord", ".tfrecords", ".tfrec")
SHUFFLE_BUFFER = 10_000


class TFRecordSource:
    def __init__(self, path: str, signature: Signature, need_targets: bool):
        self.origin, self.signature = path, signature
        example = _first_example(path)
        features = example.features.feature
        self._inputs = {spec.name: _input_feature(path, spec, features) for spec in signature.inputs}
        present = [spec for spec in signature.outputs if spec.name in features]
        if need_targets or len(present) == len(signature.outputs):
            self._targets = {spec.name: _target_feature(path, spec, features) for spec in signature.outputs}
        else:
            self._targets = None
        self.n = int(tf.data.TFRecordDataset(path).reduce(np.int64(0), lambda count, _: count + 1))

    @property
    def has_targets(self) -> bool:
        return self._targets is not None

    def dataset(self, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None,
                with_targets: bool = True) -> tf.data.Dataset:
        records = tf.data.TFRecordDataset(self.origin)
        if len(rows) != self.n:
            keep = np.zeros(self.n, dtype=bool)
            keep[rows] = True
            keep = tf.constant(keep)
            records = records.enumerate().filter(lambda i, _: tf.gather(keep, i)).map(lambda _, r: r)
        if order is not None:
            buffer = min(len(rows), SHUFFLE_BUFFER)
            seeds = tf.data.Dataset.from_generator(lambda: iter((order.epoch_seed(),)),
                                                   output_signature=tf.TensorSpec((), tf.int64))
            base = records
            records = seeds.flat_map(lambda seed: base.shuffle(buffer, seed=seed))
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
        raise DataError(f"input '{spec.name}' expects {spec.dtype} numbers, found {found} in feature "
                        f"'{spec.name}'", file=path)
    if spec.size is None or count != spec.size:
        raise DataError(f"input '{spec.name}' expects shape {spec.shape_text()} ({spec.size} values), "
                        f"found {count} values in feature '{spec.name}'", file=path)
    dtype = tf.float32 if kind == "float_list" else tf.int64
    return count, dtype, spec.shape, spec.dtype


def _target_feature(path: str, spec: TensorSpec, features) -> tuple:
    if spec.name not in features:
        found = ", ".join(sorted(features.keys())) or "none"
        raise DataError(f"no feature for output '{spec.name}'; features found: {found}", file=path)
    kind, count = _kind(features[spec.name])
    if kind not in ("float_list", "int64_list") or count == 0:
        raise DataError(f"output '{spec.name}' expects numbers as targets, found "
                        f"{'bytes' if kind == 'bytes_list' else 'no values'} in feature '{spec.name}'", file=path)
    dtype = tf.float32 if kind == "float_list" else tf.int64
    shape = () if count == 1 else (count,)
    return count, dtype, shape, "float32" if kind == "float_list" else "int64"
