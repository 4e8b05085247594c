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
from netdsl.limits import MAX_CONFIG_BYTES

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
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise _error(display, "no such file") from None
    except IsADirectoryError:
        raise _error(display, "is a directory, not a .keras file") from None
    except zipfile.BadZipFile:
        raise _error(display, "not a .keras file (not a zip archive)",
                     "decompile reads models saved with model.save('model.keras')") from None
    except OSError as exc:
        raise _error(display, f"cannot read file: {exc.strerror or exc}") from None
    with archive:
        try:
            info = archive.getinfo(CONFIG_MEMBER)
        except KeyError:
            raise _error(display, "not a .keras file (it has no config.json)") from None
        if info.file_size > MAX_CONFIG_BYTES:
            raise _error(display, f"config.json is too large ({info.file_size:,} bytes; "
                                  f"at most {MAX_CONFIG_BYTES:,})")
        try:
            with archive.open(info) as member:
                # The header's size can lie: read at most one byte past the limit.
                data = member.read(MAX_CONFIG_BYTES + 1)
        except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
            raise _error(display, f"cannot read config.json ({exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise _error(display, f"config.json is too large (more than {MAX_CONFIG_BYTES:,} bytes)")
    return data


def _error(file: str, message: str, hint: str | None = None) -> SpecError:
    return SpecError(Diagnostic.for_file(file, message, hint))
