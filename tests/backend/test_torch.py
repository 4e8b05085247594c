"""The same spec on Keras' torch backend (issue 21, part 1).

As for JAX (tests/backend/test_jax.py), each backend runs in its own process
(tests/support/backend_probe.py): every spec builds on torch with TensorFlow's
parameter count and, with TensorFlow's weights copied in, TensorFlow's
outputs to 1e-5; a `.keras` file saved on TensorFlow loads on torch, and one
trained and saved on torch loads on TensorFlow and on JAX. What the torch
backend cannot do is a one-line error naming it and the way around it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main
from tests.support import forked_cli
from tests.support.backend_probe import compare, made_once, probe

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["lightning_mlp", "custom_layers", "declared", "multi_output", "siamese"]
LARGE = ["mobilenet_v2", "resnet50", "transformer", "unet"]

pytest.importorskip("torch", reason="the torch backend is an optional extra: pip install 'netdsl[torch]'")


def _netdsl(*args: str, cwd: Path | None = None, fresh: bool = False) -> subprocess.CompletedProcess:
    """`netdsl ARGS` in its own process: forked from one that imported Keras on the command's backend
    (tests/support/forked_cli.py), or, `fresh`, a new interpreter that picks the backend itself."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    env.pop("KERAS_BACKEND", None)
    if not fresh:
        return forked_cli.run(list(args), cwd or Path.cwd(), env, timeout=600)
    return subprocess.run(
        [sys.executable, "-m", "netdsl.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_the_probed_specs_are_every_spec() -> None:
    assert set(SMALL) | set(LARGE) == {p.stem for p in (ROOT / "specs").glob("*.net")}


def test_tensorflow_models_equal_on_torch(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    made_once(tmp_path_factory, "tensorflow", SMALL, into=tmp_path)  # test_jax.py checks the same models
    probe("check", tmp_path, "torch", SMALL)  # rebuilt with TensorFlow's weights, and TensorFlow's files loaded
    models = compare(tmp_path)
    assert {
        "lightning_mlp",
        "linear_mlp",
        "multiply",
        "activations",
        "residual_net",
        "attention_example",
        "declared_mlp",
        "declared_attention",
        "detector",
        "siamese",
    } == set(models)
    assert models["lightning_mlp"] == 101_770 and models["detector"] == 323_630


@pytest.mark.slow
def test_models_trained_on_torch_load_on_tensorflow_and_jax(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    specs = ["lightning_mlp", "declared"]
    on_jax = tmp_path / "jax"
    probe("make", tmp_path, "torch", specs)  # trained for one epoch on torch, optimizer state saved
    shutil.copytree(tmp_path, on_jax)
    probe("check", tmp_path, "tensorflow", specs)
    probe("check", on_jax, "jax", specs)
    assert (
        compare(tmp_path)
        == compare(on_jax)
        == {"lightning_mlp": 101_770, "declared_mlp": 7_617, "declared_attention": 819}
    )


@pytest.mark.slow
def test_large_specs_equal_on_torch(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    made_once(tmp_path_factory, "tensorflow", LARGE, into=tmp_path)  # test_jax.py checks the same models
    probe("check", tmp_path, "torch", LARGE)
    assert compare(tmp_path)["resnet50"] == 25_636_712


# ------------------------------------------------------------------ the command line


def test_summary_on_torch(tmp_path: Path) -> None:
    result = _netdsl("summary", str(ROOT / "specs" / "custom_layers.net"), "--json", "--backend", "torch", fresh=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    summary = json.loads(result.stdout)
    assert {name: model["params"] for name, model in summary.items()} == {
        "linear_mlp": 54_912,
        "multiply": 273,
        "activations": 2_305,
        "residual_net": 78_666,
        "attention_example": 6_177,
    }


@pytest.mark.slow
def test_train_evaluate_predict_on_torch(tmp_path: Path) -> None:
    """A run trained on torch; its model evaluated and predicted on torch, and on TensorFlow here, alike."""
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "d.npz", image=rng.random((80, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, 80))
    spec = str(ROOT / "specs" / "lightning_mlp.net")
    result = _netdsl(
        "train",
        spec,
        "--data",
        "d.npz",
        "--backend",
        "torch",
        "--epochs",
        "2",
        "--seed",
        "1",
        "-o",
        "runs",
        "--progress",
        "none",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    run = tmp_path / "runs" / "lightning_mlp-1"
    report = json.loads((run / "report.json").read_text())
    assert report["status"] == "finished" and report["epochs_run"] == 2
    assert json.loads((run / "config.json").read_text())["backend"] == "torch"
    result = _netdsl("evaluate", str(run), "--data", "d.npz", "--json", "--backend", "torch", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    on_torch = json.loads(result.stdout)
    result = _netdsl("predict", str(run), "--data", "d.npz", "-o", "p.npz", "--backend", "torch", cwd=tmp_path)
    assert result.returncode == 0, result.stderr

    import keras

    model = keras.saving.load_model(run / "model.keras", safe_mode=True)
    data = np.load(tmp_path / "d.npz")
    on_tensorflow = model.evaluate(data["image"], data["logits"], return_dict=True, verbose=0)
    assert on_torch.keys() == on_tensorflow.keys() == {"loss", "sparse_categorical_accuracy"}
    for key, value in on_tensorflow.items():
        assert abs(on_torch[key] - value) <= 1e-5, key
    np.testing.assert_allclose(
        np.load(tmp_path / "p.npz")["logits"], model.predict(data["image"], verbose=0), rtol=1e-5, atol=1e-5
    )


# ------------------------------------------------------------------ what torch cannot do: one line each


def test_steps_per_execution_on_torch_is_one_line(tmp_path: Path) -> None:
    text = (ROOT / "specs" / "lightning_mlp.net").read_text()
    text = text.replace("epochs = 1", "epochs = 1\n    steps_per_execution = 4")
    (tmp_path / "mlp.net").write_text(text)
    result = _netdsl("build", "mlp.net", "--backend", "torch", "-o", "out", cwd=tmp_path)
    assert result.returncode == 1
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("model lightning_mlp"))
    import keras

    assert result.stderr.splitlines()[0] == (
        f"mlp.net:{line}:1: error: 'lightning_mlp' cannot train on the torch backend: steps_per_execution = 4: "
        f"Keras {keras.__version__} on the torch backend runs one step per execution; set "
        f"steps_per_execution = 1, or train with --backend tensorflow or jax"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--devices", "2"],
        ["--num-processes", "2", "--process-id", "0", "--coordinator", "127.0.0.1:1234"],
        ["--processes", "2"],
    ],
)
def test_several_devices_or_processes_on_torch_say_what_can(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", image=rng.random((8, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, 8))
    code = main(
        [
            "train",
            str(ROOT / "specs" / "lightning_mlp.net"),
            "--data",
            str(tmp_path / "d.npz"),
            "--backend",
            "torch",
            *flags,
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "netdsl train: error: Keras' torch backend trains on one device of one process: train with --backend jax for several "
        "devices or processes, or in PyTorch Lightning (netdsl.lightning.SpecModule with strategy='ddp'; "
        "docs/lightning.md)\n"
    )
    assert not (tmp_path / "runs").exists()
