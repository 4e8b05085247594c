"""One door for trained things (issue 29, item 4): a run folder, its `.keras` files, the live model and its
ONNX export opened by `netdsl.open_trained` give the same class names, signature, predictions and scores,
and what does not apply to a kind is refused in one line, whichever door it came through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.errors import UsageError
from netdsl.trained import ExportedFile, KerasModel, TrainedModel

SPEC = """\
model kinds {
  input x: (4,)
  output kind = x -> dense(8, activation=relu) -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=0.05)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    batch_size = 16
    epochs = 3
    shuffle = false
  }
}
"""
NAMES = ("large", "medium", "small")  # sorted, as the CSV's names are recorded


def _table(path: Path, seed: int, rows: int) -> Path:
    x = np.random.default_rng(seed).random((rows, 4)).astype("float32")
    kinds = np.digitize(x[:, 0] + x[:, 1], [0.7, 1.3])  # 0, 1, 2 by the first two features
    lines = ["a,b,c,d,kind"] + [
        ",".join(f"{v:.6f}" for v in row) + f",{('small', 'medium', 'large')[k]}" for row, k in zip(x, kinds)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, object]:
    """A run trained on a CSV of class names (train, val and test files), its model and its ONNX export."""
    folder = tmp_path_factory.mktemp("trained")
    spec = folder / "kinds.net"
    spec.write_text(SPEC)
    parts = {role: _table(folder / f"{role}.csv", seed, 48) for seed, role in enumerate(("train", "val", "test"))}
    run = netdsl.train(spec, train=parts["train"], val=parts["val"], test=parts["test"], seed=0, out=folder / "runs")
    onnx = netdsl.export(run.dir, format="onnx", out=run.dir / "kinds.onnx")  # in its run folder: its spec scores it
    return {"run": run, "onnx": Path(str(onnx)), "test": parts["test"], "spec": spec}


def _opened(made: dict, kind: str) -> TrainedModel:
    run = made["run"]
    where = {
        "run folder": run.dir,
        "best.keras": run.dir / "best.keras",
        "live model": run.model,
        "onnx": made["onnx"],
    }[kind]
    return netdsl.open_trained(where)


KINDS = ["run folder", "best.keras", "live model", "onnx"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_answers_the_same_questions_the_same_way(kind, made):
    trained = _opened(made, kind)
    assert isinstance(trained, ExportedFile if kind == "onnx" else KerasModel)
    signature = trained.signature
    assert (signature.input_names, signature.output_names) == (["x"], ["kind"])
    assert [spec.shape for spec in signature.inputs] == [(4,)]
    reference = netdsl.open_trained(made["run"].dir / "best.keras")
    expected = reference.predict(made["test"])
    got = trained.predict(made["test"])
    np.testing.assert_allclose(got["kind"], expected["kind"], rtol=1e-5, atol=1e-6)
    assert got.sources == expected.sources == [str(line) for line in range(2, 50)]  # each row's line
    if kind == "live model":  # a model in memory records no names: its labels are class indices
        assert trained.classes == {}
        return
    assert trained.classes == {"kind": NAMES}
    assert got.labels.tolist() == expected.labels.tolist()
    assert set(got.labels.tolist()) <= set(NAMES)
    scores = trained.evaluate(made["test"])
    want = reference.evaluate(made["test"])
    assert list(scores) == list(want) == ["loss", "accuracy"]
    np.testing.assert_allclose(
        [scores["loss"], scores["accuracy"]], [want["loss"], want["accuracy"]], rtol=1e-5, atol=1e-6
    )


def test_the_library_functions_are_the_door(made):
    """`netdsl.evaluate` and `netdsl.predict` give what the opened model gives, for each kind."""
    for kind in ("run folder", "onnx"):
        trained = _opened(made, kind)
        assert netdsl.evaluate(trained.where, data=made["test"]) == trained.evaluate(made["test"])
        np.testing.assert_array_equal(
            netdsl.predict(trained.where, data=made["test"])["kind"], trained.predict(made["test"])["kind"]
        )


def test_a_run_folder_has_its_own_splits_and_says_which_weights(made):
    run = netdsl.open_trained(made["run"].dir)
    assert run.has_own_splits
    assert run.weights_line is not None and run.weights_line.startswith("weights: best (epoch ")
    assert run.evaluate() == run.evaluate(made["test"])  # its own test split is the test file it was given
    last = netdsl.open_trained(made["run"].dir, checkpoint="last")
    assert last.weights_line is not None and last.weights_line.startswith("weights: last (epoch 3 of 3")
    for other in ("best.keras", "onnx"):
        opened = _opened(made, other)
        assert not opened.has_own_splits and opened.weights_line is None


@pytest.mark.parametrize(
    ("kind", "call", "message"),
    [
        (
            "onnx",
            lambda where: netdsl.open_trained(where, checkpoint="best"),
            "--checkpoint chooses a run folder's weights (best or last); an exported file has one set",
        ),
        (
            "run folder",
            lambda where: netdsl.open_trained(where, trust=True),
            "--trust runs an exported SavedModel whose graph holds ops outside netdsl's allow-list; a run folder or "
            ".keras file is loaded in Keras' safe mode, with nothing to trust",
        ),
        (
            "onnx",
            lambda where: netdsl.predict(where, data="unused.npz", backend="jax"),
            "--backend does not apply to an exported file: it runs in its own runtime",
        ),
        (
            "best.keras",
            lambda where: netdsl.open_trained(where).evaluate("unused.npz", spec="kinds.net"),
            "--spec, --model and --include give an exported file its loss and metrics; a Keras model has its own",
        ),
        (
            "best.keras",
            lambda where: netdsl.open_trained(where, checkpoint="last").predict("unused.npz"),
            "--checkpoint chooses a run folder's weights (best or last); a .keras file has one set",
        ),
    ],
)
def test_what_does_not_apply_to_a_kind_is_one_usage_error(kind, call, message, made):
    with pytest.raises(UsageError) as raised:
        call(_opened(made, kind).where)
    assert str(raised.value) == message


def test_the_commands_print_what_the_door_gives(made, capsys):
    run = made["run"].dir
    assert main(["evaluate", str(run)]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("weights: best (epoch ")
    assert captured.out.splitlines()[-1] == f"classes: {', '.join(NAMES)}"
    assert main(["evaluate", str(made["onnx"]), "--data", str(made["test"])]) == 0
    captured = capsys.readouterr()
    assert (captured.err, captured.out.splitlines()[-1]) == ("", f"classes: {', '.join(NAMES)}")


def test_opening_loads_no_framework(made):
    """Opening a run folder or an exported file, and asking its class names, reads files only."""
    code = (
        "import sys, netdsl\n"
        f"for where in ({str(made['run'].dir)!r}, {str(made['onnx'])!r}):\n"
        "    assert netdsl.open_trained(where).classes\n"
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")
