"""The same spec gives the same model on TensorFlow and on JAX (issue 11, part 1).

Keras picks its backend once per process, so each backend runs in its own
subprocess (tests/support/backend_probe.py): one builds every model of the specs,
trains those with a train section for one step, saves them and records
weights, inputs and outputs; the other rebuilds the specs, copies the
weights in, and loads the saved files with `safe_mode=True`. Parameter
counts must be equal, outputs equal to 1e-5.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main
from tests.support import forked_cli
from tests.support.backend_probe import compare as _compare
from tests.support.backend_probe import made_once
from tests.support.backend_probe import probe as _probe

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["lightning_mlp", "custom_layers", "declared", "multi_output", "siamese"]
LARGE = ["mobilenet_v2", "resnet50", "transformer", "unet"]
SPECS = {p.stem for p in (ROOT / "specs").glob("*.net")}

pytest.importorskip("jax", reason="the JAX backend is an optional extra: pip install 'netdsl[jax]'")


def test_the_probed_specs_are_every_spec() -> None:
    assert set(SMALL) | set(LARGE) == SPECS


def test_tensorflow_models_equal_on_jax(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    made_once(tmp_path_factory, "tensorflow", SMALL, into=tmp_path)  # test_torch.py checks the same models
    _probe("check", tmp_path, "jax", SMALL)
    models = _compare(tmp_path)
    # every model of every small spec, the custom and declared layers among them
    assert {
        "lightning_mlp",
        "linear_mlp",
        "residual_net",
        "attention_example",
        "declared_mlp",
        "declared_attention",
        "detector",
        "siamese",
    } <= set(models)
    assert models["lightning_mlp"] == 101_770


def test_models_trained_on_jax_load_on_tensorflow(tmp_path: Path) -> None:
    specs = ["lightning_mlp", "declared"]
    _probe("make", tmp_path, "jax", specs)
    _probe("check", tmp_path, "tensorflow", specs)
    assert len(_compare(tmp_path)) == 3


@pytest.mark.slow
def test_large_specs_equal_on_both_backends(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    made_once(tmp_path_factory, "tensorflow", LARGE, into=tmp_path)  # test_torch.py checks the same models
    _probe("check", tmp_path, "jax", LARGE)
    assert _compare(tmp_path)["resnet50"] == 25_636_712


# ------------------------------------------------------------------ the command line


def test_build_on_jax_from_the_command_line(tmp_path: Path) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_BACKEND", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "netdsl.cli",
            "summary",
            str(ROOT / "specs" / "siamese.net"),
            "--json",
            "--backend",
            "jax",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["siamese"]["params"] == 23_329
    assert result.stderr == ""


def test_a_second_backend_in_one_process_is_a_one_line_error(capsys: pytest.CaptureFixture) -> None:
    from netdsl.backend.runtime import current_backend, init_backend

    init_backend(None, mute_stderr=False)  # this test process runs on TensorFlow
    assert current_backend() == "tensorflow"
    code = main(["summary", str(ROOT / "specs" / "lightning_mlp.net"), "--backend", "jax"])
    assert code == 2
    assert capsys.readouterr().err == (
        "netdsl summary: error: Keras is already loaded with the 'tensorflow' backend in this process and picks "
        "its backend once, at import: run with KERAS_BACKEND=jax set before Keras is imported, or in a new "
        "process\n"
    )


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_backend_not_installed_says_how_to_install_it(backend: str) -> None:
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        f"importlib.util.find_spec = lambda name, *a: None if name == {backend!r} else real(name, *a)\n"
        "from netdsl.cli import main\n"
        f"sys.exit(main(['build', {str(ROOT / 'specs' / 'lightning_mlp.net')!r}, '--backend', {backend!r}]))\n"
    )
    env = dict(os.environ)
    env.pop("KERAS_BACKEND", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2
    assert result.stderr == (
        f"netdsl build: error: the '{backend}' backend needs the '{backend}' package, which is "
        f"not installed: install it with `pip install 'netdsl[{backend}]'`\n"
    )
    assert "keras" not in result.stdout


def test_an_unknown_backend_is_refused_by_the_parser(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["summary", str(ROOT / "specs" / "lightning_mlp.net"), "--backend", "mxnet"])
    assert exit_info.value.code == 2
    assert "netdsl summary: error: argument --backend: invalid choice: 'mxnet'" in capsys.readouterr().err


def test_evaluate_and_predict_on_jax_match_tensorflow(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import netdsl

    model = netdsl.build(str(ROOT / "specs" / "lightning_mlp.net"))
    model.save(tmp_path / "mlp.keras")
    rng = np.random.default_rng(4)
    np.savez(tmp_path / "d.npz", image=rng.random((37, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, 37))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")  # the probes' (one JAX server)
    env.pop("KERAS_BACKEND", None)
    values, predictions = {}, {}
    for backend in ("tensorflow", "jax"):
        evaluate = [
            "evaluate",
            str(tmp_path / "mlp.keras"),
            "--data",
            str(tmp_path / "d.npz"),
            "--json",
            "--backend",
            backend,
        ]
        out = tmp_path / f"{backend}.npz"
        predict = [
            "predict",
            str(tmp_path / "mlp.keras"),
            "--data",
            str(tmp_path / "d.npz"),
            "-o",
            str(out),
            "--backend",
            backend,
        ]
        for args in (evaluate, predict):
            if backend == "tensorflow":  # this test process runs on TensorFlow: the reference, in it
                capsys.readouterr()
                code = main(args)
                captured = capsys.readouterr()
                result = subprocess.CompletedProcess(args, code, captured.out, captured.err)
            else:  # a process on JAX (forked from one that imported Keras on JAX: tests/support/forked_cli.py)
                result = forked_cli.run(args, tmp_path, env, timeout=300)
            assert result.returncode == 0, result.stderr
            if args is evaluate:
                values[backend] = json.loads(result.stdout)
        predictions[backend] = np.load(out)["logits"]
    assert values["jax"].keys() == values["tensorflow"].keys() == {"loss", "sparse_categorical_accuracy"}
    for key, value in values["tensorflow"].items():
        assert abs(values["jax"][key] - value) <= 1e-5
    np.testing.assert_allclose(predictions["jax"], predictions["tensorflow"], rtol=1e-5, atol=1e-5)
    assert predictions["jax"].shape == (37, 10)


@pytest.mark.slow
def test_the_scaling_guide_backend_commands_run(tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    block = guide.split("## Choosing the backend", 1)[1].split("```", 2)[1]
    commands = [line.split() for line in block.splitlines() if line.startswith("netdsl ")]
    assert [c[1] for c in commands] == ["build", "summary"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_BACKEND", None)
    for command in commands:
        args = [str(ROOT / a) if a.startswith("specs/") else a for a in command[1:]]
        result = subprocess.run(
            [sys.executable, "-m", "netdsl.cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "build" / "lightning_mlp.keras").is_file()
    assert json.loads(result.stdout)["lightning_mlp"]["params"] == 101_770
