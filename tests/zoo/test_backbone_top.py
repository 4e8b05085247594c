"""A zoo backbone's keras.applications arguments: `image -> efficientnet_b0(pooling="avg")` and
`efficientnet_b0(include_top=true)` are `EfficientNetB0(include_top=False, pooling="avg")` and
`EfficientNetB0(include_top=True)`: the same parameters, layers under the same names, the same outputs with
the same weights (the published file's layout, `zoo:NAME/top` for the classifier's), and counted in pure
Python. A few families, one of each kind of top (building keras.applications' models costs seconds each):
EfficientNet's dropout and initializer, ResNet's named pooling, MobileNetV2's and Xception's unnamed ones,
MobileNetV3's classifier of convolutions."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest

import netdsl
from netdsl.zoo import weights as zoo_weights
from netdsl.zoo.catalog import BY_NAME
from tests.support.backbones import OPERATOR_LAYERS, varied_batch_norms

SIZE = 96  # every family takes it, and keras.applications' padding by input size is the same as without one

# (family, the call's arguments in the spec, keras.applications' arguments)
CALLS = [
    # the weights by the call, as keras.applications takes them, in a model without a train section
    ("efficientnet_b0", 'include_top=true, weights="imagenet", input_shape=(96, 96, 3)', {"include_top": True}),
    ("efficientnet_b0", 'pooling="max"', {"include_top": False, "pooling": "max"}),
    ("resnet50", 'pooling="avg"', {"include_top": False, "pooling": "avg"}),
    (
        "mobilenet_v2",
        "include_top=true, classes=7, classifier_activation=none, input_shape=(96, 96, 3)",
        {"include_top": True, "classes": 7, "classifier_activation": None},
    ),
    ("xception", 'pooling="avg"', {"include_top": False, "pooling": "avg"}),
    # a classifier of convolutions on a pooled map, with layers Keras leaves unnamed (`activation_18`)
    ("mobilenet_v3_small", "include_top=true, input_shape=(96, 96, 3)", {"include_top": True}),
]


def spec_text(name: str, arguments: str, weights: str | None = None) -> str:
    init = (
        f'\n  train {{\n    optimizer = adam\n    loss = mse\n    init = {{"{name}": "{weights}"}}\n  }}'
        if weights
        else ""
    )
    return (
        f'import "zoo:{name}"\n\nmodel m {{\n  input image: ({SIZE}, {SIZE}, 3)\n'
        f"  output y = image -> {name}({arguments}){init}\n}}\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(("name", "arguments", "keras_arguments"), CALLS, ids=[f"{c[0]}({c[1]})" for c in CALLS])
def test_a_backbones_top_is_keras_applications_with_the_same_arguments(
    name, arguments, keras_arguments, tmp_path, monkeypatch
):
    family = BY_NAME[name]
    keras.utils.set_random_seed(11)
    keras.backend.clear_session(free_memory=False)  # Keras' own names for the unnamed pooling: a fresh session's
    reference = getattr(keras.applications, family.constructor)(
        weights=None, input_shape=(SIZE, SIZE, 3), **keras_arguments
    )
    varied_batch_norms(reference, SIZE)
    top = keras_arguments["include_top"]
    published = family.weights(top)
    (tmp_path / "models").mkdir()
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    with h5py.File(tmp_path / "models" / published.fname, "w") as h5:
        save_weights_to_hdf5_group(h5, reference)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    unpinned = dataclasses.replace(published, file_hash=None)  # the file is ours, not the published one
    monkeypatch.setitem(
        zoo_weights.BY_NAME,
        name,
        dataclasses.replace(family, **{"top" if top else "notop": unpinned}),
    )
    spec = tmp_path / "m.net"
    by_init = "weights=" not in arguments
    spec.write_text(spec_text(name, arguments, (f"zoo:{name}/top" if top else f"zoo:{name}") if by_init else None))

    backbone = netdsl.build(spec).get_layer(name)
    assert backbone.count_params() == reference.count_params()
    # every layer under keras.applications' name (MobileNetV3's `x + 3`: a layer here, an operation there)
    operators = OPERATOR_LAYERS - {type(layer).__name__ for layer in reference.layers}
    assert [layer.name for layer in backbone.layers if type(layer).__name__ not in operators] == [
        layer.name for layer in reference.layers
    ]
    assert [type(layer).__name__ for layer in backbone.layers[-3:]] == [
        type(layer).__name__ for layer in reference.layers[-3:]
    ]
    pictures = np.random.default_rng(0).uniform(0, 255, (3, SIZE, SIZE, 3)).astype("float32")
    ours = keras.ops.convert_to_numpy(backbone(pictures, training=False))
    theirs = keras.ops.convert_to_numpy(reference(pictures, training=False))
    assert ours.shape == theirs.shape == (3, reference.output_shape[-1])
    assert np.max(np.abs(theirs[0] - theirs[1])) > 0.01 * np.max(np.abs(theirs))  # a picture's signal is there
    assert np.max(np.abs(ours - theirs)) <= 1e-5 * max(1.0, float(np.max(np.abs(theirs))))


def test_the_classifier_takes_keras_initializers_and_dropout():
    """EfficientNet's classifier as keras.applications makes it: its dropout rate per family, its dense kernel's
    variance scaling (what a fresh, untrained top starts from)."""
    from netdsl import pipeline
    from netdsl.syntax.loader import load_text

    source = spec_text("efficientnet_b2", "include_top=true, classes=5, input_shape=(96, 96, 3)")
    graph = pipeline.checked_graphs(load_text(source, "m.net"), ["m"])["m"]
    (call,) = [node for node in graph.nodes if node.op == "model"]
    top = {node.name: node for node in call.decl.nodes[-3:]}
    assert list(top) == ["avg_pool", "top_dropout", "predictions"]
    assert top["top_dropout"].args["rate"] == 0.3  # B2's, B0's is 0.2
    initializer = top["predictions"].args["kernel_initializer"]
    assert (initializer.name, dict(initializer.kwargs)) == (
        "variance_scaling",
        {"scale": 1 / 3, "mode": "fan_out", "distribution": "uniform"},
    )
    assert top["predictions"].args["activation"].name == "softmax" and top["predictions"].args["units"] == 5


# keras.io/api/applications' table: the parameters of each model with its ImageNet classifier (include_top=True);
# MobileNetV3's as keras.applications builds it (Keras 3.15)
WITH_TOP = {
    "xception": 22_910_480,
    "vgg16": 138_357_544,
    "resnet50": 25_636_712,
    "resnet101": 44_707_176,
    "resnet152": 60_419_944,
    "resnet50_v2": 25_613_800,
    "resnet101_v2": 44_675_560,
    "resnet152_v2": 60_380_648,
    "inception_v3": 23_851_784,
    "mobilenet_v2": 3_538_984,
    "mobilenet_v3_small": 2_554_968,
    "mobilenet_v3_large": 5_507_432,
    "densenet121": 8_062_504,
    "efficientnet_b0": 5_330_571,
    "efficientnet_b1": 7_856_239,
    "efficientnet_b2": 9_177_569,
    "efficientnet_b3": 12_320_535,
    "efficientnet_v2_b0": 7_200_312,
    "efficientnet_v2_b1": 8_212_124,
    "efficientnet_v2_b2": 10_178_374,
    "efficientnet_v2_b3": 14_467_622,
}


@pytest.mark.slow  # 21 backbones expanded in a subprocess: about 15 s
def test_summary_counts_every_classifier_as_keras_publishes_it_without_a_backend(tmp_path):
    """Each family's `include_top=true` at the size it was trained at, counted by `summary` in one process that
    imports no backend: the parameters keras.io's table gives."""
    lines = []
    for name in WITH_TOP:
        size = BY_NAME[name].input_size
        spec = tmp_path / f"{name}.net"
        spec.write_text(spec_text(name, "include_top=true").replace(f"({SIZE}, {SIZE}, 3)", f"({size}, {size}, 3)"))
        lines.append(f"main(['summary', {str(spec)!r}])")
    code = (
        "import sys; from netdsl.cli import main\n"
        + "\n".join(lines)
        + "\nprint(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(netdsl.__file__).parents[1])},
    )
    counted = [line.split()[1].rstrip(",") for line in done.stdout.splitlines() if line.startswith("params: ")]
    assert counted == [f"{params:,}" for params in WITH_TOP.values()]
    assert done.stdout.splitlines()[-1] == "[]"
