"""The resumable state of a run after each epoch, in one file (`checkpoint.npz`).

It holds every variable of the model (weights and the dropout layers' seed
states), every variable of the optimizer (its step count, learning rate and
slots), the state of the spec's callbacks (EarlyStopping's patience count
and best weights, ReduceLROnPlateau's), and as JSON the next epoch, the
history so far and the run's counters. It is written atomically after each
epoch: a run killed at any moment finds either the previous epoch's state or
this one's, never a mix. Restored into a freshly built model, training goes
on exactly where it left off (with the epoch's data order given by the
seed and the epoch number, see pipeline.py).
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from netdsl.files import ZIP_ERRORS, Refused, open_regular
from netdsl.training.data.npz_members import check_member
from netdsl.training.errors import DataError, RunError

# The state Keras callbacks keep between epochs (EarlyStopping, ReduceLROnPlateau).
CALLBACK_FIELDS = ("wait", "stopped_epoch", "best", "best_epoch", "cooldown_counter")
META = "meta.json"


def capture(model: Any, callbacks: list, meta: dict) -> bytes:
    """The checkpoint file's bytes."""
    arrays: dict[str, np.ndarray] = {}
    meta = dict(meta)
    meta["model_variables"] = _store(arrays, "model", model.variables)
    meta["optimizer_variables"] = _store(arrays, "optimizer", _optimizer_variables(model))
    meta["callbacks"] = [_callback_state(arrays, i, cb) for i, cb in enumerate(callbacks)]
    arrays[META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    return npz_bytes(arrays)


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An .npz of `arrays` by name, as `np.savez` writes it (one uncompressed NAME.npy each), for any
    name: `np.savez(f, **arrays)` takes `file` and `allow_pickle` as its own parameters, not arrays."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


def read_meta(path: Path) -> dict:
    with _open(path) as archive:
        return _meta(archive)


def restore(path: Path, model: Any, callbacks: list) -> dict:
    """Put the checkpoint's state into `model` and `callbacks`; its meta back."""
    with _open(path) as archive:
        meta = _meta(archive)
        _load(archive, "model", model.variables, meta.get("model_variables"), path)
        _load(archive, "optimizer", _optimizer_variables(model), meta.get("optimizer_variables"), path)
        meta["callback_arrays"] = {name: archive[name] for name in archive.files if name.startswith("callback/")}
        meta["file"] = str(path)
    return meta


def apply_callback_state(callbacks: list, meta: dict) -> None:
    """After the callbacks' own on_train_begin (which resets them), give them their saved state:
    only the fields netdsl saves (CALLBACK_FIELDS), only numbers, best weights shaped as the model's."""
    saved, stored = meta.get("callbacks", []), meta.get("callback_arrays", {})
    file = meta.get("file")
    if not isinstance(saved, list):
        raise RunError("cannot read the checkpoint: its callback state is not a list", file=file)
    for i, (cb, state) in enumerate(zip(callbacks, saved)):
        if not isinstance(state, dict) or state.get("type") != type(cb).__name__:
            continue
        fields = state.get("fields", {})
        for name, value in fields.items() if isinstance(fields, dict) else ():
            if name not in CALLBACK_FIELDS or not isinstance(value, (bool, int, float)):
                raise RunError(
                    f"cannot read the checkpoint: callback field {name!r} is not one netdsl saves", file=file
                )
            setattr(cb, name, value)
        count = state.get("best_weights")
        if count is not None:
            cb.best_weights = _best_weights(cb, stored, i, count, file)


def _best_weights(callback: Any, stored: dict, index: int, count: Any, file: Any) -> list:
    model = getattr(callback, "model", None)
    shapes = [tuple(w.shape) for w in model.weights] if model is not None else None
    names = [f"callback/{index}/best_weights/{j:04d}" for j in range(count if isinstance(count, int) else -1)]
    weights = [w for w in (stored.get(name) for name in names) if w is not None]
    if not names or len(weights) != len(names) or (shapes is not None and [tuple(w.shape) for w in weights] != shapes):
        raise RunError("cannot read the checkpoint: its best weights do not fit the model", file=file)
    return weights


def _meta(archive: Any) -> dict:
    meta = json.loads(archive[META].tobytes().decode())
    if not isinstance(meta, dict):
        raise ValueError("meta.json is not a JSON object")
    return meta


def _optimizer_variables(model: Any) -> list:
    optimizer = model.optimizer
    if optimizer is None:
        return []
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    return list(optimizer.variables)


def _store(arrays: dict, prefix: str, variables: list) -> list[str]:
    for i, variable in enumerate(variables):
        arrays[f"{prefix}/{i:04d}"] = np.asarray(variable.numpy())
    return [_path(prefix, variable) for variable in variables]


def _path(prefix: str, variable: Any) -> str:
    """The variable's path without the numbers Keras gives names per process (adam_3/..., seed_generator_4/...)."""
    path = variable.path.partition("/")[2] if prefix == "optimizer" else variable.path
    return re.sub(r"_\d+(?=/|$)", "", path)


def _load(archive: Any, prefix: str, variables: list, paths: Any, file: Path) -> None:
    current = [_path(prefix, variable) for variable in variables]
    paths = paths if isinstance(paths, list) else []
    if current != paths:
        raise RunError(
            f"the checkpoint's {prefix} variables do not match the model built from the spec "
            f"({len(paths)} saved, {len(current)} now)",
            file=str(file),
        )
    for i, variable in enumerate(variables):
        value = archive[f"{prefix}/{i:04d}"]
        if tuple(value.shape) != tuple(variable.shape):
            raise RunError(
                f"the checkpoint's {variable.path} has shape {value.shape}, the model's {tuple(variable.shape)}",
                file=str(file),
            )
        variable.assign(value)


def _callback_state(arrays: dict, index: int, callback: Any) -> dict:
    fields = {}
    for name in CALLBACK_FIELDS:
        value = getattr(callback, name, None)
        if isinstance(value, (bool, int, float, np.number)):
            fields[name] = value.item() if isinstance(value, np.number) else value
    state: dict[str, Any] = {"type": type(callback).__name__, "fields": fields}
    weights = getattr(callback, "best_weights", None)
    if weights is not None:
        for j, w in enumerate(weights):
            arrays[f"callback/{index}/best_weights/{j:04d}"] = np.asarray(w)
        state["best_weights"] = len(weights)
    return state


class _open:
    """The checkpoint as an open NpzFile: a regular file, not a link, never unpickled; any error
    reading it, inside the `with` block too, is a one-line RunError."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self) -> Any:
        try:
            with open_regular(self.path, "checkpoint", follow_links=False, own=True) as fd:
                self.handle = os.fdopen(os.dup(fd), "rb")
        except Refused as exc:
            raise RunError(f"cannot read the checkpoint: {exc}", file=str(self.path)) from None
        try:
            self.archive = np.load(self.handle, allow_pickle=False)
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            self.handle.close()
            raise RunError(f"cannot read the checkpoint: {exc}", file=str(self.path)) from None
        return _Checked(self.archive, str(self.path))

    def __exit__(self, kind: Any, exc: Any, trace: Any) -> Literal[False]:
        self.archive.close()
        self.handle.close()
        if kind is not None and issubclass(kind, _UNREADABLE):
            raise RunError(f"cannot read the checkpoint: {_first_line(exc)}", file=str(self.path)) from None
        return False


_UNREADABLE = (KeyError, ValueError, TypeError, UnicodeDecodeError, RecursionError, AttributeError, *ZIP_ERRORS)


class _Checked:
    """An NpzFile whose members are checked before NumPy allocates them (arrays._check_member)."""

    def __init__(self, archive: Any, path: str):
        self._archive, self._path, self.files = archive, path, archive.files

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            check_member(self._archive.zip, key, self._path)
        except DataError as exc:
            raise RunError(f"cannot read the checkpoint: {exc.message}", file=self._path) from None
        return self._archive[key]


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
