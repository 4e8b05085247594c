"""Text for a model with one string input (`input text: (1,) as string`): a CSV column, a folder, one file.

    reviews.csv               a text column feeds the input (the one column of text that is no target, or
                              the one --features names); the label column as for any CSV (class names)
    DIR/<class>/*.txt         labelled: classes are the sub-folders in name order, one file a sample
    DIR/**/*.txt              predict: every .txt file under the folder
    one.txt                   predict: that file

The texts are read whole into memory as Python strings (an object array:
one long text does not widen every row, as a fixed-width NumPy string
would) and reach the model as string tensors; a `text_vectorization` layer
in the spec turns them into tokens. Which files, and the bounds on each,
are `text_files.py`'s. NumPy only: no TensorFlow until the data is fed.
"""

from __future__ import annotations

import os

import numpy as np

from netdsl.training.data.arrays import ArraySource, check_target
from netdsl.training.data.request import DataNames
from netdsl.training.data.signature import Signature, TensorSpec
from netdsl.training.data.text_files import list_text_classes, list_texts, read_text_file, read_texts
from netdsl.training.errors import DataError


class TextSource(ArraySource):
    """Texts held in memory; a file's sample named by its path relative to the folder given."""

    def __init__(
        self,
        origin: str,
        signature: Signature,
        texts: list[str],
        labels: list[int] | None,
        classes: tuple[str, ...],
        names: list[str],
    ):
        spec = text_input(origin, signature, "a text folder feeds")
        out = signature.outputs[0] if len(signature.outputs) == 1 else None
        targets = None
        if labels is not None and out is not None:
            targets = {out.name: check_target(origin, out, np.array(labels, dtype=np.int64))}
        super().__init__(
            origin,
            signature,
            {spec.name: as_text_array(spec, texts)},
            targets,
            classes={out.name: classes} if out is not None and classes else None,
        )
        self._names = names

    def row_names(self, rows: np.ndarray) -> list[str]:
        return [self._names[i] for i in rows]


def text_input(origin: str, signature: Signature, what_feeds: str) -> TensorSpec:
    """The model's one string input of shape () or (1,); DataError otherwise."""
    spec = signature.inputs[0] if len(signature.inputs) == 1 else None
    if spec is None or spec.dtype != "string" or spec.shape not in ((), (1,)):
        what = (
            f"input '{spec.name}' is {spec.dtype} of shape {spec.shape_text()}"
            if spec is not None
            else f"this model has {len(signature.inputs)} inputs"
        )
        raise DataError(f"{what_feeds} one text input, declared as `input text: (1,) as string`; {what}", file=origin)
    return spec


def as_text_array(spec: TensorSpec, texts: list[str]) -> np.ndarray:
    """Texts as the input's per-sample shape, () or (1,), in an object array (tf.string when fed)."""
    array = np.empty(len(texts), dtype=object)
    array[:] = texts
    return array.reshape((len(texts), *spec.shape))


def from_folder(folder: str, signature: Signature, need_targets: bool, names: DataNames | None = None) -> TextSource:
    """A folder of .txt files: labelled by class sub-folders (train, evaluate), or any (predict)."""
    text_input(folder, signature, "a text folder feeds")
    known = (names or DataNames()).classes
    out = signature.outputs[0] if len(signature.outputs) == 1 else None
    if need_targets and out is None:
        raise DataError(
            f"a text folder labels one output; this model has {len(signature.outputs)} "
            f"({', '.join(signature.output_names)})",
            file=folder,
        )
    if not need_targets:
        paths = list_texts(folder)
        classes: tuple[str, ...] = tuple(known.get(out.name, ())) if out is not None else ()
        labels = None
    else:
        assert out is not None
        classes, paths, labels = list_text_classes(folder, known.get(out.name))
        units = out.shape[-1] if out.shape else None
        if units not in (None, 1) and len(classes) > units:
            raise DataError(f"{len(classes)} class folders, but output '{out.name}' has {units} units", file=folder)
    return TextSource(
        folder, signature, read_texts(paths, folder), labels, classes, [os.path.relpath(p, folder) for p in paths]
    )


def from_file(path: str, signature: Signature, need_targets: bool) -> TextSource:
    """One .txt file: one sample to predict on (it holds no label)."""
    if need_targets:
        raise DataError(
            "one text file holds no label; train and evaluate on a folder with one sub-folder per "
            "class of .txt files, or a CSV file with a label column (predict takes a single .txt file)",
            file=path,
        )
    text_input(path, signature, "a text file feeds")
    return TextSource(path, signature, [read_text_file(path)], None, (), [os.path.basename(path)])
