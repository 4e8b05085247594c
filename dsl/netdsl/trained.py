"""One door for trained things: `open_trained` takes a run folder, a `.keras` file, a live `keras.Model` or an
exported file (`.onnx`, `.tflite`, a SavedModel folder) and returns one interface to it.

    trained = open_trained("runs/mlp-3")    # or "mlp.keras", a keras.Model, "mlp.onnx", "mlp_saved_model/"
    trained.classes                         # {"digit": ("0", ..., "9")}: the names the run or the file records
    trained.predict("new.npz")              # Predictions {"digit": array (N, 10)}, .sources, .labels
    trained.evaluate("test.npz")            # {"loss": 0.31, "accuracy": 0.91}
    trained.signature                       # inputs and outputs by name, per-sample shapes, dtypes

Which kind of thing it is, is asked once, here: a Keras model (`KerasModel`) loads in Keras' safe mode and
runs on a backend (training/run/inference.py); an exported file (`ExportedFile`) runs in its own runtime
and is scored in NumPy (deploy/exported_inference.py, scoring/). `netdsl.evaluate`, `netdsl.predict` and the
`evaluate` and `predict` commands call the interface and never branch on the kind. Opening reads nothing
heavy: what a file is, is told by its name and its first bytes; a model loads when first used.
"""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netdsl.errors import UsageError

if TYPE_CHECKING:
    from netdsl.deploy.exported_runtime import ExportedModel
    from netdsl.training.data.signature import Signature
    from netdsl.training.run.predictions import Predictions

Checkpoint = str  # "best" or "last": a run folder's two sets of weights (`RunFolder.weights`)
Scores = dict[str, Any]  # {"loss": 0.31, metric: value or one value per class}


def open_trained(where: Any, *, checkpoint: Checkpoint | None = None, trust: bool = False) -> TrainedModel:
    """The trained thing at `where` (a path or a `keras.Model`) behind one interface. `checkpoint` chooses a
    run folder's weights ("best" or "last"; anything else has one set: a `UsageError` when it is used);
    `trust` runs a SavedModel whose graph holds ops outside netdsl's allow-list (a `UsageError` for a Keras
    model, which loads in Keras' safe mode)."""
    from netdsl.deploy.exported_inference import is_exported

    if is_exported(where):
        from netdsl.training.run.runs import refuse_checkpoint

        refuse_checkpoint(checkpoint, "an exported file")
        return ExportedFile(Path(where), trust)
    if trust:
        raise UsageError(
            "--trust runs an exported SavedModel whose graph holds ops outside netdsl's allow-list; a "
            "run folder or .keras file is loaded in Keras' safe mode, with nothing to trust"
        )
    return KerasModel(where, checkpoint)


class TrainedModel(ABC):
    """A trained model, whatever holds it: its class names, its signature, its predictions and scores."""

    where: Any  # what was opened: a path, or a live keras.Model

    @property
    def has_own_splits(self) -> bool:
        """Whether it evaluates without data: a run folder has its own test (val, train) split."""
        return False

    @property
    def weights_line(self) -> str | None:
        """Which weights a command uses (`weights: best.keras (epoch 3 of 5, ...)`); None with one set."""
        return None

    @property
    @abstractmethod
    def classes(self) -> dict[str, tuple[str, ...]]:
        """{output: class names} the run or the file records; {} when it records none."""

    @property
    @abstractmethod
    def signature(self) -> Signature:
        """Its inputs and outputs by name (per-sample shapes, dtypes); loads the model."""

    @abstractmethod
    def check_data(self, data: Any, targets: Mapping[str, str] | None, need_targets: bool) -> None:
        """What can be told of `data` before the model loads (a path, its format, an image folder's class
        sub-folders, a run's input and output names): a `DataError` of one line otherwise."""

    @abstractmethod
    def use_backend(self, backend: str | None, *, scoring: bool) -> None:
        """Run it on `backend` in this process (the library's `backend=`); `scoring`: for `evaluate`."""

    @abstractmethod
    def session(
        self, backend: str | None, *, scoring: bool, load_plugins: Callable[[], None]
    ) -> contextlib.AbstractContextManager[None]:
        """What a command runs it in: one process on one device of `backend`, with the plugins loaded
        (`load_plugins`) wherever Keras will load; `scoring`: for `evaluate`."""

    @abstractmethod
    def predict(
        self, data: Any, *, batch_size: int | None = None, targets: Mapping[str, str] | None = None
    ) -> Predictions:
        """Its outputs on `data`'s inputs, named, with each sample's source and class names."""

    @abstractmethod
    def evaluate(
        self,
        data: Any = None,
        *,
        batch_size: int | None = None,
        targets: Mapping[str, str] | None = None,
        split: str = "test",
        spec: Any = None,
        model: str | None = None,
        include: Sequence[str | os.PathLike[str]] = (),
    ) -> Scores:
        """Its loss and metrics on `data` (`netdsl.evaluate` says what each keyword means)."""


class KerasModel(TrainedModel):
    """A run folder (the weights `checkpoint` picks), a `.keras` file, or a live `keras.Model`: loaded in
    Keras' safe mode, run on a backend, scored by Keras with the loss and metrics the run's spec names."""

    def __init__(self, where: Any, checkpoint: Checkpoint | None) -> None:
        self.where = where
        self.checkpoint = checkpoint
        path = self._path
        if path is None or path.is_file():  # a missing path is "no such file or folder" when it loads
            from netdsl.training.run.runs import refuse_checkpoint

            refuse_checkpoint(checkpoint, "a .keras file" if path is not None else "a keras.Model")

    @property
    def _path(self) -> Path | None:
        return Path(self.where) if isinstance(self.where, (str, os.PathLike)) else None

    @property
    def has_own_splits(self) -> bool:
        return self._path is not None and self._path.is_dir()

    @property
    def weights_line(self) -> str | None:
        return weights_line(self.where, self.checkpoint)

    @property
    def classes(self) -> dict[str, tuple[str, ...]]:
        from netdsl.training.run.inference import run_names

        return dict(run_names(self.where).classes)

    @property
    def signature(self) -> Signature:
        from netdsl.training.data.signature import Signature
        from netdsl.training.run.inference import load_trained

        return Signature.of(load_trained(self.where, self.checkpoint)[0])

    def check_data(self, data: Any, targets: Mapping[str, str] | None, need_targets: bool) -> None:
        from netdsl.training.data.source import check_layout
        from netdsl.training.run.inference import check_run_data

        check_layout(data, need_targets)
        check_run_data(self.where, data, dict(targets) if targets is not None else None, need_targets)

    def use_backend(self, backend: str | None, *, scoring: bool) -> None:
        _start_backend(backend)

    @contextlib.contextmanager
    def session(self, backend: str | None, *, scoring: bool, load_plugins: Callable[[], None]) -> Iterator[None]:
        from netdsl.training.scale.processes import set_up_one_process

        scope = set_up_one_process(backend)
        load_plugins()  # a saved model may hold plugin layers
        with scope():
            yield

    def predict(
        self, data: Any, *, batch_size: int | None = None, targets: Mapping[str, str] | None = None
    ) -> Predictions:
        from netdsl.training.run.inference import predict

        return predict(self.where, data, batch_size, dict(targets or {}), self.checkpoint)

    def evaluate(
        self,
        data: Any = None,
        *,
        batch_size: int | None = None,
        targets: Mapping[str, str] | None = None,
        split: str = "test",
        spec: Any = None,
        model: str | None = None,
        include: Sequence[str | os.PathLike[str]] = (),
    ) -> Scores:
        if spec is not None or model is not None or include:
            raise UsageError(
                "--spec, --model and --include give an exported file its loss and metrics; a Keras model has its own"
            )
        from netdsl.training.run.inference import evaluate

        return evaluate(self.where, data, batch_size, dict(targets or {}), split, self.checkpoint)


class ExportedFile(TrainedModel):
    """An `.onnx`, `.tflite` file or a SavedModel folder, run in its own runtime (ONNX and LiteRT load neither
    Keras nor TensorFlow) and scored in NumPy with the loss and metrics of a spec's train section."""

    def __init__(self, where: Path, trust: bool) -> None:
        self.where = where
        self.trust = trust

    @property
    def classes(self) -> dict[str, tuple[str, ...]]:
        from netdsl.deploy.exported_inference import exported_names

        return dict(exported_names(self._opened()).classes)

    @property
    def signature(self) -> Signature:
        return self._opened().signature

    def _opened(self) -> ExportedModel:
        from netdsl.deploy.exported_runtime import open_exported

        return open_exported(self.where, trust=self.trust)

    def check_data(self, data: Any, targets: Mapping[str, str] | None, need_targets: bool) -> None:
        from netdsl.training.data.source import check_layout

        check_layout(data, need_targets)  # the file's names are read when its runtime loads it

    def use_backend(self, backend: str | None, *, scoring: bool) -> None:
        if backend is None:
            return
        if not scoring:
            raise UsageError("--backend does not apply to an exported file: it runs in its own runtime")
        _start_backend(backend)  # the backend of Keras' scorer, for a loss or metric NumPy does not compute

    @contextlib.contextmanager
    def session(self, backend: str | None, *, scoring: bool, load_plugins: Callable[[], None]) -> Iterator[None]:
        self.use_backend(backend, scoring=scoring)
        if scoring:
            load_plugins()  # the spec scoring it may use plugin layers; predict loads no Keras
        yield

    def predict(
        self, data: Any, *, batch_size: int | None = None, targets: Mapping[str, str] | None = None
    ) -> Predictions:
        from netdsl.deploy.exported_inference import predict_exported

        return predict_exported(self.where, data, batch_size, dict(targets or {}), self.trust)

    def evaluate(
        self,
        data: Any = None,
        *,
        batch_size: int | None = None,
        targets: Mapping[str, str] | None = None,
        split: str = "test",
        spec: Any = None,
        model: str | None = None,
        include: Sequence[str | os.PathLike[str]] = (),
    ) -> Scores:
        from netdsl.deploy.exported_inference import evaluate_exported

        return evaluate_exported(self.where, data, batch_size, dict(targets or {}), spec, model, include, self.trust)


def weights_line(where: Any, checkpoint: Checkpoint | None) -> str | None:
    """The line saying which weights of a run folder are used (`RunFolder.weights`); None for anything else."""
    from netdsl.training.run.runs import RunFolder, is_run_folder

    return RunFolder.existing(where).weights(checkpoint).line if is_run_folder(where) else None


def _start_backend(backend: str | None) -> None:
    if backend is not None:
        from netdsl import pipeline

        pipeline.start_backend(backend, mute_stderr=False)
