"""One set of weights per run (issue 28): every command reading a run folder (`evaluate`, `predict`,
`export`, `decompile`, train's `test:` line) uses `RunFolder.weights` — best.keras when the run had
validation data, else model.keras — accepts `--checkpoint best|last` and says which on stderr.

The run here is made so that its best and last epochs differ: the validation labels are the
training labels flipped, so the better the model fits, the worse its val_loss (best: epoch 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.training.errors import RunError, UsageError
from netdsl.training.run.runs import RunFolder

SPEC = """\
model flip {
  input x: (4,)
  output probs = x -> dense(8, activation=relu) -> dense(2, activation=softmax)
  train {
    optimizer = adam(learning_rate=0.05)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    batch_size = 16
    epochs = 4
    shuffle = false
  }
}
"""


def _arrays(seed: int, flip: bool = False) -> dict[str, np.ndarray]:
    x = np.random.default_rng(seed).random((64, 4)).astype("float32")
    y = (x[:, 0] > 0.5).astype("int64")
    return {"x": x, "probs": 1 - y if flip else y}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run whose best epoch (1) is not its last (4), with its spec and data on disk."""
    where = tmp_path_factory.mktemp("weights")
    (where / "flip.net").write_text(SPEC)
    for name, arrays in (("train", _arrays(0)), ("val", _arrays(1, flip=True)), ("test", _arrays(2))):
        np.savez(where / f"{name}.npz", **arrays)
    code = main(
        [
            "train",
            str(where / "flip.net"),
            "--train",
            str(where / "train.npz"),
            "--val",
            str(where / "val.npz"),
            "--test",
            str(where / "test.npz"),
            "--seed",
            "3",
            "-o",
            str(where / "runs"),
            "--progress",
            "none",
        ]
    )
    assert code == 0
    return where / "runs" / "flip-1"


def _report(run: Path) -> dict:
    return json.loads((run / "report.json").read_text())


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_run_has_a_best_epoch_before_its_last(run):
    report = _report(run)
    assert (report["best"]["epoch"], report["epochs_run"]) == (1, 4)
    assert report["test_weights"] == {"checkpoint": "best", "epoch": 1, "val_loss": report["best"]["val_loss"]}


def test_evaluate_defaults_to_the_best_weights_and_says_so(run, capsys):
    best = _report(run)["best"]
    code, out, err = _cli(capsys, "evaluate", str(run), "--json")
    assert code == 0
    assert err == f"weights: best (epoch 1 of 4, val_loss {best['val_loss']:.4f})\n"
    scores = json.loads(out)
    assert scores == netdsl.evaluate(run, checkpoint="best")
    assert scores["loss"] == pytest.approx(_report(run)["test"]["loss"], rel=1e-5)  # train's `test:` line


def test_checkpoint_last_scores_the_last_epoch(run, capsys):
    code, out, err = _cli(capsys, "evaluate", str(run), "--json", "--checkpoint", "last")
    assert (code, err) == (0, "weights: last (epoch 4 of 4)\n")
    assert json.loads(out)["loss"] != pytest.approx(netdsl.evaluate(run)["loss"], rel=1e-3)
    assert json.loads(out) == netdsl.evaluate(run / "model.keras", data=run.parent.parent / "test.npz")


def test_predict_uses_the_same_default(run, tmp_path, capsys):
    x = _arrays(5)["x"]
    default = netdsl.predict(run, data=x)["probs"]
    np.testing.assert_array_equal(default, netdsl.predict(run / "best.keras", data=x)["probs"])
    assert not np.allclose(default, netdsl.predict(run, data=x, checkpoint="last")["probs"])
    np.savez(tmp_path / "new.npz", x=x)
    code, out, err = _cli(
        capsys, "predict", str(run), "--data", str(tmp_path / "new.npz"), "-o", str(tmp_path / "p.npz")
    )
    assert (code, err.splitlines()[0]) == (
        0,
        f"weights: best (epoch 1 of 4, val_loss {_report(run)['best']['val_loss']:.4f})",
    )
    with np.load(tmp_path / "p.npz") as saved:
        np.testing.assert_array_equal(saved["probs"], default)


def test_export_and_decompile_pick_the_same_default(run, tmp_path, capsys):
    from netdsl.deploy.export_source import resolve

    assert resolve(run).label == str(run / "best.keras")
    assert resolve(run, checkpoint="last").label == str(run / "model.keras")
    line = f"weights: best (epoch 1 of 4, val_loss {_report(run)['best']['val_loss']:.4f})\n"
    code, out, err = _cli(
        capsys, "export", str(run), "--format", "onnx", "--no-verify", "-o", str(tmp_path / "flip.onnx")
    )
    assert (code, err, out) == (0, line, f"wrote {tmp_path / 'flip.onnx'} (onnx)\n")
    code, _, err = _cli(
        capsys, "export", str(run), "--format", "onnx", "--no-verify", "--last", "-o", str(tmp_path / "last.onnx")
    )  # the earlier spelling of --checkpoint last
    assert (code, err) == (0, "weights: last (epoch 4 of 4)\n")
    code, out, err = _cli(capsys, "decompile", str(run))
    assert (code, err) == (0, line)
    assert out == netdsl.decompile(run / "best.keras") == netdsl.decompile(run)


def test_train_prints_which_weights_scored_the_test_split(tmp_path, capsys):
    (tmp_path / "flip.net").write_text(SPEC.replace("epochs = 4", "epochs = 1"))
    np.savez(tmp_path / "data.npz", **_arrays(0))
    code, out, err = _cli(
        capsys,
        "train",
        str(tmp_path / "flip.net"),
        "--data",
        str(tmp_path / "data.npz"),
        "--split",
        "0.8,0,0.2",
        "--seed",
        "0",
        "-o",
        str(tmp_path / "runs"),
        "--progress",
        "none",
    )
    assert code == 0 and "test:  test_loss" in out
    assert err.splitlines()[-1] == "weights: last (epoch 1 of 1, no validation data, so no best epoch)"
    run = tmp_path / "runs" / "flip-1"
    assert not (run / "best.keras").exists()
    assert RunFolder(run).weights().line == "weights: last (epoch 1 of 1, no validation data, so no best epoch)"
    with pytest.raises(RunError) as raised:
        RunFolder(run).weights("best")
    assert str(raised.value) == (
        f"{run}: error: no best.keras (the run had no validation data; status: finished); "
        "--checkpoint last reads model.keras, written when the run ends"
    )


def test_a_run_without_weights_yet_says_what_is_missing(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(RunError) as raised:
        RunFolder(tmp_path).weights()
    assert (
        str(raised.value) == f"{tmp_path}: error: no model.keras yet (status: running); it is written when the run ends"
    )
    with pytest.raises(RunError) as raised:
        RunFolder(tmp_path).weights("best")
    assert str(raised.value) == (
        f"{tmp_path}: error: no best.keras (no epoch has ended yet; status: running); "
        "--checkpoint last reads model.keras, written when the run ends"
    )
    with pytest.raises(UsageError) as refused:
        RunFolder(tmp_path).weights("final")
    assert str(refused.value) == "checkpoint takes 'best' or 'last'; received 'final'"


def test_checkpoint_is_refused_where_there_is_one_set_of_weights(run, capsys):
    code, _, err = _cli(
        capsys,
        "evaluate",
        str(run / "model.keras"),
        "--data",
        str(run.parent.parent / "test.npz"),
        "--checkpoint",
        "best",
    )
    assert (code, err) == (
        2,
        "netdsl evaluate: error: --checkpoint chooses a run folder's weights (best or last); "
        "a .keras file has one set\n",
    )


# ------------------------------------------------------------------ errors that pointed the wrong way (13a-c)


def test_a_mistyped_run_folder_is_no_such_folder(tmp_path, capsys):
    code, out, err = _cli(capsys, "evaluate", str(tmp_path / "runs" / "customer-1"))
    assert (code, out, err) == (1, "", f"{tmp_path}/runs/customer-1: error: no such file or folder\n")
    with pytest.raises(RunError) as raised:
        netdsl.evaluate(tmp_path / "runs" / "customer-1", data=_arrays(0))
    assert str(raised.value) == f"{tmp_path}/runs/customer-1: error: no such file or folder"


def test_evaluating_a_run_trained_on_arrays_asks_for_the_data(tmp_path):
    run = netdsl.train(text=SPEC.replace("epochs = 4", "epochs = 1"), data=_arrays(0), seed=0, out=tmp_path)
    with pytest.raises(RunError) as raised:
        netdsl.evaluate(run.dir)
    assert str(raised.value) == (
        f"{run.dir}: error: this run trained on arrays passed in memory, which its folder "
        "does not keep; give the data to evaluate on; evaluate(run, data=...) (--data SRC)"
    )
    assert set(netdsl.evaluate(run.dir, data=_arrays(4))) == {"loss", "accuracy"}


def test_decompile_of_a_run_folder_loads_no_backend(run, tmp_path):
    import os
    import subprocess
    import sys

    probe = (
        "import sys; from netdsl.cli import main; code = main(['decompile', sys.argv[1], '-o', sys.argv[2]]); "
        "print(code, [m for m in ('tensorflow', 'keras', 'jax', 'torch') if m in sys.modules])"
    )
    dsl = str(Path(__file__).resolve().parents[2] / "dsl")
    done = subprocess.run(
        [sys.executable, "-c", probe, str(run), str(tmp_path / "flip.net")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": dsl},
    )
    assert (done.stdout, done.stderr.splitlines()[-1]) == (
        "0 []\n",
        f"weights: best (epoch 1 of 4, val_loss {_report(run)['best']['val_loss']:.4f})",
    )
    assert (tmp_path / "flip.net").read_text() == netdsl.decompile(run)
