"""`netdsl.train`: one run folder per run with everything in it, the same weights as the
hand-written `model.fit`, the same weights for the same seed, resumable state, evaluate/predict."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import keras
import numpy as np
import pytest

import netdsl
from netdsl.training.errors import RunError, UsageError
from netdsl.training.run.runs import RunFolder

RNG = np.random.default_rng(11)
X = RNG.random((60, 6, 6)).astype("float32")
Y = RNG.integers(0, 4, 60)

PLAIN = """\
model plain {
  input image: (6, 6)
  h = image -> flatten -> dense(16, activation=relu)
  output logits = h -> dense(4)
  train {
    optimizer = adam(learning_rate=1e-2)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [sparse_categorical_accuracy]
    batch_size = 8
    epochs = 3
    shuffle = false
  }
}
"""

# Shuffled batches and dropout: only the seed and the epoch decide them.
NOISY = (
    PLAIN.replace("shuffle = false", "steps_per_execution = 2")
    .replace("dense(16, activation=relu)", "dense(16, activation=relu) -> dropout(0.3)")
    .replace("plain", "noisy")
)

TWO_HEADS = """\
model two_heads {
  input x: (5,)
  h = x -> dense(8, activation=relu)
  output probs = h -> dense(3, activation=softmax)
  output box = h -> dense(2)
  train {
    optimizer = sgd(learning_rate=0.05)
    loss = {probs: sparse_categorical_crossentropy, box: mse}
    metrics = {probs: [accuracy], box: [mae]}
    batch_size = 10
    epochs = 2
  }
}
"""


def spec(tmp_path: Path, text: str = PLAIN, name: str = "m.net") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def same_weights(a, b) -> bool:
    return all(np.array_equal(u, v) for u, v in zip(a.get_weights(), b.get_weights()))


def test_a_run_folder_holds_models_history_report_config_and_curves(tmp_path):
    np.savez(tmp_path / "d.npz", image=X, logits=Y)
    run = netdsl.train(spec(tmp_path), data=str(tmp_path / "d.npz"), seed=3, out=tmp_path / "runs")
    assert run.dir == tmp_path / "runs" / "plain-1" and run.status == "finished"
    assert {p.name for p in run.dir.iterdir()} >= {
        "model.keras",
        "best.keras",
        "history.csv",
        "report.json",
        "config.json",
        "curves.svg",
        "curves.png",
        "checkpoint.npz",
    }
    lines = (run.dir / "history.csv").read_text().splitlines()
    assert lines[0] == "epoch,loss,sparse_categorical_accuracy,val_loss,val_sparse_categorical_accuracy"
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2", "3"]
    assert float(lines[-1].split(",")[1]) == run.history["loss"][-1]
    report = json.loads((run.dir / "report.json").read_text())
    assert report == run.report
    assert (report["status"], report["epochs_run"], report["seed"]) == ("finished", 3, 3)
    assert report["samples"] == {"train": 48, "val": 6, "test": 6}
    assert set(report["train"]) == set(report["val"]) == set(report["test"]) == {"loss", "sparse_categorical_accuracy"}
    assert report["best"]["val_loss"] == min(run.history["val_loss"]) and report["samples_per_second"] > 0
    config = json.loads((run.dir / "config.json").read_text())
    assert config["spec"]["model"] == "plain" and len(config["spec"]["sha256"]) == 64
    assert config["settings"] == {
        "epochs": 3,
        "batch_size": 8,
        "shuffle": False,
        "validation_split": None,
        "seed": 3,
        "steps_per_execution": 32,
        "jit_compile": "auto",
    }
    assert config["settings_from"] == {
        "steps_per_execution": "default for tensorflow",
        "jit_compile": "default for tensorflow",
    }
    assert set(config["versions"]) == {"netdsl", "keras", "tensorflow", "python"}
    assert config["data"]["split"] == [0.8, 0.1, 0.1]
    assert (run.dir / "curves.svg").read_text().count('<g id="axes_') == 2  # loss, accuracy
    assert (run.dir / "curves.png").read_bytes()[:4] == b"\x89PNG"
    loaded = keras.saving.load_model(run.dir / "model.keras", safe_mode=True)
    assert same_weights(loaded, run.model)
    best = keras.saving.load_model(run.dir / "best.keras", safe_mode=True)
    assert np.isclose(best.evaluate(X[:1], Y[:1], verbose=0)[0], best.evaluate(X[:1], Y[:1], verbose=0)[0])


@pytest.mark.parametrize(
    "extra, fit",
    [("", {}), ("steps_per_execution = 3\n    validation_split = 0.25", {"validation_split": 0.25})],
    ids=["plain", "spe3-valsplit"],
)
def test_weights_equal_the_hand_written_fit_bitwise(tmp_path, extra, fit):
    path = spec(tmp_path, PLAIN.replace("shuffle = false", f"shuffle = false\n    {extra}"))
    run = netdsl.train(path, train=(X, Y), seed=21, out=tmp_path / "runs")
    keras.utils.set_random_seed(21)
    model = netdsl.build(path)
    history = model.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0, **fit)
    assert same_weights(run.model, model)
    assert run.history == history.history  # every epoch's loss and metrics (and val_ ones), to the bit
    # both compiled alike: the spec's steps_per_execution, else TensorFlow's default (32)
    assert run.model.steps_per_execution == model.steps_per_execution == (3 if extra else 32)
    config = json.loads((run.dir / "config.json").read_text())
    assert (config["settings"]["steps_per_execution"], config["settings_from"]["steps_per_execution"]) == (
        (3, "spec") if extra else (32, "default for tensorflow")
    )


def test_a_job_placement_steps_once_and_the_next_build_has_the_backend_default(tmp_path):
    # The placement says "one step per execution"; nothing a build leaves behind changes the next one.
    from netdsl.training import DataRequest, TrainRequest, resolve
    from netdsl.training.run.engine import Placement, run_training

    path = spec(tmp_path, PLAIN)

    def trained(placement: Placement | None) -> tuple[int, str]:
        request = TrainRequest(spec=path, epochs=1, seed=2, out=tmp_path / "runs", data=DataRequest(train=(X, Y)))
        run = run_training(resolve(request), placement)
        config = json.loads((run.dir / "config.json").read_text())
        assert config["settings"]["steps_per_execution"] == run.model.steps_per_execution
        return run.model.steps_per_execution, config["settings_from"]["steps_per_execution"]

    assert trained(Placement(one_step_per_execution=True)) == (1, "default for tensorflow in a distributed job")
    assert trained(None) == (32, "default for tensorflow")
    assert netdsl.build(path).steps_per_execution == 32


def test_the_same_seed_gives_the_same_weights_with_shuffling_and_dropout(tmp_path):
    path = spec(tmp_path, NOISY)
    first = netdsl.train(path, train=(X, Y), seed=5, out=tmp_path / "runs", epochs=2)
    second = netdsl.train(path, train=(X, Y), seed=5, out=tmp_path / "runs", epochs=2)
    assert (first.dir.name, second.dir.name) == ("noisy-1", "noisy-2")
    assert same_weights(first.model, second.model)
    assert first.history == second.history


class _Crash(keras.callbacks.Callback):
    """Dies after `epoch` (1-based) is recorded, like a run killed between two epochs."""

    def __init__(self, epoch: int):
        super().__init__()
        self.at = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.at:
            raise RuntimeError("power cut")


class _CtrlC(keras.callbacks.Callback):
    """Presses Ctrl-C in the middle of epoch `epoch` (1-based)."""

    def __init__(self, epoch: int):
        super().__init__()
        self.at = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.params and batch == 2 and self.model.optimizer.iterations.numpy() > 6 * (self.at - 1):
            os.kill(os.getpid(), signal.SIGINT)


def test_a_crashed_run_resumes_to_the_uninterrupted_weights_even_shuffled_with_dropout(tmp_path):
    # (the subprocess SIGKILL test in test_checkpoint_kill.py does the same without shuffling or dropout)
    path, runs = spec(tmp_path, NOISY), tmp_path / "runs"
    whole = netdsl.train(path, train=(X, Y), seed=8, out=runs, epochs=4)
    with pytest.raises(RuntimeError, match="power cut"):
        netdsl.train(path, train=(X, Y), seed=8, out=runs, epochs=4, callbacks=[_Crash(2)])
    folder = whole.dir.parent / f"{whole.dir.name[:-2]}-2"
    assert json.loads((folder / "report.json").read_text())["status"] == "failed"
    resumed = netdsl.train(path, train=(X, Y), out=runs, resume="auto")
    assert resumed.dir == folder and resumed.status == "finished"
    assert same_weights(resumed.model, whole.model)
    assert (folder / "history.csv").read_text() == (whole.dir / "history.csv").read_text()


def test_ctrl_c_stops_cleanly_and_the_run_resumes(tmp_path):
    # one step per execution, so that the middle of an epoch is a step boundary Ctrl-C can land on
    # (with TensorFlow's default of 32, an epoch of 6 batches is one execution)
    path, runs = (
        spec(tmp_path, PLAIN.replace("shuffle = false", "shuffle = false\n    steps_per_execution = 1")),
        tmp_path / "runs",
    )
    before = signal.getsignal(signal.SIGINT)  # Python's own handler, or SIG_IGN when started in the background
    whole = netdsl.train(path, train=(X, Y), seed=2, out=runs, epochs=3)
    stopped = netdsl.train(path, train=(X, Y), seed=2, out=runs, epochs=3, callbacks=[_CtrlC(2)])
    assert stopped.status == "stopped" and stopped.report["epochs_run"] == 1
    assert signal.getsignal(signal.SIGINT) is before  # handlers given back
    assert "SIGINT" in stopped.report["reason"]
    resumed = netdsl.train(path, train=(X, Y), out=runs, resume=stopped.dir)
    assert same_weights(resumed.model, whole.model)
    assert resumed.history == whole.history


def test_runs_are_never_reused_even_when_started_together(tmp_path):
    made: list[Path] = []
    threads = [threading.Thread(target=lambda: made.append(RunFolder.create(tmp_path, "m").path)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.name for p in made) == sorted(f"m-{i}" for i in range(1, 9))
    (tmp_path / "m-3").rmdir()
    assert RunFolder.create(tmp_path, "m").path.name == "m-9"


def test_a_run_in_use_cannot_be_resumed_by_another(tmp_path):
    folder = RunFolder.create(tmp_path, "m")
    with folder.locked():
        with pytest.raises(RunError, match=r"in use by another netdsl process \(pid \d+\)"):
            with RunFolder(folder.path).locked():
                pass


def test_resume_refuses_a_changed_spec_and_changed_settings(tmp_path):
    path, runs = spec(tmp_path), tmp_path / "runs"
    with pytest.raises(RuntimeError):
        netdsl.train(path, train=(X, Y), seed=1, out=runs, callbacks=[_Crash(1)])
    with pytest.raises(RunError, match="--batch-size 4 differs from this run's 8"):
        netdsl.train(path, train=(X, Y), out=runs, resume="auto", batch_size=4)
    Path(path).write_text(PLAIN.replace("1e-2", "1e-3"))
    with pytest.raises(RunError, match="the spec changed since this run started"):
        netdsl.train(path, train=(X, Y), out=runs, resume="auto")


def test_flags_override_the_spec_and_early_stopping_says_so(tmp_path):
    text = PLAIN.replace("shuffle = false", 'callbacks = [early_stopping(monitor="loss", min_delta=100.0, patience=1)]')
    run = netdsl.train(spec(tmp_path, text), train=(X, Y), epochs=6, batch_size=20, seed=0, out=tmp_path)
    assert run.report["status"] == "stopped_early" and run.report["epochs_run"] == 2
    config = json.loads((run.dir / "config.json").read_text())
    assert (config["settings"]["epochs"], config["settings"]["batch_size"]) == (6, 20)


def test_evaluate_and_predict_are_keyed_by_output_name(tmp_path):
    x = RNG.random((30, 5)).astype("float32")
    data = {"x": x, "probs": RNG.integers(0, 3, 30), "box": RNG.random((30, 2)).astype("float32")}
    np.savez(tmp_path / "d.npz", **data)
    run = netdsl.train(spec(tmp_path, TWO_HEADS), data=str(tmp_path / "d.npz"), seed=1, out=tmp_path / "runs")
    values = netdsl.evaluate(run.dir, data=str(tmp_path / "d.npz"))
    assert set(values) == {"loss", "probs_loss", "box_loss", "probs_accuracy", "box_mae"}
    expected = run.model.evaluate(x, [data["probs"], data["box"]], batch_size=10, return_dict=True, verbose=0)
    assert values == pytest.approx(expected)
    predictions = netdsl.predict(run.dir / "model.keras", data={"x": x})
    assert list(predictions) == ["probs", "box"]
    probs, box = run.model.predict(x, verbose=0)
    assert np.allclose(predictions["probs"], probs) and predictions["box"].shape == (30, 2)


def test_tensorboard_logs_and_a_missing_package_is_a_usage_error(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    run = netdsl.train(spec(tmp_path), train=(X, Y), epochs=1, seed=0, out=tmp_path, tensorboard=True)
    assert list((run.dir / "tensorboard").rglob("events.out.tfevents.*"))
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(UsageError, match="pip install 'netdsl\\[tensorboard\\]'") as caught:
        netdsl.train(spec(tmp_path), train=(X, Y), out=tmp_path / "other", tensorboard=True)
    assert caught.value.exit_code == 2 and not (tmp_path / "other").exists()  # refused at start


def test_resume_cannot_shrink_a_run_below_the_epochs_it_has_trained(tmp_path):
    path, runs = spec(tmp_path), tmp_path / "runs"
    with pytest.raises(RuntimeError):
        netdsl.train(path, train=(X, Y), seed=1, out=runs, callbacks=[_Crash(2)])
    with pytest.raises(RunError, match="--epochs 1 is fewer than the 2 this run has already trained"):
        netdsl.train(path, train=(X, Y), out=runs, resume="auto", epochs=1)
    report = json.loads((runs / "plain-1" / "report.json").read_text())
    assert (report["status"], report["epochs_run"]) == ("failed", 2)
    assert report["reason"] == "RuntimeError: power cut"


def test_a_stop_is_not_swallowed_by_code_that_catches_exception():
    # A Ctrl-C lands wherever Python is; TensorFlow's AutoGraph catches Exception while it converts
    # the data pipeline's functions, and a Stopped that was an Exception ended there (the run went
    # on and exited 0: test_checkpoint_kill saw it).
    from netdsl.training.run.signals import Stopped, StopSignals

    caught = []
    with pytest.raises(Stopped), StopSignals():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs between two bytecodes
                pass
        except Exception as exc:  # what a library does around user code
            caught.append(exc)
    assert caught == []


class _Finalized:
    """Presses Ctrl-C while Python runs its finalizer: an exception raised there is swallowed
    (reported to sys.unraisablehook), as in the garbage-collector callback JAX registers, where
    test_checkpoint_kill once saw a Ctrl-C vanish (the run went on to its end and exited 0)."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, inside the finalizer
            pass


def test_a_stop_raised_where_python_swallows_exceptions_lands_after_it(capsys):
    from netdsl.training.run.signals import Stopped, StopSignals

    reached = []
    with pytest.raises(Stopped), StopSignals():
        finalized = _Finalized()
        del finalized  # the stop raised in __del__ is swallowed there, then sent again
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # training goes on meanwhile
            pass
        reached.append("after")
    assert reached == []
    assert "Exception ignored" not in capsys.readouterr().err


def test_a_stop_that_never_landed_ends_the_run_after_its_epoch(tmp_path, monkeypatch):
    # the backstop: a stop asked for whose exception vanished on every way ends the run after the epoch
    # it came in (recorded, resumable), not at the run's end
    from netdsl.training.run import keeper

    real = keeper.RunKeeper.on_epoch_begin

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            self.signals._requested = signal.SIGINT  # what the handler records before it raises
        real(self, epoch, logs)

    monkeypatch.setattr(keeper.RunKeeper, "on_epoch_begin", on_epoch_begin)
    run = netdsl.train(spec(tmp_path), train=(X, Y), seed=2, out=tmp_path / "runs")
    assert run.status == "stopped" and run.report["epochs_run"] == 2 and "SIGINT" in run.report["reason"]
