"""Reading a `.keras` file as data: its `config.json`, never its objects.

A `.keras` file is a zip archive holding `config.json` (the model's structure),
`metadata.json` and the weights. Export needs only the structure, so this module
reads that one member with `zipfile` and `json`, bounded in size (nesting is bounded
by Python's recursion limit: `decompile_config` reports a RecursionError as such), and
never hands the file to Keras: no Keras object is created from an untrusted file,
and TensorFlow is not imported.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from netdsl.errors import Diagnostic, SpecError
from netdsl.files import ZIP_ERRORS, Refused, open_regular
from netdsl.limits import MAX_CONFIG_BYTES, MAX_CONFIG_PLAIN_EXPANSION, MAX_CONFIG_RATIO

CONFIG_MEMBER = "config.json"


def read_model_config(path: str | os.PathLike) -> dict:
    """The model's config (the dict Keras serialised) read from a `.keras` file.

    Raises SpecError with one file-level diagnostic when the file cannot be read,
    is not a `.keras` archive, or its config is too large, nested too deeply or
    not a JSON object.
    """
    display = str(path)
    data = _config_bytes(Path(path), display)
    try:
        config = json.loads(data)
    except RecursionError:
        raise _error(display, "config.json is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _error(display, f"config.json is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise _error(display, "config.json does not describe a model (expected a JSON object)")
    return config


def _config_bytes(path: Path, display: str) -> bytes:
    if path.suffix.lower() in (".h5", ".hdf5"):
        raise _error(display, "HDF5 (.h5) models are not supported",
                     "load it in Keras and save it as .keras (model.save('model.keras'))")
    try:
        with open_regular(path, ".keras file") as fd:  # a FIFO or a device: refused, never opened blocking
            handle = os.fdopen(os.dup(fd), "rb")
    except Refused as exc:
        raise _error(display, str(exc)) from None
    try:
        archive = zipfile.ZipFile(handle)
    except zipfile.BadZipFile:
        handle.close()
        raise _error(display, "not a .keras file (not a zip archive)",
                     "decompile reads models saved with model.save('model.keras')") from None
    except OSError as exc:
        handle.close()
        raise _error(display, f"cannot read file: {exc.strerror or exc}") from None
    except ZIP_ERRORS as exc:  # a zip directory Python cannot read ("zip file version 13.5")
        handle.close()
        raise _error(display, f"not a readable .keras file ({exc})") from None
    with handle, archive:
        try:
            info = archive.getinfo(CONFIG_MEMBER)
        except KeyError:
            raise _error(display, "not a .keras file (it has no config.json)") from None
        if info.file_size > MAX_CONFIG_BYTES:
            raise _error(display, f"config.json is too large ({info.file_size:,} bytes; "
                                  f"at most {MAX_CONFIG_BYTES:,})")
        packed = min(info.compress_size, os.fstat(handle.fileno()).st_size)
        _refuse_a_bomb(display, info.file_size, packed)
        try:
            data = _read_member(archive, info, display, packed)
        except ZIP_ERRORS as exc:
            raise _error(display, f"cannot read config.json ({exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise _error(display, f"config.json is too large (more than {MAX_CONFIG_BYTES:,} bytes)")
    if len(data) > MAX_CONFIG_PLAIN_EXPANSION and not data.lstrip(b" \t\r\n").startswith(b"{"):
        # refused before parsing: 64 MiB of `[{},{},...]` parses into 22 million dicts
        raise _error(display, "config.json does not describe a model (expected a JSON object)")
    return data


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, display: str, packed: int) -> bytes:
    """config.json's bytes, at most one past the limit (the header's sizes can lie), the expansion
    checked as it grows."""
    chunks, total = [], 0
    with archive.open(info) as member:
        while total <= MAX_CONFIG_BYTES:
            chunk = member.read(min(1 << 20, MAX_CONFIG_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            _refuse_a_bomb(display, total, packed)
    return b"".join(chunks)


def _refuse_a_bomb(display: str, size: int, packed: int) -> None:
    if size > MAX_CONFIG_PLAIN_EXPANSION and size > MAX_CONFIG_RATIO * max(packed, 1):
        raise _error(display, f"config.json expands from {packed:,} bytes to more than {MAX_CONFIG_RATIO}x "
                              f"that; a model's config expands less (a zip bomb?)")


def _error(file: str, message: str, hint: str | None = None) -> SpecError:
    return SpecError(Diagnostic.for_file(file, message, hint))
