"""Every layer of the allow-list has its anatomy in one place, and the rules agree with Keras.

`netdsl.registry.layers` holds, per layer, the output-shape rule, the
parameter count and the output count. A layer without all three must be in
`UNKNOWN` with the reason, so a layer added to the registry (by
`scripts/gen_registry.py`) fails here until someone writes its rules or says
why not. The shape rules are compared with the shapes Keras gives the same
layer called on the same inputs (the counts are compared in registry/test_registry.py).
"""

from __future__ import annotations

import pytest

from netdsl import registry
from netdsl.registry.layers import ANATOMY, UNKNOWN

LAYERS = [name for name in registry.names("layer") if registry.lookup("layer", name).source != "plugin"]


def _missing(name: str) -> list[str]:
    anatomy = ANATOMY.get(name)
    if anatomy is None:
        return ["shapes", "params", "outputs"]
    return [rule for rule in ("shapes", "params", "outputs") if getattr(anatomy, rule) is None]


def test_every_layer_has_its_three_rules_or_says_why_not():
    lacking = {name: _missing(name) for name in LAYERS if _missing(name) and name not in UNKNOWN}
    assert not lacking, f"layers without these rules and not in UNKNOWN (with a reason): {lacking}"


def test_unknown_lists_only_real_gaps_with_a_reason():
    assert set(UNKNOWN) <= set(LAYERS), sorted(set(UNKNOWN) - set(LAYERS))
    stale = [name for name in UNKNOWN if not _missing(name)]
    assert not stale, f"in UNKNOWN although every rule exists: {stale}"
    assert all(len(reason) > 20 for reason in UNKNOWN.values())
    assert set(ANATOMY) <= set(LAYERS), sorted(set(ANATOMY) - set(LAYERS))


def _pair(name: str, **kwargs):
    """A wrapped layer as Python callers give it: (Entry, kwargs)."""
    return registry.lookup("layer", name), kwargs


# (layer, kwargs, input shapes without the batch axis)
SHAPE_CASES = [
    ("dense", {"units": 10}, [(5, 7)]),
    ("embedding", {"input_dim": 100, "output_dim": 8}, [(12,)]),
    ("flatten", {}, [(4, 5, 3)]),
    ("reshape", {"target_shape": (-1, 4)}, [(6, 2)]),
    ("permute", {"dims": (2, 1)}, [(6, 2)]),
    ("repeat_vector", {"n": 3}, [(6,)]),
    ("rms_normalization", {}, [(10, 32)]),
    ("prelu", {}, [(5, 6)]),
    ("zero_padding2d", {"padding": ((1, 2), (0, 3))}, [(4, 4, 2)]),
    ("up_sampling2d", {"size": (2, 3)}, [(4, 5, 2)]),
    ("zero_padding1d", {"padding": (1, 3)}, [(6, 2)]),
    ("zero_padding3d", {"padding": ((1, 0), 2, (0, 3))}, [(4, None, 4, 2)]),
    ("cropping1d", {"cropping": (2, 1)}, [(6, 2)]),
    ("cropping2d", {"cropping": ((1, 2), (0, 3))}, [(6, 7, 2)]),
    ("cropping2d", {"cropping": 1}, [(None, 7, 2)]),
    ("cropping3d", {"cropping": (1, 0, 2)}, [(4, 5, 6, 2)]),
    ("up_sampling1d", {"size": 3}, [(5, 2)]),
    ("up_sampling3d", {"size": (1, 2, 3)}, [(2, 3, 4, 2)]),
    ("adaptive_average_pooling1d", {"output_size": 3}, [(8, 5)]),
    ("adaptive_max_pooling2d", {"output_size": (3, 4)}, [(8, 9, 5)]),
    ("adaptive_average_pooling3d", {"output_size": 2}, [(4, 8, 9, 5)]),
    ("random_crop", {"height": 4, "width": 5}, [(8, 9, 3)]),
    ("center_crop", {"height": 4, "width": 5}, [(None, None, 3)]),
    ("resizing", {"height": 4, "width": 5, "crop_to_aspect_ratio": True}, [(8, 9, 3)]),
    ("normalization", {}, [(8, 9, 3)]),
    ("normalization", {"axis": (1, 2)}, [(8, 9, 3)]),
    ("normalization", {"axis": None}, [(5,)]),
    ("normalization", {"mean": [1.0, 2.0, 3.0], "variance": [1.0, 1.0, 1.0]}, [(8, 9, 3)]),
    *[
        (name, kwargs, [(8, 9, 3)])
        for name, kwargs in [
            ("random_flip", {}),
            ("random_rotation", {"factor": 0.1}),
            ("random_zoom", {"height_factor": 0.1}),
            ("random_translation", {"height_factor": 0.1, "width_factor": 0.1}),
            ("random_contrast", {"factor": 0.1}),
            ("random_brightness", {"factor": 0.1}),
            ("random_shear", {"x_factor": 0.1}),
            ("random_hue", {"factor": 0.1}),
            ("random_saturation", {"factor": 0.1}),
            ("random_sharpness", {"factor": 0.1}),
            ("random_color_degeneration", {"factor": 0.1}),
            ("random_posterization", {"factor": (1, 4)}),
            ("random_perspective", {}),
            ("random_gaussian_blur", {}),
            ("random_erasing", {}),
            ("random_elastic_transform", {}),
            ("random_invert", {}),
            ("random_grayscale", {}),
            ("random_color_jitter", {}),
            ("solarization", {}),
            ("equalization", {}),
            ("auto_contrast", {}),
            ("aug_mix", {}),
            ("rand_augment", {}),
            ("mix_up", {}),
            ("cut_mix", {}),
            ("max_num_bounding_boxes", {"max_number": 3}),
            ("contrast_limited_adaptive_histogram_equalization", {}),
        ]
    ],
    ("conv1d", {"filters": 4, "kernel_size": 5, "strides": 2}, [(20, 3)]),
    ("conv2d", {"filters": 8, "kernel_size": (3, 5), "padding": "same", "strides": 2}, [(9, 10, 4)]),
    ("conv2d", {"filters": 8, "kernel_size": 3, "dilation_rate": 2}, [(None, 12, 4)]),
    ("conv3d", {"filters": 2, "kernel_size": 2}, [(4, 4, 4, 3)]),
    ("conv2d_transpose", {"filters": 5, "kernel_size": 3, "strides": 2}, [(8, 8, 3)]),
    ("conv1d_transpose", {"filters": 5, "kernel_size": 3, "padding": "same", "strides": 2}, [(8, 3)]),
    ("depthwise_conv2d", {"kernel_size": 3, "depth_multiplier": 2}, [(8, 8, 6)]),
    ("separable_conv1d", {"filters": 16, "kernel_size": 3}, [(8, 6)]),
    ("max_pooling2d", {}, [(9, 8, 3)]),
    ("average_pooling1d", {"pool_size": 3, "strides": 1, "padding": "same"}, [(9, 3)]),
    ("global_max_pooling2d", {"keepdims": True}, [(8, 8, 3)]),
    ("add", {}, [(4, 1), (4, 6)]),
    ("concatenate", {"axis": 1}, [(4, 2), (5, 2)]),
    ("lstm", {"units": 6, "return_sequences": True}, [(7, 3)]),
    ("gru", {"units": 6, "return_state": True}, [(7, 3)]),
    ("lstm", {"units": 6, "return_state": True}, [(7, 3)]),
    ("multi_head_attention", {"num_heads": 2, "key_dim": 4}, [(10, 8), (10, 8)]),
    ("time_distributed", {"layer": _pair("dense", units=3)}, [(5, 6)]),
    ("time_distributed", {"layer": _pair("conv2d", filters=4, kernel_size=3)}, [(5, 9, 9, 2)]),
    ("time_distributed", {"layer": _pair("flatten")}, [(5, 3, 2)]),
    ("spectral_normalization", {"layer": _pair("dense", units=3)}, [(6,)]),
    *[
        ("bidirectional", {"layer": _pair(rnn, units=5, **flags), "merge_mode": mode}, [(7, 3)])
        for rnn, flags, mode in [
            ("lstm", {}, "concat"),
            ("lstm", {"return_sequences": True}, "concat"),
            ("gru", {}, "sum"),
            ("simple_rnn", {"return_sequences": True}, "mul"),
            ("lstm", {}, None),
            ("lstm", {"return_state": True}, "concat"),  # the merged output, then each direction's h and c
            ("gru", {"return_sequences": True, "return_state": True}, None),
        ]
    ],
]


def _keras_layer(keras, name: str, kwargs: dict):
    from netdsl.custom import factory

    made = {
        key: _keras_layer(keras, value[0].name, value[1])
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], registry.Entry)
        else value
        for key, value in kwargs.items()
    }
    return factory.keras_object(registry.lookup("layer", name))(**made)


@pytest.mark.parametrize(
    "name, kwargs, shapes", SHAPE_CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SHAPE_CASES)]
)
def test_shape_rules_match_keras(name, kwargs, shapes):
    keras = pytest.importorskip("keras")
    entry = registry.lookup("layer", name)
    mine = registry.output_shapes(entry, kwargs, shapes)
    assert mine is not None and None not in mine, f"{name} gave no shape"
    assert len(mine) == registry.output_count(entry, kwargs)
    inputs = [keras.Input(s) for s in shapes]
    layer = _keras_layer(keras, name, kwargs)
    if name == "multi_head_attention":
        outputs = layer(*inputs)
    else:
        outputs = layer(inputs if len(inputs) > 1 else inputs[0])
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    assert mine == [tuple(o.shape[1:]) for o in outputs]
    assert registry.estimate_params(entry, kwargs, shapes) == layer.count_params()


@pytest.mark.parametrize("kwargs", [case[1] for case in SHAPE_CASES if case[0] == "bidirectional"])
def test_bidirectional_counts_both_directions_as_keras(kwargs):
    keras = pytest.importorskip("keras")
    layer = _keras_layer(keras, "bidirectional", kwargs)
    layer(keras.Input((7, 3)))
    assert registry.estimate_params(registry.lookup("layer", "bidirectional"), kwargs, [(7, 3)]) == layer.count_params()


def test_time_distributed_counts_the_layer_it_wraps_once():
    td = registry.lookup("layer", "time_distributed")
    kwargs = {"layer": _pair("dense", units=300000)}
    assert registry.output_shapes(td, kwargs, [(10, 300000)]) == [(10, 300000)]
    assert registry.estimate_params(td, kwargs, [(10, 300000)]) == 300000 * 300000 + 300000


def test_a_rule_that_cannot_tell_answers_none():
    td = registry.lookup("layer", "time_distributed")
    assert registry.output_shapes(td, {"layer": "lstm(4)"}, [(5, 6)]) is None  # a layer it cannot see
    assert registry.output_shapes(registry.lookup("layer", "max_pooling2d"), {}, [(8, 3)]) is None  # its rank
    assert registry.output_shapes(registry.lookup("layer", "einsum_dense"), {}, [(3,)]) is None


def test_every_layer_returns_one_tensor_by_default_except_wrappers_of_a_layer_it_cannot_see():
    counts = {name: registry.output_count(registry.lookup("layer", name), {}) for name in LAYERS}
    assert {name for name, count in counts.items() if count != 1} == {"bidirectional", "time_distributed"}
    assert {counts["bidirectional"], counts["time_distributed"]} == {None}


def test_check_sees_through_bidirectional_and_refuses_a_too_large_layer_after_it():
    import netdsl

    text = (
        "model m {\n  input x: (10, 16)\n"
        "  output y = x -> bidirectional(lstm(8, return_sequences=true)) -> dense(40000) -> dense(40000)\n}\n"
    )
    found = [(d.line, d.col, d.message) for d in netdsl.check(text=text, filename="bi.net")]
    assert found == [(3, 84, "'dense' would have about 1,600,040,000 parameters; the limit is 1,000,000,000")]
