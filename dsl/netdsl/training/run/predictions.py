"""A model's predictions with names: which sample each row is, and which class each column is.

    result = netdsl.predict("runs/shapes-1", data="new_pictures/")
    result["probs"]          # (N, 3) array, by output name (a Predictions is a mapping of outputs)
    result.sources           # ["a.png", "sub/b.png", ...]: the image's path in the folder, a CSV line, an index
    result.classes           # {"probs": ("circle", "square", "triangle")}
    result.labels            # array(["circle", "triangle", ...]): the predicted class names
    result.write("preds.csv")   # .csv, .npz or .json, by the name's suffix

A classifier's output (its run recorded class names; a model trained without
names has classes "0", "1", ...) becomes a predicted class name and one
probability column per class; any other output its values. One output with
one unit and two classes (a sigmoid) gives the second class's probability.
Pure NumPy: an exported file's predictions are made without Keras.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from netdsl.atomic import write_bytes
from netdsl.errors import UsageError, printable
from netdsl.training.run.checkpoint import npz_bytes

WRITERS = (".csv", ".npz", ".json")
SHOWN_ROWS = 10  # rows of the table a command prints; the file holds them all
SHOWN_CLASSES = 4  # probability columns the printed table shows


@dataclass(frozen=True)
class Predictions(Mapping[str, np.ndarray]):
    """{output name: array} (as `predict` returned before), with each sample's name and each classifier
    output's class names."""

    outputs: dict[str, np.ndarray]
    sources: list[str]
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.outputs)

    def __len__(self) -> int:
        return len(self.outputs)

    def predicted(self, output: str) -> np.ndarray:
        """The predicted class name of every sample for a classifier `output` (a unicode array)."""
        names = self.classes[output]
        return np.array(names, dtype=str)[self._class_indices(output)]

    @property
    def labels(self) -> np.ndarray:
        """The predicted class names of the model's one classifier output."""
        if len(self.classes) != 1:
            raise UsageError(
                f"labels is the one classifier output's; this model has {len(self.classes)} (use predicted(output))"
            )
        return self.predicted(next(iter(self.classes)))

    def _class_indices(self, output: str) -> np.ndarray:
        values = self.outputs[output].reshape(len(self.sources), -1)
        if values.shape[1] == 1 and len(self.classes[output]) == 2:
            return (values[:, 0] >= 0.5).astype(np.int64)  # one sigmoid unit: the second class's probability
        return np.argmax(values, axis=1)

    def probabilities(self, output: str) -> np.ndarray:
        """(N, classes): one column per class (a sigmoid's one unit as both classes' probabilities)."""
        values = self.outputs[output].reshape(len(self.sources), -1)
        if values.shape[1] == 1 and len(self.classes[output]) == 2:
            return np.concatenate([1.0 - values, values], axis=1)
        return values

    def columns(self) -> dict[str, np.ndarray]:
        """The table a file holds, by column: `source`, then per classifier output its class (`class`, or
        `OUTPUT_class` for one of several outputs) and one probability column per class (named by the
        class, or `OUTPUT_CLASS`); per other output its values (`OUTPUT`, or `OUTPUT_0`, `OUTPUT_1`, ...)."""
        table: dict[str, np.ndarray] = {"source": np.array(self.sources, dtype=str)}
        single = len(self.outputs) == 1
        for name, array in self.outputs.items():
            if name in self.classes:
                names = self.classes[name]
                _put(table, "class" if single else f"{name}_class", self.predicted(name))
                probabilities = self.probabilities(name)
                for i in range(probabilities.shape[1]):
                    label = names[i] if i < len(names) else str(i)
                    _put(table, label if single else f"{name}_{label}", probabilities[:, i])
            else:
                values = array.reshape(len(self.sources), -1)
                if values.shape[1] == 1:
                    _put(table, name, values[:, 0])
                else:
                    for i in range(values.shape[1]):
                        _put(table, f"{name}_{i}", values[:, i])
        return table

    def arrays(self) -> dict[str, np.ndarray]:
        """What an .npz holds: `source`, each output's array by its name, and per classifier output its
        predicted classes (`class` / `OUTPUT_class`) and its class names (`classes` / `OUTPUT_classes`)."""
        found: dict[str, np.ndarray] = {"source": np.array(self.sources, dtype=str)}
        single = len(self.outputs) == 1
        for name, array in self.outputs.items():
            _put(found, name, array)
            if name in self.classes:
                _put(found, "class" if single else f"{name}_class", self.predicted(name))
                _put(found, "classes" if single else f"{name}_classes", np.array(self.classes[name], dtype=str))
        return found

    def write(self, target: str | os.PathLike) -> Path:
        """The predictions as `target`'s suffix says (.csv, .npz, .json), written atomically."""
        path = Path(target)
        suffix = path.suffix.lower()
        if suffix == ".npz":
            data = npz_bytes(self.arrays())
        elif suffix == ".csv":
            data = _csv_bytes(self.columns())
        elif suffix == ".json":
            data = self._json_bytes()
        else:
            raise UsageError(f"-o takes a .csv, .npz or .json file; received {str(target)!r}")
        write_bytes(path, data)
        return path

    def _json_bytes(self) -> bytes:
        table = self.columns()
        rows = [{key: _json_value(column[i]) for key, column in table.items()} for i in range(len(self.sources))]
        document = {"classes": {k: list(v) for k, v in self.classes.items()}, "predictions": rows}
        return (json.dumps(document, indent=1) + "\n").encode()

    def table(self) -> str:
        """The first rows as a terminal shows them: source, class and the first classes' probabilities (or
        the first values), each text made printable."""
        table = self.columns()
        keys = list(table)[: 2 + SHOWN_CLASSES]
        shown = min(len(self.sources), SHOWN_ROWS)
        cells = [[printable(key) for key in keys]]
        for i in range(shown):
            cells.append([printable(_text(table[key][i])) for key in keys])
        widths = [max(len(row[c]) for row in cells) for c in range(len(keys))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
        more = []
        if len(self.sources) > shown:
            more.append(f"{len(self.sources) - shown} more rows")
        if len(table) > len(keys):
            more.append(f"{len(table) - len(keys)} more columns")
        if more:
            lines.append(f"... ({', '.join(more)} in the file)")
        return "\n".join(lines)


def _put(table: dict[str, np.ndarray], key: str, values: np.ndarray) -> None:
    if key in table:
        raise UsageError(
            f"two columns would be called '{key}' (an output or a class has that name); "
            "write an .npz file, or rename the output"
        )
    table[key] = values


def _csv_bytes(table: dict[str, np.ndarray]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(table))
    n = len(next(iter(table.values())))
    for i in range(n):
        writer.writerow([_text(column[i]) for column in table.values()])
    return buffer.getvalue().encode()


def _text(value: object) -> str:
    if isinstance(value, (np.floating, float)):
        return f"{float(value):.6g}"
    return str(value)


def _json_value(value: object) -> object:
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return str(value)


# Losses that train an output to say which class a sample is: one unit per class, or one sigmoid unit
# for two classes (the binary ones).
CLASS_LOSSES = {
    "sparse_categorical_crossentropy",
    "categorical_crossentropy",
    "categorical_focal_crossentropy",
    "categorical_generalized_cross_entropy",
    "categorical_hinge",
}
BINARY_LOSSES = {"binary_crossentropy", "binary_focal_crossentropy"}


def class_names(
    units: Mapping[str, int | None], losses: Mapping[str, str], named: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """{output: class names} of the classifier outputs: the names the data gave (padded with "K", "K+1", ...
    when the output has more units), else "0", "1", ... for an output a class loss trained
    (`units`: each output's last size; `losses`: each output's loss name)."""
    found: dict[str, tuple[str, ...]] = {}
    for output, size in units.items():
        loss = losses.get(output)
        names = tuple(named.get(output, ()))
        count = 2 if size == 1 and (loss in BINARY_LOSSES or len(names) == 2) else size
        if names:
            found[output] = names + tuple(str(i) for i in range(len(names), count or 0))
        elif count and (loss in CLASS_LOSSES and count > 1 or loss in BINARY_LOSSES and size == 1):
            found[output] = tuple(str(i) for i in range(count))
    return found


def keras_loss_names(model: object) -> dict[str, str]:
    """{output name: loss name} of a compiled Keras model (a loss as a name or a Keras loss object)."""
    loss = getattr(model, "loss", None)
    outputs = list(getattr(model, "output_names", []) or [])
    if isinstance(loss, dict):
        per_output = loss
    elif isinstance(loss, (list, tuple)):
        per_output = dict(zip(outputs, loss))
    elif loss is not None and len(outputs) == 1:
        per_output = {outputs[0]: loss}
    else:
        return {}
    return {name: _loss_name(value) for name, value in per_output.items() if value is not None}


def _loss_name(loss: object) -> str:
    if isinstance(loss, str):
        return loss
    name = getattr(loss, "name", None) or getattr(loss, "__name__", None) or type(loss).__name__
    return str(name)
