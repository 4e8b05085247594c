"""The example specs in `specs/` against hand-written Keras (tests/support/keras_reference.py).

For every spec: `netdsl check` is clean without importing TensorFlow. For every
model with a reference: the built model has exactly the reference's parameter
counts and layer structure, and — with the reference's weights (randomised,
batch-norm statistics included) copied over in topological order — every
intermediate activation and every output equals the reference's on a random
batch. ResNet-50 and MobileNetV2 are checked against `keras.applications`,
and the hand-written versions of both (used by bench/) against the same.
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netdsl
from tests.support import keras_reference as ref

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
SPEC_FILES = sorted(SPECS.glob("*.net")) + sorted((SPECS / "lib").glob("*.net"))


BIG = {"resnet50", "mobilenet_v2"}

# Keras' TensorFlow backend converting tensors under NumPy 2; not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning"
)


def _cases():
    for (spec, model), builder in ref.REFERENCES.items():
        marks = [pytest.mark.slow] if model in BIG else []
        yield pytest.param(spec, model, builder, id=model, marks=marks)


CASES = list(_cases())


# ====================================================================== check


def test_every_spec_has_a_reference_or_is_a_library():
    covered = {spec for spec, _ in ref.REFERENCES}
    top_level = {p.name for p in SPECS.glob("*.net")}
    assert top_level == covered
    for spec in covered:
        program = netdsl.parse_file(SPECS / spec)
        assert set(program.model_names) == {m for s, m in ref.REFERENCES if s == spec}


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: str(p.relative_to(SPECS)))
def test_spec_checks_clean(path):
    diagnostics = netdsl.check(path)
    assert [str(d) for d in diagnostics] == []


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: str(p.relative_to(SPECS)))
def test_spec_is_in_canonical_format(path):
    text = path.read_text(encoding="utf-8")
    assert netdsl.format(text=text, filename=str(path)) == text, f"run: netdsl fmt {path.relative_to(ROOT)}"


def test_check_cli_is_clean_and_does_not_import_tensorflow():
    files = [str(p) for p in SPEC_FILES]
    code = (
        "import sys, netdsl\n"
        "from netdsl.cli import main\n"
        f"rc = main(['check', *{files!r}])\n"
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'check imported Keras'\n"
        "sys.exit(rc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""


# A block may declare its output in both branches of a compile-time `if`; when
# the block is checked on its own (parameters unknown) both branches are
# checked, and that is not a duplicate output. Only an output declared twice
# on one path is.
BRANCH_OUTPUTS = """
block pick(flag) {
  input x
  if flag {
    output y = x -> relu
  } else {
    output y = x
  }
}

model m {
  input x: (4,)
  output z = x -> pick(true)
}
"""


def test_output_in_both_branches_of_an_if_is_not_a_duplicate():
    assert netdsl.check(text=BRANCH_OUTPUTS, filename="branches.net") == []
    twice = BRANCH_OUTPUTS.replace("  if flag {\n", "  output y = x\n  if flag {\n")
    duplicates = [
        d.line for d in netdsl.check(text=twice, filename="twice.net") if d.message == "'y' is already an output"
    ]
    assert duplicates == [6, 8]  # each branch repeats the output declared before the `if`


# ====================================================================== build


def to_numpy(value):
    from keras import ops

    return ops.convert_to_numpy(value)


@functools.cache
def built(spec: str, model: str):
    return netdsl.build(SPECS / spec, model=model)


@functools.cache
def reference(model: str):
    return dict(((m, b) for (_, m), b in ref.REFERENCES.items()))[model]()


def weighted_layers(model):
    return [layer for layer in model.layers if layer.weights]


def weight_shapes(layer):
    return [tuple(w.shape) for w in layer.weights]


def randomize(model, seed=0):
    """Random weights that keep activations in range: fan-in scaled kernels,
    batch-norm scales and variances in [0.5, 1.5], small biases and means."""
    rng = np.random.default_rng(seed)
    values = []
    for w in model.weights:
        shape = tuple(w.shape)
        path = w.path
        if "variance" in path or "gamma" in path:
            v = rng.uniform(0.5, 1.5, shape)
        elif len(shape) >= 2:
            depthwise = len(shape) == 4 and shape[-1] == 1
            fan_in = math.prod(shape[:2]) if depthwise else math.prod(shape[:-1])
            v = rng.normal(0.0, 1.0 / math.sqrt(fan_in), shape)
        else:
            v = rng.normal(0.0, 0.1, shape)
        values.append(v.astype("float32"))
    model.set_weights(values)


def copy_weights(source, target):
    """Copy weights layer by layer, weighted layers paired in topological order."""
    src, dst = weighted_layers(source), weighted_layers(target)
    assert [weight_shapes(x) for x in dst] == [weight_shapes(x) for x in src], (
        "weighted layers differ in order or shape"
    )
    for s, d in zip(src, dst):
        d.set_weights(s.get_weights())


def feed(arrays):
    """What a model is called with: one array for a one-input model, else a list."""
    return arrays[0] if len(arrays) == 1 else arrays


def random_inputs(model, batch=2, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for t in model.inputs:
        shape = (batch, *t.shape[1:])
        if "int" in str(t.dtype):
            out.append(rng.integers(0, 100, size=shape).astype(str(t.dtype)))
        else:
            out.append(rng.normal(size=shape).astype("float32"))
    return out


def probe(model):
    """A model returning the output of every layer called once (inputs excluded),
    in `model.layers` order."""
    import keras

    outputs, names = [], []
    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer) or len(layer._inbound_nodes) != 1:
            continue
        out = layer.output
        for o in out if isinstance(out, (list, tuple)) else [out]:
            outputs.append(o)
            names.append(layer.name)
    inputs = model.inputs[0] if len(model.inputs) == 1 else model.inputs
    return keras.Model(inputs, outputs), names


def _tolerance(array):
    return 5e-3 if array.dtype == np.float16 else 1e-4


@pytest.mark.parametrize("spec, name, builder", CASES)
def test_parameter_count_equals_reference(spec, name, builder):
    model, expected = built(spec, name), reference(name)
    assert model.count_params() == expected.count_params()
    trainable = lambda m: sum(math.prod(w.shape) for w in m.trainable_weights)  # noqa: E731
    assert trainable(model) == trainable(expected)
    if name in ref.KNOWN_PARAMS:
        assert model.count_params() == ref.KNOWN_PARAMS[name]
    assert len(model.layers) == len(expected.layers)
    assert [tuple(t.shape) for t in model.outputs] == [tuple(t.shape) for t in expected.outputs]


@pytest.mark.parametrize("spec, name, builder", CASES)
def test_outputs_equal_reference_with_copied_weights(spec, name, builder):
    model, expected = built(spec, name), reference(name)
    randomize(expected)
    copy_weights(expected, model)
    x = feed(random_inputs(expected))

    got_probe, got_names = probe(model)
    want_probe, want_names = probe(expected)
    assert len(got_names) == len(want_names)
    got, want = got_probe(x), want_probe(x)
    for g, w, gn, wn in zip(got, want, got_names, want_names):
        g, w = to_numpy(g), to_numpy(w)
        assert g.shape == w.shape, f"{gn} vs {wn}"
        scale = max(1.0, float(np.max(np.abs(w.astype("float32")))))
        np.testing.assert_allclose(
            g.astype("float32"), w.astype("float32"), rtol=0, atol=_tolerance(w) * scale, err_msg=f"{gn} vs {wn}"
        )

    outs = model(x)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    refs = expected(x)
    refs = refs if isinstance(refs, (list, tuple)) else [refs]
    for g, w in zip(outs, refs):
        g, w = to_numpy(g), to_numpy(w)
        np.testing.assert_allclose(g.astype("float32"), w.astype("float32"), rtol=0, atol=_tolerance(w))
        assert float(np.std(w.astype("float32"))) > 1e-4, "degenerate output: the comparison would prove nothing"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_handwritten_reference_equals_keras_applications(name):
    """bench/ times the hand-written builders; they must be the same networks."""
    hand = getattr(ref, f"{name}_handwritten")()
    app = reference(name)
    assert hand.count_params() == app.count_params() == ref.KNOWN_PARAMS[name]
    assert len(hand.layers) == len(app.layers)
    randomize(app, seed=3)
    copy_weights(app, hand)
    x = feed(random_inputs(app))
    np.testing.assert_allclose(to_numpy(hand(x)), to_numpy(app(x)), rtol=0, atol=1e-5)


# ================================================================ train sections


def test_lightning_mlp_trains_like_configure_optimizers():
    import keras

    model = built("lightning_mlp.net", "lightning_mlp")
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert float(model.optimizer.learning_rate) == pytest.approx(1e-3)
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)
    assert model.loss.get_config()["from_logits"] is True
    assert netdsl.fit_kwargs(model) == {"batch_size": 32, "epochs": 1}
    x = np.random.default_rng(0).normal(size=(64, 28, 28)).astype("float32")
    y = np.random.default_rng(1).integers(0, 10, size=(64,))
    history = model.fit(x, y, verbose=0, **netdsl.fit_kwargs(model))
    assert np.isfinite(history.history["loss"][0])


def test_multi_output_has_per_output_losses_weights_and_metrics():
    import keras

    model = built("multi_output.net", "detector")
    assert model.output_names == ["probs", "box"]
    losses = model.loss
    assert set(losses) == {"probs", "box"} if isinstance(losses, dict) else len(losses) == 2
    get = (lambda k, i: losses[k]) if isinstance(losses, dict) else (lambda k, i: losses[i])  # noqa: E731
    assert isinstance(get("probs", 0), keras.losses.SparseCategoricalCrossentropy)
    assert isinstance(get("box", 1), keras.losses.MeanSquaredError)
    assert netdsl.fit_kwargs(model) == {"batch_size": 32, "epochs": 20}
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 255, size=(16, 64, 64, 3)).astype("float32")
    y = {"probs": rng.integers(0, 10, size=(16,)), "box": rng.uniform(size=(16, 4)).astype("float32")}
    logs = model.fit(x, y, epochs=1, batch_size=8, verbose=0).history
    assert {"probs_loss", "box_loss", "probs_accuracy"} <= set(logs), sorted(logs)
    assert "box_mae" in logs, sorted(logs)  # named as written, as Keras names the string "mae"
    # loss_weights {probs: 1, box: 5}: the total is the weighted sum
    ev = model.evaluate(x, y, verbose=0, return_dict=True)
    assert ev["loss"] == pytest.approx(ev["probs_loss"] + 5.0 * ev["box_loss"], rel=1e-4)


def test_residual_net_uses_gradient_clipping_and_mixed_precision():
    import keras

    before = keras.config.dtype_policy().name
    model = built("custom_layers.net", "residual_net")
    assert keras.config.dtype_policy().name == before  # the global policy is restored
    optimizer = model.optimizer
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert isinstance(inner, keras.optimizers.Adam)
    assert inner.clipnorm == 1.0
    policies = {layer.dtype_policy.name for layer in weighted_layers(model)[:-1]}
    assert policies == {"mixed_float16"}
    assert model.outputs[0].dtype == "float32"
    x = np.random.default_rng(0).normal(size=(8, 32, 32, 3)).astype("float32")
    y = np.random.default_rng(1).integers(0, 10, size=(8,))
    assert np.isfinite(model.fit(x, y, epochs=1, verbose=0).history["loss"][0])


def test_siamese_tower_is_one_set_of_weights():
    model = built("siamese.net", "siamese")
    towers = [layer for layer in model.layers if len(layer._inbound_nodes) == 2]
    assert len(towers) == 1  # one layer object, called on both inputs
    x = random_inputs(model)
    same = [x[0], x[0]]
    # identical inputs: zero distance, so the output is sigmoid(bias) for any image
    out = to_numpy(model(same))
    bias = float(weighted_layers(model)[-1].get_weights()[1][0])
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-bias)), atol=1e-6)


def test_transformer_position_table_follows_the_input():
    model = built("transformer.net", "transformer")
    shapes = [weight_shapes(layer) for layer in model.layers]
    assert [(200, 64)] in shapes  # the declared position embedding: (seq_len, d_model)


# ================================================================ save and load


@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")
@pytest.mark.parametrize("spec, name, builder", [c for c in CASES if c.values[1] not in BIG])
def test_built_spec_saves_and_loads_safely(spec, name, builder, tmp_path):
    import keras

    model = netdsl.build(SPECS / spec, model=name)
    path = tmp_path / f"{name}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    x = feed(random_inputs(model))
    for a, b in zip(_as_list(model(x)), _as_list(loaded(x))):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=0, atol=1e-6)


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]
