"""Issue 30, item 4: losses and metrics declared in a spec, held to the Keras code they stand for.

The reference is keras.io's siamese network ("Image similarity estimation using a Siamese
Network with a contrastive loss"), its `loss(margin)` written as the example writes it, and
Keras' `MeanMetricWrapper` of a metric function. The spec's model trains as the same model
compiled with the hand-written function, saves, and compiles back under `safe_mode=True`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile

import keras
import numpy as np
import pytest
from keras import ops

import netdsl
from netdsl.custom.declared_losses import DeclaredLoss, DeclaredMetric
from tests.support.keras_io_layers import loss


def gap(y_true, y_pred):
    """A metric function as Keras takes one: a value per sample."""
    return ops.mean(ops.abs(y_true - y_pred), axis=-1)


SPEC = """
loss contrastive(y_true, y_pred, margin=1) = mean(
  (1 - y_true) * square(y_pred) + y_true * square(maximum(margin - y_pred, 0)),
)
loss contrastive_per_sample(y_true, y_pred, margin=1) = mean(
  (1 - y_true) * square(y_pred) + y_true * square(maximum(margin - y_pred, 0)),
  axis=-1,
)
metric gap(y_true, y_pred) = mean(abs(y_true - y_pred), axis=-1)

# keras.io's euclidean_distance: sqrt(max(sum(square(x - y), axis=1, keepdims=True), epsilon))
layer euclidean() {
  input a, b
  output sqrt(maximum(sum(square(a - b), axis=1, keepdims=true), 1e-7))
}

model siamese {
  input left: (8,)
  input right: (8,)
  shared tower = dense(4, activation=tanh)
  distance = (left -> tower, right -> tower) -> euclidean
  output same = distance -> dense(1, activation=sigmoid)
  train {
    optimizer = rmsprop
    loss = contrastive(margin=1)
    metrics = [gap]
    batch_size = 8
  }
}
"""


def spec_model(loss_setting: str = "contrastive(margin=1)") -> keras.Model:
    text = SPEC.replace("loss = contrastive(margin=1)", f"loss = {loss_setting}")
    return netdsl.build(netdsl.parse(textwrap.dedent(text), filename="losses.net"), model="siamese")


def reference(margin: float = 1) -> keras.Model:
    """The same network written in Keras, compiled with keras.io's loss and a MeanMetricWrapper."""
    left, right = keras.Input((8,)), keras.Input((8,))
    tower = keras.layers.Dense(4, activation="tanh")
    a, b = tower(left), tower(right)
    distance = keras.layers.Lambda(
        lambda v: ops.sqrt(ops.maximum(ops.sum(ops.square(v[0] - v[1]), axis=1, keepdims=True), 1e-7))
    )([a, b])
    model = keras.Model([left, right], keras.layers.Dense(1, activation="sigmoid")(distance))
    model.compile(
        optimizer=keras.optimizers.RMSprop(), loss=loss(margin), metrics=[keras.metrics.MeanMetricWrapper(gap, "gap")]
    )
    return model


def pairs(n: int = 24, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    x = [rng.normal(size=(n, 8)).astype("float32") for _ in range(2)]
    return x, (rng.random(n) > 0.5).astype("float32")[:, None]


def test_a_declared_loss_equals_keras_io_contrastive_loss_on_random_data():
    rng = np.random.default_rng(1)
    y_true = (rng.random((64, 1)) > 0.5).astype("float32")
    y_pred = rng.random((64, 1)).astype("float32") * 1.5
    model = spec_model("contrastive(margin=1.5)")
    assert isinstance(model.loss, DeclaredLoss)
    want = float(loss(margin=1.5)(y_true, y_pred))
    np.testing.assert_allclose(float(model.loss(y_true, y_pred)), want, atol=1e-6)
    # per sample (axis=-1), then Keras' sum_over_batch_size: the same mean
    per_sample = spec_model("contrastive_per_sample(margin=1.5)").loss
    np.testing.assert_allclose(float(per_sample(y_true, y_pred)), want, atol=1e-6)
    # (batch,) targets against (batch, 1) outputs, brought to one rank as Keras does for a loss function
    np.testing.assert_allclose(float(per_sample(y_true[:, 0], y_pred)), want, atol=1e-6)


def test_fit_with_the_declared_loss_equals_fit_with_the_hand_written_function():
    ours, theirs = spec_model(), reference()
    theirs.set_weights(ours.get_weights())
    x, y = pairs()
    ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for got, want in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    scores = ours.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    wanted = theirs.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    assert sorted(scores) == ["gap", "loss"]
    for name in scores:
        np.testing.assert_allclose(scores[name], wanted[name], atol=1e-6)


def test_a_declared_metric_equals_keras_mean_metric_wrapper():
    model = spec_model()
    x, y = pairs(16)
    model.evaluate(x, y, batch_size=8, verbose=0)  # Keras builds the compiled metrics at the first step
    declared = [m for m in model.metrics[1].metrics if m.name == "gap"]
    assert len(declared) == 1 and isinstance(declared[0], DeclaredMetric)
    ours, theirs = declared[0], keras.metrics.MeanMetricWrapper(gap, name="gap")
    ours.reset_state()
    rng = np.random.default_rng(2)
    for _ in range(3):  # batches of different sizes: the mean over every sample, not over batches
        n = int(rng.integers(2, 9))
        y_true, y_pred = rng.random((n, 3)).astype("float32"), rng.random((n, 3)).astype("float32")
        ours.update_state(y_true, y_pred)
        theirs.update_state(y_true, y_pred)
    np.testing.assert_allclose(float(ours.result()), float(theirs.result()), atol=1e-6)


def test_a_saved_model_compiles_back_under_safe_mode_and_evaluates_alike(tmp_path):
    model = spec_model("contrastive(margin=2)")
    x, y = pairs(16)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "siamese.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded.loss, DeclaredLoss) and loaded.loss.values == {"margin": 2}
    want = model.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    got = loaded.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    assert sorted(got) == sorted(want) == ["gap", "loss"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-6)
    # netdsl's own evaluate of the file: the same figures
    data = tmp_path / "pairs.npz"
    np.savez(data, left=x[0], right=x[1], same=y)
    scored = netdsl.evaluate(path, data=data, batch_size=8)
    for name in want:
        np.testing.assert_allclose(scored[name], want[name], atol=1e-6)


def test_a_tampered_file_naming_a_function_outside_the_table_is_refused(tmp_path):
    model = spec_model()
    path = tmp_path / "siamese.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    body = config["compile_config"]["loss"]["config"]["body"]
    body[1] = "print"  # ["call", "mean", ...] -> ["call", "print", ...]
    members["config.json"] = json.dumps(config).encode()
    tampered = tmp_path / "tampered.keras"
    with zipfile.ZipFile(tampered, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match="print"):
        keras.saving.load_model(tampered, safe_mode=True)


def test_a_body_keras_refuses_for_the_output_is_one_line_at_the_loss_before_anything_is_built():
    text = SPEC.replace("axis=-1,\n)", "axis=3,\n)")  # contrastive_per_sample reduces an axis (batch, 1) lacks
    program = netdsl.parse(
        textwrap.dedent(text).replace("loss = contrastive(margin=1)", "loss = contrastive_per_sample")
    )
    with pytest.raises(netdsl.SpecError) as failed:
        netdsl.build(program, model="siamese")
    (diagnostic,) = failed.value.diagnostics
    assert (diagnostic.line, diagnostic.col) == (25, 12)  # `loss = contrastive_per_sample`
    assert diagnostic.message == (
        "the loss 'contrastive_per_sample' cannot be computed on the output 'same' of shape (batch, 1): "
        "axis 3 of 'mean' is out of range for a tensor of 2 axes (the batch axis and 1 more)"
    )


def test_a_loss_declared_in_a_file_imported_with_as_is_named_through_its_alias(tmp_path):
    (tmp_path / "losses.net").write_text(SPEC.split("metric gap")[0], encoding="utf-8")
    spec = tmp_path / "pairs.net"
    spec.write_text(
        'import "losses.net" as lib\n\nmodel pairs {\n  input x: (3,)\n  output y = x -> dense(1)\n'
        "  train {\n    loss = lib.contrastive(margin=2)\n  }\n}\n",
        encoding="utf-8",
    )
    model = netdsl.build(spec)
    assert isinstance(model.loss, DeclaredLoss) and model.loss.values == {"margin": 2}
    y_true, y_pred = np.array([[0.0], [1.0]], "float32"), np.array([[0.5], [0.25]], "float32")
    np.testing.assert_allclose(float(model.loss(y_true, y_pred)), float(loss(margin=2)(y_true, y_pred)), atol=1e-6)


def test_a_run_trained_with_a_declared_loss_reports_its_metric_and_evaluates_from_its_spec(tmp_path):
    spec = tmp_path / "siamese.net"
    spec.write_text(textwrap.dedent(SPEC).replace("batch_size = 8", "batch_size = 8\n    epochs = 2"), encoding="utf-8")
    x, y = pairs(40, seed=3)
    data = tmp_path / "pairs.npz"
    np.savez(data, left=x[0], right=x[1], same=y)
    run = netdsl.train(spec, data=str(data), seed=4, out=tmp_path / "runs")
    assert {"loss", "gap", "val_loss", "val_gap"} <= set(run.history)
    # netdsl evaluate RUN: the run's model compiled with its spec's declared loss and metric
    scored = netdsl.evaluate(run.dir, data=str(data), checkpoint="last")
    model = keras.saving.load_model(run.dir / "model.keras", safe_mode=True)
    assert isinstance(model.loss, DeclaredLoss)
    want = model.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    assert sorted(scored) == sorted(want) == ["gap", "loss"]
    for name in want:
        np.testing.assert_allclose(scored[name], want[name], atol=1e-6)


def test_an_exported_file_is_scored_with_the_specs_declared_loss_and_metric(tmp_path):
    pytest.importorskip("tf2onnx", reason="ONNX export needs the extra: pip install 'netdsl[onnx]'")
    spec = tmp_path / "siamese.net"
    spec.write_text(textwrap.dedent(SPEC), encoding="utf-8")
    x, y = pairs(16, seed=5)
    data = tmp_path / "pairs.npz"
    np.savez(data, left=x[0], right=x[1], same=y)
    netdsl.export(spec, format="onnx", out=tmp_path / "siamese.onnx", seed=6)
    keras.utils.set_random_seed(6)  # as export(seed=...) does right before building
    netdsl.build(spec).save(tmp_path / "siamese.keras")
    got = netdsl.evaluate(tmp_path / "siamese.onnx", data=data, spec=spec, batch_size=8)
    want = netdsl.evaluate(tmp_path / "siamese.keras", data=data, batch_size=8)
    assert list(got) == list(want) == ["loss", "gap"]
    np.testing.assert_allclose(list(got.values()), list(want.values()), rtol=1e-5)


def test_a_saved_model_compiles_back_in_a_fresh_process_that_only_imports_netdsl(tmp_path):
    model = spec_model("contrastive(margin=2)")
    path = tmp_path / "siamese.keras"
    model.save(path)
    x, y = pairs(16, seed=7)
    np.savez(tmp_path / "pairs.npz", left=x[0], right=x[1], same=y)
    want = model.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    script = (
        "import json, numpy as np, netdsl, keras\n"
        f"m = keras.saving.load_model({str(path)!r}, safe_mode=True)\n"
        f"d = np.load({str(tmp_path / 'pairs.npz')!r})\n"
        "got = m.evaluate([d['left'], d['right']], d['same'], batch_size=8, return_dict=True, verbose=0)\n"
        "print(json.dumps({'class': type(m.loss).__name__, **got}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    got = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else out.stderr[-2000:]
    assert isinstance(got, dict) and got.pop("class") == "DeclaredLoss", got
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-6)
