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

from netdsl.training.data.request import DataRequest
from netdsl.training.errors import DataError, RunError, TrainingError, UsageError
from netdsl.training.run.settings import TrainConfig, TrainRequest, resolve

__all__ = ["TrainRequest", "TrainConfig", "DataRequest", "resolve", "TrainingError", "DataError", "RunError",
           "UsageError"]
