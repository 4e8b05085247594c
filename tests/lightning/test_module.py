"""netdsl.lightning.SpecModule inside PyTorch Lightning (issue 21, parts 2-4).

Keras picks its backend once per process, and this test process runs on
TensorFlow, so everything on torch runs in subprocesses (tests/support/lightning_probe.py):
one process checks the module's steps, optimizer, schedule, clipping, errors and
checkpoints, and writes what it found; the slow tests train with
`Trainer(accelerator="cpu", devices=2, strategy="ddp")` in two real processes
(gloo on loopback), and kill one of them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from netdsl.training.scale.launch import reserved_port

pytest.importorskip("torch", reason="netdsl.lightning needs the extra: pip install 'netdsl[lightning]'")
pytest.importorskip("lightning", reason="netdsl.lightning needs the extra: pip install 'netdsl[lightning]'")

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "tests" / "support" / "lightning_probe.py"
GUIDE = ROOT / "docs" / "lightning.md"


def _env(port: int) -> dict[str, str]:
    """The probes' environment; `port` is held by the caller (launch.reserved_port) until they end."""
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        PYTHONWARNINGS="ignore",
        KERAS_BACKEND="torch",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        GLOO_SOCKET_IFNAME="lo",
    )
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "dsl"), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


@pytest.fixture
def port() -> Iterator[int]:
    with reserved_port() as number:
        yield number


def _run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """A probe in its own session; whatever it started is killed when it ends or times out."""
    with reserved_port() as port:
        process = subprocess.Popen(
            [sys.executable, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(port),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            out, _ = process.communicate(timeout=timeout)
        finally:
            _kill_group(process)
    return subprocess.CompletedProcess(args, process.returncode, out, "")


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("lightning")
    result = _run([str(PROBE), "checks", str(tmp / "found.json"), str(tmp)], cwd=tmp)
    assert result.returncode == 0, result.stdout[-3000:]
    return json.loads((tmp / "found.json").read_text())


def test_the_spec_is_the_tutorials_module(found: dict) -> None:
    assert found["params"] == [101_770, 101_770]  # SpecModule's parameters(), the hand-written LitModel's
    assert found["names"] == [["image"], ["logits"]]
    assert found["forward_difference"] <= 1e-5  # the tutorial's forward, with the spec's weights copied in
    assert found["loss_difference"] <= 1e-5  # training_step: F.cross_entropy, as the tutorial's


def test_adam_maps_onto_torch_adam(found: dict) -> None:
    adam = found["adam"]
    assert adam["class"] == "Adam"
    assert adam["lr"] == pytest.approx(1e-3) and adam["betas"] == [0.9, 0.999] and adam["eps"] == 1e-7
    assert adam["weight_decay"] == 0 and adam["amsgrad"] is False


def test_metrics_are_resolved_as_keras_compile_resolves_them(found: dict) -> None:
    """multi_output.net's `metrics = {probs: [accuracy], box: [mae]}`: `accuracy` is sparse categorical
    accuracy by the shapes (it crashed as Keras' exact-match Accuracy); the values are Keras' own."""
    lightning, keras = found["as_keras"]["lightning"], found["as_keras"]["keras"]
    assert sorted(lightning) == ["val_box_loss", "val_box_mae", "val_loss", "val_probs_accuracy", "val_probs_loss"]
    assert {name[len("val_") :]: value for name, value in lightning.items()} == pytest.approx(keras, rel=1e-5)


def test_two_outputs_from_dict_batches(found: dict) -> None:
    heads = found["two_heads"]
    computed, by_hand = heads["loss"]  # cross-entropy + 3 x mse + the l2 regularizer, computed by hand
    assert computed == pytest.approx(by_hand, rel=1e-6)
    assert heads["logged"] == [
        "train_label_loss",
        "train_label_sparse_categorical_accuracy",
        "train_loss",
        "train_loss_step",
        "train_size_loss",
        "train_size_mae",
        "val_label_loss",
        "val_label_sparse_categorical_accuracy",
        "val_loss",
        "val_size_loss",
        "val_size_mae",
    ]
    assert heads["tested"] == [
        "test_label_loss",
        "test_label_sparse_categorical_accuracy",
        "test_loss",
        "test_size_loss",
        "test_size_mae",
    ]


def test_schedule_override_and_clipping_map_onto_torch(found: dict) -> None:
    heads = found["two_heads"]
    assert heads["optimizer"]["class"] == "SGD" and heads["optimizer"]["momentum"] == 0.5  # momentum=0.5 overrides
    assert heads["rates"] == pytest.approx(heads["keras_rates"], rel=1e-6)  # each step's rate: Keras' schedule
    assert heads["rates"][0] > heads["rates"][2]
    assert heads["largest_norm"] <= 0.5 + 1e-5  # global_clipnorm = 0.5, after the clipping


def test_a_checkpoint_resumes_the_same_curve(found: dict) -> None:
    resumed = found["resume"]
    assert len(resumed["curve"]) == 3
    assert resumed["resumed_curve"] == pytest.approx(resumed["curve"][1:], rel=1e-6, abs=1e-7)
    assert resumed["difference"] <= 1e-6
    loaded = resumed["loaded_hparams"]
    assert {k: v for k, v in loaded.items() if k != "recorded"} == {
        "spec": str(ROOT / "specs" / "lightning_mlp.net"),
        "model": "lightning_mlp",
        "defines": {},
        "include": [],
        "channels_first": False,
    }
    assert loaded["recorded"]["texts"] == {loaded["spec"]: (ROOT / "specs" / "lightning_mlp.net").read_text()}


def test_what_cannot_be_mapped_is_one_line(found: dict) -> None:
    said = found["errors"]
    assert said["lion"] == (
        "the optimizer Lion has no torch.optim equivalent: use one of adadelta, adagrad, adam, "
        "adamax, adamw, nadam, rmsprop, sgd in the spec, or override configure_optimizers"
    )
    assert said["override"].startswith("Adam has no argument 'momentum': its arguments are amsgrad, beta_1, ")
    assert said["batch"] == (
        "a dict batch is missing 'image', 'logits': the spec's names are image, logits; received keys 'pixels'"
    )
    assert all("\n" not in line for line in said.values())


def test_the_guide_runs(tmp_path: Path) -> None:
    """docs/lightning.md's tutorial, as written, from a folder holding the repository's specs/ (where its
    spec path points): Lightning writes its checkpoints/ into the current folder, never the repository."""
    code = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)[0]
    (tmp_path / "tutorial.py").write_text(code, encoding="utf-8")
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    result = _run([str(tmp_path / "tutorial.py")], cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    loss = float(re.findall(r"^train_loss (\S+)$", result.stdout, re.M)[-1])
    assert 0.0 < loss < 2.6  # ten classes at random: about ln(10) = 2.30


def _torch_save(path: Path, checkpoint: str) -> None:
    """A file torch.save writes, in a process of its own (this one runs Keras on TensorFlow)."""
    code = f"import fractions, torch; torch.save({checkpoint}, {str(path)!r})"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_what_export_cannot_read_from_a_checkpoint_is_one_line(tmp_path: Path) -> None:
    """`netdsl export X.ckpt`: a file that is no checkpoint, one of a LightningModule written by hand, and one
    holding objects the weights-only loader refuses (it never unpickles them)."""
    (tmp_path / "notes.ckpt").write_text("not a checkpoint")
    _torch_save(tmp_path / "hand.ckpt", "{'state_dict': {'l.weight': torch.zeros(2)}, 'hyper_parameters': {'lr': 0.1}}")
    _torch_save(tmp_path / "odd.ckpt", "{'state_dict': {}, 'hyper_parameters': {'x': fractions.Fraction(1, 3)}}")
    said = {}
    for name in ("notes", "hand", "odd"):
        result = subprocess.run(
            [sys.executable, "-m", "netdsl.cli", "export", f"{name}.ckpt", "--format", "onnx"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
            env=_env(0),
        )
        said[name] = (result.returncode, result.stderr)
    assert said == {
        "notes": (1, "notes.ckpt: error: not a Lightning checkpoint (not a torch zip archive)\n"),
        "hand": (1, "hand.ckpt: error: not a checkpoint of netdsl.lightning.SpecModule (it records no spec)\n"),
        "odd": (
            1,
            "odd.ckpt: error: cannot read the checkpoint with torch's weights-only loader: it holds objects "
            "other than tensors and plain values\n",
        ),
    }
    assert not list(tmp_path.glob("*.onnx"))


def test_every_netdsl_name_the_guide_gives_exists() -> None:
    """docs/lightning.md names `netdsl.X` and `netdsl.lightning.X`: each one is there (read without
    importing Lightning into this process: netdsl.lightning names SpecModule lazily)."""
    import netdsl
    import netdsl.lightning

    text = GUIDE.read_text(encoding="utf-8")
    named = set(re.findall(r"\bnetdsl\.(lightning\.)?([A-Za-z_]\w*)", text))
    assert ("", "LightningError") in named and ("lightning.", "SpecModule") in named
    for inner, name in sorted(named):
        if inner:
            assert name in netdsl.lightning.__all__, f"docs/lightning.md names netdsl.lightning.{name}"
        elif name != "lightning":
            assert name in netdsl.__all__ and getattr(netdsl, name), f"docs/lightning.md names netdsl.{name}"
    assert issubclass(netdsl.LightningError, netdsl.NetdslError)


# ------------------------------------------------------------------ Lightning's DDP, two real processes


@pytest.mark.slow
@pytest.mark.processes
def test_two_processes_train_as_one(tmp_path: Path) -> None:
    one, two = tmp_path / "one.npz", tmp_path / "two.npz"
    result = _run([str(PROBE), "fit", str(one), "1", "32"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    result = _run([str(PROBE), "fit", str(two), "2", "16"], cwd=tmp_path)  # the same global batch of 32
    assert result.returncode == 0, result.stdout[-3000:]
    assert "MEMBER: 2/2" in result.stdout  # the second process, started by Lightning, joined
    alone, together = np.load(one), np.load(two)
    assert sorted(alone.files) == sorted(together.files) and len(alone.files) == 4
    for name in alone.files:
        np.testing.assert_allclose(together[name], alone[name], rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.slow
@pytest.mark.processes
def test_a_killed_process_ends_the_job(tmp_path: Path, port: int) -> None:
    out = tmp_path / "w.npz"
    killed = Path(f"{out}.killed")
    process = subprocess.Popen(
        [sys.executable, str(PROBE), "fit", str(out), "2", "16", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(port),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while not killed.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert killed.exists(), "process 1 never reached step 3"
        died = time.monotonic()
        process.wait(timeout=60)  # Lightning's launcher checks its processes every 5 s
        ended_after = time.monotonic() - died
    finally:
        _kill_group(process)
    assert process.returncode != 0
    assert ended_after < 60
    assert not out.exists()  # the job did not go on to finish


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the probe found running a CNN on torch directly and models it refuses (one process for both)."""
    tmp = tmp_path_factory.mktemp("paths")
    result = _run([str(PROBE), "paths", str(tmp / "found.json"), str(tmp)], cwd=tmp)
    assert result.returncode == 0, result.stdout[-3000:]
    return json.loads((tmp / "found.json").read_text())


def test_a_cnn_runs_on_torch_directly_as_keras_computes_it(paths: dict) -> None:
    """The CNN's layers (rescaling, convolutions with Keras' "same" padding of odd and even kernels and
    strides, a residual add, max and average pooling, flatten, global pooling, dense (one with an L2 kernel
    regularizer, in the loss), dropout, softmax and tanh) run by torch with images channels first (torch_path.py, issue 28's speed): the outputs and
    gradients Keras computes, for batches in either layout, and validation values equal to `evaluate`'s
    after the first batch (when metrics are computed as batch means)."""
    found = paths
    for layout in ("channels_first", "channels_last"):
        assert found[layout]["on_torch"] is True, layout
        assert found[layout]["parameters"] == 12, layout  # every kernel and bias has its gradient
        assert found[layout]["output_difference"] <= 1e-5, layout
        assert found[layout]["gradient_difference"] <= 1e-4, layout  # relative to the largest
    lightning, keras = found["validated"]["lightning"], found["validated"]["keras"]
    assert sorted(lightning) == [
        "val_loss",
        "val_probs_accuracy",
        "val_probs_loss",
        "val_probs_sparse_categorical_crossentropy",
        "val_size_loss",
        "val_size_mae",
    ]
    assert {name[len("val_") :]: value for name, value in lightning.items()} == pytest.approx(keras, rel=1e-5)


@pytest.mark.parametrize("model", ["batch_norm", "average_same"])
def test_a_model_the_torch_path_refuses_runs_through_keras(paths: dict, model: str) -> None:
    """A layer torch_path.py does not run (batch_norm), or runs but not with this setting (average pooling
    with "same" padding averages over the real pixels in Keras): the module goes through Keras instead, with
    no error, and trains on channels-first batches; its outputs and validation values are Keras' own."""
    found = paths["fallback"][model]
    assert found["on_torch"] is False
    assert np.isfinite(found["train_loss"])
    assert found["output_difference"] <= 1e-6  # the same Keras call, the batch moved to channels last
    lightning, keras = found["validated"]["lightning"], found["validated"]["keras"]
    assert sorted(lightning) == ["val_accuracy", "val_loss"]
    assert {name[len("val_") :]: value for name, value in lightning.items()} == pytest.approx(keras, rel=1e-5)


_DECLARED_LOSS = """
import json, sys
import numpy as np, torch
from keras import ops
from netdsl.lightning import SpecModule

SPEC = '''
loss contrastive(y_true, y_pred, margin=1) = mean(
  (1 - y_true) * square(y_pred) + y_true * square(maximum(margin - y_pred, 0)),
)

model pairs {
  input left: (8,)
  input right: (8,)
  shared tower = dense(4, activation=tanh)
  output same = (left -> tower, right -> tower) -> subtract -> dense(1, activation=sigmoid)
  train {
    optimizer = rmsprop
    loss = contrastive(margin=2)
  }
}
'''
open("pairs.net", "w").write(SPEC)
module = SpecModule("pairs.net")
rng = np.random.default_rng(0)
x = {name: torch.tensor(rng.normal(size=(8, 8)), dtype=torch.float32) for name in ("left", "right")}
y = torch.tensor((rng.random((8, 1)) > 0.5).astype("float32"))
got = float(module.training_step({**x, "same": y}, 0).detach())
pred = module(x).detach()
# keras.io's siamese example's loss(margin=2), as written there
square_pred = ops.square(pred)
margin_square = ops.square(ops.maximum(2 - (pred), 0))
want = float(ops.mean((1 - y) * square_pred + (y) * margin_square))
json.dump({"got": got, "want": want}, open(sys.argv[1], "w"))
"""


def test_a_declared_loss_trains_in_lightning_as_keras_io_function_computes_it(tmp_path: Path) -> None:
    script = tmp_path / "declared_loss.py"
    script.write_text(_DECLARED_LOSS, encoding="utf-8")
    result = _run([str(script), str(tmp_path / "out.json")], cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    values = json.loads((tmp_path / "out.json").read_text())
    assert abs(values["got"] - values["want"]) <= 1e-6, values
