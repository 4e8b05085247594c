"""Tests for the runtime of spec-declared activations and layers
(netdsl.custom.expr, netdsl.custom.declared_layers)."""

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

import netdsl.custom  # noqa: F401  (registers everything with Keras)
from netdsl.custom.declared_layers import (
    ActivationLayer,
    DeclaredActivation,
    DeclaredLayer,
)
from netdsl.custom.expr import (
    FUNCTIONS,
    evaluate,
    evaluate_dim,
    validate_dim_tree,
    validate_tree,
)
from netdsl.custom.layers import Attention

RNG = np.random.default_rng(1)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


# Tree builders keep the tests readable.
def var(name):
    return ["var", name]


def num(value):
    return ["num", value]


def const(value):
    return ["const", value]


def call(fname, *args, **kwargs):
    return ["call", fname, list(args), kwargs]


def bin_(op, a, b):
    return ["bin", op, a, b]


MISH_BODY = bin_("*", var("x"), call("tanh", call("smooth_relu", var("x"))))

LINEAR_WEIGHTS = [
    {"name": "kernel", "shape": [["dim", "x", -1], var("units")]},
    {"name": "bias", "shape": [var("units")], "init": "zeros"},
]
LINEAR_OUTPUT = bin_("+", bin_("@", var("x"), var("kernel")), var("bias"))

SEED_ATTENTION_OUTPUT = bin_(
    "@",
    call(
        "softmax",
        bin_(
            "/",
            bin_(
                "@", bin_("@", var("q"), var("wq")), call("transpose", bin_("@", var("k"), var("wk")), const([0, 2, 1]))
            ),
            call("sqrt", var("d_model")),
        ),
        axis=num(-1),
    ),
    bin_("@", var("v"), var("wv")),
)


def mish():
    return DeclaredActivation("mish", ["x"], {}, MISH_BODY)


def declared_linear(units=3, **kwargs):
    return DeclaredLayer("my_linear", ["x"], {"units": units}, LINEAR_WEIGHTS, [LINEAR_OUTPUT], **kwargs)


def seed_attention(d_model):
    weights = [{"name": n, "shape": [var("d_model"), var("d_model")]} for n in ("wq", "wk", "wv")]
    return DeclaredLayer("seed_attention", ["q", "k", "v"], {"d_model": d_model}, weights, [SEED_ATTENTION_OUTPUT])


# -- declared activations ------------------------------------------------------


def test_mish_matches_its_definition():
    x = np.linspace(-20, 20, 101).astype("float32")
    expected = x * np.tanh(np.log1p(np.exp(x)))
    np.testing.assert_allclose(mish()(x), expected, rtol=1e-6, atol=1e-6)
    reference = keras.activations.mish(x)
    np.testing.assert_allclose(mish()(x), reference, rtol=1e-6, atol=1e-6)


def test_activation_with_parameters():
    scaled_tanh = DeclaredActivation(
        "scaled_tanh",
        ["x", "scale", "slope"],
        {"scale": 1.7159, "slope": 0.6667},
        bin_("*", var("scale"), call("tanh", bin_("*", var("slope"), var("x")))),
    )
    x = _rand(5)
    np.testing.assert_allclose(scaled_tanh(x), 1.7159 * np.tanh(0.6667 * x), rtol=1e-6)


def test_activation_config_round_trip():
    activation = mish()
    config = activation.get_config()
    assert json.loads(json.dumps(config)) == config  # plain JSON data
    assert DeclaredActivation.from_config(config).get_config() == config


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"params": []}, "Expected at least one parameter"),
        ({"params": ["x", "a"]}, "Expected a value for every parameter"),
        ({"values": {"b": 1.0}}, "Expected values only for the parameters"),
        (
            {"body": call("os.system", var("x"))},
            "Expected a function from netdsl's allowed table, received: 'os.system'",
        ),
        ({"body": var("y")}, "Expected a name bound in this expression"),
    ],
)
def test_activation_rejects_bad_declarations(kwargs, message):
    arguments = {"name": "act", "params": ["x"], "values": {}, "body": var("x"), **kwargs}
    with pytest.raises(ValueError, match=message):
        DeclaredActivation(**arguments)


def test_activation_from_config_revalidates():
    config = mish().get_config()
    config["body"] = call("eval", var("x"))
    with pytest.raises(ValueError, match="received: 'eval'"):
        DeclaredActivation.from_config(config)


def test_activation_layer_applies_the_activation():
    layer = ActivationLayer(mish())
    x = _rand(2, 3)
    np.testing.assert_allclose(layer(x), mish()(x), rtol=1e-6)
    rebuilt = ActivationLayer.from_config(layer.get_config())
    assert rebuilt.get_config() == layer.get_config()
    assert layer.compute_output_shape((None, 3)) == (None, 3)


# -- tree validation -----------------------------------------------------------


@pytest.mark.parametrize(
    "tree, message",
    [
        (call("os.system", var("x")), "Expected a function from netdsl's allowed table, received: 'os.system'"),
        (call("__import__", const("os")), "allowed table"),
        (["lambda", "x"], "Expected an expression node of kind"),
        ("x", "Expected an expression node"),
        (call("sin", var("x"), var("x")), "Expected 1 positional argument\\(s\\) for 'sin', received: 2"),
        (call("clip", var("x")), "Expected 3 positional"),
        (call("sum", var("x"), bogus=num(1)), "Expected keyword arguments of 'sum' among \\(axis, keepdims\\)"),
        (var("y"), "Expected a name bound in this expression \\(x\\), received: 'y'"),
        (bin_("%", var("x"), num(2)), "Expected an operator among"),
        (["num", True], "Expected a number"),
        (["const", {"a": 1}], "Expected a JSON constant"),
        (["dim", "x", 0], "Expected an expression node of kind"),
        (["neg"], "Expected a 'neg' node of 2 items"),
    ],
)
def test_validate_tree_rejects(tree, message):
    with pytest.raises(ValueError, match=message):
        validate_tree(tree, ["x"])


def test_validate_tree_refuses_very_deep_trees():
    tree = var("x")
    for _ in range(500):
        tree = ["neg", tree]
    with pytest.raises(ValueError, match="nested at most"):
        validate_tree(tree, ["x"])


def test_static_arguments():
    x = _rand(2, 3, 4)
    env = {"x": x, "axis": 1}
    cases = [
        (call("transpose", var("x"), const([0, 2, 1])), np.transpose(x, (0, 2, 1))),
        (call("reshape", var("x"), const([2, 12])), x.reshape(2, 12)),
        (call("sum", var("x"), axis=var("axis"), keepdims=const(True)), x.sum(axis=1, keepdims=True)),
        (call("max", var("x"), axis=["neg", num(1)]), x.max(axis=-1)),
        (call("concatenate", var("x"), var("x"), axis=num(-1)), np.concatenate([x, x], axis=-1)),
        (call("where", var("x"), num(1.0), num(0.0)), (x != 0).astype("float32")),
    ]
    for tree, expected in cases:
        validate_tree(tree, env)
        np.testing.assert_allclose(evaluate(tree, env), expected, rtol=1e-6)


def test_static_argument_must_be_constant():
    x = _rand(2, 3)
    tree = call("sum", var("x"), axis=var("x"))
    with pytest.raises(ValueError, match="Expected a constant for 'axis'"):
        evaluate(tree, {"x": x})


def test_constants_fold_in_python():
    tree = bin_("/", call("sqrt", var("d")), num(2))
    assert evaluate(tree, {"d": 16}) == 2.0


def test_dim_trees():
    params, inputs = ["units"], ["x"]
    tree = call("max", bin_("//", ["dim", "x", -1], num(2)), var("units"))
    validate_dim_tree(tree, params, inputs)
    assert evaluate_dim(tree, {"units": 3}, {"x": (5, 10)}) == 5
    for bad, message in [
        (bin_("/", num(4), num(2)), "dimension operator"),
        (call("sqrt", num(4)), "Expected max\\(a, b\\) or min"),
        (["dim", "y", 0], "Expected an input name"),
        (var("x"), "Expected a layer parameter"),
        (num(2.5), "Expected an integer dimension"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate_dim_tree(bad, params, inputs)


# -- gradients through the whole table -----------------------------------------

# One example call per function; `x` is a (2, 3, 3) tensor of positive
# values (so log/sqrt are defined), `m` a (3, 3) matrix.
X = var("x")
GRADIENT_CASES = {
    "minimum": call("minimum", X, num(1.0)),
    "maximum": call("maximum", X, num(1.0)),
    "clip": call("clip", X, num(0.5), num(1.5)),
    "where": call("where", call("relu", bin_("-", X, num(1.0))), X, bin_("*", X, X)),
    "matmul": call("matmul", X, var("m")),
    "transpose": bin_("*", call("transpose", X, const([0, 2, 1])), X),
    "reshape": call("reshape", X, const([2, 9])),
    "sum": call("sum", X, axis=num(-1)),
    "mean": call("mean", X, axis=num(1), keepdims=const(True)),
    "max": call("max", X, axis=num(-1)),
    "min": call("min", X),
    "softmax": bin_("*", call("softmax", X, axis=num(-1)), X),
    "concatenate": call("concatenate", X, bin_("*", X, X), axis=num(-1)),
    "gelu": call("gelu", X, approximate=const(True)),
    "elu": call("elu", X, alpha=num(0.5)),
    "leaky_relu": call("leaky_relu", X, negative_slope=num(0.1)),
    "get_item": call("get_item", X, const([[None, None, None], [1, None, None], 0])),
    "split": call("split", X, num(3), axis=num(-1)),
    "unstack": call("unstack", X, axis=num(1)),
    # the spectral functions take (real, imag) as two tensors; those that give a pair give a tuple
    "fft": call("fft", X, bin_("*", X, X)),
    "fft2": call("fft2", X, bin_("*", X, X)),
    "ifft2": call("ifft2", X, bin_("*", X, X)),
    "rfft": call("rfft", X, fft_length=num(4)),
    "irfft": call("irfft", X, bin_("*", X, X)),
    "stft": call("stft", X, sequence_length=num(3), sequence_stride=num(1), fft_length=num(4), window=const("hamming")),
    "istft": call(
        "istft", X, X, sequence_length=num(4), sequence_stride=num(1), fft_length=num(4), center=const(False)
    ),
    # the index functions give no gradient of their own: each scales or picks from x
    "arange": bin_("*", call("arange", start=num(1.0), stop=num(4.0)), X),
    "per_sample": bin_("*", call("sum", call("per_sample", call("arange", start=num(3)), X)), X),
    "one_hot": bin_("*", call("one_hot", call("argmax", bin_("*", X, X), axis=num(-1)), num_classes=num(3)), X),
    "argmax": bin_("*", call("argmax", bin_("*", X, X), axis=num(-1), keepdims=const(True)), X),
    "argmin": bin_("*", call("argmin", bin_("*", X, X), axis=num(1), keepdims=const(True)), X),
    "cumsum": call("cumsum", X, axis=num(1)),
    "cumprod": call("cumprod", X, axis=num(-1)),
    "top_k": call("top_k", X, k=num(2)),
    "zeros_like": bin_("+", call("zeros_like", X), X),
    # comparisons and logic give booleans: each picks between x and x * x
    **{
        name: call("where", call(name, X, num(1.0)), X, bin_("*", X, X))
        for name in ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal")
    },
    **{
        name: call("where", call(name, call("greater", X, num(1.0)), call("less", X, num(1.5))), X, bin_("*", X, X))
        for name in ("logical_and", "logical_or")
    },
    "logical_not": call("where", call("logical_not", call("greater", X, num(1.0))), X, bin_("*", X, X)),
    "cast": bin_("*", call("cast", X, dtype=const("float32")), X),
    "ones_like": bin_("*", call("ones_like", X), X),
}


@pytest.mark.parametrize("fname", sorted(FUNCTIONS))
def test_gradients_flow_through(fname):
    tree = GRADIENT_CASES.get(fname, call(fname, X))
    validate_tree(tree, ["x", "m"])
    x = tf.Variable(RNG.uniform(0.2, 2.0, (2, 3, 3)).astype("float32"))
    m = tf.Variable(_rand(3, 3))
    with tf.GradientTape() as tape:
        out = evaluate(tree, {"x": x, "m": m})
        out = out[0] if isinstance(out, tuple) and fname == "top_k" else out  # its values, not its indices
        loss = tf.reduce_sum(out)
    grad = tape.gradient(loss, x)
    assert grad is not None
    grad = np.asarray(grad)
    assert np.all(np.isfinite(grad))
    assert np.any(grad != 0)


# -- declared layers -----------------------------------------------------------


def test_declared_linear_params_and_output():
    layer = declared_linear(units=3)
    x = _rand(4, 5)
    y = layer(x)
    assert tuple(y.shape) == (4, 3)
    assert layer.count_params() == 5 * 3 + 3
    assert [w.name for w in layer.weights] == ["kernel", "bias"]
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(y, x @ kernel + bias, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, 5)) == (None, 3)
    assert layer.name.startswith("my_linear")


def test_declared_linear_trains():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    model = keras.Model(inputs, declared_linear(units=1)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = _rand(64, 6)
    y = x @ _rand(6, 1) + 0.5
    history = model.fit(x, y, epochs=5, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] * 0.8


def test_declared_layer_config_round_trip():
    layer = declared_linear(units=3, name="lin")
    config = layer.get_config()
    assert json.loads(json.dumps(config)) == config  # trees are plain data
    assert config["outputs"] == [LINEAR_OUTPUT]
    assert DeclaredLayer.from_config(config).get_config() == config


def test_declared_layer_several_inputs_and_outputs():
    layer = DeclaredLayer(
        "pair",
        ["a", "b"],
        {},
        [],
        [bin_("+", var("a"), var("b")), call("concatenate", var("a"), var("b"), axis=num(-1))],
    )
    a = keras.Input((3,))
    b = keras.Input((3,))
    total, joined = layer([a, b])
    assert total.shape == (None, 3)
    assert joined.shape == (None, 6)
    assert layer.compute_output_shape([(None, 3), (None, 3)]) == [(None, 3), (None, 6)]


def test_declared_layer_weight_shape_must_be_positive():
    layer = DeclaredLayer(
        "bad",
        ["x"],
        {"units": 0},
        [{"name": "kernel", "shape": [["dim", "x", -1], var("units")]}],
        [bin_("@", var("x"), var("kernel"))],
    )
    with pytest.raises(
        ValueError,
        match=r"Expected weight 'kernel' to have a shape of positive "
        r"integers, received: \(4, 0\)",
    ):
        layer(_rand(2, 4))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"outputs": [call("eval", var("x"))]}, "received: 'eval'"),
        ({"outputs": [var("nope")]}, "Expected a name bound"),
        ({"params": {"x": 1}}, "Expected distinct names"),
        ({"weights": [{"name": "w", "shape": [num(2)], "init": "nope"}]}, "nope"),
        ({"weights": [{"name": "w", "shape": [var("missing")]}]}, "Expected a layer parameter"),
        ({"inputs": []}, "Expected at least one input name"),
    ],
)
def test_declared_layer_rejects_bad_declarations(change, message):
    arguments = {"spec_name": "lin", "inputs": ["x"], "params": {}, "weights": [], "outputs": [var("x")], **change}
    with pytest.raises(ValueError, match=message):
        DeclaredLayer(**arguments)


def test_seed_attention_equals_attention_layer():
    q, k, v = _rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 4)
    declared = seed_attention(4)
    builtin = Attention(4, heads=1)
    declared([q, k, v])
    builtin([q, k, v])
    declared.set_weights(builtin.get_weights())  # both are wq, wk, wv
    np.testing.assert_allclose(declared([q, k, v]), builtin([q, k, v]), rtol=1e-5, atol=1e-6)


# -- saving and loading --------------------------------------------------------


def _declared_model():
    inputs = keras.Input((5,))
    h = declared_linear(units=4)(inputs)
    h = keras.layers.Dense(4, activation=mish())(h)
    h = ActivationLayer(mish())(h)
    return keras.Model(inputs, h)


LOAD_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import keras
    import netdsl.custom
    model = keras.saving.load_model(sys.argv[1], safe_mode=True)
    data = np.load(sys.argv[2])
    np.testing.assert_allclose(model(data["x"]), data["y"], rtol=1e-6,
                               atol=1e-6)
    print("LOADED", type(model.layers[2].activation).__name__)
    """
)


def test_save_and_load_in_a_fresh_process(tmp_path):
    model = _declared_model()
    x = _rand(3, 5)
    path = tmp_path / "declared.keras"
    model.save(path)
    np.savez(tmp_path / "data.npz", x=x, y=np.asarray(model(x)))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, str(path), str(tmp_path / "data.npz")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "LOADED DeclaredActivation" in result.stdout


def _tamper(path, out_path, old, new):
    """Copy a .keras zip, replacing `old` by `new` in its config.json."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out_path, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "config.json":
                text = data.decode("utf-8")
                assert old in text
                data = text.replace(old, new).encode("utf-8")
            target.writestr(item, data)


def test_file_saved_before_the_split_still_loads(tmp_path):
    # The classes moved from netdsl.custom.expr to declared_layers; files
    # saved before record the old module. Keras resolves them by their
    # registered name ("netdsl>DeclaredLayer"), so they load unchanged.
    model = _declared_model()
    x = _rand(3, 5)
    path = tmp_path / "model.keras"
    model.save(path)
    legacy = tmp_path / "legacy.keras"
    _tamper(path, legacy, '"module": "netdsl.custom.declared_layers"', '"module": "netdsl.custom.expr"')
    loaded = keras.saving.load_model(legacy, safe_mode=True)
    assert isinstance(loaded.layers[1], DeclaredLayer)
    assert isinstance(loaded.layers[2].activation, DeclaredActivation)
    assert isinstance(loaded.layers[3], ActivationLayer)
    np.testing.assert_allclose(loaded(x), model(x), rtol=1e-6, atol=1e-6)


ALLOWED_TABLE = "Expected a function from netdsl's allowed table"


@pytest.mark.parametrize(
    "old, new, message",
    [
        # a function inside the activation's body
        ('"smooth_relu"', '"os.system"', ALLOWED_TABLE + ", received: 'os.system'"),
        ('["call", "tanh"', '["call", "eval"', ALLOWED_TABLE + ", received: 'eval'"),
        # an operator of the declared layer's output tree
        ('"@"', '"eval"', "Expected an operator among"),
    ],
)
def test_tampered_config_is_refused(tmp_path, old, new, message):
    path = tmp_path / "model.keras"
    _declared_model().save(path)
    tampered = tmp_path / "tampered.keras"
    _tamper(path, tampered, old, new)
    # Keras wraps errors raised by `from_config` of nested layers into a
    # TypeError; the netdsl message is kept inside.
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        keras.saving.load_model(tampered, safe_mode=True)


@pytest.mark.parametrize(
    "key",
    [
        (slice(None), slice(None, None, -1)),
        (slice(None), slice(8, 2, -2), slice(None, None, -3)),
        (slice(None), 3, None, slice(None, None, -1)),
        (Ellipsis, slice(-2, None, -5)),
        (slice(None), None, slice(1, 9, -1)),  # nothing
    ],
)
def test_a_backwards_slice_is_a_forward_one_flipped(key):
    """torch tensors take no negative step: `get_item` slices forwards and flips, whatever the backend."""
    from netdsl.custom.expr import _forwards

    x = RNG.normal(size=(2, 10, 12))
    forward, flipped = _forwards(list(key), x.shape)
    assert all(not isinstance(k, slice) or k.step is None or k.step > 0 for k in forward)
    np.testing.assert_array_equal(np.flip(x[tuple(forward)], axis=flipped), x[key])


def test_the_checker_s_table_of_functions_is_the_runtime_s():
    """`semantics.declared.OP_FUNCTIONS` (what `check` knows, without Keras) names the runtime's functions
    with their arities and keywords; `per_sample` alone is the runtime's own (`arange` in a model body)."""
    from netdsl.semantics.declared import OP_FUNCTIONS

    assert set(OP_FUNCTIONS) | {"per_sample"} == set(FUNCTIONS)
    for name, (lo, hi, keywords, _) in OP_FUNCTIONS.items():
        spec = FUNCTIONS[name]
        assert (lo, hi, keywords) == (spec.min_args, spec.max_args, spec.kwargs), name
