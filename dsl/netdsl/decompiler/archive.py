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
from pathlib import Path

from netdsl.archives import CONFIG_MEMBER, NotAZip, open_zip, read_config_json
from netdsl.errors import Diagnostic, SpecError
from netdsl.files import Refused
from netdsl.limits import MAX_CONFIG_BYTES

__all__ = ["CONFIG_MEMBER", "read_model_config"]


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
        raise _error(
            display,
            "HDF5 (.h5) models are not supported",
            "load it in Keras and save it as .keras (model.save('model.keras'))",
        )
    try:  # bounded by size and by ratio as it is read (netdsl.archives: the weights reader's rules too)
        with open_zip(path, ".keras file") as (archive, file_size):
            return read_config_json(archive, file_size, limit=MAX_CONFIG_BYTES)
    except NotAZip as exc:
        raise _error(display, str(exc), "decompile reads models saved with model.save('model.keras')") from None
    except Refused as exc:
        raise _error(display, str(exc)) from None


def _error(file: str, message: str, hint: str | None = None) -> SpecError:
    return SpecError(Diagnostic.for_file(file, message, hint))
