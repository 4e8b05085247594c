"""Tests for netdsl's seed custom layers and activations (netdsl.custom)."""

import keras
import numpy as np
import pytest

import netdsl.custom  # noqa: F401  (registers everything with Keras)
from netdsl.custom.activations import (
    ACTIVATIONS,
    sigmoid_tanh,
    sine,
    smooth_relu,
    square,
)
from netdsl.custom.layers import (
    LAYERS,
    Attention,
    LayerScale,
    Linear,
    Residual,
    Scale,
    ScaledSigmoid,
)

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _as_list(value):
    """Tensors (or shapes) in a list; one tensor or one shape tuple alone."""
    return value if isinstance(value, list) else [value]


def run_layer_test(
    cls,
    init_kwargs,
    input_data,
    expected_output_shape,
    expected_trainable,
    expected_non_trainable,
    tmp_path,
):
    """A small `run_layer_test`: shapes, weight counts, config, save/load."""
    layer = cls(**init_kwargs)
    output = layer(input_data)
    for out, shape in zip(_as_list(output), _as_list(expected_output_shape)):
        assert tuple(out.shape) == shape
    assert len(layer.trainable_weights) == expected_trainable
    assert len(layer.non_trainable_weights) == expected_non_trainable

    config = layer.get_config()
    assert cls.from_config(config).get_config() == config

    inputs = [keras.Input(x.shape[1:], dtype=x.dtype) for x in _as_list(input_data)]
    model_inputs = inputs if isinstance(input_data, list) else inputs[0]
    model = keras.Model(model_inputs, cls(**init_kwargs)(model_inputs))
    path = tmp_path / f"{cls.__name__}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    for expected, actual in zip(_as_list(model(input_data)), _as_list(loaded(input_data))):
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    return layer


# -- activations -------------------------------------------------------------


def test_activation_values():
    x = np.linspace(-3, 3, 13).astype("float32")
    np.testing.assert_allclose(sine(x), np.sin(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(square(x), x * x, rtol=1e-6)
    expected = np.tanh(x) / (1 + np.exp(-x))
    np.testing.assert_allclose(sigmoid_tanh(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(smooth_relu(x), np.log1p(np.exp(x)), rtol=1e-5, atol=1e-6)
    assert set(ACTIVATIONS) == {"sine", "square", "sigmoid_tanh", "smooth_relu"}


def test_smooth_relu_does_not_overflow():
    y = np.asarray(smooth_relu(np.array([-1000.0, 1000.0], "float32")))
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, [0.0, 1000.0])


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_in_dense_saves_and_loads(name, tmp_path):
    inputs = keras.Input((3,))
    outputs = keras.layers.Dense(4, activation=ACTIVATIONS[name])(inputs)
    model = keras.Model(inputs, outputs)
    path = tmp_path / "act.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert loaded.layers[-1].activation is ACTIVATIONS[name]
    x = _rand(2, 3)
    np.testing.assert_allclose(loaded(x), model(x), rtol=1e-6)


# -- linear, scale, scaled_sigmoid -------------------------------------------


def test_linear(tmp_path):
    layer = run_layer_test(Linear, {"units": 5}, _rand(2, 3), (2, 5), 1, 0, tmp_path)
    x = _rand(2, 3)
    np.testing.assert_allclose(layer(x), x @ layer.kernel.numpy(), rtol=1e-5, atol=1e-6)
    assert layer.count_params() == 15


def test_scale_is_a_constant_without_weights_by_default(tmp_path):
    layer = run_layer_test(Scale, {"multiplier": 3.0}, _rand(2, 4), (2, 4), 0, 0, tmp_path)
    x = _rand(2, 4)
    np.testing.assert_allclose(layer(x), 3.0 * x, rtol=1e-6)


def test_scale_matches_the_tutorials_custom_multiply_layer():
    """The Keras custom-layer tutorial's CustomMultiplyLayer holds no weight: 5 parameters here."""

    class CustomMultiplyLayer(keras.layers.Layer):
        def __init__(self, multiplier=2.0, **kwargs):
            super().__init__(**kwargs)
            self.multiplier = multiplier

        def call(self, inputs):
            return inputs * self.multiplier

    import netdsl

    spec = "model tutorial {\n  input x: (4,)\n  output y = x -> dense(1) -> scale(multiplier=3.0)\n}\n"
    ours = netdsl.build(netdsl.parse(spec, filename="tutorial.net"))
    inputs = keras.Input((4,))
    dense = keras.layers.Dense(1)
    theirs = keras.Model(inputs, CustomMultiplyLayer(multiplier=3.0)(dense(inputs)))
    assert ours.count_params() == theirs.count_params() == 5
    dense.set_weights([w.numpy() for w in ours.get_layer("y.dense").weights])
    x = _rand(3, 4)
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6)


def test_scale_trainable(tmp_path):
    run_layer_test(Scale, {"multiplier": 0.5, "trainable": True}, _rand(2, 4), (2, 4), 1, 0, tmp_path)


def test_scaled_sigmoid(tmp_path):
    layer = run_layer_test(ScaledSigmoid, {"scale": 2.5}, _rand(2, 4), (2, 4), 0, 0, tmp_path)
    x = _rand(2, 4)
    np.testing.assert_allclose(layer(x), 2.5 / (1 + np.exp(-x)), rtol=1e-5)


def test_layer_scale_is_keras_applications_layer_scale(tmp_path):
    """ConvNeXt's `LayerScale` (keras.applications): one weight `gamma` of shape (projection_dim,), `x * gamma`,
    the same config; saved and reloaded with safe_mode."""
    from keras.src.applications.convnext import LayerScale as KerasLayerScale

    layer = run_layer_test(
        LayerScale, {"init_values": 1e-6, "projection_dim": 4}, _rand(2, 3, 3, 4), (2, 3, 3, 4), 1, 0, tmp_path
    )
    theirs = KerasLayerScale(1e-6, 4)
    x = _rand(2, 3, 3, 4)
    theirs(x)
    np.testing.assert_allclose(layer.get_weights()[0], theirs.get_weights()[0])  # both start at init_values
    gamma = _rand(4)
    layer.set_weights([gamma])
    theirs.set_weights([gamma])
    np.testing.assert_allclose(layer(x), theirs(x), rtol=1e-6)
    np.testing.assert_allclose(layer(x), x * gamma, rtol=1e-6)
    assert layer.weights[0].path.endswith("/gamma") and layer.count_params() == theirs.count_params() == 4
    mine = {k: v for k, v in layer.get_config().items() if k not in ("name", "dtype")}
    assert mine == {k: v for k, v in theirs.get_config().items() if k not in ("name", "dtype")}


@pytest.mark.parametrize(
    "cls, kwargs, message",
    [
        (Linear, {"units": 0}, "Expected `units` to be a positive integer"),
        (Scale, {"multiplier": "2"}, "Expected `multiplier` to be a number"),
        (Scale, {"trainable": 1}, "Expected `trainable` to be a boolean"),
        (ScaledSigmoid, {"scale": None}, "Expected `scale` to be a number"),
        (LayerScale, {"init_values": "1e-6", "projection_dim": 4}, "Expected `init_values` to be a number"),
        (LayerScale, {"init_values": 1e-6, "projection_dim": 0}, "Expected `projection_dim` to be a positive integer"),
        (Attention, {"d_model": 6, "heads": 4}, "Expected d_model divisible by heads, received: d_model=6, heads=4"),
        (Attention, {"d_model": 4, "dropout": 1.5}, "Expected `dropout`"),
        (Residual, {"filters": -1}, "Expected `filters` to be a positive"),
        (Residual, {"filters": 4, "stride": 0}, "Expected `stride`"),
    ],
)
def test_invalid_arguments(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


# -- attention -----------------------------------------------------------------


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_attention_self(tmp_path):
    run_layer_test(Attention, {"d_model": 8, "heads": 2}, _rand(2, 5, 4), (2, 5, 8), 3, 0, tmp_path)


def test_attention_q_kv_with_bias(tmp_path):
    run_layer_test(
        Attention, {"d_model": 4, "use_bias": True}, [_rand(2, 3, 4), _rand(2, 5, 6)], (2, 3, 4), 6, 0, tmp_path
    )


def test_attention_q_k_v_return_weights(tmp_path):
    layer = run_layer_test(
        Attention,
        {"d_model": 6, "heads": 3, "return_weights": True},
        [_rand(2, 3, 4), _rand(2, 5, 6), _rand(2, 5, 2)],
        [(2, 3, 6), (2, 3, 3, 5)],
        3,
        0,
        tmp_path,
    )
    assert [w.shape for w in layer.get_weights()] == [(4, 6), (6, 6), (2, 6)]


def test_attention_mask_input(tmp_path):
    mask = (RNG.random((2, 3, 5)) > 0.3).astype("float32")
    mask[:, :, 0] = 1.0  # every query attends somewhere
    run_layer_test(
        Attention,
        {"d_model": 4},
        [_rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 4), mask],
        (2, 3, 4),
        3,
        0,
        tmp_path,
    )


def test_attention_matches_the_formula_with_one_head():
    q, k, v = _rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 4)
    layer = Attention(4)
    layer([q, k, v])
    wq, wk, wv = _rand(4, 4), _rand(4, 4), _rand(4, 4)
    layer.wq.assign(wq)
    layer.wk.assign(wk)
    layer.wv.assign(wv)
    scores = (q @ wq) @ np.transpose(k @ wk, (0, 2, 1)) / np.sqrt(4)
    expected = _softmax(scores) @ (v @ wv)
    np.testing.assert_allclose(layer([q, k, v]), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_fused_and_manual_paths_agree(causal):
    q, k = _rand(2, 4, 4), _rand(2, 4, 4)
    mask = np.tril(np.ones((4, 4), bool))[::-1][None].repeat(2, axis=0)
    mask[:, :, 0] = True
    fused = Attention(8, heads=2, causal=causal)
    manual = Attention(8, heads=2, causal=causal, return_weights=True)
    fused([q, k, k, mask])
    manual([q, k, k, mask])
    manual.set_weights(fused.get_weights())
    output, weights = manual([q, k, k, mask])
    np.testing.assert_allclose(output, fused([q, k, k, mask]), rtol=1e-5, atol=1e-5)
    weights = np.asarray(weights)
    allowed = mask[:, None] & (np.tril(np.ones((4, 4), bool)) | (not causal))
    assert np.all(weights[~np.broadcast_to(allowed, weights.shape)] < 1e-6)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)


def test_attention_dropout_only_in_training():
    x = _rand(2, 4, 4)
    layer = Attention(4, dropout=0.5)
    inference = np.asarray(layer(x))
    np.testing.assert_allclose(layer(x, training=False), inference)
    assert not np.allclose(layer(x, training=True), inference)
    assert len(layer.weights) == 3  # the dropout seed is not a weight


def test_attention_symbolic_shapes():
    q = keras.Input((None, 4))
    kv = keras.Input((7, 6))
    output, weights = Attention(4, heads=2, return_weights=True)([q, kv])
    assert output.shape == (None, None, 4)
    assert weights.shape == (None, 2, None, 7)


def test_attention_rejects_five_inputs():
    x = _rand(1, 2, 4)
    with pytest.raises(ValueError, match="Expected `attention` inputs"):
        Attention(4)([x, x, x, x, x])


# -- residual ------------------------------------------------------------------


def _reference_block(input_shape, filters, kernel_size, stride, project):
    """The hand-written Keras functional block Residual should equal."""
    inputs = keras.Input(input_shape)
    x = keras.layers.Conv2D(filters, kernel_size, strides=stride, padding="same", use_bias=False)(inputs)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    x = keras.layers.Conv2D(filters, kernel_size, padding="same", use_bias=False)(x)
    x = keras.layers.BatchNormalization()(x)
    skip = inputs
    if project:
        skip = keras.layers.Conv2D(filters, 1, strides=stride, use_bias=False)(inputs)
        skip = keras.layers.BatchNormalization()(skip)
    outputs = keras.layers.ReLU()(keras.layers.Add()([x, skip]))
    return keras.Model(inputs, outputs)


def test_residual_identity_skip(tmp_path):
    layer = run_layer_test(Residual, {"filters": 4}, _rand(2, 6, 6, 4), (2, 6, 6, 4), 6, 4, tmp_path)
    assert layer.proj_conv is None
    reference = _reference_block((6, 6, 4), 4, 3, 1, project=False)
    assert layer.count_params() == reference.count_params()


@pytest.mark.parametrize("channels, stride", [(3, 1), (4, 2), (3, 2)])
def test_residual_projected_skip(channels, stride, tmp_path):
    size = 6 // stride
    layer = run_layer_test(
        Residual,
        {"filters": 4, "kernel_size": 3, "stride": stride},
        _rand(2, 6, 6, channels),
        (2, size, size, 4),
        9,
        6,
        tmp_path,
    )
    assert layer.proj_conv is not None
    reference = _reference_block((6, 6, channels), 4, 3, stride, project=True)
    assert layer.count_params() == reference.count_params()


def test_residual_equals_reference_block():
    x = _rand(2, 5, 5, 3)
    layer = Residual(4, kernel_size=3, stride=2)
    layer(x)
    reference = _reference_block((5, 5, 3), 4, 3, 2, project=True)
    # Reference layer order: conv1, bn1, conv2, conv_proj, bn2, bn_proj.
    mine = [layer.conv1, layer.bn1, layer.conv2, layer.proj_conv, layer.bn2, layer.proj_bn]
    theirs = [layer for layer in reference.layers if layer.weights]
    for source, target in zip(mine, theirs):
        target.set_weights(source.get_weights())
    np.testing.assert_allclose(reference(x), layer(x), rtol=1e-5, atol=1e-5)


def test_residual_symbolic_shape():
    outputs = Residual(8, stride=2)(keras.Input((None, 7, 3)))
    assert outputs.shape == (None, None, 4, 8)


def test_layers_table():
    assert LAYERS == {
        "linear": Linear,
        "scale": Scale,
        "scaled_sigmoid": ScaledSigmoid,
        "layer_scale": LayerScale,
        "attention": Attention,
        "residual": Residual,
    }
