"""Training runs from a spec: data by name, run folders, resume, reports, several devices and processes.

    config = resolve(TrainRequest(spec="mlp.net", data=DataRequest(data="digits.npz"), epochs=3))
    run = run_training(config)     # run.dir, run.report["status"], run.history["val_loss"], run.model

Three sub-rooms, imports pointing down: `data/` (what a run trains on: sources,
checks, readers), `run/` (settings, the engine, the run folder, evaluate and
predict) over `data/`, and `scale/` (devices, processes, the job) over both;
`errors.py` beside them. The engine behind `netdsl.train`, `netdsl.evaluate`,
`netdsl.predict` (in `netdsl.api`) and `netdsl train` is one
(`run/engine.run_training`) fed a resolved `run/settings.TrainConfig`.
Importing this package (and `settings`, `runs`, `errors`) does not import
TensorFlow: a command checks its spec and flags first; the engine and
`inference` load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netdsl.training.data.request import DataRequest
from netdsl.training.errors import DataError, RunError, TrainingError, UsageError
from netdsl.training.run.settings import TrainConfig, TrainRequest, resolve

if TYPE_CHECKING:
    from netdsl.training.data.labels import check_source_labels, output_losses
    from netdsl.training.data.request import DataNames
    from netdsl.training.data.source import DataSource, check_layout, open_source
    from netdsl.training.run.inference import DEFAULT_BATCH, run_spec
    from netdsl.training.run.predictions import Predictions
    from netdsl.training.run.report import logged_value, loss_first
    from netdsl.training.run.runs import CONFIG, RunFolder
    from netdsl.training.run.settings import spec_sha256

# What scoring a trained thing outside a run needs (deploy/exported_inference.py: an exported file): data read by the
# model's names, the predictions' form, and the run folder a file sits in. Loaded when first asked for
# (`__getattr__`), so that importing the room stays as light as it was.
_OUTSIDE = {
    **dict.fromkeys(["check_source_labels", "output_losses"], "netdsl.training.data.labels"),
    "DataNames": "netdsl.training.data.request",
    **dict.fromkeys(["DataSource", "check_layout", "open_source"], "netdsl.training.data.source"),
    **dict.fromkeys(["DEFAULT_BATCH", "run_spec"], "netdsl.training.run.inference"),
    "Predictions": "netdsl.training.run.predictions",
    **dict.fromkeys(["logged_value", "loss_first"], "netdsl.training.run.report"),
    **dict.fromkeys(["CONFIG", "RunFolder"], "netdsl.training.run.runs"),
    "spec_sha256": "netdsl.training.run.settings",
}

__all__ = [
    "TrainRequest",
    "TrainConfig",
    "DataRequest",
    "resolve",
    "TrainingError",
    "DataError",
    "RunError",
    "UsageError",
    # _OUTSIDE's (tests/test_architecture.py holds the two lists equal)
    "check_source_labels",
    "output_losses",
    "DataNames",
    "DataSource",
    "check_layout",
    "open_source",
    "DEFAULT_BATCH",
    "run_spec",
    "Predictions",
    "logged_value",
    "loss_first",
    "CONFIG",
    "RunFolder",
    "spec_sha256",
]


def __getattr__(name: str) -> Any:
    if name not in _OUTSIDE:
        raise AttributeError(f"module 'netdsl.training' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_OUTSIDE[name]), name)
