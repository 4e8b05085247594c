"""CSV files with a header: target columns named after the outputs, the other numeric columns the input.

    x0,x1,x2,label          # `--targets logits=label` when the output is called logits
    0.1,0.5,0.3,mid

Columns whose first value is not a number (an id, a name) are left out of
the input; `--features a,b,c` names the input's columns instead (in that
order), `--drop id` leaves more out (`DataNames`). A target column whose
first value is not a number holds class names: each becomes the index of its
name among the classes (the names sorted, as an image folder's sub-folders
are; or the classes a run recorded, when it evaluates or predicts). Every
other cell must be a number; one that is not is reported at its file, line
and column. NumPy's C parser reads the numbers; only when it fails is the
file read again cell by cell, to say exactly where. A column of the input
with a different integer on every row, all within a span of twice the rows, looks like an identifier
(a row number, a sequential id): a warning
names it (`DataWarning`). Nothing here imports TensorFlow: the whole file is
read before it loads (`source.check_source`), and that reading is kept for
the reader (`from_csv(keep=True)`).
"""

from __future__ import annotations

import csv
import io
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from netdsl.errors import printable
from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_CSV_BYTES, MAX_CSV_FIELD
from netdsl.training.data.arrays import ArraySource, check_input, check_target
from netdsl.training.data.data_check import check_width, feature_columns, is_number, target_columns
from netdsl.training.data.request import DataNames
from netdsl.training.data.signature import Signature
from netdsl.training.errors import DataError, DataWarning

# Fewer rows than this can hold distinct integers by chance (ages, counts): no identifier warning.
MIN_IDENTIFIER_ROWS = 20


# The early check's reading of a file, until the reader takes it (a few at most: train, val, test).
KEPT_READINGS = 4
_READINGS: dict[tuple, tuple[Signature, ArraySource]] = {}


def from_csv(
    path: str,
    signature: Signature,
    targets: dict[str, str],
    need_targets: bool,
    names: DataNames | None = None,
    keep: bool = False,
) -> ArraySource:
    """The file as arrays by the model's names. `keep` (the check before TensorFlow loads): the reading is
    kept for the reader, which takes it when the file, the request and the model's inputs are the same."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=path) from None
    names = names or DataNames()
    key = (
        path,
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
        tuple(sorted(targets.items())),
        need_targets,
        names.key(),
    )
    kept = _READINGS.pop(key, None)
    if kept is not None and kept[0].inputs == signature.inputs and kept[0].output_names == signature.output_names:
        source = kept[1]
        source.signature = signature
    else:
        source = _from_csv(path, signature, targets, need_targets, names)
    if keep:
        _READINGS[key] = (signature, source)
        while len(_READINGS) > KEPT_READINGS:
            del _READINGS[next(iter(_READINGS))]
    return source


def _from_csv(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames
) -> ArraySource:
    if len(signature.inputs) != 1:
        input_names = ", ".join(signature.input_names)
        raise DataError(
            f"a CSV file feeds a model with one input; this model has {len(signature.inputs)} ({input_names})",
            file=path,
        )
    spec = signature.inputs[0]
    text = _read_text(path)
    lines = text.splitlines()
    header = _fields(lines[0], path, 1) if lines and lines[0].strip() else None
    if header is None:
        raise DataError("empty file; a CSV file starts with a header line naming its columns", file=path)
    target_cols = target_columns(path, signature, header, targets, need_targets)
    first = next(((i, line) for i, line in enumerate(lines[1:], 2) if line.strip()), None)
    if first is None:
        raise DataError("no rows after the header", file=path)
    first_cells = _fields(first[1], path, first[0])
    if spec.dtype == "string":
        return _text_column(path, signature, lines, header, first_cells, target_cols, names)
    feature_cols, skipped = feature_columns(path, header, first_cells, target_cols, names)
    named = {
        name: c for name, c in target_cols.items() if c >= len(first_cells) or not is_number(first_cells[c])
    }  # labels that are class names
    numeric_targets = sorted(c for name, c in target_cols.items() if name not in named)
    if [c for c in feature_cols if c in skipped]:
        check_width(path, spec, header, feature_cols, skipped)  # --features named a text column
    used = feature_cols + numeric_targets
    table = _parse(path, text, lines, header, used)
    features = table[:, : len(feature_cols)]
    if spec.size is not None and spec.size != len(feature_cols):
        ids = [header[c] for at, c in enumerate(feature_cols) if _is_identifier(features[:, at])]
        try:
            check_width(path, spec, header, feature_cols, skipped)
        except DataError as exc:
            if ids and names.features is None:
                exc.message += (
                    f"; {', '.join(repr(i) for i in ids)} holds a different integer on every row, like an "
                    f"identifier: leave it out with --drop {','.join(ids)}"
                )
            raise
    if spec.is_integer and not np.array_equal(features, np.round(features)):
        row = int(np.argwhere(features != np.round(features))[0][0])
        raise DataError(
            f"input '{spec.name}' expects {spec.dtype} integers, found {features.flat[row]!r} on a data row", file=path
        )
    if names.features is None:
        _warn_of_identifiers(path, spec.name, header, feature_cols, features)
    inputs = {spec.name: check_input(path, spec, features.reshape((len(table), *spec.shape)))}
    order = {c: len(feature_cols) + i for i, c in enumerate(numeric_targets)}
    out, classes = None, {}
    if target_cols:
        out = {}
        for name, c in target_cols.items():
            if name in named:
                labels, classes[name] = _class_indices(path, lines, header, c, names.classes.get(name))
                out[name] = check_target(path, _output(signature, name), labels)
            else:
                out[name] = check_target(path, _output(signature, name), table[:, order[c]])
    rows = np.array([i for i, line in enumerate(lines[1:], 2) if line.strip()], dtype=np.int64)
    return ArraySource(
        path,
        signature,
        inputs,
        out,
        classes=classes,
        columns={spec.name: tuple(header[c] for c in feature_cols)},
        lines=rows,
    )


def _text_column(
    path: str,
    signature: Signature,
    lines: list[str],
    header: list[str],
    first: list[str],
    target_cols: dict[str, int],
    names: DataNames,
) -> ArraySource:
    """A string input's table: its one text column (the one --features names, else the one column of text that
    is neither a target nor dropped; numeric columns are left out), every cell of it a sample's text."""
    from netdsl.training.data.texts import as_text_array, text_input

    spec = text_input(path, signature, "a CSV file feeds")
    feature_cols, skipped = feature_columns(path, header, first, target_cols, names)
    chosen = [header.index(c) for c in names.features] if names.features is not None else skipped
    if len(chosen) != 1:
        listed = ", ".join(repr(header[c]) for c in chosen)
        found = f"found {len(chosen)} ({listed})" if chosen else "found none"
        numbers = f"; left out as numbers: {', '.join(repr(header[c]) for c in feature_cols)}" if feature_cols else ""
        raise DataError(
            f"input '{spec.name}' takes one text column, {found}{numbers}",
            file=path,
            line=1,
            col=1,
            hint="name it with --features COLUMN" if chosen or feature_cols else None,
        )
    column = chosen[0]
    rows = list(_rows(path, lines, header))
    texts = [cells[column] for _, _, cells in rows]
    targets: dict[str, np.ndarray] = {}
    classes = {}
    for name, c in target_cols.items():
        labelled = [cells[c].strip() for _, _, cells in rows]
        if all(is_number(cell) for cell in labelled):
            targets[name] = check_target(path, _output(signature, name), np.array(labelled, dtype=np.float64))
        else:
            labels, classes[name] = _class_indices(path, lines, header, c, names.classes.get(name))
            targets[name] = check_target(path, _output(signature, name), labels)
    return ArraySource(
        path,
        signature,
        {spec.name: as_text_array(spec, texts)},
        targets or None,
        classes=classes,
        columns={spec.name: (header[column],)},
        lines=np.array([number for number, _, _ in rows], dtype=np.int64),
    )


def _class_indices(
    path: str, lines: list[str], header: list[str], column: int, known: tuple[str, ...] | None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """A column of class names as indices into the classes: `known` (a run's), else the names found, sorted."""
    cells = []
    for number, line, fields in _rows(path, lines, header):
        name = fields[column].strip()
        if not name:
            raise DataError(
                f"an empty cell where a class name belongs (column '{header[column]}')",
                file=path,
                line=number,
                col=_column_of(line, column),
            )
        cells.append((number, line, name))
    classes = known if known is not None else tuple(sorted({name for _, _, name in cells}))
    index = {name: i for i, name in enumerate(classes)}
    for number, line, name in cells:
        if name not in index:
            shown = ", ".join(classes[:20]) + (", ..." if len(classes) > 20 else "")
            raise DataError(
                f"{printable(repr(name))} is not one of the classes the model was trained on "
                f"({shown}) (column '{header[column]}')",
                file=path,
                line=number,
                col=_column_of(line, column),
            )
    return np.array([index[name] for _, _, name in cells], dtype=np.int64), tuple(classes)


def _is_identifier(values: np.ndarray) -> bool:
    """A different integer on every row (of at least MIN_IDENTIFIER_ROWS), all within a span of at most
    twice the rows: a row number or a sequential id (gaps from rows left out allowed). A count that
    happens to differ on every row (a day's traded volume, a price in cents) spans far more, and is a
    feature (msft.csv's Volume: 64 rows spanning 10^8 was named an identifier)."""
    if len(values) < MIN_IDENTIFIER_ROWS or not np.array_equal(values, np.round(values)):
        return False
    return len(np.unique(values)) == len(values) and float(values.max() - values.min()) < 2 * len(values)


def _warn_of_identifiers(
    path: str, input_name: str, header: list[str], columns: list[int], features: np.ndarray
) -> None:
    """One warning line per input column with a different integer on every row: a row number or an id,
    which a model learns nothing from but the rows it saw (the review's `row_id`: accuracy 0.35 for 0.91)."""
    for at, c in enumerate(columns):
        if _is_identifier(features[:, at]):
            warnings.warn(
                DataWarning(
                    f"{path}: column '{header[c]}' holds a different integer on every row, like an identifier, "
                    f"and is part of input '{input_name}'; leave it out with --drop {header[c]} (or name the "
                    "input's columns with --features)"
                ),
                stacklevel=2,
            )


def _read_text(path: str) -> str:
    try:
        raw = read_regular(path, MAX_CSV_BYTES, "CSV file")
    except Refused as exc:
        raise DataError(str(exc), file=path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError("not UTF-8 text", file=path, line=line) from None


def _parse(path: str, text: str, lines: list[str], header: list[str], used: list[int]) -> np.ndarray:
    """The used columns as a float64 table (rows, len(used))."""
    try:
        table = np.loadtxt(
            io.StringIO(text),
            delimiter=",",
            skiprows=1,
            usecols=used,
            dtype=np.float64,
            ndmin=2,
            comments=None,
            quotechar='"',
            encoding=None,
        )
    except ValueError as exc:
        _locate_bad_cell(path, lines, header, used)
        raise DataError(f"cannot parse ({str(exc).splitlines()[0]})", file=path) from None
    if _has_ragged_rows(text, lines, len(header)):
        _locate_bad_cell(path, lines, header, used, short_rows_only=True)
    return table.reshape(len(table), len(used))


def _has_ragged_rows(text: str, lines: list[str], width: int) -> bool:
    """NumPy reads only the used columns; a row with more or fewer cells than the header is an error too."""
    if '"' in text:
        return True  # commas may hide inside quotes: let the csv module count
    return any(line.count(",") != width - 1 for line in lines[1:] if line.strip())


def _rows(path: str, lines: list[str], header: list[str]) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, line, cells) of every row that is not blank; a row of another width than the
    header is the DataError at its line."""
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = _fields(line, path, number)
        if len(cells) != len(header):
            raise DataError(
                f"{len(cells)} cells on this line, the header has {len(header)}", file=path, line=number, col=1
            )
        yield number, line, cells


def _locate_bad_cell(
    path: str, lines: list[str], header: list[str], used: list[int], short_rows_only: bool = False
) -> None:
    """Raise the DataError for the first row with too few cells or a used cell that is not a number."""
    for number, line, cells in _rows(path, lines, header):
        if short_rows_only:
            continue
        for c in used:
            if not is_number(cells[c]):
                shown = cells[c].strip()
                what = "an empty cell" if not shown else repr(shown)
                raise DataError(
                    f"{what} is not a number (column '{header[c]}')", file=path, line=number, col=_column_of(line, c)
                )


def _fields(line: str, path: str, number: int) -> list[str]:
    if len(line) > MAX_CSV_FIELD and any(len(cell) > MAX_CSV_FIELD for cell in line.split(",")):
        raise DataError(
            f"a cell of more than {MAX_CSV_FIELD:,} characters; a cell holds a number or a short name",
            file=path,
            line=number,
            col=1,
        )
    try:
        return next(csv.reader([line]))
    except csv.Error as exc:
        raise DataError(f"cannot parse this line ({exc})", file=path, line=number, col=1) from None


def _column_of(line: str, index: int) -> int:
    """The 1-based character column where field `index` starts (quotes respected)."""
    field, quoted = 0, False
    for pos, ch in enumerate(line):
        if field == index:
            return pos + 1
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            field += 1
    return len(line) + 1


def _output(signature: Signature, name: str) -> Any:
    return next(spec for spec in signature.outputs if spec.name == name)
