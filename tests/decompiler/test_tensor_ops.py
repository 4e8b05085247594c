"""Models with arithmetic and `keras.ops` on tensors decompile to tensor expressions.

Keras code that writes `x + 3.0`, `ops.sigmoid(x) * y` or `ops.mean(x, axis=1)` on
symbolic tensors holds operation nodes; each becomes a tensor expression of the spec,
and the round trip holds (parameters, weights in order, outputs within 1e-5, the
rebuilt model exports to the same text). keras.applications' MobileNetV3 (the
squeeze-and-excite gate is `ReLU(6)(x + 3) * (1 / 6)`) round-trips with that gate
recovered as a block.
"""

from __future__ import annotations

import keras
import pytest
from keras import layers, ops

import netdsl
from netdsl.decompiler.verify import verify_round_trip


@pytest.fixture(autouse=True)
def fresh_keras_names():
    """Keras numbers automatic op names (`softmax`, `softmax_15`) per process: the names a test
    expects to read back must not depend on which tests ran before it in the same process."""
    keras.backend.clear_session(free_memory=False)


def assert_round_trip(model) -> str:
    text = netdsl.decompile(model)
    result, _ = verify_round_trip(model, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text
    return text


def test_a_model_built_with_keras_ops_on_tensors_round_trips():
    x = keras.Input((4, 6), name="x")
    y = layers.Dense(6, name="d")(x)
    a = y * ops.relu6(y + 3.0) / 6.0
    b = 1.0 - ops.sigmoid(a) * y
    c = ops.softmax(ops.matmul(b, ops.transpose(y, (0, 2, 1))) / 2.0, axis=-1)
    d = ops.mean(ops.matmul(c, a), axis=1, keepdims=True) + (-a)
    model = keras.Model(x, layers.Dense(2, name="out")(d), name="with_ops")
    text = assert_round_trip(model)
    assert "relu6(d + 3.0)" in text and "d * relu6_out / 6.0" in text
    assert "transpose(d, (0, 2, 1))" in text and "mean(softmax_out @ true_divide, axis=1, keepdims=true)" in text


def test_hard_swish_written_as_arithmetic_is_recovered_as_a_block():
    """MobileNetV3's hard-swish as older Keras wrote it: x * ReLU(6)(x + 3) / 6, after each conv."""

    def hard_swish(x):
        return layers.Multiply()([x, layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)])

    image = keras.Input((16, 16, 3), name="image")
    x = image
    for filters in (8, 16, 16, 32):
        x = hard_swish(layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)))
    model = keras.Model(image, layers.Dense(4, name="out")(layers.GlobalAveragePooling2D()(x)), name="hs")
    text = assert_round_trip(model)
    assert text.count("(x + 3.0) -> relu(max_value=6.0)") == 1, text  # once, in the block
    assert "* (1 / 6)" in text and text.startswith("block ")


def test_an_operation_a_spec_cannot_write_is_named():
    x = keras.Input((4,), name="x")
    model = keras.Model(x, ops.sort(layers.Dense(4, name="d")(x), axis=1), name="sorted")
    with pytest.raises(netdsl.SpecError, match="is the Keras operation Sort .* a spec's tensor expressions"):
        netdsl.decompile(model)


def test_cumulative_sums_and_arg_maxima_of_keras_code_round_trip_as_functions():
    """`ops.cumsum`, `ops.argmax`, `ops.one_hot` of Keras code are the spec's functions of the same name."""
    x = keras.Input((4, 6), name="x")
    h = layers.Dense(6, name="d")(x)
    best = ops.one_hot(ops.argmax(h, axis=-1), 6)
    model = keras.Model(x, [ops.cumsum(h, axis=1), best * h], name="cumulative")
    text = assert_round_trip(model)
    assert "cumsum(d, axis=1)" in text and "one_hot(" in text and "argmax(d, axis=-1)" in text, text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["MobileNetV3Small", "MobileNetV3Large"])
def test_mobilenet_v3_round_trips_with_its_gate_as_a_block(name):
    keras.backend.clear_session(free_memory=False)
    model = getattr(keras.applications, name)(weights=None, input_shape=(64, 64, 3))
    text = assert_round_trip(model)
    gate = text.split("\nblock ")[0] if text.startswith("block ") else ""
    assert "(h + 3.0) -> relu(max_value=6.0)" in text and "* (1 / 6)" in text
    assert text.count("(h + 3.0) -> relu(max_value=6.0)") == 1, "the hard-sigmoid gate is written once, in a block"
    assert gate, text


def test_slices_splits_and_unstacks_of_keras_code_round_trip_as_subscripts():
    """`x[:, :8]` (Keras' GetItem), `ops.split` and `ops.unstack` become the spec's slices and
    destructured calls; names that are functions of tensors (`split`) are not taken by tensors."""
    x = keras.Input((10, 16), name="x")
    h = layers.Dense(16, name="d")(x)
    u, v = ops.split(h, 2, axis=-1)
    p, q, r = ops.split(h, [4, 12], axis=2)
    w = ops.unstack(h[:, :3], axis=1)
    gated = layers.Concatenate()([h[:, :, :8] * ops.sigmoid(h[..., 8:]), u + v, p * 2.0])
    model = keras.Model(x, [gated, h[:, ::2, -3:], h[:, 3], layers.Concatenate()([q, r]), w[0] * w[2]], name="cuts")
    text = assert_round_trip(model)
    assert "sigmoid(d[..., 8:])" in text and "d[:, :, :8]" in text and "d[:, ::2, -3:]" in text and "d[:, 3]" in text
    assert "split_out, split_out_2 = split(d, 2, axis=-1)" in text
    assert "= split(d, (4, 12), axis=2)" in text and "= unstack(d[:, :3], axis=1)" in text


def test_a_slice_of_the_batch_axis_is_named_as_one_a_spec_cannot_write():
    x = keras.Input((4,), name="x")
    model = keras.Model(x, layers.Dense(4, name="d")(x)[1:, :2], name="batch_cut")
    with pytest.raises(netdsl.SpecError, match="is the Keras operation GetItem"):
        netdsl.decompile(model)


def test_keras_ops_slice_becomes_a_slice_of_each_axis():
    x = keras.Input((10, 16), name="x")
    h = layers.Dense(16, name="d")(x)
    model = keras.Model(x, layers.Dense(2, name="out")(ops.slice(h, (0, 2, 4), (-1, 3, 8))), name="ops_slice")
    text = assert_round_trip(model)
    assert "output out = h[:, 2:5, 4:12] -> dense(2)" in text
