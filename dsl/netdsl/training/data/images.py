"""Images for a model with one image input: a folder of class sub-folders, any folder, or one file.

    DIR/<class>/*.png|jpg     labelled: classes are the sub-folders in name order (their index is the label)
    DIR/**/*.png|jpg          predict: every image under the folder, class sub-folders or not
    one.png                   predict: that image

Images are decoded and resized to the input's height and width as they are
fed (streamed, never all in memory). An input of shape (H, W) takes grayscale
images; (H, W, C) takes C = 1, 3 or 4 channels. Pixel values stay in 0..255
as float32; the spec scales them (`rescaling(1.0 / 255)`). Which files are
images, and the checks on each, are `image_files.py`'s (no TensorFlow). These checks
cover the folder as listed when the run starts: TensorFlow reads each image
again by its path every epoch, and a file swapped afterwards is read as it
then is (docs/training.md says so; reading through descriptors would take a
`tf.py_function` per image, security review 2026-12b N13).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import tensorflow as tf

from netdsl.training.data.data_check import check_image_folder, check_single_image
from netdsl.training.data.image_files import check_image_file, list_classes, list_images
from netdsl.training.data.request import DataNames
from netdsl.training.data.signature import Batch, Signature
from netdsl.training.data.tf_data import EpochOrder, finish, index_batches, model_structure, numpy_batches
from netdsl.training.errors import DataError


class ImageSource:
    """Image files by path, labelled (class sub-folders) or not; named by their paths relative to `root`."""

    def __init__(
        self,
        origin: str,
        signature: Signature,
        paths: list[str],
        labels: list[int] | None,
        classes: tuple[str, ...] = (),
        root: str | None = None,
    ):
        self.origin, self.signature = origin, signature
        self.n = len(paths)
        self._names = [os.path.relpath(p, root) if root is not None else os.path.basename(p) for p in paths]
        self._paths = tf.constant(paths)
        self._labels = tf.constant(labels, dtype=tf.int64) if labels is not None else None
        self._spec = signature.inputs[0]
        out = signature.output_names
        self.classes = {out[0]: classes} if classes and len(out) == 1 else {}
        self.columns: dict[str, tuple[str, ...]] = {}

    @property
    def has_targets(self) -> bool:
        return self._labels is not None

    def row_names(self, rows: np.ndarray) -> list[str]:
        """An image's path relative to the folder given (its file name, for one file)."""
        return [self._names[i] for i in rows]

    def dataset(
        self, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True
    ) -> tf.data.Dataset:
        spec, signature = self._spec, self.signature
        height, width = spec.shape[:2]
        channels = spec.shape[2] if len(spec.shape) == 3 else 1
        paths, labels, name, out = self._paths, self._labels, spec.name, signature.output_names
        with_targets = with_targets and labels is not None

        def load(index: tf.Tensor):
            image = tf.io.decode_image(
                tf.io.read_file(tf.gather(paths, index)), channels=channels, expand_animations=False
            )
            image = tf.image.resize(image, (height, width))
            if len(spec.shape) == 2:
                image = image[..., 0]
            image = tf.cast(image, spec.dtype)
            targets = {out[0]: tf.gather(labels, index)} if with_targets and out else None
            return model_structure(signature, {name: image}, targets)

        examples = index_batches(rows, batch_size, order).unbatch()
        return finish(examples.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(batch_size), len(rows), batch_size)

    def batches(self, rows: np.ndarray, batch_size: int, with_targets: bool = True) -> Iterator[Batch]:
        """The batches of `dataset`, as NumPy (read through tf.data: no NumPy reader of its own)."""
        with_targets = with_targets and self.has_targets
        return numpy_batches(self.dataset(rows, batch_size, with_targets=with_targets), self.signature, with_targets)


def from_folder(folder: str, signature: Signature, need_targets: bool, names: DataNames | None = None) -> ImageSource:
    """A folder: labelled by its class sub-folders when it has them and labels are needed (or the
    run's classes are known); else every image under it, unlabelled (predict)."""
    check_image_folder(folder, signature, need_targets)
    known = (names or DataNames()).classes
    out = signature.outputs[0] if len(signature.outputs) == 1 else None
    if not need_targets:
        return ImageSource(
            folder, signature, list_images(folder), None, known.get(out.name, ()) if out else (), root=folder
        )
    classes, paths, labels = list_classes(folder, known.get(out.name) if out is not None else None)
    units = out.shape[-1] if out is not None and out.shape else None
    if out is not None and units not in (None, 1) and len(classes) > units:
        raise DataError(f"{len(classes)} class folders, but output '{out.name}' has {units} units", file=folder)
    return ImageSource(folder, signature, paths, labels, classes, root=folder)


def from_file(path: str, signature: Signature, need_targets: bool) -> ImageSource:
    """One image file, unlabelled (predict; `data_check.check_single_image` refuses it where labels are needed)."""
    check_single_image(path, signature, need_targets)
    check_image_file(Path(path))
    return ImageSource(path, signature, [path], None)
