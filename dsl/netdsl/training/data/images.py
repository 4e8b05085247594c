"""Image folders: `DIR/<class>/*.png|jpg` for a model with one image input.

Classes are the sub-folders in name order (their index is the label);
images are decoded and resized to the input's height and width while the
model trains (streamed, never all in memory). An input of shape (H, W)
takes grayscale images; (H, W, C) takes C = 1, 3 or 4 channels. Pixel
values stay in 0..255 as float32; the spec scales them (`rescaling(1/255)`).

Every image is looked at before training: its first bytes must be a PNG or
JPEG signature, its header's width x height at most `MAX_IMAGE_PIXELS` (a
tiny PNG may declare 2**31 pixels that TensorFlow would then allocate), and
a class folder or an image that is a link leading out of the image folder
is refused (a folder others can write to must not make netdsl read files
elsewhere). FIFOs and devices are not images: they are skipped. These checks
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

from netdsl.files import Refused, open_regular
from netdsl.limits import MAX_IMAGE_PIXELS
from netdsl.training.data.data_check import check_image_folder
from netdsl.training.data.pipeline import EpochOrder, finish, index_batches, model_structure, numpy_batches
from netdsl.training.data.signature import Batch, Signature
from netdsl.training.errors import DataError

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
        if need_targets and out is not None and units not in (None, 1) and len(self.classes) > units:
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

    def batches(self, rows: np.ndarray, batch_size: int, with_targets: bool = True) -> Iterator[Batch]:
        """The batches of `dataset`, as NumPy (read through tf.data: no NumPy reader of its own)."""
        return numpy_batches(self.dataset(rows, batch_size, with_targets=with_targets), self.signature, with_targets)


def _listing(folder: str) -> tuple[list[str], list[str], list[int]]:
    root = Path(folder)
    real_root = root.resolve()
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    paths, labels = [], []
    for label, name in enumerate(classes):
        _inside(root / name, real_root)
        for file in sorted((root / name).iterdir()):
            suffix = file.suffix.lower()
            if suffix not in SUFFIXES or not file.is_file():
                continue
            _inside(file, real_root)
            _check_magic(file, suffix)
            paths.append(str(file))
            labels.append(label)
    if not classes or not paths:
        raise DataError("no images: an image folder holds one sub-folder per class with .png or .jpg files",
                        file=folder)
    return classes, paths, labels


def _inside(path: Path, real_root: Path) -> None:
    """A link is followed only when it stays inside the image folder."""
    if path.is_symlink() and not path.resolve().is_relative_to(real_root):
        raise DataError("is a link to outside the image folder; netdsl reads only files inside it",
                        file=str(path))


def _check_magic(file: Path, suffix: str) -> None:
    try:
        with open_regular(file, "image file") as fd:
            head = os.pread(fd, _HEADER_BYTES, 0)
    except Refused as exc:
        raise DataError(str(exc), file=str(file)) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=str(file)) from None
    if not any(head.startswith(m) for m in _MAGIC[suffix]):
        kind = "PNG" if suffix == ".png" else "JPEG"
        raise DataError(f"not a {kind} image (its first bytes say otherwise)", file=str(file))
    size = _png_size(head) if suffix == ".png" else _jpeg_size(head)
    if size is not None and size[0] * size[1] > MAX_IMAGE_PIXELS:
        raise DataError(f"the image declares {size[0]:,} x {size[1]:,} pixels; netdsl decodes images of at most "
                        f"{MAX_IMAGE_PIXELS:,} pixels", file=str(file))


_HEADER_BYTES = 64 * 1024  # a JPEG's frame header follows its metadata segments; they fit here in practice


def _png_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) of the IHDR chunk, which a PNG must begin with."""
    if len(head) < 24 or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) of the first start-of-frame segment found in `head`."""
    at = 2
    while at + 9 <= len(head) and head[at] == 0xFF:
        marker, length = head[at + 1], int.from_bytes(head[at + 2:at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(head[at + 7:at + 9], "big"), int.from_bytes(head[at + 5:at + 7], "big")
        at += 2 + length
    return None
