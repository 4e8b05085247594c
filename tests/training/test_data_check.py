"""Data checked before TensorFlow loads (training/data/data_check.py), and `evaluate` on a run's own split."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main
from netdsl.training.data.plan import split_rows

ROOT = Path(__file__).resolve().parents[2]
SPEC = """\
model house {
  input photo: (4, 4, 3)
  input features: (2,)
  h = (photo -> flatten, features) -> concatenate -> dense(4, activation=relu)
  output kind = h -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=1e-2)
    loss = sparse_categorical_crossentropy
    batch_size = 8
    epochs = 1
  }
}
"""

# A user's session: the wrong key, then the data error is printed without TensorFlow and no run folder is made.
NO_TENSORFLOW = """\
import sys
from netdsl.cli import main
code = main(sys.argv[1:])
print("exit", code, "tensorflow" in sys.modules, "keras" in sys.modules)
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("house.net").write_text(SPEC)
    rng = np.random.default_rng(0)
    n = 40
    photo, features = rng.random((n, 4, 4, 3), dtype=np.float32), rng.random((n, 2), dtype=np.float32)
    kind = rng.integers(0, 3, n)
    np.savez("house.npz", photo=photo, features=features, kind=kind)
    np.savez("typo.npz", image=photo, features=features, kind=kind)
    np.savez("flat.npz", photo=photo.reshape(n, -1), features=features, kind=kind)
    return tmp_path


def run_without_tensorflow(*args: str) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", NO_TENSORFLOW, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "dsl"), "PATH": "/usr/bin:/bin"},
    )
    return done.stdout, done.stderr


@pytest.mark.parametrize(
    "data, message",
    [
        ("typo.npz", "typo.npz: error: no array for input 'photo'; keys found: features, image, kind\n"),
        ("flat.npz", "flat.npz: error: input 'photo' expects shape (N, 4, 4, 3), found (40, 48)\n"),
    ],
)
def test_a_data_error_comes_before_tensorflow_and_leaves_no_run_folder(work, data, message):
    out, err = run_without_tensorflow("train", "house.net", "--data", data, "-o", "runs")
    assert err == message
    assert out == "exit 1 False False\n"
    assert not Path("runs").exists()


def test_a_near_key_is_suggested(work):
    np.savez("near.npz", photos=np.zeros((4, 4, 4, 3)), features=np.zeros((4, 2)), kind=np.zeros(4))
    out, err = run_without_tensorflow("train", "house.net", "--data", "near.npz")
    assert err == (
        "near.npz: error: no array for input 'photo'; keys found: features, kind, photos; did you mean "
        "'photos'? (arrays are keyed by the spec's input and output names)\n"
    )


@pytest.mark.slow
def test_evaluate_a_run_on_its_own_test_split(work, capsys):
    assert main(["train", "house.net", "--data", "house.npz", "--seed", "3", "--progress", "none"]) == 0
    printed = capsys.readouterr().out
    test_loss = float(printed.split("test_loss ")[1].split()[0])
    assert main(["evaluate", "runs/house-1", "--json"]) == 0
    own = json.loads(capsys.readouterr().out)
    # The same rows by hand: the split training drew from the seed, written out as their own file.
    with np.load("house.npz") as data:
        rows = split_rows(40, (0.8, 0.1, 0.1), 3)[2]
        np.savez("test_rows.npz", **{key: data[key][rows] for key in data.files})
    assert main(["evaluate", "runs/house-1", "--data", "test_rows.npz", "--json"]) == 0
    assert own == json.loads(capsys.readouterr().out)
    assert own["loss"] == pytest.approx(test_loss, abs=5e-5)  # the run's own test_loss, printed to 4 places
    assert main(["evaluate", "runs/house-1", "--split", "val", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) != own


def test_evaluate_without_data_needs_a_run_folder(work, capsys):
    Path("model.keras").write_bytes(b"")
    assert main(["evaluate", "model.keras"]) == 2
    assert capsys.readouterr().err == (
        "netdsl evaluate: error: evaluate needs --data SRC, except for a run folder (its own test split by default)\n"
    )
