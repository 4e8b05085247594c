"""The formats `netdsl export` writes: their file names, tolerances and the packages they need.

Tolerances are those of the issue that asked for the formats: ONNX and SavedModel run the
same float32 kernels in another order (1e-5); LiteRT fuses and reorders more (1e-4).
A value passes when |exported - keras| <= tol + tol * |keras| (numpy's `allclose`).
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass

from netdsl.deploy.errors import MissingPackage, UnknownFormat


@dataclass(frozen=True)
class Format:
    name: str
    suffix: str  # the file's suffix, or the folder's name ending for SavedModel
    tolerance: float
    modules: tuple[str, ...]  # importable names the conversion and the check need
    runtime: str  # where the exported file is checked
    runtime_module: str  # what running an exported file needs (predict, evaluate)

    @property
    def is_folder(self) -> bool:
        return self.name == "saved_model"


FORMATS = {
    "onnx": Format("onnx", ".onnx", 1e-5, ("onnx", "onnxruntime", "tf2onnx"), "onnxruntime", "onnxruntime"),
    "saved_model": Format("saved_model", "_saved_model", 1e-5, (), "tf.saved_model.load", "tensorflow"),
    "litert": Format("litert", ".tflite", 1e-4, ("ai_edge_litert",), "the LiteRT interpreter",
                     "ai_edge_litert"),
}
INSTALL_HINT = "pip install 'netdsl[export]'"
# Other tools' names for the formats: suggested, never taken silently.
OTHER_NAMES = {"tflite": "litert", "tf_lite": "litert", "lite": "litert", "savedmodel": "saved_model",
               "tf_saved_model": "saved_model", "tf": "saved_model", "tensorflow": "saved_model"}


def get_format(name: str) -> Format:
    """The format called `name`; UnknownFormat with the nearest name otherwise."""
    if name in FORMATS:
        return FORMATS[name]
    key = name.lower().replace("-", "_")
    close = [key] if key in FORMATS else difflib.get_close_matches(key, list(FORMATS), n=1, cutoff=0.5)
    close = [OTHER_NAMES[key]] if key in OTHER_NAMES else close
    guess = f"; did you mean '{close[0]}'?" if close else ""
    raise UnknownFormat(f"unknown format {name!r}{guess} (formats: {', '.join(FORMATS)})")


def require_packages(fmt: Format) -> None:
    """A one-line install hint (exit 2) when a package the format needs is missing."""
    missing = [m for m in fmt.modules if importlib.util.find_spec(m) is None]
    if missing:
        names = ", ".join(m.replace("_", "-") for m in missing)
        raise MissingPackage(f"--format {fmt.name} needs {names}, which {'is' if len(missing) == 1 else 'are'} "
                             f"not installed", hint=INSTALL_HINT)
