"""Labels and losses agree before anything trains (issue 28): one line at the spec's loss with the
fix, before the backend loads and before any run folder, for train (arrays here; files in
tests/fixtures/data_errors/labels_*) and evaluate; and no complaint where they do agree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "data_errors"

CLASSIFIER = """\
model clf {{
  input x: (4,)
  output y = x -> dense(3{activation})
  train {{
    optimizer = sgd
    loss = {loss}
  }}
}}
"""
X = np.random.default_rng(0).random((20, 4)).astype("float32")
LABELS = np.arange(20) % 3


def _spec(loss: str, activation: str = ", activation=softmax") -> str:
    return CLASSIFIER.format(loss=loss, activation=activation)


def _refused(text: str, data, tmp_path: Path) -> str:
    with pytest.raises(SpecError) as raised:
        netdsl.train(text=text, filename="clf.net", data=data, out=tmp_path / "runs", epochs=1)
    assert not (tmp_path / "runs").exists()  # nothing written
    return str(raised.value)


@pytest.mark.parametrize(
    ("loss", "activation", "targets", "expected"),
    [
        (
            "categorical_crossentropy",
            ", activation=softmax",
            LABELS,
            "clf.net:6:12: error: categorical_crossentropy takes one-hot targets, shape (N, 3), for output 'y'; the array "
            "'y' holds one class label per sample, shape (N,); use sparse_categorical_crossentropy for integer labels, or "
            "one-hot the labels",
        ),
        (
            "categorical_focal_crossentropy",
            ", activation=softmax",
            LABELS[:, None],
            "clf.net:6:12: error: categorical_focal_crossentropy takes one-hot targets, shape (N, 3), for output 'y'; the "
            "array 'y' holds one class label per sample, shape (N, 1); use sparse_categorical_crossentropy for integer "
            "labels, or one-hot the labels",
        ),
        (
            "sparse_categorical_crossentropy",
            ", activation=softmax",
            np.eye(3)[LABELS],
            "clf.net:6:12: error: sparse_categorical_crossentropy takes one class label per sample, shape (N,), for output "
            "'y'; the array 'y' holds one-hot rows of 3 values, shape (N, 3); use categorical_crossentropy for one-hot "
            "labels, or give the class indices (each row's argmax)",
        ),
        (
            "sparse_categorical_crossentropy",
            ", activation=softmax",
            LABELS - 1,
            "clf.net:6:12: error: sparse_categorical_crossentropy takes class labels 0 to 2 for the 3 units of output 'y'; "
            "the array 'y' holds labels from -1 to 1; number the classes from 0",
        ),
        (
            "binary_crossentropy",
            ", activation=softmax",
            np.eye(3)[LABELS],
            "clf.net:6:12: error: binary_crossentropy scores each of the 3 units of output 'y' as a yes/no of its own, but a "
            "softmax makes them one choice among 3 classes; use sparse_categorical_crossentropy for integer labels "
            "(categorical_crossentropy for one-hot labels), or sigmoid units for several yes/no labels",
        ),
        (
            "categorical_crossentropy(from_logits=true)",
            ", activation=softmax",
            np.eye(3)[LABELS],
            "clf.net:6:12: error: categorical_crossentropy(from_logits=true) takes raw scores (logits), but output 'y' ends "
            "in softmax, which gives probabilities; drop from_logits=true, or drop the softmax from the output (the loss "
            "applies it)",
        ),
        (
            "binary_crossentropy(from_logits=true)",
            ", activation=sigmoid",
            np.eye(3)[LABELS],
            "clf.net:6:12: error: binary_crossentropy(from_logits=true) takes raw scores (logits), but output 'y' ends in "
            "sigmoid, which gives probabilities; drop from_logits=true, or drop the sigmoid from the output (the loss "
            "applies it)",
        ),
        (
            "binary_crossentropy",
            ", activation=sigmoid",
            np.eye(3)[LABELS] * 2,
            "clf.net:6:12: error: binary_crossentropy takes targets from 0 to 1 for output 'y'; the array 'y' holds values "
            "from 0 to 2; for several classes: a softmax output of one unit per class with sparse_categorical_crossentropy",
        ),
    ],
)
def test_a_loss_that_does_not_fit_is_one_line_at_the_loss(loss, activation, targets, expected, tmp_path):
    assert _refused(_spec(loss, activation), (X, targets), tmp_path) == expected


@pytest.mark.parametrize(
    ("loss", "activation", "targets"),
    [
        ("sparse_categorical_crossentropy", ", activation=softmax", LABELS),
        ("sparse_categorical_crossentropy", ", activation=softmax", LABELS[:, None]),  # (N, 1): Keras squeezes it
        ("sparse_categorical_crossentropy(from_logits=true)", "", LABELS),
        ("categorical_crossentropy", ", activation=softmax", np.eye(3)[LABELS]),
        ("categorical_crossentropy", ", activation=softmax", np.full((20, 3), 1 / 3)),  # soft labels
        ("binary_crossentropy", ", activation=sigmoid", np.eye(3)[LABELS]),  # three yes/no labels
        ("mean_squared_error", "", LABELS[:, None] * 2.5),
    ],
)
def test_labels_that_fit_their_loss_train(loss, activation, targets, tmp_path):
    run = netdsl.train(
        text=_spec(loss, activation), filename="clf.net", data=(X, targets), out=tmp_path, epochs=1, seed=0
    )
    assert run.status == "finished"


def test_each_output_is_checked_against_its_own_loss(tmp_path):
    text = """\
model two {
  input x: (4,)
  h = x -> dense(8)
  output kind = h -> dense(3, activation=softmax)
  output size = h -> dense(1)
  train {
    optimizer = sgd
    loss = {kind: categorical_crossentropy, size: mse}
  }
}
"""
    assert _refused(text, {"x": X, "kind": LABELS, "size": X[:, :1]}, tmp_path) == (
        "clf.net:8:12: error: categorical_crossentropy takes one-hot targets, shape (N, 3), for output 'kind'; the "
        "array 'kind' holds one class label per sample, shape (N,); use sparse_categorical_crossentropy for integer "
        "labels, or one-hot the labels"
    )


def test_train_says_it_before_the_backend_loads():
    """The beginner's mistake on a file: one line at the loss, the backend never imported (about a second)."""
    probe = (
        "import sys; from netdsl.cli import main; "
        "code = main(['train', 'losses.net', '--model', 'onehot', '--data', 'labels_int.npz', '-o', "
        "'/nonexistent/runs']); "
        "print(code, sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=FIXTURES,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "dsl"), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout == "1 []\n"
    assert done.stderr.splitlines()[0] == (
        "losses.net:7:12: error: categorical_crossentropy takes one-hot targets, shape (N, 3), for output 'probs'; "
        "'probs' in labels_int.npz holds one class label per sample, shape (N,); use sparse_categorical_crossentropy "
        "for integer labels, or one-hot the labels"
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A run of a sparse classifier whose spec stays where it was."""
    where = tmp_path_factory.mktemp("evaluate")
    (where / "clf.net").write_text(_spec("sparse_categorical_crossentropy"))
    run = netdsl.train(where / "clf.net", data=(X, LABELS), split=(0.8, 0.2), out=where / "runs", epochs=1, seed=0)
    np.savez(where / "onehot.npz", x=X, y=np.eye(3)[LABELS].astype("float32"))
    return Path(run.dir)


def test_evaluate_checks_the_labels_against_the_runs_spec(trained):
    spec = trained.parent.parent / "clf.net"
    for source in (trained, trained / "model.keras"):
        with pytest.raises(SpecError) as raised:
            netdsl.evaluate(source, data=trained.parent.parent / "onehot.npz")
        assert str(raised.value) == (
            f"{spec}:6:12: error: sparse_categorical_crossentropy takes one class label per sample, shape (N,), for "
            f"output 'y'; 'y' in {trained.parent.parent / 'onehot.npz'} holds one-hot rows of 3 values, shape (N, 3); "
            "use categorical_crossentropy for one-hot labels, or give the class indices (each row's argmax)"
        )


def test_evaluate_of_a_keras_file_on_its_own_checks_them_against_its_compiled_loss(trained, tmp_path):
    """No spec to point at: the line names the file (was Keras' traceback)."""
    import shutil

    from netdsl.training.errors import DataError

    alone = Path(shutil.copy(trained / "model.keras", tmp_path / "clf.keras"))
    onehot = trained.parent.parent / "onehot.npz"
    with pytest.raises(DataError) as raised:
        netdsl.evaluate(alone, data=onehot)
    assert str(raised.value) == (
        f"{alone}: error: sparse_categorical_crossentropy takes one class label per sample, shape (N,), for output "
        f"'y'; 'y' in {onehot} holds one-hot rows of 3 values, shape (N, 3); use categorical_crossentropy for one-hot "
        "labels, or give the class indices (each row's argmax)"
    )


def test_evaluate_of_an_exported_file_checks_them_too(trained, tmp_path):
    onnx = netdsl.export(trained, format="onnx", out=tmp_path / "clf.onnx", verify=False)
    with pytest.raises(SpecError) as raised:
        netdsl.evaluate(onnx, data={"x": X, "y": np.eye(3)[LABELS]}, spec=trained.parent.parent / "clf.net")
    assert str(raised.value).startswith(
        f"{trained.parent.parent / 'clf.net'}:6:12: error: "
        "sparse_categorical_crossentropy takes one class label per sample"
    )
