"""The compiler: specs become Keras models equal to the same models written by hand.

What a user sees: the language reference's models build; parameter counts and
outputs (after copying weights) equal hand-written Keras; names and configs
are the same on every build; shared steps share one layer; a nested model is
one layer; bad input is a diagnostic at the spec's line and column.
"""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
from keras import layers

import netdsl
from netdsl.backend.compiler import compile_program
from tests.support.reference_examples import examples, write_example

RNG = np.random.default_rng(7)


def build(text: str, model: str | None = None) -> keras.Model:
    return netdsl.build(netdsl.parse(text, filename="spec.net"), model=model)


def build_all(text: str) -> dict[str, keras.Model]:
    return netdsl.build_all(netdsl.parse(text, filename="spec.net"))


def errors(text: str, **options) -> list[str]:
    """`line:col: message` of each diagnostic a build gives."""
    with pytest.raises(netdsl.SpecError) as info:
        netdsl.build(netdsl.parse(text, filename="spec.net"), **options)
    return [f"{d.line}:{d.col}: {d.message}" for d in info.value.diagnostics]


def randomize(model: keras.Model) -> None:
    """Random weights (positive where batch norm needs a variance)."""
    for weight in model.weights:
        value = RNG.standard_normal(weight.shape).astype("float32") * 0.3
        if "variance" in weight.path:
            value = np.abs(value) + 0.5
        weight.assign(value)


def copy_weights(source: keras.Model, target: keras.Model) -> None:
    """Layer by layer in model order; the classes must agree."""
    assert [type(a).__name__ for a in source.layers] == [type(b).__name__ for b in target.layers]
    for a, b in zip(source.layers, target.layers):
        b.set_weights(a.get_weights())


def as_list(outputs) -> list:
    return outputs if isinstance(outputs, list) else [outputs]


def assert_same_function(spec_model: keras.Model, hand: keras.Model, inputs: list) -> None:
    assert spec_model.count_params() == hand.count_params()
    randomize(hand)
    copy_weights(hand, spec_model)
    feed = inputs[0] if len(inputs) == 1 else inputs
    expected = as_list(hand.predict(feed, verbose=0))
    got = as_list(spec_model.predict(feed, verbose=0))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def reference_code(model_name: str) -> str:
    for _, _lang, code in examples():
        if f"model {model_name} " in code:
            return code
    raise LookupError(model_name)


# ====================================================================== the reference's models


MODEL_EXAMPLES = [(i, code) for i, lang, code in examples() if lang != "text" and "\nmodel " in "\n" + code]


def test_the_reference_declares_models():
    assert len(MODEL_EXAMPLES) >= 4


@pytest.mark.parametrize("code", [c for _, c in MODEL_EXAMPLES], ids=[i for i, _ in MODEL_EXAMPLES])
def test_every_reference_model_builds(code, tmp_path):
    spec = write_example(tmp_path, code)
    models = netdsl.build_all(spec)
    assert list(models) == netdsl.parse_file(spec).model_names
    for name, model in models.items():
        assert isinstance(model, keras.Model) and model.name == name
        assert model.count_params() > 0


def test_mnist_mlp_equals_hand_written_keras():
    model = build(reference_code("mnist_mlp"))
    image = keras.Input((28, 28, 1))
    h = layers.Dense(128, activation="relu")(layers.Flatten()(image))
    probs = layers.Activation("softmax")(layers.Dense(10)(h))
    hand = keras.Model(image, probs)
    assert model.count_params() == 101_770  # the Lightning MLP: 784 -> 128 -> 10
    assert model.output_names == ["probs"]
    assert_same_function(model, hand, [rand(3, 28, 28, 1)])


def test_flows_example_equals_hand_written_keras():
    model = build(reference_code("flows"))
    x = keras.Input((32, 32, 32))
    y = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(32, 3, padding="same")(x)))
    w = x
    w = layers.Activation("relu")(layers.Conv2D(64, 3, padding="same")(w))
    v = layers.Dense(64)(x)
    r = layers.Add()([y, x])
    w = layers.Activation("relu")(layers.Conv2D(64, 3, padding="same")(w))
    v = layers.Dense(64)(v)
    z = layers.Concatenate(axis=-1)([y, x])
    s = layers.Add()([y, x])
    r = layers.Activation("relu")(r)
    v = layers.Dense(64)(v)
    hand = keras.Model(x, [z, s, r, w, v])
    assert model.count_params() == 75_232
    assert model.output_names == ["z", "s", "r", "w", "v"]
    assert [tuple(t.shape) for t in model.outputs] == [
        (None, 32, 32, 64),
        (None, 32, 32, 32),
        (None, 32, 32, 32),
        (None, 32, 32, 64),
        (None, 32, 32, 64),
    ]
    assert_same_function(model, hand, [rand(2, 32, 32, 32)])


def _bottleneck(x, filters, stride=1, project=False):
    y = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(filters, 1, strides=stride)(x)))
    y = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same")(y)))
    y = layers.Conv2D(4 * filters, 1)(y)
    s = layers.Conv2D(4 * filters, 1, strides=stride)(x) if project else x
    y = layers.BatchNormalization()(y)
    if project:
        s = layers.BatchNormalization()(s)
    return layers.Activation("relu")(layers.Add()([y, s]))


def test_resnet_stage_example_equals_hand_written_keras():
    model = build(reference_code("resnet_stage"))
    x = keras.Input((56, 56, 64))
    y = _bottleneck(_bottleneck(_bottleneck(x, 64, project=True), 64), 64)
    hand = keras.Model(x, y)
    assert model.count_params() == hand.count_params() == 220_032
    assert_same_function(model, hand, [rand(1, 56, 56, 64)])


def test_block_layers_are_named_by_instance():
    names = [layer.name for layer in build(reference_code("resnet_stage")).layers]
    assert names[:4] == ["x", "y.bottleneck.y.conv2d", "y.bottleneck.y.batch_norm", "y.bottleneck.y.relu"]
    assert "y.bottleneck_2.out" in names and "y.bottleneck_3.out" in names


# ====================================================================== flow forms


SIAMESE = """
model siamese {
  input a: (8,)
  input b: (8,)
  shared enc = dense(4, activation=tanh)
  ea = a -> enc
  eb = b -> enc
  output d = (ea, eb) -> subtract -> dense(1)
}
"""


def test_siamese_shares_one_layer_and_equals_hand_written_keras():
    model = build(SIAMESE)
    a, b = keras.Input((8,)), keras.Input((8,))
    enc = layers.Dense(4, activation="tanh")
    hand = keras.Model([a, b], layers.Dense(1)(layers.Subtract()([enc(a), enc(b)])))
    assert model.count_params() == 4 * 8 + 4 + 4 + 1
    assert [layer.name for layer in model.layers] == ["a", "b", "enc", "d.subtract", "d"]
    assert_same_function(model, hand, [rand(4, 8), rand(4, 8)])


def test_shared_block_is_one_sub_model_called_twice():
    model = build("""
block tower(width) {
  input x
  output y = x -> dense(width, activation=relu) -> dense(width)
}
model twins {
  input a: (6,)
  input b: (6,)
  shared t = tower(5)
  output d = (a -> t, b -> t) -> concatenate
}
""")
    (tower,) = [layer for layer in model.layers if isinstance(layer, keras.Model)]
    assert tower.name == "t" and tower.count_params() == (6 * 5 + 5) + (5 * 5 + 5)
    assert model.count_params() == tower.count_params()
    x = rand(3, 6)
    out = model.predict([x, x], verbose=0)
    np.testing.assert_allclose(out[:, :5], out[:, 5:], rtol=1e-6)


NESTED = """
model encoder {
  input x: (8,)
  output e = x -> dense(4) -> relu
}
model classifier {
  input x: (8,)
  output p = x -> encoder -> dense(2, activation=softmax)
}
"""


def test_nested_model_is_one_layer_with_shared_weights():
    models = build_all(NESTED)
    encoder, classifier = models["encoder"], models["classifier"]
    assert classifier.get_layer("encoder") is encoder
    assert classifier.count_params() == 36 + 10
    x = keras.Input((8,))
    inner = keras.Model(x, layers.Activation("relu")(layers.Dense(4)(x)))
    y = keras.Input((8,))
    hand = keras.Model(y, layers.Dense(2, activation="softmax")(inner(y)))
    assert_same_function(classifier, hand, [rand(5, 8)])


def test_nested_model_builds_alone():
    model = build(NESTED, "classifier")
    assert isinstance(model.get_layer("encoder"), keras.Model)


STATES = """
model states {
  input t: (5, 3)
  seq, h, c = t -> lstm(4, return_sequences=true, return_state=true)
  output last = seq -> global_average_pooling1d
  output h, c
}
"""


def test_multi_output_step_destructures():
    model = build(STATES)
    t = keras.Input((5, 3))
    seq, h, c = layers.LSTM(4, return_sequences=True, return_state=True)(t)
    # An Identity named after each output taken from the LSTM's states: Keras names
    # outputs after their layers, and this is how a saved model keeps "h" and "c".
    hand = keras.Model(
        t, [layers.GlobalAveragePooling1D()(seq), layers.Identity(name="h")(h), layers.Identity(name="c")(c)]
    )
    assert model.output_names == ["last", "h", "c"]
    assert_same_function(model, hand, [rand(2, 5, 3)])


def test_outputs_of_a_multi_output_step_keep_their_names_once_saved(tmp_path):
    model = build(STATES)
    model.save(tmp_path / "states.keras")
    loaded = keras.saving.load_model(tmp_path / "states.keras", safe_mode=True)
    assert loaded.output_names == ["last", "h", "c"]  # Keras alone names them after their layer: seq, seq
    assert loaded.count_params() == model.count_params() == 4 * 4 * (3 + 4 + 1)
    x = [rand(2, 5, 3)]
    for got, want in zip(loaded.predict(x, verbose=0), model.predict(x, verbose=0)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_rebinding_and_repeats():
    model = build("""
model deep {
  input x: (4,)
  x = x -> dense(8)
  x = x -> (dense(8) -> relu) * 3
  output y = x -> dense(2)
}
""")
    assert model.count_params() == 40 + 3 * 72 + 18
    assert [layer.name for layer in model.layers] == [
        "x",
        "x_2",
        "x.dense",
        "x.relu",
        "x.dense_2",
        "x.relu_2",
        "x.dense_3",
        "x_3",
        "y",
    ]


def test_block_sees_real_shapes_and_decides_if_at_compile_time():
    model = build("""
block adapt(width) {
  input x
  let cin = x.shape[-1]
  if cin == width {
    output y = x -> relu
  } else {
    output y = x -> dense(width)
  }
}
model m {
  input a: (7,)
  output y = a -> adapt(7) -> adapt(3)
}
""")
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Activation", "Dense"]


def test_inputs_keep_dtypes_and_unknown_sizes():
    model = build("""
model text {
  input tokens: (none,) as int32
  output logits = tokens -> embedding(100, 8) -> global_average_pooling1d -> dense(3)
}
""")
    assert model.inputs[0].dtype == "int32" and tuple(model.inputs[0].shape) == (None, None)
    assert model.predict(np.array([[1, 2, 3]], dtype="int32"), verbose=0).shape == (1, 3)


def test_nested_layers_call_kwargs_and_activation_arguments():
    model = build("""
model seq {
  input t: (6, 4)
  h = t -> bidirectional(lstm(5, return_sequences=true))
  a = (h, h) -> multi_head_attention(num_heads=2, key_dim=4, use_causal_mask=true)
  g = a -> gelu(approximate=true)
  output y = g -> time_distributed(dense(3, activation=leaky_relu(0.1)))
}
""")
    bi = model.get_layer("h")
    assert isinstance(bi, layers.Bidirectional) and bi.forward_layer.name == "forward_h.layer.lstm"
    t = keras.Input((6, 4))
    h = layers.Bidirectional(layers.LSTM(5, return_sequences=True))(t)
    a = layers.MultiHeadAttention(num_heads=2, key_dim=4)(h, h, use_causal_mask=True)
    g = layers.Activation(lambda v: keras.activations.gelu(v, approximate=True))(a)
    y = layers.TimeDistributed(layers.Dense(3, activation=lambda v: keras.activations.leaky_relu(v, 0.1)))(g)
    assert_same_function(model, keras.Model(t, y), [rand(2, 6, 4)])


def test_declared_activation_and_layer_build():
    model = build("""
activation mish(x) = x * tanh(smooth_relu(x))
layer my_linear(units=32) {
  input x
  weight kernel: (x.shape[-1], units) init=glorot_uniform
  weight bias: (units,) init=zeros
  output x @ kernel + bias
}
model m {
  input x: (6,)
  output y = x -> my_linear(4) -> mish -> dense(2, activation=mish)
}
""")
    assert model.count_params() == 28 + 10
    x = rand(3, 6)
    kernel, bias = model.get_layer("y.my_linear").get_weights()
    h = x @ kernel + bias
    h = h * np.tanh(np.log1p(np.exp(h)))
    w, b = model.get_layer("y").get_weights()
    z = h @ w + b
    np.testing.assert_allclose(model.predict(x, verbose=0), z * np.tanh(np.log1p(np.exp(z))), rtol=1e-5, atol=1e-6)


def test_a_number_is_a_constant_initializer():
    model = build("model m {\n  input x: (3,)\n  output y = x -> dense(2, kernel_initializer=0.5)\n}\n")
    np.testing.assert_array_equal(model.get_layer("y").get_weights()[0], np.full((3, 2), 0.5, "float32"))


def test_parameter_counts_are_filled_in_for_the_diagram():
    program = netdsl.parse(SIAMESE, filename="spec.net")
    analysis, models = compile_program(program)
    graph = analysis.graphs["siamese"]
    assert graph.built is models["siamese"]
    assert {n.name: n.params for n in graph.nodes} == {
        "a": 0,
        "b": 0,
        "ea.enc": 36,
        "eb.enc": 36,
        "d.subtract": 0,
        "d": 5,
    }
    assert [n.output_shapes for n in graph.nodes][-1] == [(1,)]


# ====================================================================== determinism


@pytest.mark.parametrize("name", ["resnet_stage", "flows"])
def test_same_spec_same_config(name):
    first, second = build(reference_code(name)), build(reference_code(name))
    assert [layer.name for layer in first.layers] == [layer.name for layer in second.layers]
    assert first.to_json() == second.to_json()
    config = json.loads(first.to_json())
    assert config["config"]["name"] == name


def test_same_spec_same_config_with_nested_and_shared():
    assert build(SIAMESE).to_json() == build(SIAMESE).to_json()
    assert build(NESTED, "classifier").to_json() == build(NESTED, "classifier").to_json()


def test_model_from_json_rebuilds_the_same_model():
    model = build(reference_code("flows"))
    again = keras.models.model_from_json(model.to_json())
    assert again.count_params() == model.count_params()
    assert [layer.name for layer in again.layers] == [layer.name for layer in model.layers]


# ====================================================================== API


def test_build_from_a_path_and_pick_the_only_model(tmp_path):
    path = tmp_path / "one.net"
    path.write_text(SIAMESE)
    assert netdsl.build(path).name == "siamese"
    assert netdsl.build(str(path), model="siamese").name == "siamese"
    assert list(netdsl.build_all(path)) == ["siamese"]


def test_build_needs_a_model_name_when_there_are_several():
    with pytest.raises(netdsl.SpecError) as caught:
        build(NESTED)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.message, diagnostic.hint) == (
        "the spec declares 2 models; pick one with --model NAME (model=NAME in the library)",
        "models: encoder, classifier",
    )
    with pytest.raises(netdsl.SpecError, match="no model named 'encodr'; did you mean 'encoder'"):
        build(NESTED, "encodr")


# ====================================================================== errors


def test_shape_mismatch_at_plus_names_both_shapes():
    assert errors("""model bad {
  input x: (32, 32, 32)
  y = x -> conv2d(64, 3, padding="same")
  s = y + x
  output s
}
""") == ["4:7: cannot add y (32, 32, 64) and x (32, 32, 32): '+' needs one shape"]


def test_concatenate_mismatch():
    assert errors("""model bad {
  input a: (4, 5)
  input b: (3, 6)
  output c = (a, b) -> concatenate
}
""") == ["4:24: cannot concatenate tensors of shapes (4, 5) and (3, 6) on axis -1"]


def test_conv_on_too_small_input():
    (message,) = errors("model small {\n  input x: (3, 3, 1)\n  output y = x -> conv2d(8, 5)\n}\n")
    assert message.startswith(
        "3:19: 'conv2d' cannot take an input of shape (3, 3, 1): Computed output size would be zero or negative."
    )
    assert "\n" not in message


def test_wrong_rank_is_said_in_the_spec_s_terms():
    assert errors("model m {\n  input x: (16,)\n  output y = x -> gru(4)\n}\n") == [
        "3:19: 'gru' cannot take an input of shape (16,): it needs inputs with 2 dimensions besides the batch "
        "axis, received 1"
    ]


def test_axis_out_of_range_is_said_in_the_spec_s_terms():
    assert errors("model m {\n  input x: (28, 28)\n  output y = x -> batch_norm(axis=7)\n}\n") == [
        "3:19: 'batch_normalization' cannot take an input of shape (28, 28): axis 7 is out of range for an "
        "input with 2 dimensions besides the batch axis (axes count the batch axis as 0)"
    ]


def test_keras_argument_error():
    # A value only Keras' constructor knows to refuse (check's arg_rules do not cover tuple lengths).
    spec = "model m {\n  input x: (8, 4)\n  output y = x -> adaptive_average_pooling1d(output_size=(2, 2))\n}\n"
    assert errors(spec) == [
        "3:19: 'adaptive_average_pooling1d' rejected its arguments: For 1D input, `output_size` tuple must have "
        "length 1. Received: (2, 2)"
    ]


def test_every_error_of_a_model_is_reported():
    # dense(-1) and dropout(2.0) are refused by check itself, before Keras is asked (semantics/arg_rules.py).
    assert errors("""model m {
  input x: (8,)
  a = x -> dense(-1)
  b = x -> dropout(2.0)
  output c = (a, b) -> concatenate
}
""") == [
        "3:18: parameter 'units' of 'dense' is a positive integer, received -1",
        "4:20: parameter 'rate' of 'dropout' is a fraction in [0, 1], received 2.0",
    ]


HUGE = "model huge {\n  input x: (100000,)\n  output y = x -> dense(100000000)\n}\n"


def test_huge_layer_is_refused_before_any_keras_constructor(monkeypatch):
    made = []

    class Spy(layers.Dense):
        def __init__(self, *args, **kwargs):
            made.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(keras.layers, "Dense", Spy)
    assert errors(HUGE) == ["3:19: 'dense' would have about 10,000,100,000,000 parameters; the limit is 1,000,000,000"]
    assert made == []
    assert isinstance(build("model ok {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n").get_layer("y"), Spy)


def test_parameter_limit_is_the_callers():
    text = "model m {\n  input x: (1000,)\n  output y = x -> dense(1000)\n}\n"
    assert errors(text, param_limit=100_000) == [
        "3:19: 'dense' would have about 1,001,000 parameters; the limit is 100,000"
    ]
    assert build(text).count_params() == 1_001_000


def test_code_running_layers_are_unknown_names():
    (message,) = errors("model m {\n  input x: (8,)\n  output y = x -> Lambda(4)\n}\n")
    assert message.startswith("3:19: unknown layer 'Lambda'")
    (message,) = errors('model m {\n  input x: (8,)\n  output y = x -> TFSMLayer("saved")\n}\n')
    assert message.startswith("3:19: unknown layer 'TFSMLayer'")


def test_errors_in_unused_blocks_are_reported_too():
    assert errors("""block broken(n) {
  input x
  output y = x -> dense(n, activaton=relu)
}
model m {
  input x: (4,)
  output y = x -> dense(2)
}
""")[0].startswith("3:28: unknown parameter 'activaton' for 'dense'")


def test_a_failed_build_does_not_change_the_global_dtype_policy():
    before = keras.config.dtype_policy().name
    # A value only Keras' constructor refuses (check's arg_rules do not know tuple lengths): the build fails in Keras.
    assert errors("""model m {
  input x: (8, 4)
  output y = x -> adaptive_average_pooling1d(output_size=(2, 2))
  train {
    loss = mse
    mixed_precision = "mixed_float16"
  }
}
""")[0].startswith("3:19: 'adaptive_average_pooling1d' rejected its arguments")
    assert keras.config.dtype_policy().name == before
