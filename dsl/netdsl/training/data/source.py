"""What a data source is, and the table of data formats: the one place a new format is added.

    source = open_source("digits.npz", signature)        # a DataSource: .origin, .n, .dataset(rows, ...)
    check_source("digits.npz", signature, targets={})    # the same choice, before TensorFlow loads

A source is chosen by what the path is: a folder of images (class
sub-folders label them), or a file by its suffix (`FORMATS`; one image is
something to predict on); the library also passes arrays. `DataNames` says
how a table's columns and a label's names are read (--features, --drop, the
classes a run recorded).
Each format has two halves: an early check of what its headers tell (pure
Python and NumPy, before TensorFlow loads and before a run folder is made,
`data_check.py`), and a reader whose source implements `DataSource` (it
loads TensorFlow, so it is imported only when a source is opened).

To add a format: a reader module beside `arrays.py` whose source class has
the `DataSource` members, its header check in `data_check.py` if the
headers can tell anything, and one `DataFormat` line in `FORMATS`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from netdsl.training.data.data_check import (
    as_mapping,
    check_csv_head,
    check_image_folder,
    check_mapping,
    check_single_image,
    npz_headers,
    require_data_file,
)
from netdsl.training.data.image_files import SUFFIXES, check_class_layout
from netdsl.training.data.request import DEFAULT_SPLIT, DataNames
from netdsl.training.data.signature import Batch, Signature
from netdsl.training.data.text_files import check_text_layout, holds_text
from netdsl.training.errors import DataError

if TYPE_CHECKING:
    import numpy as np
    import tensorflow as tf

    from netdsl.training.data.tf_data import EpochOrder


class DataSource(Protocol):
    """Rows of named arrays that feed a model, read by index (`arrays.ArraySource`,
    `images.ImageSource`, `tfrecords.TFRecordSource`): as a tf.data pipeline for
    Keras (`dataset`), as NumPy batches for an exported file's runtime (`batches`)."""

    origin: str  # the file or folder read, or "<arrays>": named in every message about the data
    n: int  # the number of samples
    classes: dict[str, tuple[str, ...]]  # {output: class names} where the data names its labels
    columns: dict[str, tuple[str, ...]]  # {input: the CSV columns it is made of} (a CSV file only)

    def row_names(self, rows: np.ndarray) -> list[str]:
        """What names each of `rows` to a user (an image's path in the folder, a CSV line, an index)."""
        ...

    @property
    def has_targets(self) -> bool:
        """Whether the source holds the outputs' targets (evaluate needs them, predict does not)."""
        ...

    def dataset(
        self, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True
    ) -> tf.data.Dataset:
        """The rows `rows` (sorted indices) in batches, shuffled by `order` when given."""
        ...

    def batches(self, rows: np.ndarray, batch_size: int, with_targets: bool = True) -> Iterator[Batch]:
        """The rows `rows` in batches of NumPy arrays by name, in row order (arrays, .npz and .csv
        without TensorFlow; a source read by tf.data: `pipeline.numpy_batches` of its dataset)."""
        ...


# (path, signature, {output: CSV column}, need_targets, names) -> ...
Check = Callable[[str, Signature, dict[str, str], bool, DataNames], "int | None"]
Open = Callable[[str, Signature, dict[str, str], bool, DataNames], DataSource]


@dataclass(frozen=True)
class DataFormat:
    """One kind of data: the file suffixes that name it (none for the image folder), the check of
    its headers before TensorFlow loads (the number of samples when they tell it, else None), and
    how its reader opens it."""

    name: str
    suffixes: tuple[str, ...]
    check: Check
    open: Open


def _check_npz(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> int | None:
    return check_mapping(path, signature, npz_headers(path), need_targets)


def _check_csv(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> int | None:
    if len(signature.inputs) != 1 or signature.inputs[0].size is None:
        check_csv_head(path, signature, targets, need_targets, names)  # the reader, with the built model's
        return None  # shapes, reads the rest
    from netdsl.training.data import csv_table  # NumPy only: the whole file, read once for the reader too

    return csv_table.from_csv(path, signature, targets, need_targets, names, keep=True).n


def _check_images(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> int | None:
    if _takes_text(signature):  # a folder feeding a string input is a folder of .txt files
        from netdsl.training.data import texts  # NumPy only: read once, kept for the reader

        return _keep_texts(path, texts.from_folder(path, signature, need_targets, names), need_targets, names).n
    if holds_text(path) and not holds_text(path, SUFFIXES):  # .txt files, no image: not an image folder
        spec = signature.inputs[0] if signature.inputs else None
        raise DataError(
            f"a folder of .txt files feeds a text input (`input text: (1,) as string`); input "
            f"'{spec.name if spec else '?'}' is {spec.dtype if spec else 'none'}",
            file=path,
        )
    check_image_folder(path, signature, need_targets)
    return None


def _check_text(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> int | None:
    from netdsl.training.data import texts

    texts.from_file(path, signature, need_targets)
    return 1


def _takes_text(signature: Signature) -> bool:
    return len(signature.inputs) == 1 and signature.inputs[0].dtype == "string"


# A text folder's reading by the early check, taken by the reader when the folder and request are the same.
_TEXT_READINGS: dict[tuple, DataSource] = {}


def _keep_texts(path: str, source: DataSource, need_targets: bool, names: DataNames) -> DataSource:
    _TEXT_READINGS.clear()
    _TEXT_READINGS[(os.path.abspath(path), need_targets, names.key())] = source
    return source


def _check_image(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> int | None:
    check_single_image(path, signature, need_targets)
    return 1


def _no_early_check(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> int | None:
    return None  # only TensorFlow reads it: the reader checks it


# The readers load TensorFlow: each is imported when a source of its format is opened.
def _open_npz(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> DataSource:
    from netdsl.training.data import arrays

    return arrays.from_npz(path, signature, need_targets)


def _open_csv(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> DataSource:
    from netdsl.training.data import csv_table

    return csv_table.from_csv(path, signature, targets, need_targets, names)


def _open_tfrecord(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> DataSource:
    from netdsl.training.data import tfrecords

    return tfrecords.TFRecordSource(path, signature, need_targets)


def _open_images(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> DataSource:
    if _takes_text(signature):
        from netdsl.training.data import texts

        kept = _TEXT_READINGS.pop((os.path.abspath(path), need_targets, names.key()), None)
        if kept is not None and getattr(kept, "signature", None) == signature:
            return kept
        return texts.from_folder(path, signature, need_targets, names)
    from netdsl.training.data import images

    return images.from_folder(path, signature, need_targets, names)


def _open_image(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> DataSource:
    from netdsl.training.data import images

    return images.from_file(path, signature, need_targets)


def _open_text(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> DataSource:
    from netdsl.training.data import texts

    return texts.from_file(path, signature, need_targets)


IMAGE_FOLDER = DataFormat("image folder", (), _check_images, _open_images)  # or of text files: see _takes_text
FORMATS = (
    DataFormat("npz", (".npz",), _check_npz, _open_npz),
    DataFormat("csv", (".csv",), _check_csv, _open_csv),
    DataFormat("tfrecord", (".tfrecord", ".tfrecords", ".tfrec"), _no_early_check, _open_tfrecord),
    DataFormat("image", SUFFIXES, _check_image, _open_image),
    DataFormat("text", (".txt",), _check_text, _open_text),
)


def format_of(path: str) -> DataFormat:
    """The format of the folder or file at `path`; DataError for a path that is neither a folder nor
    a regular file (a FIFO, a device), or a file of no known format."""
    if os.path.isdir(path):
        return IMAGE_FOLDER
    require_data_file(path)
    suffix = Path(path).suffix.lower()
    for data_format in FORMATS:
        if suffix in data_format.suffixes:
            return data_format
    raise DataError(
        f"unknown data format '{suffix or Path(path).name}'",
        file=path,
        hint="netdsl reads .npz, .csv and .tfrecord files, folders of images or .txt files "
        "and (to predict on) one .png, .jpg or .txt file",
    )


def open_source(
    src: Any,
    signature: Signature,
    targets: dict[str, str] | None = None,
    need_targets: bool = True,
    names: DataNames | None = None,
) -> DataSource:
    """The source `src` names (a path) or holds (arrays), checked against the model."""
    if not isinstance(src, (str, os.PathLike)):
        from netdsl.training.data import arrays

        return arrays.from_memory(src, signature, need_targets)
    path = str(src)
    return format_of(path).open(path, signature, dict(targets or {}), need_targets, names or DataNames())


def check_source(
    src: Any, signature: Signature, targets: dict[str, str], need_targets: bool = True, names: DataNames | None = None
) -> int | None:
    """Check one source before TensorFlow loads; the number of its samples when the headers tell it, else None."""
    if not isinstance(src, (str, os.PathLike)):
        headers = {key: (a.shape, a.dtype) for key, a in as_mapping(src).items()}
        return check_mapping("<arrays>", signature, headers, need_targets)
    path = str(src)
    return format_of(path).check(path, signature, targets, need_targets, names or DataNames())


def check_layout(src: Any, need_targets: bool) -> None:
    """What can be told of data without the model (before a model file loads TensorFlow): a path that
    exists and is of a known format; an image folder with class sub-folders, or no single image, where
    labels are needed."""
    if not isinstance(src, (str, os.PathLike)):
        return
    path = str(src)
    data_format = format_of(path)
    if need_targets and data_format is IMAGE_FOLDER and holds_text(path):
        check_text_layout(path)
    elif need_targets and data_format is IMAGE_FOLDER:
        check_class_layout(path)
    elif need_targets and data_format.name == "text":
        from netdsl.training.data import texts

        texts.from_file(path, Signature((), ()), need_targets)  # the one-line refusal: no label in one file
    elif need_targets and data_format.name == "image":
        raise DataError(
            "one image holds no label; train and evaluate on a folder with one sub-folder per class "
            "(predict takes a single image)",
            file=path,
        )


def check_data(request: Any, signature: Signature, validation_split: float | None = None) -> None:
    """Every source of a `request.DataRequest` checked against the signature, and the parts it is
    cut into (where the number of samples is known from the headers) not empty; DataError on the
    first problem. Sources that only TensorFlow can read (TFRecord files) are left to the reader."""
    samples = {}
    names = request.names()
    for key in ("data", "train", "val", "test"):
        source = getattr(request, key)
        if source is not None:
            samples[key] = check_source(source, signature, dict(request.targets or {}), names=names)
            if key == "train" and isinstance(source, (str, os.PathLike)) and format_of(str(source)).name == "csv":
                names = _with_csv_classes(str(source), signature, request, names)  # val and test name alike
    if request.data is not None:
        _check_split(request.data, samples["data"], tuple(request.split or DEFAULT_SPLIT))
    for key, what in (("train", "training"), ("val", "validation"), ("test", "test")):
        n = samples.get(key)
        if n == 0:
            raise DataError(f"the {what} data is empty (no samples)", file=_origin(getattr(request, key)))
        if key == "train" and n and request.val is None and validation_split:
            at = int(math.floor(n * (1.0 - validation_split)))  # Keras' own split point, as plan.plan_data
            for part, size in (("training", at), ("validation", n - at)):
                if size == 0:
                    raise DataError(
                        f"the {part} split is empty: validation_split = {validation_split:g} of "
                        f"{n} samples gives it no sample",
                        file=_origin(request.train),
                    )


def _with_csv_classes(path: str, signature: Signature, request: Any, names: DataNames) -> DataNames:
    from netdsl.training.data import csv_table

    source = csv_table.from_csv(path, signature, dict(request.targets or {}), True, names, keep=True)
    return names.with_classes(source.classes)


def _check_split(source: Any, n: int | None, fractions: tuple[float, ...]) -> None:
    """`--split a,b,c` of `n` samples gives each asked-for part a sample (sizes as plan.split_rows cuts)."""
    if n is None:
        return
    counts = [round(f * n) for f in fractions[1:]]
    sizes = [n - sum(counts), *counts]
    for fraction, size, what in zip(fractions, sizes, ("training", "validation", "test")):
        if fraction > 0 and size == 0:
            text = ",".join(f"{f:g}" for f in fractions)
            raise DataError(
                f"the {what} split is empty: --split {text} of {n} samples gives it no sample", file=_origin(source)
            )


def _origin(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "<arrays>"
