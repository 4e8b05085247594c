"""Training runs from a spec (issue 10): data by name, run folders, resume, reports.

    config = resolve(TrainRequest(spec="mlp.net", data=DataRequest(data="digits.npz"), epochs=3))
    run = engine.run_training(config)     # run.dir, run.report["status"], run.history["val_loss"], run.model

The engine behind `netdsl.train`, `netdsl.evaluate`, `netdsl.predict` (in
`netdsl.api`) and `netdsl train`: one engine (`engine.run_training`) fed a
resolved `settings.TrainConfig`. Importing this package (and `settings`,
`runs`, `errors`) does not import TensorFlow: a command checks its spec and
flags first; the engine and `inference` load it.
"""

from __future__ import annotations

from netdsl.training.errors import DataError, RunError, TrainingError, UsageError
from netdsl.training.settings import DataRequest, TrainConfig, TrainRequest, resolve

__all__ = ["TrainRequest", "TrainConfig", "DataRequest", "resolve", "TrainingError", "DataError", "RunError",
           "UsageError"]
