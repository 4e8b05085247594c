"""`check` refuses the argument values Keras' constructors refuse (semantics/arg_rules.py).

Every registry entry (layers, optimizers, losses, metrics, initializers, regularizers,
constraints, schedules, callbacks) is made with valid arguments, then with each numeric
parameter set to out-of-range values in turn; wherever Keras' constructor refuses a
value, netdsl's argument check must refuse it too, at the argument.
"""

from __future__ import annotations

import pytest

from netdsl import registry
from netdsl.errors import Fail, Span
from netdsl.semantics.args import Arguments

SPAN = Span.at("spec.net", 1, 1)

# Values tried for each numeric parameter (tuples of the right length are the shape rules' business).
OUT_OF_RANGE = {"int": [-1, 0, 1], "ints": [-1, 0], "float": [-0.5, 0.0, 1.0, 1.5], "schedule_or_float": [-0.5, 0.0]}

# Valid values of required parameters where the type alone does not give one.
REQUIRED_VALUES = {
    ("einsum_dense", "equation"): "ab,bc->ac",
    ("einsum_dense", "output_shape"): (4,),
    ("reshape", "target_shape"): (2,),
    ("permute", "dims"): (1,),
    ("category_encoding", "num_tokens"): 4,
    ("hashing", "num_bins"): 3,
    **{
        (name, "factor"): 0.5
        for name in (
            "random_color_degeneration",
            "random_contrast",
            "random_hue",
            "random_saturation",
            "random_sharpness",
            "random_brightness",
            "random_rotation",
            "random_erasing",
        )
    },
    ("random_posterization", "factor"): 4,
    ("random_translation", "height_factor"): 0.2,
    ("random_translation", "width_factor"): 0.2,
    ("random_zoom", "height_factor"): 0.2,
    ("iou", "target_class_ids"): (0,),
    ("one_hot_iou", "target_class_ids"): (0,),
    ("piecewise_constant_decay", "boundaries"): [10],
    ("piecewise_constant_decay", "values"): [0.1, 0.01],
}
_BY_TYPE = {
    "int": 2,
    "ints": 2,
    "float": 0.5,
    "bool": False,
    "shape": (2,),
    "tuple": (2,),
    "list": [1, 2],
    "str": "x",
    "activation": "relu",
}
# Layers that take another layer (bidirectional, time_distributed) are checked through the layer they wrap.
WRAPPERS = {"bidirectional", "time_distributed"}


def base_arguments(entry: registry.Entry) -> dict:
    values = {}
    for param in entry.params:
        if param.required:
            values[param.name] = REQUIRED_VALUES.get(
                (entry.name, param.name), param.choices[0] if param.choices else _BY_TYPE.get(param.type)
            )
    return values


def check_refuses(entry: registry.Entry, kwargs: dict) -> str | None:
    try:
        Arguments(lambda sym: None).bind(entry, [], [(k, v, SPAN) for k, v in kwargs.items()], SPAN)
    except Fail as exc:
        return exc.diagnostic.message
    return None


def keras_refuses(cls, kwargs: dict) -> str | None:
    try:
        cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - whatever the constructor raises counts as refusing
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.mark.slow
def test_check_refuses_every_value_a_keras_constructor_refuses():
    pytest.importorskip("keras")
    from netdsl.custom.factory import keras_object

    let_through, made, entries = [], 0, 0
    for kind in registry.KINDS:
        if kind == "activation":
            continue  # functions: their arguments reach Keras at call time, with the tensor
        for name in registry.names(kind):
            entry = registry.lookup(kind, name)
            if name in WRAPPERS or entry.source == "plugin":
                continue
            entries += 1
            cls = keras_object(entry)
            base = base_arguments(entry)
            assert check_refuses(entry, base) is None, name
            if keras_refuses(cls, base) is not None:
                continue  # base values Keras wants otherwise: counted below, must stay few
            made += 1
            for param in entry.params:
                for value in OUT_OF_RANGE.get(param.type, []):
                    kwargs = {**base, param.name: value}
                    refused = keras_refuses(cls, kwargs)
                    if refused is not None and check_refuses(entry, kwargs) is None:
                        let_through.append(f"{kind} {name}({param.name}={value!r}): {refused[:100]}")
    assert made >= entries - 6, "too many entries could not be made with base values"
    assert let_through == []


def test_check_accepts_the_edges_keras_accepts():
    dense, dropout, conv = (registry.lookup("layer", n) for n in ("dense", "dropout", "conv2d"))
    assert check_refuses(dense, {"units": 1}) is None
    assert check_refuses(dropout, {"rate": 0.0}) is None
    assert check_refuses(dropout, {"rate": 1.0}) is None  # Keras' own bound is [0, 1]
    assert check_refuses(conv, {"filters": 1, "kernel_size": (1, 1), "strides": 1}) is None


def test_optimizer_rules_and_combinations():
    sgd, adam = registry.lookup("optimizer", "sgd"), registry.lookup("optimizer", "adam")
    assert check_refuses(sgd, {"momentum": 1.5}) == (
        "parameter 'momentum' of 'sgd' is a fraction in [0, 1], received 1.5"
    )
    assert check_refuses(adam, {"clipnorm": 1.0, "clipvalue": 1.0}) == (
        "'adam' takes one of clipnorm, clipvalue, global_clipnorm; received clipnorm and clipvalue"
    )
    assert check_refuses(adam, {"gradient_accumulation_steps": 0}) is None


def test_each_out_of_range_argument_is_its_own_error():
    conv = registry.lookup("layer", "conv2d")
    with pytest.raises(Fail) as info:
        Arguments(lambda sym: None).bind(conv, [(0, SPAN), ((3, 0), SPAN)], [("strides", -1, SPAN)], SPAN)
    assert [d.message for d in info.value.all_diagnostics()] == [
        "parameter 'filters' of 'conv2d' is a positive integer, received 0",
        "parameter 'kernel_size' of 'conv2d' is made of positive integers, received (3, 0)",
        "parameter 'strides' of 'conv2d' is a positive integer, received -1",
    ]
