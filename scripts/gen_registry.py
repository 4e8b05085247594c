"""Generate dsl/netdsl/registry/data.json from the installed Keras.

Run by a developer after a Keras upgrade (it imports keras):

    .venv/bin/python scripts/gen_registry.py          # write the file
    .venv/bin/python scripts/gen_registry.py --check  # exit 1 if it would change

The output is the allow-list the checker reads without importing Keras:
for each kind, each entry's parameters (signature order, types, defaults),
inputs, call style, diagram key arguments and one-line description. It is
deterministic (sorted keys, signature order, no timestamps), so the test
suite regenerates it in memory and compares it with the committed file.

Everything a spec may name is decided HERE, explicitly: the public classes of
a Keras module minus the EXCLUDED tables below, whose comments say why.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dsl"))

from netdsl.registry import KINDS, TYPES, snake_case, type_of_default  # noqa: E402

OUT = ROOT / "dsl" / "netdsl" / "registry" / "data.json"
FORMAT = 1

# --------------------------------------------------------------------------
# Exclusions: names that are public in Keras but never in a spec.

EXCLUDED = {
    "layer": {
        "Lambda": "runs an arbitrary Python function",
        "TFSMLayer": "loads a SavedModel from a file path",
        "TorchModuleWrapper": "wraps foreign (PyTorch) code",
        "JaxLayer": "wraps arbitrary JAX functions",
        "FlaxLayer": "wraps arbitrary Flax modules",
        "Layer": "abstract base class",
        "InputLayer": "model inputs are declared with `input`",
        "Wrapper": "abstract base class",
        "RNN": "generic RNN takes a Python cell object",
        "StackedRNNCells": "takes Python cell objects",
        "Pipeline": "takes a list of Python layer objects",
        "STFTSpectrogram": "needs scipy, which netdsl does not depend on",
        # *Cell classes (LSTMCell, GRUCell, SimpleRNNCell) are excluded by
        # suffix below: they are only usable inside RNN.
    },
    # StringLookup / IntegerLookup / TextVectorization ARE allowed: their
    # `vocabulary` (and `idf_weights`) are typed "list", so the checker
    # refuses a string, which Keras would read as a file path. The other
    # arguments of TextVectorization that accept callables (`standardize`,
    # `split`) get closed string choices.
    "activation": {
        "get": "resolver, not an activation",
        "serialize": "not an activation",
        "deserialize": "resolver, not an activation",
    },
    "initializer": {
        "Initializer": "abstract base class",
        "STFT": "needs scipy, which netdsl does not depend on",
    },
    "regularizer": {"Regularizer": "abstract base class"},
    "constraint": {"Constraint": "abstract base class"},
    "optimizer": {
        "Optimizer": "abstract base class",
        "LossScaleOptimizer": "wraps an optimizer object (use mixed_precision)",
        "MultiOptimizer": "takes optimizer objects",
        "OptimizerMap": "takes optimizer objects",
    },
    "loss": {
        "Loss": "abstract base class",
    },
    "metric": {
        "Metric": "abstract base class",
        "MeanMetricWrapper": "wraps a Python function",
        "Mean": "aggregates arbitrary values, not (y_true, y_pred)",
        "Sum": "aggregates arbitrary values, not (y_true, y_pred)",
        # `accuracy` is Keras's auto-selecting string metric (binary,
        # categorical or sparse categorical accuracy, from the loss and
        # shapes), which is what `metrics = [accuracy]` means to a Keras
        # user. The class Accuracy (exact equality) is almost never meant
        # and would shadow it, so it is left out.
        "Accuracy": "replaced by the Keras auto-selecting `accuracy`",
    },
    "schedule": {"LearningRateSchedule": "abstract base class"},
    "callback": {
        "Callback": "abstract base class",
        "CallbackList": "container of callback objects",
        "History": "added by fit() itself",
        "ProgbarLogger": "added by fit() itself (verbose)",
        "LambdaCallback": "runs arbitrary Python functions",
        "LearningRateScheduler": "takes a Python function (use a schedule)",
        "CSVLogger": "writes a file the spec would name",
        "ModelCheckpoint": "writes files the spec would name",
        "OrbaxCheckpoint": "writes files the spec would name",
        "BackupAndRestore": "writes and reads a directory the spec would name",
        "TensorBoard": "writes log files the spec would name",
        "RemoteMonitor": "sends data over the network",
    },
}

# Parameters dropped from a constructor's table (never settable from a spec).
DROPPED_PARAMS = {
    "weights": "initial weight arrays",
    "quantization_config": "a Python quantization-config object",
    "gptq_unpacked_column_size": "internal quantization detail",
}

# --------------------------------------------------------------------------
# Names and aliases

# Canonical names that differ from snake_case(ClassName).
NAME_OVERRIDES = {
    ("layer", "Attention"): "dot_product_attention",  # `attention` is netdsl's
}

EXTRA_ALIASES = {
    "layer": {
        "batch_normalization": ["batch_norm"],
        "layer_normalization": ["layer_norm"],
        "group_normalization": ["group_norm"],
        "rms_normalization": ["rms_norm"],
        "up_sampling1d": ["upsampling1d"],
        "up_sampling2d": ["upsampling2d"],
        "up_sampling3d": ["upsampling3d"],
    },
    "activation": {},
    "initializer": {  # Keras's own string aliases
        "random_normal": ["normal"],
        "random_uniform": ["uniform"],
        "ones": ["one"],
        "zeros": ["zero"],
    },
    "regularizer": {"l1_l2": ["l1l2"]},
    "constraint": {},
    "optimizer": {"schedule_free_adamw": ["schedulefreeadamw"]},
    "loss": {
        "mean_squared_error": ["mse"],
        "mean_absolute_error": ["mae"],
        "mean_absolute_percentage_error": ["mape"],
        "mean_squared_logarithmic_error": ["msle"],
        "kl_divergence": ["kld"],
        "binary_crossentropy": ["bce"],
    },
    "metric": {
        "mean_squared_error": ["mse"],
        "mean_absolute_error": ["mae"],
        "mean_absolute_percentage_error": ["mape"],
        "mean_squared_logarithmic_error": ["msle"],
        "binary_crossentropy": ["bce"],
        "accuracy": ["acc"],
    },
    "schedule": {},
    "callback": {},
}

# --------------------------------------------------------------------------
# Parameter types

BY_NAME = {
    "activation": "activation",
    "recurrent_activation": "activation",
    "kernel_size": "ints",
    "strides": "ints",
    "pool_size": "ints",
    "dilation_rate": "ints",
    "output_padding": "ints",
    "tile_grid_size": "ints",
    "axis": "ints",
    "axes": "ints",
    "shared_axes": "ints",
    "attention_axes": "ints",
    "output_size": "ints",
    "ngrams": "ints",
    "input_axes": "ints",
    "output_axes": "ints",
    "noise_shape": "shape",
    "target_shape": "shape",
    "dims": "tuple",
    "layer": "layer",
    "backward_layer": "layer",
    "learning_rate": "schedule_or_float",
    "name": "str",
    "dtype": "dtype",
    "trainable": "bool",
    "seed": "int",
    "data_format": "str",
    "vocabulary": "list",
    "idf_weights": "list",
    "bin_boundaries": "list",
    "boundaries": "list",
    "values": "list",
    "exclude_layers": "list",
    "label_weights": "list",
    "renorm_clipping": "dict",
    "use_cudnn": "any",  # "auto", True or False
    "mask_token": "any",
    "oov_token": "any",
    "output_shape": "any",  # int or tuple (with none)
    "factor": "any",
    "height_factor": "any",
    "width_factor": "any",
    "brightness_factor": "any",
    "contrast_factor": "any",
    "saturation_factor": "any",
    "hue_factor": "any",
    "scale_factor": "any",
    "fill_value": "any",
    "thresholds": "any",
    "mean": "any",
    "variance": "any",
    "cropping": "any",  # int, tuple, or tuple of tuples
    "value_range": "tuple",
    "target_class_ids": "tuple",
    "standardize": "str",
    "split": "str",  # callables allowed by Keras: not here
    "average": "str",
    "class_aggregation": "str",
    "monitor": "str",
    "merge_mode": "str",
    "flash_attention": "bool",
    "reverse_dtype": "dtype",
    "mask_value": "any",
    "salt": "any",  # int, or (int, int) for salt
}
BY_SUFFIX = (
    ("_initializer", "initializer"),
    ("_regularizer", "regularizer"),
    ("_constraint", "constraint"),
)
# Integer-valued by name, whatever the default.
INT_NAMES = {
    "units",
    "filters",
    "n",
    "input_dim",
    "output_dim",
    "num_heads",
    "key_dim",
    "value_dim",
    "head_dim",
    "num_query_heads",
    "num_key_value_heads",
    "height",
    "width",
    "num_bins",
    "max_number",
    "groups",
    "num_classes",
    "decay_steps",
    "first_decay_steps",
    "max_tokens",
    "num_tokens",
    "output_sequence_length",
    "sliding_window",
    "lora_rank",
    "class_id",
    "top_k",
    "num_labels",
    "ignore_class",
    "ema_overwrite_frequency",
    "gradient_accumulation_steps",
    "sequence_length",
    "frame_step",
    "fft_length",
    "depth_multiplier",
    "d_model",
    "heads",
    "stride",
}
# Float-valued by name, even where Keras writes an integer default.
FLOAT_NAMES = {
    "rate",
    "stddev",
    "scale",
    "offset",
    "initial_learning_rate",
    "decay_rate",
    "threshold",
    "default_value",
    "recall",
    "precision",
    "specificity",
    "sensitivity",
    "q",
    "max_value",
    "min_value",
    "min_delta",
    "label_smoothing",
    "b",
    "gamma",
    "baseline",
    "min_lr",
    "adam_lr_ratio",
    "weight_decay",
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "loss_scale_factor",
    "lora_alpha",
    "warmup_target",
    "max_freq",
    "logit_soft_cap",
    "epsilon",
    "alpha",
    "l1",
    "l2",
    "momentum",
    "delta",
}
# (entry name, param) -> type, where the rules above are wrong.
PARAM_OVERRIDES = {
    ("zero_padding1d", "padding"): "ints",
    ("zero_padding2d", "padding"): "any",
    ("zero_padding3d", "padding"): "any",
    ("up_sampling1d", "size"): "int",
    ("up_sampling2d", "size"): "ints",
    ("up_sampling3d", "size"): "ints",
    ("einsum_dense", "bias_axes"): "str",
    ("einsum_dense", "equation"): "str",
    ("activation", "activation"): "activation",
    ("residual", "kernel_size"): "int",  # netdsl: one int, all axes
    ("layer_scale", "init_values"): "float",
    ("layer_scale", "projection_dim"): "int",
    ("random_erasing", "scale"): "any",  # (min, max) tuple
    ("random_perspective", "scale"): "float",
    ("random_elastic_transform", "scale"): "any",
    ("rescaling", "scale"): "any",  # number or per-channel list
    ("rescaling", "offset"): "any",
    ("orthogonal_regularizer", "mode"): "str",
    ("constant", "value"): "float",
    ("circle", "gamma"): "float",
    ("f1_score", "threshold"): "float",
    ("fbeta_score", "threshold"): "float",
    ("fbeta_score", "beta"): "float",
    ("normalization", "axis"): "ints",
    ("dot", "axes"): "ints",
    ("random_gaussian_blur", "kernel_size"): "ints",
    ("random_gaussian_blur", "sigma"): "any",
    ("random_rotation", "factor"): "any",
    ("stft_spectrogram", "padding"): "str",
    ("category_encoding", "output_mode"): "str",
    ("sparse_top_k_categorical_accuracy", "k"): "int",
    ("orthogonal_regularizer", "factor"): "float",
    ("reduce_lr_on_plateau", "factor"): "float",
    ("aug_mix", "factor"): "any",
    ("random_normal", "mean"): "float",
    ("truncated_normal", "mean"): "float",
}

DATA_FORMATS = ("channels_last", "channels_first")
PADDING = ("valid", "same")
CHOICES_BY_NAME = {
    "data_format": DATA_FORMATS,
    "merge_mode": ("sum", "mul", "concat", "ave"),
    "reduction": ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none"),
    "score_mode": ("dot", "concat"),
    "curve": ("ROC", "PR"),
    "summation_method": ("interpolation", "minoring", "majoring"),
    "standardize": ("lower_and_strip_punctuation", "lower", "strip_punctuation"),
    "split": ("whitespace", "character"),
}
CHOICES_BY_PARAM = {
    ("conv1d", "padding"): ("valid", "same", "causal"),
    ("early_stopping", "mode"): ("auto", "min", "max"),
    ("reduce_lr_on_plateau", "mode"): ("auto", "min", "max"),
    ("variance_scaling", "mode"): ("fan_in", "fan_out", "fan_avg"),
    ("variance_scaling", "distribution"): ("truncated_normal", "untruncated_normal", "uniform", "normal"),
    ("orthogonal_regularizer", "mode"): ("rows", "columns"),
    ("r2_score", "class_aggregation"): ("uniform_average", "variance_weighted_average"),
}

# (entry, param) whose None Keras takes though its default is not None.
NULLABLE = {
    ("r2_score", "class_aggregation"),  # None: one R2 per output column
}

UNTYPED: list[str] = []  # (entry, param) typed "any" by fallback: reviewed


def param_type(entry: str, pname: str, default, required: bool) -> str:
    if (entry, pname) in PARAM_OVERRIDES:
        return PARAM_OVERRIDES[(entry, pname)]
    if pname in BY_NAME:
        return BY_NAME[pname]
    for suffix, t in BY_SUFFIX:
        if pname.endswith(suffix) or pname == suffix[1:]:
            return t
    if pname == "activity_regularizer":
        return "regularizer"
    if isinstance(default, bool):
        return "bool"
    if pname in INT_NAMES:
        return "int"
    if pname in FLOAT_NAMES:
        return "float"
    implied = type_of_default(default)
    if implied == "any":
        UNTYPED.append(f"{entry}.{pname}")
    return implied


def param_choices(entry: str, pname: str, ptype: str):
    if ptype != "str":
        return None
    if (entry, pname) in CHOICES_BY_PARAM:
        return list(CHOICES_BY_PARAM[(entry, pname)])
    if pname in CHOICES_BY_NAME:
        return list(CHOICES_BY_NAME[pname])
    if pname == "padding":
        return list(PADDING)
    return None


def jsonable(value):
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"default not JSON-able: {value!r}")


def make_param(entry, pname, default, positional):
    required = default is inspect.Parameter.empty
    ptype = param_type(entry, pname, None if required else default, required)
    assert ptype in TYPES, (entry, pname, ptype)
    d = {"name": pname, "type": ptype, "positional": positional}
    if required:
        d["required"] = True
    else:
        d["default"] = jsonable(default)
    choices = param_choices(entry, pname, ptype)
    if choices is not None:
        d["choices"] = choices
    if (entry, pname) in NULLABLE:
        d["nullable"] = True
    return d


def signature_params(entry, func, *, skip_first=False, base=(), positional_base=False):
    """Parameter table from `func`'s signature (self dropped; the first
    parameter dropped too with skip_first), **kwargs replaced by `base`."""
    sig = inspect.signature(func)
    params, seen = [], set()
    items = list(sig.parameters.values())
    if items and items[0].name == "self":
        items = items[1:]
    if skip_first:
        items = items[1:]
    has_kwargs = False
    for p in items:
        if p.kind is p.VAR_KEYWORD:
            has_kwargs = True
            continue
        if p.kind is p.VAR_POSITIONAL or p.name in DROPPED_PARAMS:
            continue
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        if p.name in ("name", "dtype", "trainable") and not positional_base:
            positional = False
        params.append(make_param(entry, p.name, p.default, positional))
        seen.add(p.name)
    if has_kwargs:
        for b in base:
            if b not in seen:
                default = True if b == "trainable" else None
                params.append(make_param(entry, b, default, False))
    # Base keywords go last so the positional ones form a prefix.
    params.sort(key=lambda d: not d["positional"])
    return params


def description(obj) -> str:
    """The docstring's first sentence (its first paragraph, up to ". "), on
    one line."""
    paragraph = []
    for line in (inspect.getdoc(obj) or "").splitlines():
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    text = " ".join(" ".join(paragraph).split())
    return first_sentence(text)


_ABBREVIATIONS = ("e.g.", "i.e.", "a.k.a.", "etc.", "vs.", "cf.", "resp.", "approx.")


def first_sentence(text: str) -> str:
    """Up to the first ". " that ends a sentence: not an abbreviation (`a.k.a.`, `e.g.`)
    nor inside parentheses; a doubled final period made one."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "." and depth <= 0 and (i + 1 == len(text) or text[i + 1] == " "):
            if not text[: i + 1].lower().endswith(_ABBREVIATIONS):
                return re.sub(r"\.{2,}$", ".", text[: i + 1])
    return re.sub(r"\.{2,}$", ".", text)


# --------------------------------------------------------------------------
# Layers

INPUTS = {
    "add": (2, None),
    "average": (2, None),
    "maximum": (2, None),
    "minimum": (2, None),
    "multiply": (2, None),
    "concatenate": (2, None),
    "subtract": (2, 2),
    "dot": (2, 2),
    "multi_head_attention": (2, 3),
    "group_query_attention": (2, 3),
    "dot_product_attention": (2, 3),
    "additive_attention": (2, 3),
    "hashed_crossing": (2, 2),
    "attention": (1, 4),  # netdsl: x, (q, kv), (q, k, v) or (q, k, v, mask)
}
CALL_STYLE = {
    "add": "list",
    "average": "list",
    "maximum": "list",
    "minimum": "list",
    "multiply": "list",
    "concatenate": "list",
    "subtract": "list",
    "dot": "list",
    "dot_product_attention": "list",
    "additive_attention": "list",
    "hashed_crossing": "list",
    "attention": "list",
    "multi_head_attention": "args",
    "group_query_attention": "args",
}
# Constant keyword arguments of call() a spec may give with the constructor's.
CALL_PARAMS = {
    name: [("return_attention_scores", False), ("use_causal_mask", False)]
    for name in ("multi_head_attention", "group_query_attention", "dot_product_attention", "additive_attention")
}

# Every other argument of a layer's call() is one of these: a constant netdsl leaves to Keras'
# default (`training`, set by fit/predict; reversible_embedding's `reverse`, which changes what the
# layer is), or a tensor a spec passes by keyword (`lstm(64, initial_state=[h, c])`), listed with
# the form it takes. A new call argument in a Keras upgrade stops the generator until it is sorted here.
CALL_CONSTANTS_LEFT = ("training", "reverse")
TENSOR_CALL_ARGS = {
    "initial_state": "list",  # an RNN's states: [h, c] of an LSTM, [h] or h of a GRU
    "mask": "one",  # per step (RNNs, pooling, time_distributed) or per element (softmax, batch_normalization)
    "query_mask": "one",
    "value_mask": "one",
    "key_mask": "one",
    "attention_mask": "one",
    "count_weights": "one",  # category_encoding: a weight per input value
    "value": "one",  # multi_head_attention's value and key: by position in a tuple too
    "key": "one",
}
LIST_MASKS = ("additive_attention", "dot_product_attention")  # Attention's mask is [query_mask, value_mask]


def call_tensors(name, cls):
    """The arguments of `cls.call` that take tensors, as data.json lists them (see TENSOR_CALL_ARGS)."""
    found = []
    signature = list(inspect.signature(cls.call).parameters.values())[1:]  # without self
    constants = {p for p, _ in CALL_PARAMS.get(name, ())} | set(CALL_CONSTANTS_LEFT)
    for position, param in enumerate(signature[1:], start=1):  # after the first input
        if param.name in constants or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        assert param.name in TENSOR_CALL_ARGS, f"{name}.call takes {param.name!r}: sort it in gen_registry.py"
        item = {"name": param.name}
        if TENSOR_CALL_ARGS[param.name] == "list" or (param.name == "mask" and name in LIST_MASKS):
            item["listed"] = True
        if CALL_STYLE.get(name) == "args" and position < INPUTS.get(name, (1, 1))[1]:
            item["position"] = position  # multi_head_attention(query, value, key)
        found.append(item)
    return found


KEY_ARGS = {
    "dense": ["units", "activation"],
    "einsum_dense": ["equation", "output_shape", "activation"],
    "depthwise_conv1d": ["kernel_size", "strides", "depth_multiplier", "activation"],
    "depthwise_conv2d": ["kernel_size", "strides", "depth_multiplier", "activation"],
    "embedding": ["input_dim", "output_dim"],
    "reversible_embedding": ["input_dim", "output_dim"],
    "multi_head_attention": ["num_heads", "key_dim"],
    "group_query_attention": ["head_dim", "num_query_heads", "num_key_value_heads"],
    "concatenate": ["axis"],
    "dot": ["axes"],
    "softmax": ["axis"],
    "relu": ["max_value"],
    "leaky_relu": ["negative_slope"],
    "elu": ["alpha"],
    "activation": ["activation"],
    "group_normalization": ["groups"],
    "reshape": ["target_shape"],
    "permute": ["dims"],
    "repeat_vector": ["n"],
    "zero_padding1d": ["padding"],
    "zero_padding2d": ["padding"],
    "zero_padding3d": ["padding"],
    "cropping1d": ["cropping"],
    "cropping2d": ["cropping"],
    "cropping3d": ["cropping"],
    "up_sampling1d": ["size"],
    "up_sampling2d": ["size"],
    "up_sampling3d": ["size"],
    "bidirectional": ["merge_mode"],
    "resizing": ["height", "width"],
    "rescaling": ["scale", "offset"],
    "linear": ["units"],
    "scale": ["multiplier"],
    "scaled_sigmoid": ["scale"],
    "attention": ["d_model", "heads"],
    "residual": ["filters", "kernel_size", "stride"],
}


def layer_key_args(name, params):
    if name in KEY_ARGS:
        return KEY_ARGS[name]
    have = [p["name"] for p in params]
    if name in ("lstm", "gru", "simple_rnn"):
        return ["units", "return_sequences"]
    if name.startswith("conv_lstm"):
        return ["filters", "kernel_size", "return_sequences"]
    if name.startswith(("conv", "separable_conv")):
        return ["filters", "kernel_size", "strides", "activation"]
    if "pooling" in name and "global" not in name and "adaptive" not in name:
        return ["pool_size", "strides"]
    if "dropout" in name:
        return ["rate"]
    required = [p["name"] for p in params if p.get("required")]
    return [a for a in required if a in have]


def public_groups(module, base):
    """{class: sorted public names} for the classes of `module` derived
    from `base` (None: any class or function)."""
    groups = {}
    for pub in sorted(dir(module)):
        if pub.startswith("_"):
            continue
        obj = getattr(module, pub)
        if base is not None and not (inspect.isclass(obj) and issubclass(obj, base)):
            continue
        groups.setdefault(obj, []).append(pub)
    return groups


def primary_name(obj, pubs):
    own = getattr(obj, "__name__", None)
    return own if own in pubs else pubs[0]


def make_entry(
    kind,
    name,
    keras_name,
    params,
    desc,
    aliases,
    source="keras",
    inputs=(1, 1),
    call_style="single",
    key_args=(),
    call_params=(),
    call_tensors=(),
):
    return {
        "keras_name": keras_name,
        "params": params,
        "description": desc,
        "inputs": list(inputs),
        "call_style": call_style,
        "key_args": list(key_args),
        "source": source,
        "aliases": sorted(set(aliases) - {name}),
        "call_params": call_params,
        "call_tensors": list(call_tensors),
    }


def layer_entries(keras):
    out, excluded = {}, []
    base = ("name", "dtype", "trainable")
    for cls, pubs in public_groups(keras.layers, keras.layers.Layer).items():
        primary = primary_name(cls, pubs)
        if primary in EXCLUDED["layer"] or primary.endswith("Cell"):
            excluded.append(primary)
            continue
        name = NAME_OVERRIDES.get(("layer", primary), snake_case(primary))
        aliases = set(pubs) | {snake_case(p) for p in pubs if p != primary}
        aliases |= set(EXTRA_ALIASES["layer"].get(name, ()))
        params = signature_params(name, cls.__init__, base=base)
        call_params = []
        if name in CALL_PARAMS:
            call_sig = inspect.signature(cls.call).parameters
            for pname, default in CALL_PARAMS[name]:
                assert call_sig[pname].default == default, (name, pname)
                call_params.append(make_param(name, pname, default, False))
        out[name] = make_entry(
            "layer",
            name,
            primary,
            params,
            description(cls),
            aliases,
            inputs=INPUTS.get(name, (1, 1)),
            call_style=CALL_STYLE.get(name, "single"),
            key_args=layer_key_args(name, params),
            call_params=call_params,
            call_tensors=call_tensors(name, cls),
        )
    from netdsl.custom import layers as custom

    for name, cls in sorted(custom.LAYERS.items()):
        assert name not in out, f"netdsl layer {name!r} shadows a Keras layer"
        params = signature_params(name, cls.__init__, base=base, positional_base=True)
        twin = cls.__name__
        aliases = set() if any(twin in e["aliases"] or twin == k for k, e in out.items()) else {twin}
        out[name] = make_entry(
            "layer",
            name,
            f"netdsl.{cls.__name__}",
            params,
            description(cls),
            aliases,
            source="netdsl",
            inputs=INPUTS.get(name, (1, 1)),
            call_style=CALL_STYLE.get(name, "single"),
            key_args=layer_key_args(name, params),
        )
    return out, excluded


# --------------------------------------------------------------------------
# Other kinds


def activation_entries(keras):
    out, excluded = {}, []
    for fn, pubs in public_groups(keras.activations, None).items():
        primary = primary_name(fn, pubs)
        if primary in EXCLUDED["activation"] or not inspect.isfunction(fn):
            excluded.append(primary)
            continue
        params = signature_params(primary, fn, skip_first=True)
        out[primary] = make_entry(
            "activation",
            primary,
            primary,
            params,
            description(fn),
            set(pubs) | set(EXTRA_ALIASES["activation"].get(primary, ())),
            key_args=[p["name"] for p in params if p.get("required")],
        )
    from netdsl.custom import activations as custom

    for name, fn in sorted(custom.ACTIVATIONS.items()):
        assert name not in out, f"netdsl activation {name!r} shadows Keras's"
        out[name] = make_entry(
            "activation",
            name,
            f"netdsl.{name}",
            [],
            description(fn),
            set(),
            source="netdsl",
        )
    return out, excluded


def class_entries(kind, module, base, extra=None):
    out, excluded = {}, []
    for cls, pubs in public_groups(module, base).items():
        primary = primary_name(cls, pubs)
        if primary in EXCLUDED[kind]:
            excluded.append(primary)
            continue
        name = NAME_OVERRIDES.get((kind, primary), snake_case(primary))
        aliases = set(pubs) | {snake_case(p) for p in pubs}
        aliases |= set(EXTRA_ALIASES[kind].get(name, ()))
        params = signature_params(name, cls.__init__)
        key_args = [p["name"] for p in params if p.get("required")]
        if kind == "optimizer":
            key_args = ["learning_rate"]
        out[name] = make_entry(kind, name, primary, params, description(cls), aliases, key_args=key_args)
    for name, entry in (extra or {}).items():
        assert name not in out, (kind, name)
        entry["aliases"] = sorted(set(EXTRA_ALIASES[kind].get(name, ())))
        out[name] = entry
    return out, excluded


def build() -> dict:
    import keras

    kinds, excluded = {}, {}
    kinds["layer"], excluded["layer"] = layer_entries(keras)
    kinds["activation"], excluded["activation"] = activation_entries(keras)
    plain = {
        "initializer": (keras.initializers, keras.initializers.Initializer),
        "regularizer": (keras.regularizers, keras.regularizers.Regularizer),
        "constraint": (keras.constraints, keras.constraints.Constraint),
        "optimizer": (keras.optimizers, keras.optimizers.Optimizer),
        "loss": (keras.losses, keras.losses.Loss),
        "metric": (keras.metrics, keras.metrics.Metric),
        "schedule": (keras.optimizers.schedules, keras.optimizers.schedules.LearningRateSchedule),
        "callback": (keras.callbacks, keras.callbacks.Callback),
    }
    extra = {
        "metric": {
            "accuracy": make_entry(
                "metric",
                "accuracy",
                "accuracy",
                [],
                'Accuracy as Keras\'s "accuracy" string: binary, categorical '
                "or sparse categorical accuracy, chosen from the loss and "
                "output shape.",
                (),
            ),
        },
    }
    for kind, (module, base) in plain.items():
        kinds[kind], excluded[kind] = class_entries(kind, module, base, extra.get(kind))
    # Every key unique within its kind.
    for kind, entries in kinds.items():
        seen = {}
        for name, e in entries.items():
            for key in [name] + e["aliases"]:
                assert key not in seen, f"{kind} key {key!r}: {seen[key]} and {name}"
                seen[key] = name
    # Every exclusion named in the tables must exist (catches Keras renames).
    modules = dict(plain, layer=(keras.layers, None), activation=(keras.activations, None))
    for kind, table in EXCLUDED.items():
        missing = sorted(n for n in table if not hasattr(modules[kind][0], n))
        assert not missing, f"{kind}: excluded names not found in Keras: {missing}"
    assert set(kinds) == set(KINDS)
    return {
        "format": FORMAT,
        "generated_by": "scripts/gen_registry.py",
        "keras_version": keras.__version__,
        "kinds": kinds,
    }


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed file differs")
    ap.add_argument("--verbose", action="store_true", help="list parameters typed 'any' by fallback")
    args = ap.parse_args(argv)
    text = render(build())
    if args.verbose:
        print("typed 'any' by fallback:", ", ".join(sorted(set(UNTYPED))))
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.relative_to(ROOT)}: {'up to date' if same else 'OUT OF DATE'}")
        return 0 if same else 1
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".data.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, OUT)
    except BaseException:
        os.unlink(tmp)
        raise
    data = json.loads(text)
    sizes = ", ".join(f"{k} {len(v)}" for k, v in data["kinds"].items())
    print(f"wrote {OUT.relative_to(ROOT)} (keras {data['keras_version']}): {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
