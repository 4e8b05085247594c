"""CSV files with a header: target columns named after the outputs, the other numeric columns the input.

    x0,x1,x2,label          # `--targets logits=label` when the output is called logits
    0.1,0.5,0.3,2

Columns whose first value is not a number (an id, a name) are left out of
the input. Every other cell must be a number; one that is not is reported
at its file, line and column. NumPy's C parser reads the file; only when it
fails is the file read again cell by cell, to say exactly where.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np

from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_CSV_BYTES, MAX_CSV_FIELD
from netdsl.training.data.arrays import ArraySource, check_input, check_target
from netdsl.training.data.data_check import is_number, target_columns
from netdsl.training.data.signature import Signature
from netdsl.training.errors import DataError


def from_csv(path: str, signature: Signature, targets: dict[str, str], need_targets: bool) -> ArraySource:
    if len(signature.inputs) != 1:
        names = ", ".join(signature.input_names)
        raise DataError(f"a CSV file feeds a model with one input; this model has {len(signature.inputs)} "
                        f"({names})", file=path)
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
    skipped = [c for c in range(len(header)) if c not in target_cols.values()
               and (c >= len(first_cells) or not is_number(first_cells[c]))]
    feature_cols = [c for c in range(len(header)) if c not in target_cols.values() and c not in skipped]
    used = feature_cols + sorted(target_cols.values())
    table = _parse(path, text, lines, header, used)
    features = table[:, : len(feature_cols)]
    if spec.size is None or spec.size != len(feature_cols):
        left_out = f"; left out as not numeric: {', '.join(repr(header[c]) for c in skipped)}" if skipped else ""
        raise DataError(f"input '{spec.name}' expects {spec.size} values per row (shape {spec.shape_text()}), "
                        f"found {len(feature_cols)} numeric columns{left_out}", file=path, line=1, col=1)
    if spec.is_integer and not np.array_equal(features, np.round(features)):
        row = int(np.argwhere(features != np.round(features))[0][0])
        raise DataError(f"input '{spec.name}' expects {spec.dtype} integers, found {features.flat[row]!r} "
                        f"on a data row", file=path)
    inputs = {spec.name: check_input(path, spec, features.reshape((len(table), *spec.shape)))}
    order = {c: len(feature_cols) + i for i, c in enumerate(sorted(target_cols.values()))}
    out = None
    if target_cols:
        out = {
            name: check_target(path, _output(signature, name), table[:, order[c]]) for name, c in target_cols.items()
        }
    return ArraySource(path, signature, inputs, out)


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
        table = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, usecols=used, dtype=np.float64,
                           ndmin=2, comments=None, quotechar='"', encoding=None)
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


def _locate_bad_cell(path: str, lines: list[str], header: list[str], used: list[int],
                     short_rows_only: bool = False) -> None:
    """Raise the DataError for the first row with too few cells or a used cell that is not a number."""
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = _fields(line, path, number)
        if len(cells) != len(header):
            raise DataError(f"{len(cells)} cells on this line, the header has {len(header)}", file=path,
                            line=number, col=1)
        if short_rows_only:
            continue
        for c in used:
            if not is_number(cells[c]):
                shown = cells[c].strip()
                what = "an empty cell" if not shown else repr(shown)
                raise DataError(f"{what} is not a number (column '{header[c]}')", file=path, line=number,
                                col=_column_of(line, c))


def _fields(line: str, path: str, number: int) -> list[str]:
    if len(line) > MAX_CSV_FIELD and any(len(cell) > MAX_CSV_FIELD for cell in line.split(",")):
        raise DataError(f"a cell of more than {MAX_CSV_FIELD:,} characters; a cell holds a number or a short "
                        f"name", file=path, line=number, col=1)
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
