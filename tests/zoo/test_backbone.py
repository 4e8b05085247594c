"""A zoo backbone in a spec: `import "zoo:NAME"`, one step, its published weights by name
(`init = {"NAME": "zoo:NAME"}`), frozen like any nested model — and the same network, with the
same weights, as keras.applications gives.

CI cannot download: the weights file is written here in the published layout (Keras 2's `.h5`,
as keras.applications' files are) from `keras.applications.X(weights=None)` with random weights,
and put in a Keras cache folder under its published name."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest

import netdsl
from netdsl import pipeline
from netdsl.cli import main
from netdsl.syntax.loader import zoo_specs
from netdsl.zoo import weights as zoo_weights
from netdsl.zoo.catalog import BY_NAME
from tests.support.backbones import OPERATOR_LAYERS, varied_batch_norms

SIZE = 64
ZOO_CHECK_SIZE = 96  # every family takes it (Inception V3 needs 75, Xception 71)

SPEC = """\
import "zoo:mobilenet_v2"

model flowers {
  input image: (64, 64, 3)
  f = image -> rescaling(1 / 127.5, offset=-1) -> mobilenet_v2 -> global_average_pooling2d
  output probs = f -> dropout(0.2) -> dense(5, activation=softmax)

  train {
    optimizer = adam(1e-3)
    loss = sparse_categorical_crossentropy
    init = {"mobilenet_v2": "zoo:mobilenet_v2"}
    freeze = ["mobilenet_v2"]
  }
}
"""


def published_file(path: Path, constructor: str = "MobileNetV2") -> keras.Model:
    """keras.applications' model with random weights, its weights written as the published files are."""
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    keras.utils.set_random_seed(7)
    model = getattr(keras.applications, constructor)(weights=None, include_top=False, input_shape=(SIZE, SIZE, 3))
    for weight in model.weights:  # batch norms' statistics too: nothing left at its initial value
        weight.assign(np.random.default_rng(len(weight.path)).normal(0.5, 0.1, weight.shape).astype("float32"))
    with h5py.File(path, "w") as h5:
        save_weights_to_hdf5_group(h5, model)
    return model


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    home = tmp_path_factory.mktemp("keras-home")
    (home / "models").mkdir()
    reference = published_file(home / "models" / BY_NAME["mobilenet_v2"].notop.fname)
    return home, reference


def test_a_zoo_backbone_is_keras_applications_model_with_its_weights(cache, monkeypatch, tmp_path):
    home, reference = cache
    monkeypatch.setenv("KERAS_HOME", str(home))
    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    model = netdsl.build(spec)
    backbone = model.get_layer("mobilenet_v2")
    assert backbone.count_params() == reference.count_params() == 2_257_984
    pictures = np.random.default_rng(0).uniform(-1, 1, (2, SIZE, SIZE, 3)).astype("float32")
    ours = keras.ops.convert_to_numpy(backbone(pictures, training=False))
    theirs = keras.ops.convert_to_numpy(reference(pictures, training=False))
    assert np.max(np.abs(ours - theirs)) <= 1e-5
    assert not backbone.trainable and all(not layer.trainable for layer in backbone.layers)
    # and the same as keras.applications loading the same file itself (Keras 2's rule: layers in order)
    keras_loaded = keras.applications.MobileNetV2(
        weights=str(home / "models" / BY_NAME["mobilenet_v2"].notop.fname),
        include_top=False,
        input_shape=(SIZE, SIZE, 3),
    )
    assert np.max(np.abs(ours - keras.ops.convert_to_numpy(keras_loaded(pictures, training=False)))) <= 1e-5


def test_the_build_says_what_it_loaded_with_the_files_sha256(cache, monkeypatch, tmp_path, capsys):
    home, _ = cache
    monkeypatch.setenv("KERAS_HOME", str(home))
    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    assert main(["build", str(spec), "-o", str(tmp_path / "flowers.keras")]) == 0
    digest = hashlib.sha256((home / "models" / BY_NAME["mobilenet_v2"].notop.fname).read_bytes()).hexdigest()
    assert f"init: 104 layers of 'mobilenet_v2' from zoo:mobilenet_v2 (sha256 {digest})" in capsys.readouterr().out


def test_check_knows_the_backbone_without_a_backend(tmp_path):
    import os
    import subprocess
    import sys

    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    code = (
        "import sys, time; from netdsl.cli import main; t = time.perf_counter(); "
        f"code = main(['check', {str(spec)!r}]); took = time.perf_counter() - t; "
        "print(code, sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules)); "
        "print(f'{took * 1000:.0f} ms', file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(netdsl.__file__).parents[1])},
    )
    assert done.stdout.splitlines() == [f"{spec}: no problems found", "0 []"]
    print(f"check of a fine-tuning spec with mobilenet_v2: {done.stderr.strip()}")  # measured, not asserted


def test_summary_counts_the_frozen_backbone_offline_without_a_backend(tmp_path):
    # the published weights are the backbone's own: counting needs neither them nor Keras
    import os
    import subprocess
    import sys

    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    code = (
        f"import sys; from netdsl.cli import main; code = main(['summary', {str(spec)!r}]); "
        "print(code, sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(netdsl.__file__).parents[1]),
            "KERAS_HOME": str(tmp_path / "empty"),
            zoo_weights.MIRROR_VARIABLE: "http://127.0.0.1:9",
        },
    )
    out = done.stdout.splitlines()
    assert "params: 2,264,389 (trainable 6,405, non-trainable 2,257,984)" in out  # the head: 1280 * 5 + 5
    assert "frozen: mobilenet_v2" in out
    assert out[-1] == "0 []" and not (tmp_path / "empty").exists()


@pytest.mark.parametrize("name", sorted(zoo_specs()))
def test_every_backbone_takes_the_names_paired_with_keras_applications(name):
    """NAME.names.json (scripts/zoo_specs.py --names) renames each of its layers, in pure Python: a names file
    left stale by a rewritten spec would leave the spec's own names, silently."""
    path = zoo_specs()[name]
    renamed = json.loads(path.with_suffix(".names.json").read_text())
    graph = pipeline.checked_graphs(pipeline.load(path), [name])[name]
    assert graph.keras_application
    names = {node.name for node in graph.nodes}
    assert set(renamed.values()) <= names and not set(renamed) & (names - set(renamed.values()))


@pytest.mark.parametrize("name", sorted(zoo_specs()))
def test_each_familys_preprocess_block_is_its_preprocess_input(name, tmp_path):
    """`image -> NAME_preprocess -> NAME`: the block each spec ends with computes keras.applications'
    `preprocess_input` for the family (imagenet_utils' caffe, tf and torch modes; the families that rescale
    their pictures themselves take them as they are)."""
    family = BY_NAME[name]
    spec = tmp_path / "pre.net"
    spec.write_text(
        f'import "zoo:{name}"\n\nmodel pre {{\n  input image: (9, 7, 3)\n  output y = image -> {name}_preprocess\n}}\n'
    )
    pictures = np.random.default_rng(2).uniform(0, 255, (4, 9, 7, 3)).astype("float32")
    ours = keras.ops.convert_to_numpy(netdsl.build(spec)(pictures))
    if family.preprocess == "none":
        theirs = pictures
    else:
        theirs = keras.applications.imagenet_utils.preprocess_input(pictures.copy(), mode=family.preprocess)
    assert np.max(np.abs(ours - np.asarray(theirs))) <= 1e-4


PARTLY_FROZEN = SPEC.replace(
    'freeze = ["mobilenet_v2"]',
    'freeze = ["mobilenet_v2.*Conv1", "mobilenet_v2.expanded_conv_*", "mobilenet_v2.block_1_*", "mobilenet_v2.block_2_*"]',
)


def test_a_pattern_reaches_into_the_backbone_and_freezes_its_first_stages(cache, monkeypatch, tmp_path):
    """`freeze = ["mobilenet_v2.block_1_*", ...]`, by keras.applications' layer names: the backbone's stem and first
    blocks stay as loaded, the rest trains. summary counts it without Keras (`mobilenet_v2/Conv1`, ...), the build
    freezes exactly those layers
    inside the nested model, and training leaves their weights bit for bit. (Whether every other layer moves
    is tests/backend/test_freeze_names.py's: this file's drawn weights saturate the ReLU6s, so the gradients
    of the backbone's early layers are 0.)"""
    home, _ = cache
    monkeypatch.setenv("KERAS_HOME", str(home))
    spec = tmp_path / "flowers.net"
    spec.write_text(PARTLY_FROZEN)
    ((_, split),) = pipeline.inferred_splits(pipeline.load(spec), ["flowers"]).values()
    assert split.frozen[:3] == ("mobilenet_v2/Conv1", "mobilenet_v2/bn_Conv1", "mobilenet_v2/expanded_conv_depthwise")
    assert len(split.frozen) == 18 and split.frozen[-1] == "mobilenet_v2/block_2_project_BN"
    assert (split.total, split.trainable) == (2_264_389, 2_214_485)
    model = netdsl.build(spec)
    assert pipeline.built_split(model) == split
    backbone = model.get_layer("mobilenet_v2")
    frozen = {name.split("/", 1)[1] for name in split.frozen}
    assert backbone.trainable
    assert {layer.name for layer in backbone.layers if layer.weights and not layer.trainable} == frozen
    before = {layer.name: [np.array(w) for w in layer.get_weights()] for layer in model.layers + backbone.layers}
    rng = np.random.default_rng(1)
    model.fit(rng.uniform(0, 255, (8, SIZE, SIZE, 3)), rng.integers(0, 5, 8), epochs=1, batch_size=4, verbose=0)
    for layer in backbone.layers:
        if layer.name in frozen:
            assert all(np.array_equal(b, np.array(a)) for b, a in zip(before[layer.name], layer.get_weights()))
    assert not np.array_equal(before["probs"][0], model.get_layer("probs").get_weights()[0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('import "zoo:mobilenet_v3"\n', "no zoo family is called 'mobilenet_v3'"),
        (
            "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n  train {\n    optimizer = adam\n"
            '    loss = mse\n    init = {"y": "zoo:resnet5"}\n  }\n}\n',
            "no zoo family is called 'resnet5'",
        ),
    ],
)
def test_an_unknown_family_is_a_diagnostic_with_the_nearest(tmp_path, capsys, text, message):
    spec = tmp_path / "bad.net"
    spec.write_text(text)
    assert main(["check", str(spec)]) == 1
    err = capsys.readouterr().err
    assert message in err and "did you mean" in err


def test_weights_that_cannot_be_had_are_one_line_at_the_setting(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv(zoo_weights.MIRROR_VARIABLE, "http://127.0.0.1:9")  # nothing listens: offline
    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    assert main(["build", str(spec), "-o", str(tmp_path / "out.keras")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"{spec}:11:13: error: cannot fetch http://127.0.0.1:9/{BY_NAME['mobilenet_v2'].notop.fname}: "
    )
    assert "give it with --from FILE" in err
    assert "Traceback" not in err


def test_a_published_file_of_another_family_is_refused_naming_both_layers(monkeypatch, tmp_path, capsys):
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    published_file(home / "models" / BY_NAME["mobilenet_v2"].notop.fname, constructor="MobileNetV3Small")
    monkeypatch.setenv("KERAS_HOME", str(home))
    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    assert main(["build", str(spec), "-o", str(tmp_path / "out.keras")]) == 1
    err = capsys.readouterr().err
    assert "a Keras 2 .h5 file is matched in order" in err and err.count("\n") <= 4


def test_a_pinned_hash_is_checked_before_the_file_is_read(monkeypatch, tmp_path, capsys, cache):
    home, _ = cache
    monkeypatch.setenv("KERAS_HOME", str(home))
    family = BY_NAME["mobilenet_v2"]
    wrong = dataclasses.replace(family.notop, file_hash="0" * 32)
    monkeypatch.setitem(zoo_weights.BY_NAME, "mobilenet_v2", dataclasses.replace(family, notop=wrong))
    spec = tmp_path / "flowers.net"
    spec.write_text(SPEC)
    assert main(["build", str(spec), "-o", str(tmp_path / "out.keras")]) == 1
    err = capsys.readouterr().err
    assert f"mobilenet_v2's cached weights {home / 'models' / family.notop.fname}: md5 hash " in err
    assert "is not the published 00000000000000000000000000000000" in err


def weighted_layers(model: keras.Model) -> list[tuple[str, list[tuple[int, ...]]]]:
    return [(kind(layer), [tuple(w.shape) for w in layer.weights]) for layer in model.layers if layer.weights]


def kind(layer: keras.Layer) -> str:
    """A layer's class; a nested model is a model (ConvNeXt's stem: a `Sequential` there, a functional model here)."""
    return "Model" if isinstance(layer, keras.Model) else type(layer).__name__


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(zoo_specs()))
def test_every_shipped_backbone_is_its_keras_application(name, tmp_path, monkeypatch):
    """Each spec in the package, built by netdsl, against keras.applications: the same parameters, the same
    weighted layers in the same order, the same layer names, and the same outputs after netdsl loads the
    published-layout file."""
    family = BY_NAME[name]
    keras.utils.set_random_seed(11)
    # the application's own names (`rescaling`, not `rescaling_3`: Keras numbers the names it makes up by the
    # models built before in the process; scripts/zoo_specs.py paired them in a fresh session)
    keras.backend.clear_session(free_memory=False)
    reference = getattr(keras.applications, family.constructor)(
        weights=None, include_top=False, input_shape=(ZOO_CHECK_SIZE, ZOO_CHECK_SIZE, 3)
    )
    varied_batch_norms(reference, ZOO_CHECK_SIZE)
    (tmp_path / "models").mkdir()
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    with h5py.File(tmp_path / "models" / family.notop.fname, "w") as h5:
        save_weights_to_hdf5_group(h5, reference)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    unpinned = dataclasses.replace(family.notop, file_hash=None)  # the file is ours, not the published one
    monkeypatch.setitem(zoo_weights.BY_NAME, name, dataclasses.replace(family, notop=unpinned))
    spec = tmp_path / "backbone.net"
    spec.write_text(
        f'import "zoo:{name}"\n\nmodel features {{\n'
        f"  input image: ({ZOO_CHECK_SIZE}, {ZOO_CHECK_SIZE}, 3)\n"
        f"  output f = image -> {name}\n\n"
        f"  train {{\n    optimizer = adam(1e-3)\n    loss = mse\n"
        f'    init = {{"{name}": "zoo:{name}"}}\n  }}\n}}\n'
    )
    backbone = netdsl.build(spec).get_layer(name)
    assert backbone.count_params() == reference.count_params()
    # the weighted layers in Keras' order (the order a Keras 2 file is matched in), kind and shapes
    assert weighted_layers(backbone) == weighted_layers(reference)
    # every layer under keras.applications' name; Keras' tensor arithmetic (MobileNetV3's `x + 3`) is a layer
    # here (named by the spec), an operation of the functional graph there
    operators = OPERATOR_LAYERS - {type(layer).__name__ for layer in reference.layers}
    assert [layer.name for layer in backbone.layers if type(layer).__name__ not in operators] == [
        layer.name for layer in reference.layers
    ]
    pictures = np.random.default_rng(0).uniform(0, 255, (2, ZOO_CHECK_SIZE, ZOO_CHECK_SIZE, 3)).astype("float32")
    ours = keras.ops.convert_to_numpy(backbone(pictures, training=False))
    theirs = keras.ops.convert_to_numpy(reference(pictures, training=False))
    assert ours.shape == theirs.shape
    assert np.max(np.abs(theirs[0] - theirs[1])) > 0.1 * np.max(np.abs(theirs))  # a picture's signal is there
    assert np.max(np.abs(ours - theirs)) <= 1e-4 * max(1.0, float(np.max(np.abs(theirs))))
