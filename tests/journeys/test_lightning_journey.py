"""Issue 28, journey (c): my Lightning code to a checkpoint I can reload and ship.

A spec with `metrics = [accuracy]` and dropout -> `SpecModule` fit with CSVLogger and
ModelCheckpoint -> the best checkpoint loaded twice in the same process -> trainer.test ->
the logged accuracy equals Keras' own on the same weights and batch -> the spec moved away ->
reloaded twice in a fresh process -> an edited spec -> `netdsl export CKPT --format onnx`
-> the ONNX file predicts what the Lightning module predicts.

Keras picks its backend once per process and this test process runs on TensorFlow, so the
torch side runs in subprocesses (tests/support/lightning_probe.py), as in tests/lightning/.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="netdsl.lightning needs the extra: pip install 'netdsl[lightning]'")
pytest.importorskip("lightning", reason="netdsl.lightning needs the extra: pip install 'netdsl[lightning]'")

from tests.lightning.test_module import PROBE, ROOT, _run  # noqa: E402  (after the skips)


def _export(checkpoint: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT / "dsl"), "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "netdsl.cli", "export", str(checkpoint), "--format", "onnx"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


@pytest.mark.slow  # trains in `netdsl` processes
def test_spec_module_fit_reload_anywhere_and_export(tmp_path: Path) -> None:
    first = _run([str(PROBE), "journey", str(tmp_path / "first.json"), str(tmp_path)], cwd=tmp_path)
    assert first.returncode == 0, first.stdout[-3000:]
    found = json.loads((tmp_path / "first.json").read_text())

    # metrics = [accuracy] resolved as Keras' compile resolves it: the same value as Keras' evaluate
    assert found["tested"] == pytest.approx(
        {"test_loss": found["keras"]["loss"], "test_accuracy": found["keras"]["accuracy"]}, abs=1e-5
    )
    assert found["loaded_difference"] == 0.0  # loaded twice after a fit in the same process
    assert found["tensorflow_imported"] is False
    assert found["nchw"] == (
        "LightningError: input 'image' takes batches of shape (N, 12, 12, 1), channels last "
        "(Keras' layout); this batch is (48, 1, 12, 12), channels first (PyTorch's): pass "
        "SpecModule(..., channels_first=True)"
    )
    assert found["channels_first_difference"] <= 1e-6
    assert found["hparams"] == ["channels_first", "defines", "include", "model", "recorded", "spec"]

    # CSVLogger: the epoch means under Keras' names, every epoch (3 epochs of 3 batches: no step rows)
    with open(tmp_path / "logs" / "digits" / "version_0" / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    trained = [row for row in rows if row.get("train_loss")]
    assert [row["epoch"] for row in trained] == ["0", "1", "2"]
    assert all(row["train_accuracy"] for row in trained)
    assert [row["epoch"] for row in rows if row.get("val_accuracy")] == ["0", "1", "2"]

    # the spec moved away: a fresh process loads the checkpoint from the text it holds
    best = Path(found["best"])
    shutil.move(tmp_path / "specs", tmp_path / "moved")
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    checkpoint = Path(shutil.copy(best, shipped / "best.ckpt"))
    again = _run([str(PROBE), "reload", str(shipped / "reload.json"), str(checkpoint)], cwd=shipped)
    assert again.returncode == 0, again.stdout[-3000:]
    reloaded = json.loads((shipped / "reload.json").read_text())
    assert reloaded["difference"] == 0.0 and reloaded["tensorflow_imported"] is False
    np.testing.assert_array_equal(np.load(shipped / "reload.npy"), np.load(tmp_path / "outputs.npy"))
    spec = str(tmp_path / "specs" / "digits.net")
    assert reloaded["root"] == spec
    assert reloaded["explicit_edited"] == (
        f"LightningError: {shipped / 'edited.net'}: the spec changed since this checkpoint (its sha256 differs "
        "from the one the checkpoint records); load without spec= to use the checkpoint's own copy"
    )
    assert reloaded["warned"] == [
        f"{spec}: the spec changed since this checkpoint; loaded with the checkpoint's own copy of it"
    ]
    assert reloaded["edited_difference"] == 0.0

    # export: the ONNX file predicts what the Lightning module predicted
    (tmp_path / "specs" / "digits.net").unlink()
    exported = _export(checkpoint, shipped)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert exported.stdout.startswith(f"wrote {shipped / 'digits.onnx'} (onnx)\n")
    import onnxruntime

    session = onnxruntime.InferenceSession(str(shipped / "digits.onnx"))
    x = np.load(tmp_path / "inputs.npy")
    predicted = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(predicted, np.load(tmp_path / "outputs.npy"), atol=1e-5)
