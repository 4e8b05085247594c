"""Data held as arrays: `.npz` files, arrays passed to the library, and parsed CSV tables.

Arrays reach the model by name: an `.npz` key (or a dict key) per spec
input and output; a one-input, one-output model also takes `x` and `y`.
Every array is checked against the model before anything trains: a
missing key names the input and the keys found, a wrong shape or dtype
names the input, the expected and the found shape.

Reading and checking need NumPy only; TensorFlow loads when a tf.data pipeline is made
(`dataset`), so an exported ONNX or LiteRT file is fed from `batches` without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.files import ZIP_ERRORS
from netdsl.training.data.data_check import (
    NUMERIC_KINDS,
    as_mapping,
    check_input_header,
    check_target_header,
    check_zip,
    describe_dtype,
    find_key,
    key_for,
)
from netdsl.training.data.npz_members import check_member
from netdsl.training.data.signature import Batch, Signature, TensorSpec
from netdsl.training.errors import DataError

if TYPE_CHECKING:
    import tensorflow as tf

    from netdsl.training.data.tf_data import EpochOrder

__all__ = [
    "NUMERIC_KINDS",
    "ArraySource",
    "check_input",
    "check_target",
    "describe_dtype",
    "from_mapping",
    "from_memory",
    "from_npz",
]


class ArraySource:
    """Named arrays of one length, checked against the model; batches by gathering rows."""

    def __init__(
        self,
        origin: str,
        signature: Signature,
        inputs: dict[str, np.ndarray],
        targets: dict[str, np.ndarray] | None,
        classes: dict[str, tuple[str, ...]] | None = None,
        columns: dict[str, tuple[str, ...]] | None = None,
        lines: np.ndarray | None = None,
    ):
        self.origin, self.signature = origin, signature
        self.n = _common_length(origin, {**inputs, **(targets or {})})
        self._arrays = (inputs, targets)
        self._tensors: tuple[dict, dict | None] | None = None
        self.classes = dict(classes or {})  # {output: class names} the labels named (a CSV's text labels)
        self.columns = dict(columns or {})  # {input: the CSV columns it is made of}
        self._lines = lines  # a CSV sample's line in the file (None: samples by index)

    def row_names(self, rows: np.ndarray) -> list[str]:
        """What names each of `rows` to a user: a CSV sample's line in its file, else its index."""
        return [str(i) for i in (self._lines[rows] if self._lines is not None else rows)]

    @property
    def has_targets(self) -> bool:
        return self._arrays[1] is not None

    def dataset(
        self, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True
    ) -> tf.data.Dataset:
        import tensorflow as tf

        from netdsl.training.data.tf_data import finish, index_batches, model_structure

        inputs, targets = self._as_tensors()
        signature = self.signature
        if not with_targets:
            targets = None

        def gather(index: tf.Tensor) -> Any:
            x = {name: tf.gather(t, index) for name, t in inputs.items()}
            y = None if targets is None else {name: tf.gather(t, index) for name, t in targets.items()}
            return model_structure(signature, x, y)

        batches = index_batches(rows, batch_size, order).map(gather, num_parallel_calls=tf.data.AUTOTUNE)
        return finish(batches, len(rows), batch_size)

    def batches(self, rows: np.ndarray, batch_size: int, with_targets: bool = True) -> Iterator[Batch]:
        """({input: array}, {output: array} or None) per batch of `rows`, in order, as NumPy (no TensorFlow)."""
        for start in range(0, len(rows), batch_size):
            yield self.take(rows[start : start + batch_size], with_targets)

    def targets_in_memory(self) -> dict[str, np.ndarray]:
        """{output: array} of the targets (none when the source holds none): `labels.check_source_labels`."""
        return dict(self._numpy()[1] or {})

    def take(self, index: np.ndarray, with_targets: bool = True) -> Batch:
        """The rows `index` (in that order) as ({input: array}, {output: array} or None), in NumPy."""
        inputs, targets = self._numpy()
        return (
            {name: array[index] for name, array in inputs.items()},
            {name: array[index] for name, array in targets.items()} if with_targets and targets else None,
        )

    def _numpy(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
        """The arrays as NumPy (a dataset made first moved them into tensors: read back once from those)."""
        if self._tensors is not None and self._arrays[0] == {}:
            input_tensors, target_tensors = self._tensors
            self._arrays = (
                {k: v.numpy() for k, v in input_tensors.items()},
                None if target_tensors is None else {k: v.numpy() for k, v in target_tensors.items()},
            )
        return self._arrays

    def _as_tensors(self) -> tuple[dict, dict | None]:
        """The arrays as tensors, converted once (the NumPy copies are then let go)."""
        import tensorflow as tf

        if self._tensors is None:
            inputs, targets = self._arrays
            self._tensors = (
                {k: tf.convert_to_tensor(v) for k, v in inputs.items()},
                None if targets is None else {k: tf.convert_to_tensor(v) for k, v in targets.items()},
            )
            self._arrays = ({}, None if targets is None else {})
        return self._tensors


# ------------------------------------------------------------------ reading


def from_npz(path: str, signature: Signature, need_targets: bool) -> ArraySource:
    check_zip(path)
    try:
        archive = np.load(path, allow_pickle=False)  # never unpickles: an .npz cannot run code
    except (ValueError, *ZIP_ERRORS) as exc:
        raise DataError(f"not a readable .npz file ({_reason(exc)})", file=path) from None
    with archive:
        return from_mapping(path, signature, _LazyArchive(archive, path), need_targets)


def from_memory(data: Any, signature: Signature, need_targets: bool, origin: str = "<arrays>") -> ArraySource:
    """Arrays given to the library: {name: array}, (x, y), or x alone."""
    return from_mapping(origin, signature, as_mapping(data), need_targets)


def from_mapping(origin: str, signature: Signature, mapping: Any, need_targets: bool) -> ArraySource:
    keys = sorted(mapping.keys())
    inputs = {
        spec.name: check_input(origin, spec, mapping[key_for(origin, spec, "input", "x", keys, signature)])
        for spec in signature.inputs
    }
    targets = None
    wanted = [(spec, find_key(spec, "y", keys, signature)) for spec in signature.outputs]
    if need_targets or all(key is not None for _, key in wanted):
        targets = {
            spec.name: check_target(origin, spec, mapping[key_for(origin, spec, "output", "y", keys, signature)])
            for spec in signature.outputs
        }
    return ArraySource(origin, signature, inputs, targets)


class _LazyArchive:
    """An open NpzFile read key by key, with unreadable members reported as data errors."""

    def __init__(self, archive: Any, path: str):
        self._archive, self._path = archive, path

    def keys(self) -> list[str]:
        return list(self._archive.files)

    def __getitem__(self, key: str) -> np.ndarray:
        check_member(self._archive.zip, key, self._path)
        try:
            return self._archive[key]
        except ValueError as exc:
            if "allow_pickle" in str(exc):
                raise DataError(
                    f"array '{key}' holds Python objects; netdsl reads numeric arrays only", file=self._path
                ) from None
            raise DataError(f"array '{key}' cannot be read ({_reason(exc)})", file=self._path) from None
        except ZIP_ERRORS as exc:
            raise DataError(f"array '{key}' cannot be read ({_reason(exc)})", file=self._path) from None


# ------------------------------------------------------------------ checks


def check_input(origin: str, spec: TensorSpec, array: np.ndarray) -> np.ndarray:
    """The array as the input's dtype, or a DataError naming input, expected and found."""
    array = np.asarray(array)
    check_input_header(origin, spec, array.shape, array.dtype)
    return array.astype(object if spec.dtype == "string" else spec.dtype, copy=False)


def check_target(origin: str, spec: TensorSpec, array: np.ndarray) -> np.ndarray:
    """Targets: numbers with a sample axis (floats become float32, integers stay integers)."""
    array = np.asarray(array)
    check_target_header(origin, spec, array.shape, array.dtype)
    if array.dtype.kind in "bf":
        return array.astype("float32", copy=False)
    return array


def _common_length(origin: str, arrays: dict[str, np.ndarray]) -> int:
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        longest, shortest = max(lengths, key=lengths.__getitem__), min(lengths, key=lengths.__getitem__)
        raise DataError(
            f"'{longest}' has {lengths[longest]} samples but '{shortest}' has {lengths[shortest]}", file=origin
        )
    return next(iter(lengths.values()), 0)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
