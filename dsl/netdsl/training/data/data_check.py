"""The data checked against the model before TensorFlow loads and before a run folder is made.

    check_mapping(path, signature, npz_headers(path), need_targets)   # DataError, in pure Python and NumPy

A typo in an `.npz` key or a CSV column used to cost the TensorFlow import
(seconds) and leave a failed run folder behind. What can be known from the
files' headers is checked here first, with the messages the readers give
(`arrays`, `csv_table`, `images` share these checks): the keys of an `.npz`
and each array's shape and dtype (read from the `.npy` headers, no array is
loaded), a CSV file's header and its first row, an image folder's fit to
the model's input. The model's signature comes from the checked graph
(`signature_of_graph`): input names, shapes and dtypes, output names.
Nothing here imports TensorFlow. `source.check_data` runs these checks on
every source of a request, by format.
"""

from __future__ import annotations

import csv
import os
import zipfile
from typing import Any

import numpy as np

from netdsl.files import ZIP_ERRORS, Refused, open_regular
from netdsl.training.data.image_files import check_class_layout
from netdsl.training.data.npz_members import check_member
from netdsl.training.data.request import DataNames
from netdsl.training.data.signature import Signature, TensorSpec, shape_text
from netdsl.training.errors import DataError

NUMERIC_KINDS = "biuf"


def signature_of_graph(graph: Any) -> Signature:
    """The model's inputs and outputs as the checker inferred them (None for a size it leaves open
    or could not know)."""
    inputs = []
    for node_id in graph.inputs:
        node = graph.nodes[node_id]
        inputs.append(TensorSpec(node.name, _known(node.args.get("shape")), node.dtype or "float32"))
    outputs = []
    for name, ref in graph.outputs:
        shapes = graph.nodes[ref.node].output_shapes
        shape = shapes[ref.index] if ref.index < len(shapes) else None
        outputs.append(TensorSpec(name, _known(shape), "float32"))
    return Signature(tuple(inputs), tuple(outputs))


def _known(shape: Any) -> tuple:
    if not isinstance(shape, tuple):
        return (None,)  # unknown rank: one open size (only the sample axis is then checked)
    return tuple(d if isinstance(d, int) and not isinstance(d, bool) else None for d in shape)


def require_data_file(path: str) -> None:
    """A path given as data names an existing regular file: a FIFO, a device or a socket is refused
    before any reader opens it (and blocks, or reads forever). DataError otherwise."""
    if not os.path.exists(path):
        raise DataError("no such file or folder", file=path)
    try:
        with open_regular(path, "data file"):
            pass
    except Refused as exc:
        raise DataError(str(exc), file=path) from None


# ------------------------------------------------------------------ arrays by name


def npz_headers(path: str) -> dict[str, tuple[tuple, np.dtype]]:
    """{key: (shape, dtype)} of an .npz archive, from each member's .npy header (no array is loaded)."""
    check_zip(path)
    headers = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                key = member[:-4] if member.endswith(".npy") else member
                check_member(archive, key, path)  # a header declaring more than the member holds, a bomb
                with archive.open(member) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read(fh)
                headers[key] = (tuple(shape), np.dtype(dtype))
    except (ValueError, *ZIP_ERRORS) as exc:
        raise DataError(f"not a readable .npz file ({_reason(exc)})", file=path) from None
    return headers


def as_mapping(data: Any) -> dict[str, np.ndarray]:
    """Arrays given to the library by name: {name: array}, (x, y), or x alone."""
    if isinstance(data, dict):
        mapping = dict(data)
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        mapping = {"x": data[0], "y": data[1]}
    elif isinstance(data, (tuple, list)) and len(data) == 1:
        mapping = {"x": data[0]}
    else:
        mapping = {"x": data}
    return {key: np.asarray(value) for key, value in mapping.items()}


def check_zip(path: str) -> None:
    """An .npz is a zip archive: say so when the file is something else."""
    try:
        with open(path, "rb") as fh:
            zipped = fh.read(4) == b"PK\x03\x04"
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=path) from None
    if not zipped:
        raise DataError("not an .npz archive (np.savez writes one: a zip of named arrays)", file=path)


def check_mapping(
    origin: str, signature: Signature, headers: dict[str, tuple[tuple, np.dtype]], need_targets: bool
) -> int | None:
    """The arrays that feed the model checked; their number of samples."""
    keys = sorted(headers)
    used = {}
    for spec in signature.inputs:
        key = key_for(origin, spec, "input", "x", keys, signature)
        check_input_header(origin, spec, *headers[key])
        used[key] = headers[key][0]
    wanted = [(spec, find_key(spec, "y", keys, signature)) for spec in signature.outputs]
    if need_targets or all(key is not None for _, key in wanted):
        for spec in signature.outputs:
            key = key_for(origin, spec, "output", "y", keys, signature)
            check_target_header(origin, spec, *headers[key])
            used[key] = headers[key][0]
    lengths = {key: shape[0] for key, shape in used.items() if shape}
    if len(set(lengths.values())) > 1:
        longest, shortest = max(lengths, key=lengths.__getitem__), min(lengths, key=lengths.__getitem__)
        raise DataError(
            f"'{longest}' has {lengths[longest]} samples but '{shortest}' has {lengths[shortest]}", file=origin
        )
    return next(iter(lengths.values()), None)


def find_key(spec: TensorSpec, alias: str, keys: list[str], signature: Signature) -> str | None:
    """The array that feeds `spec`: its own name, or `x`/`y` for a one-input, one-output model."""
    if spec.name in keys:
        return spec.name
    if signature.single and alias in keys:
        return alias
    return None


def key_for(origin: str, spec: TensorSpec, role: str, alias: str, keys: list[str], signature: Signature) -> str:
    key = find_key(spec, alias, keys, signature)
    if key is None:
        also = f" (or '{alias}')" if signature.single else ""
        found = ", ".join(keys) if keys else "none"
        near = _near(spec.name, keys)
        raise DataError(
            f"no array for {role} '{spec.name}'{also}; keys found: {found}",
            file=origin,
            hint=f"did you mean '{near}'? (arrays are keyed by the spec's input and output names)" if near else None,
        )
    return key


def _near(name: str, keys: list[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, keys, n=1, cutoff=0.6)
    return close[0] if close else None


def check_input_header(origin: str, spec: TensorSpec, shape: tuple, dtype: np.dtype) -> None:
    """An input array's dtype and shape against the model's; DataError naming input, expected and found."""
    if spec.dtype == "string":
        if dtype.kind not in "USO":
            raise DataError(f"input '{spec.name}' takes text (strings), found {describe_dtype(dtype)}", file=origin)
    elif dtype.kind not in NUMERIC_KINDS:
        if dtype.kind == "O":
            raise DataError(f"array '{spec.name}' holds Python objects; netdsl reads numeric arrays only", file=origin)
        raise DataError(f"input '{spec.name}' expects {spec.dtype} numbers, found {describe_dtype(dtype)}", file=origin)
    if spec.is_integer and dtype.kind == "f":
        raise DataError(f"input '{spec.name}' expects {spec.dtype} integers, found {dtype}", file=origin)
    expected = (None, *spec.shape)
    if len(shape) != len(expected) or any(e is not None and e != f for e, f in zip(expected, shape)):
        raise DataError(
            f"input '{spec.name}' expects shape {shape_text(('N', *spec.shape))}, found {shape_text(shape)}",
            file=origin,
        )


def check_target_header(origin: str, spec: TensorSpec, shape: tuple, dtype: np.dtype) -> None:
    """Targets: numbers with a sample axis."""
    if dtype.kind not in NUMERIC_KINDS:
        raise DataError(f"output '{spec.name}' expects numbers as targets, found {describe_dtype(dtype)}", file=origin)
    if len(shape) == 0:
        raise DataError(f"output '{spec.name}' expects one target per sample, found a single value", file=origin)


def describe_dtype(dtype: np.dtype) -> str:
    if dtype.kind in "US":
        return f"text ({dtype})"
    if dtype.kind == "O":
        return "Python objects"
    return str(dtype)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# ------------------------------------------------------------------ CSV


def check_csv_head(
    path: str, signature: Signature, targets: dict[str, str], need_targets: bool, names: DataNames | None = None
) -> None:
    """A CSV file's header and first row: one input, the target columns there, the columns --features and
    --drop name there, the input's columns as many as it takes. (The reader checks every row.)"""
    if len(signature.inputs) != 1:
        names_text = ", ".join(signature.input_names)
        raise DataError(
            f"a CSV file feeds a model with one input; this model has {len(signature.inputs)} ({names_text})", file=path
        )
    head = _head(path)
    if head is None:
        return  # a bad byte or an oversized cell: the reader names its line and column
    header, first = head
    if header is None:
        raise DataError("empty file; a CSV file starts with a header line naming its columns", file=path)
    target_cols = target_columns(path, signature, header, targets, need_targets)
    if first is None:
        raise DataError("no rows after the header", file=path)
    features, skipped = feature_columns(path, header, first, target_cols, names or DataNames())
    check_width(path, signature.inputs[0], header, features, skipped)


def feature_columns(
    path: str, header: list[str], first: list[str], target_cols: dict[str, int], names: DataNames
) -> tuple[list[int], list[int]]:
    """(the columns that form the input, in order; the columns left out as not numeric). `names.features`:
    exactly those; `names.drop`: those left out too. A column either names that the header lacks, or a
    target column named as a feature, is a DataError at the header."""
    targets = set(target_cols.values())
    flag = "--features" if names.features is not None else "--drop"
    for column in (names.features or ()) + names.drop:
        if column not in header:
            raise DataError(
                f"no column '{column}' (named by {flag}); columns: {', '.join(header)}", file=path, line=1, col=1
            )
    numeric = [c for c in range(len(header)) if c < len(first) and is_number(first[c])]
    if names.features is not None:
        chosen = [header.index(column) for column in names.features]
        for c in chosen:
            if c in targets:
                output = next(name for name, at in target_cols.items() if at == c)
                raise DataError(
                    f"column '{header[c]}' holds the targets of output '{output}'; it cannot be a feature too",
                    file=path,
                    line=1,
                    col=1,
                )
        return chosen, [c for c in chosen if c not in numeric]
    dropped = {header.index(column) for column in names.drop}
    candidates = [c for c in range(len(header)) if c not in targets and c not in dropped]
    return [c for c in candidates if c in numeric], [c for c in candidates if c not in numeric]


def check_width(path: str, spec: TensorSpec, header: list[str], features: list[int], skipped: list[int]) -> None:
    """The input's columns: numbers, as many as the input takes per sample."""
    named = [c for c in features if c in skipped]
    if named:  # --features named a column whose first value is no number
        raise DataError(
            f"column '{header[named[0]]}' (named by --features) holds text, not numbers; the "
            f"input '{spec.name}' takes numbers",
            file=path,
            line=1,
            col=1,
        )
    if spec.size is not None and spec.size != len(features):
        left_out = f"; left out as not numeric: {', '.join(repr(header[c]) for c in skipped)}" if skipped else ""
        raise DataError(
            f"input '{spec.name}' expects {spec.size} values per row (shape {spec.shape_text()}), "
            f"found {len(features)} numeric columns{left_out}",
            file=path,
            line=1,
            col=1,
        )


def _head(path: str) -> tuple[list[str] | None, list[str] | None] | None:
    """The header's cells and the first data row's (None where there is none); only the start is read.
    None when the start cannot be read as CSV text: the full reader then says where and why."""
    try:
        with open_regular(path, "data file") as fd, open(fd, encoding="utf-8-sig", newline="", closefd=False) as fh:
            rows = csv.reader(line for line in fh if line.strip())
            header = next(rows, None)
            return header, next(rows, None)
    except (UnicodeDecodeError, csv.Error):
        return None
    except Refused as exc:
        raise DataError(str(exc), file=path) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", file=path) from None


def target_columns(
    path: str, signature: Signature, header: list[str], targets: dict[str, str], need_targets: bool
) -> dict[str, int]:
    """{output name: column index} for the outputs whose column is present."""
    for name in targets:
        if name not in signature.output_names:
            raise DataError(
                f"--targets names '{name}', which is not an output of the model "
                f"(outputs: {', '.join(signature.output_names)})"
            )
    columns = {}
    for name in signature.output_names:
        column = targets.get(name, name)
        if column in header:
            columns[name] = header.index(column)
        elif need_targets:
            how = f"--targets {name}=COLUMN" if name not in targets else f"another column in --targets {name}=..."
            raise DataError(
                f"no column '{column}' for output '{name}'; columns: {', '.join(header)}",
                file=path,
                line=1,
                col=1,
                hint=f"name one with {how}",
            )
    return columns


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ image folders


def check_image_folder(folder: str, signature: Signature, need_targets: bool) -> None:
    """An image folder feeds one image input; labelled (train, evaluate), it labels one output from its
    class sub-folders."""
    _check_image_input(folder, signature)
    if need_targets and len(signature.outputs) != 1:
        raise DataError(
            f"an image folder labels one output; this model has {len(signature.outputs)} "
            f"({', '.join(signature.output_names)})",
            file=folder,
        )
    if need_targets:
        check_class_layout(folder)


def check_single_image(path: str, signature: Signature, need_targets: bool) -> None:
    """One image file is something to predict on: it has no label to train or evaluate with."""
    if need_targets:
        raise DataError(
            "one image holds no label; train and evaluate on a folder with one sub-folder per class "
            "(predict takes a single image)",
            file=path,
        )
    _check_image_input(path, signature, "an image feeds")


def _check_image_input(origin: str, signature: Signature, what_feeds: str = "an image folder feeds") -> None:
    spec = signature.inputs[0] if len(signature.inputs) == 1 else None
    if (
        spec is None
        or len(spec.shape) not in (2, 3)
        or None in spec.shape[:2]
        or (len(spec.shape) == 3 and spec.shape[2] not in (1, 3, 4))
    ):
        what = (
            f"input '{spec.name}' has shape {spec.shape_text()}"
            if spec is not None
            else f"this model has {len(signature.inputs)} inputs"
        )
        raise DataError(
            f"{what_feeds} one image input of shape (height, width) or "
            f"(height, width, channels) with 1, 3 or 4 channels; {what}",
            file=origin,
        )
