"""Training runs from a spec (issue 10): data by name, run folders, resume, reports.

    run = train("mlp.net", data="digits.npz", epochs=3, seed=7)
    run.dir, run.report["status"], run.history["val_loss"], run.model

The library and `netdsl train` share one engine (`engine.run_training`),
fed a resolved `settings.TrainConfig`. Importing this package (and
`settings`, `runs`, `errors`) does not import TensorFlow: a command checks
its spec and flags first; `train`, `evaluate` and `predict` load it.
"""

from __future__ import annotations

import os
from typing import Any

from netdsl.training.errors import DataError, RunError, TrainingError, UsageError
from netdsl.training.settings import DataRequest, TrainConfig, TrainRequest, resolve

__all__ = ["train", "evaluate", "predict", "TrainRequest", "TrainConfig", "DataRequest", "resolve",
           "TrainingError", "DataError", "RunError", "UsageError"]


def train(source: Any, model: str | None = None, *, data: Any = None, split: Any = None, train: Any = None,
          val: Any = None, test: Any = None, targets: dict | None = None, epochs: int | None = None,
          batch_size: int | None = None, seed: int | None = None, out: str | os.PathLike = "runs",
          resume: str | os.PathLike | None = None, progress: str = "none", tensorboard: bool = False,
          callbacks: list = (), include: list = ()) -> Any:
    """Train one model of a spec; the same engine as `netdsl train`. Returns an `engine.Run`.

    `data` (with `split`, default 0.8/0.1/0.1) or `train` [+ `val`, `test`]:
    paths (.npz, .csv, .tfrecord, an image folder) or arrays
    ({name: array}, or (x, y) for a one-input, one-output model).
    The `Run` has `.dir`, `.model`, `.history` ({metric: [per epoch]}) and
    `.report`. Raises `TrainingError` (bad data, a run that cannot resume)
    or `SpecError`.
    """
    from netdsl.training.engine import run_training

    request = TrainRequest(
        spec=source, model=model, epochs=epochs, batch_size=batch_size, seed=seed, out=out, resume=resume,
        progress=progress, tensorboard=tensorboard, include=list(include), callbacks=list(callbacks),
        data=DataRequest(data=data, split=tuple(split) if split is not None else None, train=train, val=val,
                         test=test, targets=dict(targets or {})))
    return run_training(resolve(request))


def evaluate(model: Any, data: Any = None, batch_size: int | None = None, targets: dict | None = None,
             split: str = "test") -> dict[str, float]:
    """The loss and metrics of a trained model (a run folder, a .keras file or a keras.Model) on `data`;
    without `data`, a run folder's own `split` ("test", "val" or "train"), cut as its training cut it."""
    from netdsl.training.inference import evaluate as _evaluate

    return _evaluate(model, data, batch_size, targets, split)


def predict(model: Any, data: Any, batch_size: int | None = None, targets: dict | None = None) -> dict[str, Any]:
    """The model's outputs on `data`'s inputs: {output name: array}."""
    from netdsl.training.inference import predict as _predict

    return _predict(model, data, batch_size, targets)
