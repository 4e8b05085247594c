"""The training engine: a resolved `TrainConfig` in, a finished (or stopped) `Run` out.

    run = run_training(resolve(request))

One run, in order: the seed, the model built from the spec, the data
checked against it, then the run folder (new, or the one being resumed,
locked), the checkpoint restored when resuming, Keras' `fit` with the
spec's callbacks and the `RunKeeper`, the test data evaluated, `model.keras`
and the curves written, the report closed with its status.

One rule for errors (issue 22): nothing is created or changed on disk until
the model is built and the data checked, so a bad spec, a mistyped path, a
CSV without the target column or `--data /dev/zero` leave no run folder
behind. An error after that (in training, from the data TensorFlow reads
mid-run) leaves `status: failed` and the reason in report.json; Ctrl-C /
SIGTERM leaves `status: stopped` and the last finished epoch's checkpoint
to resume from.

`Placement` is where distribution plugs in (issue 11): the scope models
are built in (a `tf.distribute` strategy's), whether they default to one
step per execution (a job of several processes, a MirroredStrategy) and
whether this process writes the run folder (only the first one does).
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from netdsl.backend import profiles
from netdsl.errors import ReportedError, SpecError, UsageError
from netdsl.training.data.labels import check_source_labels
from netdsl.training.data.plan import DataPlan, plan_data
from netdsl.training.data.signature import Signature
from netdsl.training.data.tf_data import EpochOrder
from netdsl.training.errors import DataError, tensorflow_message
from netdsl.training.run import checkpoint
from netdsl.training.run.keeper import RunKeeper, TorchEpochSeed
from netdsl.training.run.progress import progress_callback
from netdsl.training.run.record import Run
from netdsl.training.run.report import LoggedValue, RunWriter, logged_value, loss_first
from netdsl.training.run.runs import RunFolder
from netdsl.training.run.settings import TrainConfig, json_defines
from netdsl.training.run.signals import Stopped, StopSignals


class Placing(Protocol):
    """What the engine asks of where a run trains: a `Placement`, or a `distribute.Distribution`
    (the same members; it cannot subclass `Placement`, as it stays importable before Keras is)."""

    @property
    def scope(self) -> Callable[[], AbstractContextManager]: ...

    @property
    def writes(self) -> bool: ...

    @property
    def one_step_per_execution(self) -> bool: ...

    def prepare(self, plan: DataPlan, batch_size: int) -> None: ...

    def dataset(self, part: Any, batch_size: int, order: EpochOrder | None = None) -> Any: ...

    def callbacks(self) -> list: ...

    def saving(self) -> AbstractContextManager: ...

    def describe(self) -> dict | None: ...


@dataclass
class Placement:
    """Where a run trains and who writes: the default is one process on one device that writes.

    `distribute.Distribution` is the other kind: a strategy's scope, data
    cut into each process's equal share, and only process 0 writing.
    """

    scope: Callable[[], AbstractContextManager] = contextlib.nullcontext
    writes: bool = True
    one_step_per_execution: bool = False  # the model's steps_per_execution defaults to 1 (backend/execution.py)

    def prepare(self, plan: DataPlan, batch_size: int) -> None:
        """Called once the data is planned, before training (distribution checks and trims it here)."""

    def dataset(self, part: Any, batch_size: int, order: EpochOrder | None = None) -> Any:
        """The batches of `part` this process feeds to Keras (`batch_size` is the global batch)."""
        return part.feed(batch_size, order)

    def callbacks(self) -> list:
        return []

    def saving(self) -> AbstractContextManager:
        """The context process 0 saves a model in, alone (distribution: without the job's collectives)."""
        return contextlib.nullcontext()

    def describe(self) -> dict | None:
        return None


def run_training(config: TrainConfig, placement: Placing | None = None) -> Run:
    placement = placement or Placement()
    with StopSignals() as signals:
        session = Session(config, None, placement, signals)
        stopped = session.prepare()  # before anything is written: see the module's rule for errors
        if stopped is not None:
            return stopped
        if config.resume_from is not None or not placement.writes:
            folder = config.resume_from
        elif config.run_dir is not None:  # a sweep's trial: its folder is made by the sweep
            folder = RunFolder.at(config.run_dir)
        else:
            folder = RunFolder.create(config.out, config.model)
        lock = folder.locked() if folder is not None and placement.writes else contextlib.nullcontext()
        with lock:
            session.attach(folder)
            return session.run()


@dataclass
class Session:
    config: TrainConfig
    folder: RunFolder | None
    placement: Placing
    signals: StopSignals
    model: Any = None
    plan: DataPlan | None = None
    test: dict = field(default_factory=dict)
    test_weights: dict | None = None  # which weights scored `test`: {"checkpoint": "best"|"last", "epoch": ...}
    keeper: RunKeeper | None = None
    adapted: list[str] = field(default_factory=list)  # what `adapt` learned, one line a layer
    config_json: dict = field(default_factory=dict)  # what config.json holds, once written
    state: dict = field(
        default_factory=lambda: {
            "epoch": 0,
            "history": [],
            "best_val_loss": math.inf,
            "best_epoch": None,
            "seconds": 0.0,
            "samples": 0,
            "epoch_seconds": [],
            "write_seconds": [],
        }
    )

    def __post_init__(self) -> None:
        self.writer = RunWriter(self.folder if self.placement.writes else None, self.placement.saving)

    def prepare(self) -> Run | None:
        """Build the model and check the data, writing nothing; errors are raised as they are.
        A stop request (Ctrl-C, SIGTERM) here ends the run with no folder: the Run returned."""
        try:
            self._build()
            self.plan = plan_data(
                self.config.data, Signature.of(self.model), self.config.seed, self.config.validation_split
            )
            for part in {id(p.source): p for p in (self.plan.train, self.plan.val, self.plan.test) if p}.values():
                # the labels read with the data (a CSV's), against the losses: before any run folder
                check_source_labels(
                    self.config.losses, part.source, dict(self.config.data.targets or {}), self.config.program.sources()
                )
            self._adapt()
            self.placement.prepare(self.plan, self.config.batch_size)
        except Stopped as stop:
            return Run(None, self.model, {}, self._report("stopped", f"{stop} received before training started"))
        except Exception as exc:
            if _is_tf_error(exc):
                raise self._data_error(exc) from None
            raise
        return None

    def attach(self, folder: RunFolder | None) -> None:
        """The run folder the checked run writes into (None: this process writes nothing)."""
        self.folder = folder
        self.writer = RunWriter(folder if self.placement.writes else None, self.placement.saving)

    def run(self) -> Run:
        if self.config.resume_from is not None and self.config.resume_from.checkpoint.is_file():
            meta = checkpoint.read_meta(self.config.resume_from.checkpoint)  # the record so far, before anything
            self.state.update({key: meta[key] for key in self.state if key in meta})
        self.config_json = self._config_json()
        self.writer.config(self.config_json)
        self.writer.report(self._report("running"))
        try:
            stopped_early = self._fit()
            self._test()
            with self.signals.critical(closing=True):
                self.writer.model(self.model, "model.keras")
                return self._close(self._early_status() if stopped_early else "finished")
        except Stopped as stop:
            with self.signals.critical(closing=True):
                return self._close("stopped", f"{stop} received; resume with --resume")
        except (ReportedError, UsageError, SpecError) as exc:
            self._close("failed", _one_line(exc))
            exc.run_dir = self._dir
            raise
        except Exception as exc:
            if _is_tf_error(exc):
                error = self._data_error(exc)
                self._close("failed", str(error))
                error.run_dir = self._dir
                raise error from None
            self._close("failed", f"{type(exc).__name__}: {_one_line(exc)}")
            raise

    def _data_error(self, exc: BaseException) -> DataError:
        source = self.config.data.data  # one source: say which; with --train/--val it could be either
        return DataError(
            f"training stopped on data TensorFlow could not use: {tensorflow_message(exc)}",
            file=str(source) if isinstance(source, (str, os.PathLike)) else None,
        )

    # ------------------------------------------------------------ steps

    def _build(self) -> None:
        import keras

        from netdsl.backend.compiler import build_one, init_report, load_weights

        keras.utils.set_random_seed(self.config.seed)  # right before building, as the hand-written program does
        with self.placement.scope():
            # the spec checked once, by `resolve`: its graph is replayed, not checked again
            self.model = build_one(self.config.checked, one_step_per_execution=self.placement.one_step_per_execution)
            if self.config.init_from is not None:
                load_weights(self.model, self.config.init_from)
        if self.config.progress != "none":  # what `init` / --init-from loaded, one line each
            for line in init_report(self.model):
                print(line, file=sys.stderr)

    def _adapt(self) -> None:
        """The layers the spec's `adapt` names learn their state from the training part, before any run
        folder is made (a vocabulary with no token is a data error like any other)."""
        from netdsl.backend.compiler import adapted_layers

        names = adapted_layers(self.model)
        if not names:
            return
        from netdsl.training.run.adapting import adapt_layers

        with self.placement.scope():
            self.adapted = adapt_layers(self.model, names, self._planned().train, self.config.batch_size)
        if self.config.progress != "none":
            for line in self.adapted:
                print(line, file=sys.stderr)

    def _fit(self) -> bool:
        """Train; True when a spec callback stopped training before the last epoch."""
        import keras

        from netdsl.backend.compiler import fit_kwargs, unfreeze, unfreeze_epoch

        config, plan, model = self.config, self._planned(), self.model
        spec_callbacks = fit_kwargs(model).get("callbacks", [])
        second_phase = unfreeze_epoch(model)  # fine-tuning: frozen parts train from this epoch on
        if second_phase is not None and self.state["epoch"] >= second_phase:
            unfreeze(model)  # resumed in the second phase: its optimizer's variables, then the checkpoint
        order = EpochOrder(config.seed) if config.shuffle else None
        keeper = RunKeeper(
            self.writer, self.signals, spec_callbacks, order, self.state, lambda: self._report("running"), plan.train.n
        )
        self.keeper = keeper
        if config.resume_from is not None and config.resume_from.checkpoint.is_file():
            keeper.restored = checkpoint.restore(config.resume_from.checkpoint, model, spec_callbacks)
            self.writer.history(self.state["history"])  # the checkpoint's: an epoch recorded after it is redone
        first = self.state["epoch"]
        if config.on_start is not None and self._dir is not None:  # (a process that writes has its folder)
            config.on_start(self._dir, first)
        callbacks = [*spec_callbacks, keeper]
        profile = profiles.get(keras.backend.backend())
        if profile is not None and profile.global_dropout_seed:
            callbacks.insert(0, TorchEpochSeed(config.seed))
        steps = math.ceil(plan.train.n / config.batch_size)
        progress = progress_callback(config.progress, config.epochs, steps)
        if progress is not None:
            callbacks.append(progress)
        if config.tensorboard and self.writer.folder is not None:
            callbacks.append(keras.callbacks.TensorBoard(log_dir=str(self.writer.folder.subfolder("tensorboard"))))
        callbacks.extend(config.callbacks)
        callbacks.extend(self.placement.callbacks())
        place = self.placement

        def fit(start: int, until: int) -> None:
            model.fit(
                place.dataset(plan.train, config.batch_size, order),
                validation_data=place.dataset(plan.val, config.batch_size) if plan.val is not None else None,
                epochs=until,
                initial_epoch=min(start, until),
                callbacks=callbacks,
                verbose=0,
                shuffle=False,
            )  # the pipeline shuffles, by seed and epoch

        if second_phase is not None and first < second_phase < config.epochs:
            fit(first, second_phase)
            if model.stop_training:
                return self.state["epoch"] < config.epochs
            unfreeze(model)
            first = second_phase
        fit(first, config.epochs)
        return bool(model.stop_training) and self.state["epoch"] < config.epochs

    def _early_status(self) -> str:
        """`stopped_early`, or the status of the callback that stopped the run (a sweep's `pruned`)."""
        return next((cb.stopped_as for cb in self.config.callbacks if getattr(cb, "stopped_as", None)), "stopped_early")

    def _test(self) -> None:
        """The test part scored with the weights `evaluate RUN` uses (`RunFolder.weights`): the best epoch's
        when the run kept one (it had validation data), else the last; the model keeps its last weights."""
        plan = self._planned()
        if plan.test is None:
            return
        test = self.placement.dataset(plan.test, self.config.batch_size)
        best = self._best_weights()
        last = self.model.get_weights() if best is not None else None
        try:
            if best is not None:
                self.model.set_weights(best)
            logs = self.model.evaluate(test, return_dict=True, verbose=0)
        finally:
            if last is not None:
                self.model.set_weights(last)
        self.test = {k: logged_value(v) for k, v in logs.items()}
        best_epoch = self.state["best_epoch"]
        self.test_weights = (
            {"checkpoint": "best", "epoch": best_epoch, "val_loss": self.state["best_val_loss"]}
            if best_epoch is not None
            else {"checkpoint": "last", "epoch": self.state["epoch"]}
        )

    def _best_weights(self) -> list | None:
        """The best epoch's weights when they are not the last epoch's: kept in memory by this run's keeper,
        or (a resumed run whose best epoch came before) read from the run's best.keras; None otherwise."""
        best_epoch = self.state["best_epoch"]
        if best_epoch is None or best_epoch == self.state["epoch"]:
            return None
        kept = getattr(self.keeper, "best_weights", None) if self.keeper is not None else None
        if kept is not None:
            return kept
        folder = self.config.resume_from or self.folder
        best_file = folder.path / "best.keras" if folder is not None else None
        if best_file is None or not best_file.is_file():
            return None
        import keras

        return keras.saving.load_model(best_file, safe_mode=True, compile=False).get_weights()

    def _close(self, status: str, reason: str | None = None) -> Run:
        report = self._report(status, reason)
        self.writer.history(self.state["history"]) if self.state["history"] else None
        self.writer.report(report)
        with contextlib.suppress(Exception):  # a picture must not turn a finished run into a failed one
            self.writer.curves(self.state["history"], f"{self.config.model}: {status}")
        history: dict[str, list[LoggedValue]] = {}
        for row in self.state["history"]:
            for key, value in row.items():
                if key != "epoch":
                    history.setdefault(key, []).append(value)
        return Run(
            self._dir, self.model, history, report, self.config_json, [row["epoch"] for row in self.state["history"]]
        )

    def _planned(self) -> DataPlan:
        """The data plan: `prepare` makes it, and `run_training` runs the session only once prepared."""
        assert self.plan is not None, "Session.run() before prepare()"
        return self.plan

    @property
    def _dir(self) -> Path | None:
        return self.folder.path if self.folder is not None else None

    # ------------------------------------------------------------ records

    def _report(self, status: str, reason: str | None = None) -> dict:
        state, config = self.state, self.config
        last = state["history"][-1] if state["history"] else {}
        report: dict[str, Any] = {"status": status}
        if reason:
            report["reason"] = reason
        report.update(
            {
                "model": config.model,
                "epochs_run": len(state["history"]),
                "epochs": config.epochs,
                "train": {
                    k: last[k] for k in loss_first([k for k in last if k != "epoch" and not k.startswith("val_")])
                },
                "val": {k: last[f"val_{k}"] for k in loss_first([k[4:] for k in last if k.startswith("val_")])},
                "test": {k: self.test[k] for k in loss_first(list(self.test))},
                **({"test_weights": self.test_weights} if self.test_weights is not None else {}),
                "best": (
                    {"epoch": state["best_epoch"], "val_loss": state["best_val_loss"]}
                    if state["best_epoch"] is not None
                    else None
                ),
                "seconds": round(state["seconds"], 3),
                "samples_per_second": round(state["samples"] / state["seconds"], 1) if state["seconds"] else None,
                "epoch_seconds": [round(s, 4) for s in state["epoch_seconds"]],
                "write_seconds": [round(s, 4) for s in state["write_seconds"]],  # of each epoch's, the state written
                "samples": self.plan.sizes() if self.plan is not None else None,
                "seed": config.seed,
            }
        )
        return report

    def _settings(self) -> dict:
        """config.json's settings, with the steps_per_execution and jit_compile the model was compiled
        with, and `settings_from`: for each of those two, "spec" or "default for <backend>"."""
        from netdsl.backend.compiler import execution_of

        execution = execution_of(self.model) if self.model is not None else None
        if execution is None:  # a model without a train section: nothing compiled
            return {"settings": self.config.settings()}
        compiled = {"steps_per_execution": execution.steps_per_execution, "jit_compile": execution.jit_compile}
        return {"settings": self.config.settings() | compiled, "settings_from": dict(execution.sources)}

    def _data_names(self) -> dict:
        """config.json's `classes` ({output: class names}: the training data's, else "0", "1", ... for an
        output a class loss trains) and `columns` ({input: the CSV columns it is made of}): what evaluate,
        predict and export read the run's data and outputs by."""
        if self.plan is None or self.model is None:
            return {}
        from netdsl.training.run.predictions import class_names, keras_loss_names

        source = self.plan.train.source
        units = {spec.name: (spec.shape[-1] if spec.shape else 1) for spec in Signature.of(self.model).outputs}
        classes = class_names(units, keras_loss_names(self.model), source.classes)
        found: dict = {"classes": {name: list(names) for name, names in classes.items()}}
        if source.columns:
            found["columns"] = {name: list(columns) for name, columns in source.columns.items()}
        return found

    def _config_json(self) -> dict:
        import keras
        import tensorflow as tf

        from netdsl.backend.compiler import init_report
        from netdsl.version import __version__

        config = self.config
        saved = config.resume_from.read_json("config.json") if config.resume_from is not None else {}
        compile_config = None
        if self.model is not None:
            with contextlib.suppress(Exception):
                compile_config = self.model.get_compile_config()
        return {
            "spec": config.spec_entry(),
            **self._settings(),
            "defines": json_defines(config.defines),
            **config.extra,
            "data": config.data.describe(),
            **self._data_names(),
            **({"adapted": self.adapted} if self.adapted else {}),
            # what `init` / --init-from loaded: each part, its file and (a zoo file's) sha256
            **({"init": init_report(self.model)} if self.model is not None and init_report(self.model) else {}),
            "samples": self.plan.sizes() if self.plan is not None else None,
            "compile": compile_config,
            "backend": keras.backend.backend(),
            "distribution": self.placement.describe(),
            "versions": {
                "netdsl": __version__,
                "keras": keras.__version__,
                "tensorflow": tf.__version__,
                "python": platform.python_version(),
                **_backend_version(),
            },
            "created": saved.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }


def _backend_version() -> dict:
    """The version of the backend the run trains on, where its profile records it (JAX's)."""
    import keras

    profile = profiles.get(keras.backend.backend())
    if profile is None or not profile.reports_version:
        return {}
    return {profile.module: sys.modules[profile.module].__version__}  # (loaded: Keras runs on it)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_tf_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("tensorflow") and type(exc).__name__.endswith("Error")
