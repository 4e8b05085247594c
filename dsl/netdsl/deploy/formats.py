"""The formats `netdsl export` writes: one line each in `FORMATS`, one module each that writes and loads it.

Tolerances are those of the issue that asked for the formats: ONNX and SavedModel run the
same float32 kernels in another order (1e-5); LiteRT fuses and reorders more (1e-4).
A value passes when |exported - keras| <= tol + tol * |keras| (numpy's `allclose`).

Adding a format is a module `deploy/<name>_format.py` with the two functions of
`FormatModule` and one `Format(...)` line in `FORMATS` naming it. The module is imported
only when a file of its format is written or run, so that `check`, `fmt` ... import no
backend and running an `.onnx` or `.tflite` file imports neither Keras nor TensorFlow:
keep its top-level imports to NumPy and netdsl's backend-free modules. The name is repeated
in `cli/export.py`'s FORMAT_NAMES and `api.py`'s ExportFormat (they import no deploy code;
a test holds them to this table). docs/export.md, "Adding a format", tells the rest.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from netdsl.deploy.errors import MissingPackage, UnknownFormat
from netdsl.deploy.folders import MARKER
from netdsl.training.data.request import DataNames
from netdsl.training.data.signature import Signature

if TYPE_CHECKING:
    import keras


class FormatModule(Protocol):
    """What a format's module holds."""

    def write(self, model: keras.Model, out: Path, metadata: dict[str, str]) -> None:
        """Write `model` to `out` with `metadata` recorded in it, atomically, never through a link."""

    def load(self, path: Path, fmt: Format) -> ExportedModel:
        """The file in its runtime; the runtime's own exception when it refuses it (`open_exported` makes
        that one line)."""


@dataclass(frozen=True)
class Format:
    name: str
    suffix: str  # the file's suffix, or the folder's name ending for a folder format (`default_out`)
    tolerance: float
    modules: tuple[str, ...]  # importable names the conversion and the check need
    runtime: str  # where the exported file is checked, as the messages name it
    runtime_module: str  # what running an exported file needs (predict, evaluate)
    module: str  # the `FormatModule` that writes and loads it, imported when first used
    marker: str | None = None  # a folder format: the file inside that makes a folder one of its exports
    # Why the format cannot hold a model that takes text (a string input: text_vectorization's string ops
    # and vocabulary table), or None when it can.
    no_text: str | None = None

    @property
    def is_folder(self) -> bool:
        return self.marker is not None

    def implementation(self) -> FormatModule:
        return cast("FormatModule", importlib.import_module(self.module))


FORMATS = {
    fmt.name: fmt
    for fmt in (
        Format(
            "onnx",
            ".onnx",
            1e-5,
            ("onnx", "onnxruntime", "tf2onnx"),
            "onnxruntime",
            "onnxruntime",
            "netdsl.deploy.onnx_format",
            no_text="tf2onnx converts no string ops (StringLower, StringSplit, the "
            "vocabulary's hash table), and standard ONNX has none",
        ),
        Format(
            "saved_model",
            "_saved_model",
            1e-5,
            (),
            "tf.saved_model.load",
            "tensorflow",
            "netdsl.deploy.saved_model_format",
            marker=MARKER,
        ),
        Format(
            "litert",
            ".tflite",
            1e-4,
            ("ai_edge_litert",),
            "the LiteRT interpreter",
            "ai_edge_litert",
            "netdsl.deploy.litert_format",
            no_text="LiteRT's built-in ops have no string ops (StringLower, "
            "StringSplit), which netdsl's built-in-only conversion needs",
        ),
    )
}
INSTALL_HINT = "pip install 'netdsl[export]'"
# Other tools' names for the formats: suggested, never taken silently.
OTHER_NAMES = {
    "tflite": "litert",
    "tf_lite": "litert",
    "lite": "litert",
    "savedmodel": "saved_model",
    "tf_saved_model": "saved_model",
    "tf": "saved_model",
    "tensorflow": "saved_model",
}


@dataclass
class ExportedModel:
    """An exported file, loaded in its runtime: `run` maps {input name: batch} to {output name: batch}."""

    path: Path
    format: Format
    signature: Signature
    run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    metadata: dict[str, str] = field(default_factory=dict)  # what export recorded (netdsl_model, ...)


def recorded_names(metadata: Mapping[str, str], outputs: Sequence[str]) -> DataNames:
    """The class names (`netdsl_classes`) and CSV columns (`netdsl_columns`) an export recorded, as the data
    readers take them; an entry that is not what netdsl writes (another tool's file) is left out."""
    classes: dict[str, tuple[str, ...]] = {}
    for name, names in _json_entry(metadata, "netdsl_classes").items():
        if name in outputs and isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            classes[name] = tuple(names)
    columns = _json_entry(metadata, "netdsl_columns")
    found = next(iter(columns.values())) if len(columns) == 1 else None
    features = tuple(found) if isinstance(found, list) and all(isinstance(c, str) for c in found) else None
    return DataNames(features, (), classes)


def _json_entry(metadata: Mapping[str, str], key: str) -> dict:
    try:
        value = json.loads(metadata.get(key, "{}"))
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def get_format(name: str) -> Format:
    """The format called `name`; UnknownFormat with the nearest name otherwise."""
    if name in FORMATS:
        return FORMATS[name]
    key = name.lower().replace("-", "_")
    close = [key] if key in FORMATS else difflib.get_close_matches(key, list(FORMATS), n=1, cutoff=0.5)
    close = [OTHER_NAMES[key]] if key in OTHER_NAMES else close
    guess = f"; did you mean '{close[0]}'?" if close else ""
    raise UnknownFormat(f"unknown format {name!r}{guess} (formats: {', '.join(FORMATS)})")


def format_of(path: Path) -> Format | None:
    """The format of an exported file by what it is: its suffix, or a folder holding a folder format's marker."""
    if path.is_dir():
        return next((f for f in FORMATS.values() if f.marker is not None and (path / f.marker).is_file()), None)
    return next((f for f in FORMATS.values() if not f.is_folder and path.suffix.lower() == f.suffix), None)


def require_packages(fmt: Format) -> None:
    """A one-line install hint (exit 2) when a package the format needs is missing."""
    missing = [m for m in fmt.modules if importlib.util.find_spec(m) is None]
    if missing:
        names = ", ".join(m.replace("_", "-") for m in missing)
        raise MissingPackage(
            f"--format {fmt.name} needs {names}, which {'is' if len(missing) == 1 else 'are'} not installed",
            hint=INSTALL_HINT,
        )
