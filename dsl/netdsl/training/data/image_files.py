"""Which image files a folder holds, checked without TensorFlow (`images.py` decodes them).

    list_classes("pics", None)     -> (classes, paths, labels)   # pics/<class>/*.png: training, evaluate
    list_images("new_pics")        -> paths                      # every image under it: predict

Classes are the sub-folders in name order (their index is the label), or the
classes a run recorded (a sub-folder that is none of them is refused). For
`predict` a folder needs no class sub-folders: every image under it counts,
found recursively (at most `MAX_IMAGE_FOLDER_DEPTH` folders deep), and is named
by its path relative to the folder. Every image is looked at before it is used:
its first bytes must be a PNG or JPEG signature, its header's width x height at
most `MAX_IMAGE_PIXELS` (a tiny PNG may declare 2**31 pixels that TensorFlow
would then allocate), and a folder or an image that is a link leading out of
the image folder is refused (a folder others can write to must not make netdsl
read files elsewhere). FIFOs and devices are not images: they are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from netdsl.files import Refused, open_regular
from netdsl.limits import MAX_IMAGE_FOLDER_DEPTH, MAX_IMAGE_PIXELS
from netdsl.training.errors import DataError

SUFFIXES = (".png", ".jpg", ".jpeg")
_MAGIC = {".png": (b"\x89PNG\r\n\x1a\n",), ".jpg": (b"\xff\xd8\xff",), ".jpeg": (b"\xff\xd8\xff",)}
NO_CLASSES = "an image folder to train or evaluate on holds one sub-folder per class with .png or .jpg files"


def is_image_name(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SUFFIXES


def class_folders(folder: str) -> list[str]:
    """The folder's class sub-folders by name (hidden ones left out)."""
    try:
        return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir() and not entry.name.startswith("."))
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=folder) from None


def check_class_layout(folder: str) -> None:
    """A folder that labels images has class sub-folders holding images, and no image beside them (it would
    have no label); by names only (cheap, before TensorFlow loads). DataError otherwise."""
    check_labelled_folder(folder, is_image_name, ("an image lies", "images lie"), "images", NO_CLASSES)


def check_labelled_folder(
    folder: str, wanted: Callable[[str], bool], lie: tuple[str, str], what: str, layout: str
) -> None:
    """Files `wanted` accepts in class sub-folders of `folder` and none beside them (one would have no label):
    `lie` says one or several such files lie outside them, `what` names the files, `layout` the folder a
    labelled one is. DataError otherwise."""
    loose = _names(Path(folder), wanted)
    if loose:
        count = f"{len(loose)} {lie[1]}" if len(loose) > 1 else lie[0]
        raise DataError(
            f"{count} outside class sub-folders, with no label ('{loose[0]}'): {layout}",
            file=folder,
            hint=f"predict takes any folder of {what}",
        )
    if not any(_names(Path(folder, name), wanted) for name in class_folders(folder)):
        raise DataError(f"no {what} in class sub-folders: {layout}", file=folder)


def _names(folder: Path, wanted: Callable[[str], bool]) -> list[str]:
    """The names of the files right in `folder` that `wanted` accepts, sorted ([] when it cannot be read)."""
    try:
        return sorted(entry.name for entry in os.scandir(folder) if entry.is_file() and wanted(entry.name))
    except OSError:
        return []


def list_classes(folder: str, known: tuple[str, ...] | None = None) -> tuple[tuple[str, ...], list[str], list[int]]:
    """(classes, image paths, labels) of a folder of class sub-folders. `known`: the classes a run trained
    on (labels index them; a sub-folder that is none of them is a DataError); else the sub-folders."""
    root = Path(folder)
    real_root = root.resolve()
    found = class_folders(folder)
    classes = tuple(known) if known is not None else tuple(found)
    index = {name: i for i, name in enumerate(classes)}
    paths, labels = [], []
    for name in found:
        if name not in index:
            shown = ", ".join(classes[:20]) + (", ..." if len(classes) > 20 else "")
            raise DataError(
                f"the class folder '{name}' is not one of the classes the model was trained on ({shown})", file=folder
            )
        _inside(root / name, real_root)
        for file in sorted((root / name).iterdir()):
            if not is_image_name(file) or not file.is_file():
                continue
            _inside(file, real_root)
            check_image_file(file)
            paths.append(str(file))
            labels.append(index[name])
    if not paths:
        raise DataError(f"no images: {NO_CLASSES}", file=folder)
    return classes, paths, labels


def list_images(folder: str) -> list[str]:
    """Every image under `folder`, in path order, class sub-folders or not (links out of it refused)."""
    paths = files_under(folder, is_image_name, "images")
    for path in paths:
        check_image_file(Path(path))
    if not paths:
        raise DataError("no images (.png, .jpg) in this folder or its sub-folders", file=folder)
    return paths


def files_under(folder: str, wanted: Callable[[str], bool], what: str) -> list[str]:
    """The files under `folder` whose names `wanted` accepts, in path order, class sub-folders or not: hidden
    entries skipped, links followed only inside the folder, at most MAX_IMAGE_FOLDER_DEPTH folders deep."""
    root = Path(folder)
    real_root = root.resolve()
    paths: list[str] = []
    pending = [(root, 0)]
    while pending:
        current, depth = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda entry: entry.name)
        except OSError as exc:
            raise DataError(f"cannot read: {exc.strerror or exc}", file=str(current)) from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if entry.is_dir():
                _inside(path, real_root)
                if depth + 1 > MAX_IMAGE_FOLDER_DEPTH:
                    raise DataError(
                        f"folders nested more than {MAX_IMAGE_FOLDER_DEPTH} deep; netdsl looks for "
                        f"{what} that deep at most",
                        file=str(path),
                    )
                if not entry.is_symlink():  # a link to a folder inside it: its files are found there already
                    pending.append((path, depth + 1))
            elif wanted(entry.name) and entry.is_file():
                _inside(path, real_root)
                paths.append(str(path))
    return sorted(paths)


def _inside(path: Path, real_root: Path) -> None:
    """A link is followed only when it stays inside the image folder."""
    if path.is_symlink() and not path.resolve().is_relative_to(real_root):
        raise DataError("is a link to outside the image folder; netdsl reads only files inside it", file=str(path))


def check_image_file(file: Path) -> None:
    """A PNG or JPEG by its first bytes, of at most MAX_IMAGE_PIXELS by its header."""
    suffix = file.suffix.lower()
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
        raise DataError(
            f"the image declares {size[0]:,} x {size[1]:,} pixels; netdsl decodes images of at most "
            f"{MAX_IMAGE_PIXELS:,} pixels",
            file=str(file),
        )


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
        marker, length = head[at + 1], int.from_bytes(head[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(head[at + 7 : at + 9], "big"), int.from_bytes(head[at + 5 : at + 7], "big")
        at += 2 + length
    return None
