"""Image folders: `DIR/<class>/*.png|jpg` for a model with one image input.

Classes are the sub-folders in name order (their index is the label);
images are decoded and resized to the input's height and width while the
model trains (streamed, never all in memory). An input of shape (H, W)
takes grayscale images; (H, W, C) takes C = 1, 3 or 4 channels. Pixel
values stay in 0..255 as float32; the spec scales them (`rescaling(1/255)`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import tensorflow as tf

from netdsl.training.data_check import check_image_folder
from netdsl.training.errors import DataError
from netdsl.training.pipeline import EpochOrder, finish, index_batches, model_structure
from netdsl.training.signature import Signature

SUFFIXES = (".png", ".jpg", ".jpeg")
_MAGIC = {".png": (b"\x89PNG\r\n\x1a\n",), ".jpg": (b"\xff\xd8\xff",), ".jpeg": (b"\xff\xd8\xff",)}


class ImageFolderSource:
    has_targets = True  # the class folders label every image

    def __init__(self, folder: str, signature: Signature, need_targets: bool):
        self.origin, self.signature = folder, signature
        check_image_folder(folder, signature, need_targets)
        spec = signature.inputs[0]
        self.classes, paths, labels = _listing(folder)
        out = signature.outputs[0] if signature.outputs else None
        units = out.shape[-1] if out is not None and out.shape else None
        if need_targets and units not in (None, 1) and len(self.classes) > units:
            raise DataError(f"{len(self.classes)} class folders, but output '{out.name}' has {units} units",
                            file=folder)
        self.n = len(paths)
        self._paths, self._labels = tf.constant(paths), tf.constant(labels, dtype=tf.int64)
        self._spec = spec

    def dataset(self, rows: np.ndarray, batch_size: int, order: EpochOrder | None = None,
                with_targets: bool = True) -> tf.data.Dataset:
        spec, signature = self._spec, self.signature
        height, width = spec.shape[:2]
        channels = spec.shape[2] if len(spec.shape) == 3 else 1
        paths, labels, name, out = self._paths, self._labels, spec.name, signature.output_names

        def load(index: tf.Tensor):
            image = tf.io.decode_image(tf.io.read_file(tf.gather(paths, index)), channels=channels,
                                       expand_animations=False)
            image = tf.image.resize(image, (height, width))
            if len(spec.shape) == 2:
                image = image[..., 0]
            image = tf.cast(image, spec.dtype)
            targets = {out[0]: tf.gather(labels, index)} if with_targets and out else None
            return model_structure(signature, {name: image}, targets)

        examples = index_batches(rows, batch_size, order).unbatch()
        return finish(examples.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(batch_size), len(rows), batch_size)


def _listing(folder: str) -> tuple[list[str], list[str], list[int]]:
    root = Path(folder)
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    paths, labels = [], []
    for label, name in enumerate(classes):
        for file in sorted((root / name).iterdir()):
            suffix = file.suffix.lower()
            if suffix not in SUFFIXES or not file.is_file():
                continue
            _check_magic(file, suffix)
            paths.append(str(file))
            labels.append(label)
    if not classes or not paths:
        raise DataError("no images: an image folder holds one sub-folder per class with .png or .jpg files",
                        file=folder)
    return classes, paths, labels


def _check_magic(file: Path, suffix: str) -> None:
    try:
        with open(file, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=str(file)) from None
    if not any(head.startswith(m) for m in _MAGIC[suffix]):
        kind = "PNG" if suffix == ".png" else "JPEG"
        raise DataError(f"not a {kind} image (its first bytes say otherwise)", file=str(file))
