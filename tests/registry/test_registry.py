"""Tests of the registry (the allow-list of every name a spec may use).

The first part never imports Keras: the registry must answer the checker
without it. The second part ("Against Keras") imports Keras to check that the
committed tables still describe the installed Keras exactly.
"""

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl import registry as r
from netdsl.registry import REQUIRED, Param
from netdsl.registry.table import DATA_FILE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_plugins_left():
    yield
    r.reset_plugins()


# --------------------------------------------------------------------------
# No Keras


def test_import_and_queries_do_not_import_keras_or_tensorflow():
    code = (
        "import sys\n"
        "from netdsl import registry as r\n"
        "e = r.lookup('layer', 'dense')\n"
        "r.names('layer'); r.all_keys('metric'); r.suggest('dens', ['layer'])\n"
        "r.estimate_params(e, {'units': 3}, [(4,)])\n"
        "r.output_count(r.lookup('layer', 'lstm'), {'units': 3})\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in ('keras', 'tensorflow', 'jax', 'torch'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "camel, snake",
    [
        ("Conv2D", "conv2d"),
        ("Conv2DTranspose", "conv2d_transpose"),
        ("Conv1DTranspose", "conv1d_transpose"),
        ("MaxPooling2D", "max_pooling2d"),
        ("GlobalAveragePooling2D", "global_average_pooling2d"),
        ("LSTM", "lstm"),
        ("GRU", "gru"),
        ("ConvLSTM2D", "conv_lstm2d"),
        ("PReLU", "prelu"),
        ("ReLU", "relu"),
        ("LeakyReLU", "leaky_relu"),
        ("ELU", "elu"),
        ("ZeroPadding2D", "zero_padding2d"),
        ("UpSampling2D", "up_sampling2d"),
        ("BatchNormalization", "batch_normalization"),
        ("SeparableConv2D", "separable_conv2d"),
        ("DepthwiseConv2D", "depthwise_conv2d"),
        ("MultiHeadAttention", "multi_head_attention"),
        ("RMSNormalization", "rms_normalization"),
        ("STFTSpectrogram", "stft_spectrogram"),
        ("KLDivergence", "kl_divergence"),
        ("SparseTopKCategoricalAccuracy", "sparse_top_k_categorical_accuracy"),
        ("F1Score", "f1_score"),
        ("FBetaScore", "fbeta_score"),
        ("R2Score", "r2_score"),
        ("OneHotMeanIoU", "one_hot_mean_iou"),
        ("AUC", "auc"),
        ("L1L2", "l1_l2"),
        ("AdamW", "adamw"),
        ("RMSprop", "rmsprop"),
        ("SGD", "sgd"),
        ("ReduceLROnPlateau", "reduce_lr_on_plateau"),
        ("TerminateOnNaN", "terminate_on_nan"),
        ("CSVLogger", "csv_logger"),
        ("dense", "dense"),
        ("batch_normalization", "batch_normalization"),
    ],
)
def test_snake_case(camel, snake):
    assert r.snake_case(camel) == snake


@pytest.mark.parametrize(
    "kind, key, name",
    [
        ("layer", "dense", "dense"),
        ("layer", "Dense", "dense"),
        ("layer", "conv2d", "conv2d"),
        ("layer", "Conv2D", "conv2d"),
        ("layer", "Convolution2D", "conv2d"),
        ("layer", "conv2d_transpose", "conv2d_transpose"),
        ("layer", "lstm", "lstm"),
        ("layer", "LSTM", "lstm"),
        ("layer", "gru", "gru"),
        ("layer", "GRU", "gru"),
        ("layer", "batch_norm", "batch_normalization"),
        ("layer", "BatchNormalization", "batch_normalization"),
        ("layer", "layer_norm", "layer_normalization"),
        ("layer", "max_pool1d", "max_pooling1d"),
        ("layer", "max_pool2d", "max_pooling2d"),
        ("layer", "max_pool3d", "max_pooling3d"),
        ("layer", "MaxPool2D", "max_pooling2d"),
        ("layer", "avg_pool2d", "average_pooling2d"),
        ("layer", "global_avg_pool2d", "global_average_pooling2d"),
        ("layer", "global_max_pool2d", "global_max_pooling2d"),
        ("layer", "global_average_pooling2d", "global_average_pooling2d"),
        ("layer", "upsampling2d", "up_sampling2d"),
        ("layer", "up_sampling2d", "up_sampling2d"),
        ("layer", "zero_padding2d", "zero_padding2d"),
        ("layer", "multi_head_attention", "multi_head_attention"),
        ("layer", "MultiHeadAttention", "multi_head_attention"),
        ("layer", "embedding", "embedding"),
        ("layer", "dropout", "dropout"),
        ("layer", "flatten", "flatten"),
        ("layer", "concatenate", "concatenate"),
        ("layer", "add", "add"),
        ("layer", "multiply", "multiply"),
        ("layer", "subtract", "subtract"),
        ("layer", "relu", "relu"),
        ("layer", "ReLU", "relu"),
        ("layer", "softmax", "softmax"),
        ("layer", "leaky_relu", "leaky_relu"),
        ("layer", "prelu", "prelu"),
        ("layer", "PReLU", "prelu"),
        ("layer", "elu", "elu"),
        ("layer", "separable_conv2d", "separable_conv2d"),
        ("layer", "depthwise_conv2d", "depthwise_conv2d"),
        ("layer", "Attention", "dot_product_attention"),
        ("layer", "attention", "attention"),
        ("layer", "Linear", "linear"),
        ("activation", "relu", "relu"),
        ("activation", "swish", "silu"),
        ("activation", "sine", "sine"),
        ("initializer", "he_normal", "he_normal"),
        ("initializer", "HeNormal", "he_normal"),
        ("initializer", "uniform", "random_uniform"),
        ("regularizer", "l2", "l2"),
        ("regularizer", "L1L2", "l1_l2"),
        ("constraint", "max_norm", "max_norm"),
        ("optimizer", "adam", "adam"),
        ("optimizer", "AdamW", "adamw"),
        ("loss", "sparse_categorical_crossentropy", "sparse_categorical_crossentropy"),
        ("loss", "SparseCategoricalCrossentropy", "sparse_categorical_crossentropy"),
        ("loss", "mse", "mean_squared_error"),
        ("loss", "huber", "huber"),
        ("metric", "accuracy", "accuracy"),
        ("metric", "acc", "accuracy"),
        ("metric", "AUC", "auc"),
        ("metric", "mae", "mean_absolute_error"),
        ("schedule", "cosine_decay", "cosine_decay"),
        ("callback", "early_stopping", "early_stopping"),
        ("callback", "EarlyStopping", "early_stopping"),
    ],
)
def test_lookup(kind, key, name):
    entry = r.lookup(kind, key)
    assert entry is not None and entry.name == name and entry.kind == kind


@pytest.mark.parametrize(
    "kind, key",
    [
        ("layer", k)
        for k in (
            "Lambda",
            "lambda",
            "TFSMLayer",
            "tfsm_layer",
            "TorchModuleWrapper",
            "torch_module_wrapper",
            "JaxLayer",
            "jax_layer",
            "FlaxLayer",
            "flax_layer",
            "Layer",
            "layer",
            "InputLayer",
            "input_layer",
            "Input",
            "InputSpec",
            "RNN",
            "rnn",
            "Wrapper",
            "Pipeline",
            "StackedRNNCells",
            "LSTMCell",
            "lstm_cell",
            "GRUCell",
            "SimpleRNNCell",
            "dens",
            "conv2D",
        )
    ]
    + [
        ("callback", k)
        for k in (
            "lambda_callback",
            "LambdaCallback",
            "model_checkpoint",
            "ModelCheckpoint",
            "csv_logger",
            "CSVLogger",
            "tensorboard",
            "TensorBoard",
            "learning_rate_scheduler",
            "remote_monitor",
            "backup_and_restore",
            "orbax_checkpoint",
        )
    ]
    + [
        ("activation", "get"),
        ("activation", "serialize"),
        ("activation", "deserialize"),
        ("optimizer", "loss_scale_optimizer"),
        ("metric", "Accuracy"),
        ("metric", "mean_metric_wrapper"),
    ],
)
def test_not_allowed(kind, key):
    assert r.lookup(kind, key) is None


def test_lookup_refuses_unknown_kind():
    with pytest.raises(ValueError):
        r.lookup("module", "dense")


def test_names_and_keys():
    for kind in r.KINDS:
        names = r.names(kind)
        assert names == sorted(names) and names
        keys = r.all_keys(kind)
        assert set(names) <= set(keys)
        for key in keys:
            entry = r.lookup(kind, key)
            assert entry.name in names
            assert key == entry.name or key in entry.aliases
    assert {"Dense", "batch_norm", "max_pool2d"} <= set(r.all_keys("layer"))
    assert "Dense" not in r.names("layer")


def test_allow_list_sizes():
    sizes = {kind: len(r.names(kind)) for kind in r.KINDS}
    assert sizes["layer"] >= 120
    assert sizes["activation"] >= 30
    assert sizes["callback"] == 4  # early_stopping reduce_lr_on_plateau
    #                                swap_ema_weights terminate_on_nan
    for kind in r.KINDS:
        assert sizes[kind] >= 4


def test_tables_are_well_formed():
    for kind in r.KINDS:
        for name in r.names(kind):
            e = r.lookup(kind, name)
            assert e.source in ("keras", "netdsl") and e.description
            assert e.call_style in ("single", "list", "args")
            lo, hi = e.inputs
            assert lo >= 1 and (hi is None or hi >= lo)
            seen = set()
            positional_done = False
            for p in e.params + e.call_params:
                assert p.type in r.TYPES, (name, p)
                assert p.name not in seen
                seen.add(p.name)
                if p.choices is not None:
                    assert p.type == "str"
                    assert p.default is None or p.default in p.choices
                if p in e.params:  # positional ones form a prefix
                    assert not (p.positional and positional_done), (name, p)
                    positional_done = positional_done or not p.positional
            for a in e.key_args:
                assert e.param(a) is not None, (name, a)
            if kind == "layer" and e.source == "keras":
                for base in ("name", "dtype"):
                    assert not e.param(base) or not e.param(base).positional


def test_data_file_is_canonical_json():
    text = DATA_FILE.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"


@pytest.mark.parametrize(
    "name, param, ptype, default, positional",
    [
        ("dense", "units", "int", REQUIRED, True),
        ("dense", "activation", "activation", None, True),
        ("dense", "use_bias", "bool", True, True),
        ("dense", "kernel_initializer", "initializer", "glorot_uniform", True),
        ("dense", "kernel_regularizer", "regularizer", None, True),
        ("dense", "activity_regularizer", "regularizer", None, True),
        ("dense", "kernel_constraint", "constraint", None, True),
        ("dense", "name", "str", None, False),
        ("dense", "dtype", "dtype", None, False),
        ("dense", "trainable", "bool", True, False),
        ("conv2d", "filters", "int", REQUIRED, True),
        ("conv2d", "kernel_size", "ints", REQUIRED, True),
        ("conv2d", "strides", "ints", (1, 1), True),
        ("conv2d", "dilation_rate", "ints", (1, 1), True),
        ("max_pooling2d", "pool_size", "ints", (2, 2), True),
        ("up_sampling2d", "size", "ints", (2, 2), True),
        ("dropout", "rate", "float", REQUIRED, True),
        ("dropout", "noise_shape", "shape", None, True),
        ("embedding", "input_dim", "int", REQUIRED, True),
        ("embedding", "output_dim", "int", REQUIRED, True),
        ("multi_head_attention", "num_heads", "int", REQUIRED, True),
        ("multi_head_attention", "key_dim", "int", REQUIRED, True),
        ("lstm", "recurrent_activation", "activation", "sigmoid", True),
        ("lstm", "return_sequences", "bool", False, True),
        ("batch_normalization", "axis", "ints", -1, True),
        ("batch_normalization", "momentum", "float", 0.99, True),
        ("reshape", "target_shape", "shape", REQUIRED, True),
        ("permute", "dims", "tuple", REQUIRED, True),
        ("bidirectional", "layer", "layer", REQUIRED, True),
        ("time_distributed", "layer", "layer", REQUIRED, True),
        ("string_lookup", "vocabulary", "list", None, True),
        ("text_vectorization", "vocabulary", "list", None, True),
        ("relu", "max_value", "float", None, True),
        ("leaky_relu", "negative_slope", "float", 0.3, True),
        ("scale", "multiplier", "float", 2.0, True),
        ("scale", "trainable", "bool", False, True),
        ("attention", "d_model", "int", REQUIRED, True),
        ("attention", "return_weights", "bool", False, True),
        ("residual", "kernel_size", "int", 3, True),
    ],
)
def test_layer_params(name, param, ptype, default, positional):
    p = r.lookup("layer", name).param(param)
    assert (p.type, p.default, p.positional) == (ptype, default, positional)
    assert p.required == (default is REQUIRED)


def test_positional_order_and_choices():
    dense = r.lookup("layer", "dense")
    assert [p.name for p in dense.positional_params][:2] == ["units", "activation"]
    conv = r.lookup("layer", "conv2d")
    assert [p.name for p in conv.positional_params][:2] == ["filters", "kernel_size"]
    assert conv.param("padding").choices == ("valid", "same")
    assert "causal" in r.lookup("layer", "conv1d").param("padding").choices
    assert conv.param("data_format").choices == ("channels_last", "channels_first")
    es = r.lookup("callback", "early_stopping")
    assert es.param("mode").choices == ("auto", "min", "max")
    assert es.param("min_delta").type == "float"
    assert es.param("patience").type == "int"


def test_other_kinds_params():
    adam = r.lookup("optimizer", "adam")
    assert adam.param("learning_rate").type == "schedule_or_float"
    assert adam.positional_params[0].name == "learning_rate"
    for p in ("clipnorm", "clipvalue", "global_clipnorm", "weight_decay"):
        assert adam.param(p).type == "float"
    assert adam.param("use_ema").type == "bool"
    assert r.lookup("loss", "sparse_categorical_crossentropy").param("from_logits").type == "bool"
    cd = r.lookup("schedule", "cosine_decay")
    assert [p.name for p in cd.positional_params][:2] == ["initial_learning_rate", "decay_steps"]
    assert cd.param("decay_steps").required
    assert r.lookup("activation", "softmax").param("axis").default == -1
    assert r.lookup("activation", "leaky_relu").param("negative_slope").type == "float"
    assert r.lookup("activation", "relu").params[0].name == "negative_slope"  # x dropped
    assert r.lookup("regularizer", "l2").param("l2").type == "float"
    assert r.lookup("constraint", "max_norm").param("max_value").type == "float"
    assert r.lookup("initializer", "constant").param("value").type == "float"
    assert r.lookup("metric", "accuracy").params == ()


def test_sources_and_names():
    for name in ("linear", "scale", "scaled_sigmoid", "layer_scale", "attention", "residual"):
        e = r.lookup("layer", name)
        assert e.source == "netdsl" and e.keras_name.startswith("netdsl.")
    for name in ("sine", "square", "sigmoid_tanh", "smooth_relu"):
        assert r.lookup("activation", name).source == "netdsl"
    for name in (
        "relu",
        "sigmoid",
        "tanh",
        "softmax",
        "gelu",
        "silu",
        "elu",
        "selu",
        "softplus",
        "softsign",
        "swish",
        "linear",
        "exponential",
        "hard_sigmoid",
        "leaky_relu",
        "relu6",
        "mish",
        "log_softmax",
    ):
        assert r.lookup("activation", name).source == "keras"
    # Activation and layer share these names; the layer exists for each.
    for name in ("relu", "softmax", "elu", "leaky_relu"):
        assert r.lookup("layer", name) and r.lookup("activation", name)
    assert r.lookup("layer", "dense").keras_name == "Dense"
    assert r.lookup("activation", "relu").keras_name == "relu"
    assert r.lookup("layer", "dense").description.startswith("Just your regular")


@pytest.mark.parametrize(
    "name, inputs, style",
    [
        ("dense", (1, 1), "single"),
        ("add", (2, None), "list"),
        ("concatenate", (2, None), "list"),
        ("multiply", (2, None), "list"),
        ("subtract", (2, 2), "list"),
        ("dot", (2, 2), "list"),
        ("multi_head_attention", (2, 3), "args"),
        ("dot_product_attention", (2, 3), "list"),
        ("attention", (1, 4), "list"),
    ],
)
def test_inputs_and_call_style(name, inputs, style):
    e = r.lookup("layer", name)
    assert (e.inputs, e.call_style) == (inputs, style)


@pytest.mark.parametrize(
    "name, key_args",
    [
        ("dense", ("units", "activation")),
        ("conv2d", ("filters", "kernel_size", "strides", "activation")),
        ("dropout", ("rate",)),
        ("max_pooling2d", ("pool_size", "strides")),
        ("embedding", ("input_dim", "output_dim")),
        ("lstm", ("units", "return_sequences")),
        ("gru", ("units", "return_sequences")),
        ("multi_head_attention", ("num_heads", "key_dim")),
        ("batch_normalization", ()),
        ("flatten", ()),
    ],
)
def test_key_args(name, key_args):
    assert r.lookup("layer", name).key_args == key_args


def test_call_params_and_split():
    mha = r.lookup("layer", "multi_head_attention")
    assert {p.name for p in mha.call_params} == {"return_attention_scores", "use_causal_mask"}
    ctor, call = r.split_kwargs(mha, {"num_heads": 2, "key_dim": 4, "use_causal_mask": True})
    assert ctor == {"num_heads": 2, "key_dim": 4}
    assert call == {"use_causal_mask": True}


@pytest.mark.parametrize(
    "name, kinds, expected",
    [
        ("dens", ["layer"], "dense"),
        ("Conv2d", ["layer"], "conv2d"),
        ("conv2D", ["layer"], "conv2d"),
        ("maxpooling2d", ["layer"], "max_pooling2d"),
        ("maxpool2d", ["layer"], "max_pool2d"),
        ("batchnorm", ["layer"], "batch_norm"),
        ("Dens", ["layer"], "Dense"),
        ("lstn", ["layer"], "lstm"),
        ("relu", ["activation"], "relu"),
        ("sigmod", ["activation"], "sigmoid"),
        ("he_norml", ["initializer"], "he_normal"),
        ("adm", ["optimizer"], "adam"),
        ("sparse_categorical_cross_entropy", ["loss"], "sparse_categorical_crossentropy"),
        ("accuracyy", ["metric"], "accuracy"),
        ("earlystopping", ["callback"], "early_stopping"),
        ("xyzzy", ["layer", "activation"], None),
    ],
)
def test_suggest(name, kinds, expected):
    assert r.suggest(name, kinds) == expected


@pytest.mark.parametrize(
    "name, kwargs, count",
    [
        ("dense", {"units": 3}, 1),
        ("lstm", {"units": 3}, 1),
        ("lstm", {"units": 3, "return_state": True}, 3),
        ("lstm", {"units": 3, "return_state": False, "return_sequences": True}, 1),
        ("gru", {"units": 3, "return_state": True}, 2),
        ("simple_rnn", {"units": 3, "return_state": True}, 2),
        ("conv_lstm2d", {"filters": 3, "kernel_size": 3, "return_state": True}, 3),
        ("multi_head_attention", {"num_heads": 2, "key_dim": 4}, 1),
        ("multi_head_attention", {"num_heads": 2, "key_dim": 4, "return_attention_scores": True}, 2),
        ("attention", {"d_model": 8}, 1),
        ("attention", {"d_model": 8, "return_weights": True}, 2),
        ("bidirectional", {"layer": object()}, None),
        ("flatten", {}, 1),
    ],
)
def test_output_count(name, kwargs, count):
    assert r.output_count(r.lookup("layer", name), kwargs) == count


def test_output_count_of_wrappers_with_a_visible_inner_layer():
    lstm = r.lookup("layer", "lstm")
    bi = r.lookup("layer", "bidirectional")
    td = r.lookup("layer", "time_distributed")
    assert r.output_count(bi, {"layer": (lstm, {"units": 3})}) == 1
    assert r.output_count(bi, {"layer": (lstm, {"units": 3, "return_state": True})}) == 5
    assert r.output_count(bi, {"layer": (lstm, {"units": 3}), "merge_mode": None}) == 2
    assert r.output_count(td, {"layer": (r.lookup("layer", "dense"), {"units": 3})}) == 1


@pytest.mark.parametrize(
    "name, kwargs, shapes, expected",
    [
        ("dense", {"units": 10}, [(784,)], 7850),
        ("dense", {"units": 10, "use_bias": False}, [(None, 4)], 40),
        ("dense", {"units": 10}, [(None,)], None),  # unknown features
        ("dense", {"units": "ten"}, [(4,)], None),  # wrong type
        ("dense", {}, [(4,)], None),  # missing units
        ("conv2d", {"filters": 32, "kernel_size": 3}, [(28, 28, 1)], 320),
        ("conv2d", {"filters": 8, "kernel_size": (3, 5)}, [(None, None, 4)], 488),
        ("conv2d", {"filters": 8, "kernel_size": 3}, [(None, None, None)], None),
        ("embedding", {"input_dim": 1000, "output_dim": 64}, [(None,)], 64000),
        ("batch_normalization", {}, [(8, 8, 16)], 64),
        ("dropout", {"rate": 0.5}, [(None, 7)], 0),
        ("flatten", {}, [(None, 7)], 0),
        ("add", {}, [(4,), (4,)], 0),
        ("linear", {"units": 5}, [(3, 7)], 35),
        ("einsum_dense", {"equation": "ab,bc->ac", "output_shape": 4}, [(3,)], None),
    ],
)
def test_estimate_params_without_keras(name, kwargs, shapes, expected):
    assert r.estimate_params(r.lookup("layer", name), kwargs, shapes) == expected


def test_estimate_huge_layer_is_cheap():
    dense = r.lookup("layer", "dense")
    assert r.estimate_params(dense, {"units": 10**9}, [(10**9,)]) == 10**18 + 10**9


def _param(name="x", ptype="float", default=1.0):
    return Param(name, ptype, default, True)


def test_register_plugin():
    def gelu2(x, alpha=1.0):
        return x

    entry = r.register_plugin("activation", "gelu2_plugin", (_param("alpha"),), "A plugin.\n  Second line.", gelu2)
    assert entry.source == "plugin" and entry.description == "A plugin. Second line."
    assert r.lookup("activation", "gelu2_plugin") is entry
    assert r.lookup("activation", "Gelu2Plugin") is entry
    assert "gelu2_plugin" in r.names("activation")
    assert r.plugin_object(entry) is gelu2
    assert r.output_count(entry, {}) == 1
    assert r.estimate_params(entry, {}, [(3,)]) is None

    class MyBlock:
        pass

    block = r.register_plugin("layer", "MyBlock", (), "Mine.", MyBlock)
    assert r.lookup("layer", "my_block") is block
    with pytest.raises(ValueError, match="shadow"):
        r.register_plugin("layer", "my_block", (), "Again.", MyBlock)


@pytest.mark.parametrize(
    "kind, name",
    [
        ("layer", "dense"),  # canonical name
        ("layer", "Dense"),  # class name
        ("layer", "batch_norm"),  # alias
        ("layer", "Conv2D"),
        ("layer", "max_pool2d"),
        ("layer", "Linear"),  # netdsl
        ("layer", "sine"),  # an activation: both are steps
        ("activation", "relu"),
        ("activation", "Relu"),  # its snake_case twin is the layer relu
        ("activation", "dense"),
        ("loss", "mse"),
        ("optimizer", "Adam"),
        ("layer", "model"),  # a keyword
        ("layer", "not-a-name"),
        ("layer", ""),
    ],
)
def test_register_plugin_refuses(kind, name):
    with pytest.raises(ValueError):
        r.register_plugin(kind, name, (), "x", lambda x: x)
    assert r.lookup(kind, name) is None or r.lookup(kind, name).source != "plugin"


def test_register_plugin_checks_params_and_object():
    with pytest.raises(ValueError):
        r.register_plugin("layer", "ok_name", (_param(ptype="tensor"),), "x", dict)
    with pytest.raises(ValueError):
        r.register_plugin("layer", "ok_name", (), "x", 42)
    # A metric plugin may share a loss plugin's name (same function, two kinds).
    f = lambda y_true, y_pred: y_pred  # noqa: E731
    r.register_plugin("loss", "my_loss", (), "x", f)
    r.register_plugin("metric", "my_loss", (), "x", f)


# --------------------------------------------------------------------------
# Against Keras: the committed tables still describe the installed Keras.


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def _gen_module():
    path = ROOT / "scripts" / "gen_registry.py"
    spec = importlib.util.spec_from_file_location("gen_registry", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regenerating_gives_the_committed_file(keras):
    gen = _gen_module()
    assert gen.render(gen.build()) == DATA_FILE.read_text(encoding="utf-8"), (
        "Keras (or netdsl.custom) changed: run scripts/gen_registry.py and "
        "review the diff of dsl/netdsl/registry_data.json"
    )


_SAMPLES = {  # values for required parameters, by name
    "units": 2,
    "filters": 2,
    "kernel_size": 3,
    "rate": 0.5,
    "stddev": 0.1,
    "input_dim": 10,
    "output_dim": 4,
    "num_heads": 2,
    "key_dim": 4,
    "head_dim": 4,
    "num_query_heads": 2,
    "num_key_value_heads": 1,
    "pool_size": 2,
    "target_shape": (2, 2),
    "dims": (2, 1),
    "n": 3,
    "axes": 1,
    "height": 4,
    "width": 4,
    "num_bins": 4,
    "max_number": 2,
    "output_size": 2,
    "factor": 0.1,
    "height_factor": 0.1,
    "width_factor": 0.1,
    "scale": 0.5,
    "equation": "ab,bc->ac",
    "output_shape": 4,
    "d_model": 8,
    "activation": "relu",
    "initial_learning_rate": 0.1,
    "decay_steps": 10,
    "first_decay_steps": 10,
    "decay_rate": 0.9,
    "boundaries": [10],
    "values": [0.1, 0.01],
    "num_classes": 3,
    "target_class_ids": [0, 1],
    "recall": 0.5,
    "precision": 0.5,
    "specificity": 0.5,
    "sensitivity": 0.5,
    "threshold": 0.5,
    "default_value": 0.0,
    "init_values": 1e-6,
    "projection_dim": 4,
}


# Where a default alone is not a valid configuration.
_VALID = {
    ("layer", "category_encoding"): {"num_tokens": 4},
    ("layer", "discretization"): {"num_bins": 4},
    ("layer", "random_posterization"): {"factor": 4},
}


def _all_defaults(keras, entry):
    """Every constructor parameter at its default, required ones sampled."""
    kwargs = {}
    for p in entry.params:
        if p.required:
            if p.type == "layer":
                kwargs[p.name] = keras.layers.LSTM(2)
            else:
                kwargs[p.name] = _SAMPLES[p.name]
        elif p.type == "layer":
            continue
        else:
            kwargs[p.name] = p.default
    return kwargs


def test_every_entry_maps_to_a_real_keras_object(keras):
    from netdsl.custom import factory as rk

    bases = {
        "layer": keras.layers.Layer,
        "initializer": keras.initializers.Initializer,
        "regularizer": keras.regularizers.Regularizer,
        "constraint": keras.constraints.Constraint,
        "optimizer": keras.optimizers.Optimizer,
        "loss": keras.losses.Loss,
        "metric": keras.metrics.Metric,
        "schedule": keras.optimizers.schedules.LearningRateSchedule,
        "callback": keras.callbacks.Callback,
    }
    failures = []
    for kind in r.KINDS:
        for name in r.names(kind):
            entry = r.lookup(kind, name)
            obj = rk.keras_object(entry)
            if kind == "activation":
                assert callable(obj)
                continue
            if kind == "metric" and name == "accuracy":
                assert obj() == "accuracy"
                continue
            assert isinstance(obj, type) and issubclass(obj, bases[kind]), (kind, name)
            # Every parameter in the table is accepted at its default.
            kwargs = {**_all_defaults(keras, entry), **_VALID.get((kind, name), {})}
            ctor, _ = r.split_kwargs(entry, kwargs)
            try:
                instance = obj(**ctor)
            except Exception as exc:  # collect them all
                failures.append(f"{kind} {name}: {exc!r}"[:300])
                continue
            assert isinstance(instance, bases[kind])
            assert type(instance) is obj
    assert not failures, "\n".join(failures)


def test_activation_params_are_accepted(keras):
    from netdsl.custom import factory as rk

    x = keras.ops.convert_to_tensor([[-1.0, 0.5, 2.0, 3.0]])
    for name in r.names("activation"):
        entry = r.lookup("activation", name)
        kwargs = {p.name: (_SAMPLES[p.name] if p.required else p.default) for p in entry.params}
        fn = rk.make(entry, kwargs)
        assert tuple(fn(x).shape)[0] == 1, name


def test_keras_object_refuses_what_is_not_allow_listed(keras):
    from netdsl.custom import factory as rk

    dense = r.lookup("layer", "dense")
    forged = dataclasses.replace(dense, keras_name="Lambda")
    with pytest.raises(ValueError):
        rk.keras_object(forged)
    with pytest.raises(ValueError):
        rk.keras_object(dataclasses.replace(dense, name="lambda", keras_name="Lambda"))
    with pytest.raises(TypeError):
        rk.keras_object("Dense")


def test_make(keras):
    from netdsl.custom import factory as rk

    assert rk.make(r.lookup("metric", "accuracy")) == "accuracy"
    assert rk.make(r.lookup("metric", "acc"), as_written="acc") == "acc"
    mae = rk.make(r.lookup("metric", "mae"), as_written="mae")
    assert isinstance(mae, keras.metrics.MeanAbsoluteError) and mae.name == "mae"
    auc = rk.make(r.lookup("metric", "auc"), {"curve": "PR"})
    assert auc.curve.name == "PR"
    adam = rk.make(r.lookup("optimizer", "adam"), {"learning_rate": 0.01, "clipvalue": 1.0})
    assert isinstance(adam, keras.optimizers.Adam) and adam.clipvalue == 1.0
    loss = rk.make(r.lookup("loss", "sparse_categorical_crossentropy"), {"from_logits": True})
    assert loss.get_config()["from_logits"] is True
    assert rk.make(r.lookup("activation", "relu")) is keras.activations.relu
    assert isinstance(rk.make(r.lookup("initializer", "he_normal")), keras.initializers.HeNormal)
    with pytest.raises(ValueError):
        rk.make(r.lookup("layer", "dense"), {"units": 2})


def test_plugin_object_through_registry_keras(keras):
    from netdsl.custom import factory as rk

    class Twice(keras.layers.Layer):
        def call(self, x):
            return 2 * x

    entry = r.register_plugin("layer", "twice_plugin", (), "Twice.", Twice)
    assert rk.keras_object(entry) is Twice


def _count(keras, layer, shapes):
    inputs = [keras.Input(s) for s in shapes]
    layer(*inputs) if len(inputs) > 1 and isinstance(
        layer, (keras.layers.MultiHeadAttention, keras.layers.GroupQueryAttention)
    ) else layer(inputs if len(inputs) > 1 else inputs[0])
    return layer.count_params()


_ESTIMATES = [
    ("dense", {"units": 10}, [(784,)]),
    ("dense", {"units": 10, "use_bias": False}, [(5, 7)]),
    ("dense", {"units": 6, "lora_rank": 2}, [(7,)]),
    ("conv1d", {"filters": 4, "kernel_size": 5}, [(20, 3)]),
    ("conv2d", {"filters": 32, "kernel_size": 3}, [(28, 28, 1)]),
    ("conv2d", {"filters": 8, "kernel_size": (3, 5), "groups": 2}, [(9, 9, 4)]),
    ("conv2d", {"filters": 8, "kernel_size": 3, "data_format": "channels_first", "use_bias": False}, [(4, 9, 9)]),
    ("conv3d", {"filters": 2, "kernel_size": 2}, [(4, 4, 4, 3)]),
    ("conv2d_transpose", {"filters": 5, "kernel_size": 3}, [(8, 8, 3)]),
    ("conv1d_transpose", {"filters": 5, "kernel_size": 3}, [(8, 3)]),
    ("depthwise_conv2d", {"kernel_size": 3}, [(8, 8, 6)]),
    ("depthwise_conv2d", {"kernel_size": 3, "depth_multiplier": 2}, [(8, 8, 6)]),
    ("depthwise_conv1d", {"kernel_size": 3}, [(8, 6)]),
    ("separable_conv2d", {"filters": 16, "kernel_size": 3}, [(8, 8, 6)]),
    ("separable_conv1d", {"filters": 16, "kernel_size": 3, "depth_multiplier": 2}, [(8, 6)]),
    ("embedding", {"input_dim": 1000, "output_dim": 64}, [(12,)]),
    ("embedding", {"input_dim": 100, "output_dim": 8, "lora_rank": 3}, [(12,)]),
    ("reversible_embedding", {"input_dim": 100, "output_dim": 8}, [(12,)]),
    ("reversible_embedding", {"input_dim": 100, "output_dim": 8, "tie_weights": False}, [(12,)]),
    ("lstm", {"units": 16}, [(None, 8)]),
    ("gru", {"units": 16}, [(None, 8)]),
    ("gru", {"units": 16, "reset_after": False}, [(None, 8)]),
    ("simple_rnn", {"units": 16}, [(None, 8)]),
    ("conv_lstm2d", {"filters": 4, "kernel_size": 3}, [(5, 8, 8, 3)]),
    ("conv_lstm1d", {"filters": 4, "kernel_size": 3}, [(5, 8, 3)]),
    ("batch_normalization", {}, [(8, 8, 16)]),
    ("batch_normalization", {"axis": 1, "center": False}, [(16, 8, 8)]),
    ("layer_normalization", {}, [(10, 32)]),
    ("layer_normalization", {"axis": (1, 2)}, [(10, 32)]),
    ("group_normalization", {"groups": 4}, [(8, 16)]),
    ("rms_normalization", {}, [(10, 32)]),
    ("prelu", {}, [(5, 6)]),
    ("prelu", {"shared_axes": (1, 2)}, [(5, 5, 6)]),
    ("multi_head_attention", {"num_heads": 4, "key_dim": 16}, [(10, 32), (10, 32)]),
    ("multi_head_attention", {"num_heads": 2, "key_dim": 8, "value_dim": 4, "use_bias": False}, [(10, 32), (7, 12)]),
    (
        "multi_head_attention",
        {"num_heads": 2, "key_dim": 8, "output_shape": 5, "use_gate": True},
        [(10, 32), (7, 12), (7, 6)],
    ),
    ("group_query_attention", {"head_dim": 8, "num_query_heads": 4, "num_key_value_heads": 2}, [(10, 32), (7, 32)]),
    (
        "group_query_attention",
        {"head_dim": 8, "num_query_heads": 4, "num_key_value_heads": 1, "use_bias": False, "use_gate": True},
        [(10, 32), (7, 32), (7, 32)],
    ),
    ("dot_product_attention", {"use_scale": True}, [(10, 8), (7, 8)]),
    ("additive_attention", {}, [(10, 8), (7, 8)]),
    ("dropout", {"rate": 0.5}, [(7,)]),
    ("max_pooling2d", {}, [(8, 8, 3)]),
    ("global_average_pooling2d", {}, [(8, 8, 3)]),
    ("flatten", {}, [(8, 8, 3)]),
    ("concatenate", {}, [(4,), (5,)]),
    ("add", {}, [(4,), (4,)]),
    ("relu", {}, [(4,)]),
    ("zero_padding2d", {}, [(4, 4, 2)]),
    ("gaussian_noise", {"stddev": 0.1}, [(4,)]),
    ("linear", {"units": 5}, [(3, 7)]),
    ("scale", {}, [(3,)]),
    ("scaled_sigmoid", {}, [(3,)]),
    ("layer_scale", {"init_values": 1e-6, "projection_dim": 6}, [(4, 4, 6)]),
    ("attention", {"d_model": 8, "heads": 2}, [(5, 6)]),
    ("attention", {"d_model": 8, "use_bias": True}, [(5, 6), (4, 3), (4, 2)]),
    ("residual", {"filters": 8}, [(8, 8, 8)]),
    ("residual", {"filters": 8, "stride": 2}, [(8, 8, 8)]),
    ("residual", {"filters": 16, "kernel_size": 5}, [(8, 8, 3)]),
    ("residual", {"filters": 4}, [(10, 3)]),
]


def test_estimate_params_of_wrappers_matches_keras(keras):
    from netdsl.custom import factory as rk

    lstm, gru = r.lookup("layer", "lstm"), r.lookup("layer", "gru")
    dense = r.lookup("layer", "dense")
    bi, td = r.lookup("layer", "bidirectional"), r.lookup("layer", "time_distributed")
    cases = [
        (bi, {"layer": (lstm, {"units": 4})}, [(None, 6)], lambda: keras.layers.Bidirectional(keras.layers.LSTM(4))),
        (
            bi,
            {"layer": (lstm, {"units": 4}), "backward_layer": (lstm, {"units": 4, "go_backwards": True})},
            [(None, 6)],
            lambda: keras.layers.Bidirectional(
                keras.layers.LSTM(4), backward_layer=keras.layers.LSTM(4, go_backwards=True)
            ),
        ),
        (
            bi,
            {"layer": (gru, {"units": 3, "return_sequences": True})},
            [(5, 6)],
            lambda: keras.layers.Bidirectional(keras.layers.GRU(3, return_sequences=True)),
        ),
        (td, {"layer": (dense, {"units": 3})}, [(5, 6)], lambda: keras.layers.TimeDistributed(keras.layers.Dense(3))),
    ]
    for entry, kwargs, shapes, build in cases:
        assert r.estimate_params(entry, kwargs, shapes) == _count(keras, build(), shapes)
    assert r.estimate_params(bi, {"layer": "lstm(4)"}, [(None, 6)]) is None
    assert rk.keras_object(bi) is keras.layers.Bidirectional


@pytest.mark.parametrize("name, kwargs, shapes", _ESTIMATES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(_ESTIMATES)])
def test_estimate_params_matches_keras(keras, name, kwargs, shapes):
    from netdsl.custom import factory as rk

    entry = r.lookup("layer", name)
    estimate = r.estimate_params(entry, kwargs, shapes)
    assert estimate is not None
    layer = rk.keras_object(entry)(**kwargs)
    assert estimate == _count(keras, layer, shapes)


def test_layer_scale_is_counted_and_refuses_a_projection_of_another_width():
    """`layer_scale(init_values, projection_dim)` (ConvNeXt's LayerScale): one scale per channel, so check counts
    projection_dim parameters, and a projection_dim that is not the input's channels is one line at the step
    (Keras would broadcast `x * gamma` into another shape than the layer says)."""
    import netdsl

    spec = "model m {{\n  input x: (5, 5, 4)\n  output y = x -> layer_scale(1e-6, {width})\n}}\n"
    assert netdsl.check(text=spec.format(width=4), filename="ok.net") == []
    assert (
        r.estimate_params(r.lookup("layer", "layer_scale"), {"init_values": 1e-6, "projection_dim": 4}, [(5, 5, 4)])
        == 4
    )
    [diagnostic] = netdsl.check(text=spec.format(width=8), filename="bad.net")
    assert (diagnostic.line, diagnostic.col) == (3, 19)
    assert diagnostic.message == "projection_dim is 8, but its input has 4 channels (the last axis)"
