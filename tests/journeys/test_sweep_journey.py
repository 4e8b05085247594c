"""Journey (e), as a user takes it on the command line: a sweep -> its best trial (best.json) -> that
trial's run exported to ONNX -> the exported file evaluated on the same data, scoring as the run does.

Issue 28, item 8(e). Every step runs `netdsl` in its own process; the seam it holds is "one set of
weights per run": `export` of the best trial's run folder and `evaluate` of it pick the same weights,
so the file and the run give the same loss.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.journeys import netdsl

pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")
pytest.importorskip("onnxruntime", reason="netdsl[export] is not installed")

SPEC = """\
let width = 8

model clf {
  input x: (6,)
  output y = x -> dense(width, activation=relu) -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=0.02)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    batch_size = 16
    epochs = 3
  }
}

sweep clf {
  width = choice(4, 16)
  objective = minimize(val_loss)
  trials = 2
}
"""


def scores(stdout: str) -> dict[str, float]:
    """`loss 0.123` lines of `netdsl evaluate` (the classes line left aside)."""
    return {
        name: float(value)
        for name, value in (
            line.split() for line in stdout.splitlines() if len(line.split()) == 2 and not line.startswith("classes")
        )
    }


@pytest.mark.slow  # trains in `netdsl` processes
def test_a_sweeps_best_trial_exported_scores_as_its_run(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(160, 6)).astype("float32")
    np.savez(tmp_path / "data.npz", x=x, y=(x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64"))
    (tmp_path / "clf.net").write_text(SPEC)

    swept = netdsl(tmp_path, "sweep", "clf.net", "--data", "data.npz", "--seed", "3", "-o", "sweeps")
    assert swept.returncode == 0, swept.stderr
    assert swept.stdout.splitlines()[-1] == "sweep folder: sweeps/clf-sweep-1"
    best = json.loads((tmp_path / "sweeps/clf-sweep-1/best.json").read_text())
    run = Path(best["run"])
    assert run == (tmp_path / f"sweeps/clf-sweep-1/trials/{best['trial']}").resolve()

    exported = netdsl(tmp_path, "export", str(run), "--format", "onnx")
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.startswith("weights: best (epoch ")  # the run had validation data: its best epoch
    onnx = run / "clf.onnx"
    assert onnx.is_file()

    from_run = netdsl(tmp_path, "evaluate", str(run), "--data", "data.npz")
    from_file = netdsl(tmp_path, "evaluate", str(onnx), "--data", "data.npz")
    assert from_run.returncode == 0, from_run.stderr
    assert from_file.returncode == 0, from_file.stderr
    assert from_run.stderr.splitlines()[0] == exported.stderr.splitlines()[0]  # the same weights, said the same
    run_scores, file_scores = scores(from_run.stdout), scores(from_file.stdout)
    assert set(run_scores) == set(file_scores) == {"loss", "accuracy"}
    assert file_scores["loss"] == pytest.approx(run_scores["loss"], abs=1e-4)
    assert file_scores["accuracy"] == pytest.approx(run_scores["accuracy"], abs=1e-6)
