"""Which text files a folder holds, and reading one, without TensorFlow (`texts.py` makes them a source).

    list_text_classes("reviews", None) -> (classes, paths, labels)   # reviews/<class>/*.txt: train, evaluate
    list_texts("new_reviews")          -> paths                      # every .txt under it: predict

A text folder is laid out as an image folder is (`image_files.py`): one
sub-folder per class, classes in name order (or the classes a run recorded),
any folder for predict (found recursively, at most `MAX_IMAGE_FOLDER_DEPTH`
deep, named by the path relative to it); links leading out of it are refused.
Each `.txt` file is one sample: UTF-8 text (a byte-order mark allowed) of at
most `MAX_TEXT_FILE_BYTES`, the folder's files together at most
`MAX_TEXT_FOLDER_BYTES`; a file that is not UTF-8 is refused at its line.
"""

from __future__ import annotations

import os
from pathlib import Path

from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_TEXT_FILE_BYTES, MAX_TEXT_FOLDER_BYTES
from netdsl.training.data.image_files import _inside, check_labelled_folder, class_folders, files_under
from netdsl.training.errors import DataError

SUFFIX = ".txt"
NO_CLASSES = "a text folder to train or evaluate on holds one sub-folder per class with .txt files"


def is_text_name(path: str | Path) -> bool:
    return Path(path).suffix.lower() == SUFFIX


def holds_text(folder: str, suffixes: tuple[str, ...] = (SUFFIX,)) -> bool:
    """Whether a folder holds .txt files (files of `suffixes`), right in it or in its class sub-folders
    (by names: cheap)."""

    def texts_in(path: str) -> bool:
        try:
            return any(entry.is_file() and Path(entry.name).suffix.lower() in suffixes for entry in os.scandir(path))
        except OSError:
            return False

    return texts_in(folder) or any(texts_in(os.path.join(folder, name)) for name in class_folders(folder))


def check_text_layout(folder: str) -> None:
    """A folder that labels texts has class sub-folders holding .txt files, and none beside them."""
    check_labelled_folder(folder, is_text_name, ("a text file lies", "text files lie"), ".txt files", NO_CLASSES)


def list_text_classes(
    folder: str, known: tuple[str, ...] | None = None
) -> tuple[tuple[str, ...], list[str], list[int]]:
    """(classes, .txt paths, labels) of a folder of class sub-folders; `known`: a run's classes."""
    check_text_layout(folder)
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
            if is_text_name(file) and file.is_file():
                _inside(file, real_root)
                paths.append(str(file))
                labels.append(index[name])
    return classes, paths, labels


def list_texts(folder: str) -> list[str]:
    """Every .txt file under `folder`, in path order, class sub-folders or not."""
    paths = files_under(folder, is_text_name, "text files")
    if not paths:
        raise DataError("no .txt files in this folder or its sub-folders", file=folder)
    return paths


def read_texts(paths: list[str], origin: str) -> list[str]:
    """The files' texts, each checked (UTF-8, bounded); their sum bounded as a CSV file's size is."""
    texts, total = [], 0
    for path in paths:
        text = read_text_file(path)
        total += len(text)
        if total > MAX_TEXT_FOLDER_BYTES:
            raise DataError(
                f"the text files hold more than {MAX_TEXT_FOLDER_BYTES:,} characters together; netdsl "
                "reads a text folder into memory",
                file=origin,
            )
        texts.append(text)
    return texts


def read_text_file(path: str) -> str:
    """One .txt file as text: a regular file of at most MAX_TEXT_FILE_BYTES, UTF-8 (BOM allowed)."""
    try:
        raw = read_regular(path, MAX_TEXT_FILE_BYTES, "text file")
    except Refused as exc:
        raise DataError(str(exc), file=path) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", file=path, line=line) from None
