"""keras.io's "Transfer learning & fine-tuning" guide as a spec (issue 32's acceptance): Xception, frozen and
in inference mode, its features pooled, dropout and a one-unit head, trained with a from-logits binary
crossentropy; the same network and outputs as the guide's code given the same weights, in 15 lines.

CI cannot download: the backbone's published file is written here from `keras.applications.Xception(
weights=None)` with random weights; the pinned hash of the real file is left out for it."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import pytest

import netdsl
from netdsl.zoo import weights as zoo_weights
from netdsl.zoo.catalog import BY_NAME
from tests.support.backbones import varied_batch_norms

SIZE = 150  # the guide's cats and dogs, resized to 150 x 150

GUIDE = """\
import "zoo:xception"

model cats_vs_dogs {
  input image: (150, 150, 3)
  f = image -> rescaling(1 / 127.5, offset=-1) -> xception -> global_average_pooling2d
  output logit = f -> dropout(0.2) -> dense(1)
  train {
    optimizer = adam
    loss = binary_crossentropy(from_logits=true)
    metrics = [binary_accuracy]
    init = {"xception": "zoo:xception"}
    freeze = ["xception"]
  }
}
"""


def published_xception(path) -> None:
    """keras.applications' Xception with random weights written as the published file is (Keras 2's `.h5`): its
    own initializers' kernels, batch norms' statistics moved off their starting values. Their variances are
    small, so that each batch norm scales up: with unit variances the signal of a picture fades through the 36
    convolutions and every picture gives the same output to 6 digits (a comparison that could not fail)."""
    import h5py
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    keras.utils.set_random_seed(7)
    model = keras.applications.Xception(weights=None, include_top=False, input_shape=(SIZE, SIZE, 3))
    rng = np.random.default_rng(3)
    for weight in model.weights:
        kind = weight.path.rsplit("/", 1)[-1]
        if kind == "gamma":
            weight.assign(rng.uniform(0.8, 1.2, weight.shape).astype("float32"))
        elif kind == "moving_variance":
            weight.assign(rng.uniform(0.008, 0.012, weight.shape).astype("float32"))
        elif kind in ("beta", "moving_mean"):
            weight.assign(rng.normal(0.0, 0.05, weight.shape).astype("float32"))
    with h5py.File(path, "w") as h5:
        save_weights_to_hdf5_group(h5, model)


def the_guides_model(base: keras.Model) -> keras.Model:
    """The guide's code, line for line (its augmentation layers left out: they are off at inference)."""
    base.trainable = False
    inputs = keras.Input(shape=(SIZE, SIZE, 3))
    scale_layer = keras.layers.Rescaling(scale=1 / 127.5, offset=-1)
    x = scale_layer(inputs)
    x = base(x, training=False)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dropout(0.2)(x)
    outputs = keras.layers.Dense(1)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy()],
    )
    return model


@pytest.mark.slow
def test_the_transfer_learning_guide_as_a_spec_is_the_guides_model(tmp_path, monkeypatch):
    assert len(GUIDE.splitlines()) <= 15
    home = tmp_path / "keras-home"
    (home / "models").mkdir(parents=True)
    family = BY_NAME["xception"]
    file = home / "models" / family.notop.fname
    published_xception(file)
    monkeypatch.setenv("KERAS_HOME", str(home))
    unpinned = dataclasses.replace(family, notop=dataclasses.replace(family.notop, file_hash=None))
    monkeypatch.setitem(zoo_weights.BY_NAME, "xception", unpinned)  # the random file is not the published one
    spec = tmp_path / "cats_vs_dogs.net"
    spec.write_text(GUIDE)

    ours = netdsl.build(spec)
    base = keras.applications.Xception(weights=str(file), input_shape=(SIZE, SIZE, 3), include_top=False)
    theirs = the_guides_model(base)
    theirs.layers[-1].set_weights(ours.get_layer("logit").get_weights())  # the new head: its random start
    assert ours.count_params() == theirs.count_params() == 20_861_480 + 2048 + 1
    trainable = sum(int(np.prod(w.shape)) for w in ours.trainable_weights)
    assert trainable == sum(int(np.prod(w.shape)) for w in theirs.trainable_weights) == 2049  # the head alone
    # four pictures unlike each other: a gradient and noise in other parts, at other brightnesses
    rng = np.random.default_rng(0)
    rows = np.linspace(0, 1, SIZE, dtype="float32")[None, :, None, None]
    pictures = np.concatenate(
        [
            255 * b * (rows * a + (1 - a) * rng.uniform(0, 1, (1, SIZE, SIZE, 3)))
            for a, b in ((0.1, 1.0), (0.5, 0.6), (0.9, 0.8), (0.3, 0.3))
        ]
    ).astype("float32")
    got, want = ours.predict(pictures, verbose=0), theirs.predict(pictures, verbose=0)
    assert got.shape == want.shape == (4, 1) and np.all(np.isfinite(want))
    assert np.std(want) > 0.05 * np.max(np.abs(want))  # the pictures give outputs apart: the check can fail
    assert np.max(np.abs(got - want)) <= 1e-4 * max(1.0, float(np.max(np.abs(want))))
    # the loss and metric the guide compiles with, on the same labels
    labels = np.array([[0.0], [1.0], [1.0], [0.0]], dtype="float32")
    ours_scores = ours.evaluate(pictures, labels, verbose=0, return_dict=True)
    theirs_scores = theirs.evaluate(pictures, labels, verbose=0, return_dict=True)
    assert ours_scores["loss"] == pytest.approx(theirs_scores["loss"], rel=1e-4)
    assert ours_scores["binary_accuracy"] == theirs_scores["binary_accuracy"]


# keras.io's "Image classification via fine-tuning with EfficientNet": EfficientNetB0 frozen under a new head
# (pooling, a batch norm, dropout, softmax over the 120 dog breeds), trained at 1e-2; then its last 20 layers
# unfrozen but the batch norms, at 1e-5. Its augmentation front end is left out: off at inference, as above.
# The backbone as the example makes it, `EfficientNetB0(include_top=False, weights="imagenet")` with its pooling
# `avg_pool`, is one call: `efficientnet_b0(weights="imagenet", pooling="avg")`.
EFFICIENTNET = """\
import "zoo:efficientnet_b0"

model dogs {
  input image: (224, 224, 3)
  f = image -> efficientnet_b0(weights="imagenet", pooling="avg") -> batch_norm
  output pred = f -> dropout(0.2) -> dense(120, activation=softmax)
  train {
    optimizer = adam(1e-2)
    loss = categorical_crossentropy
    metrics = [accuracy]
    freeze = ["efficientnet_b0"]
    unfreeze = ["efficientnet_b0.block7a_*", "efficientnet_b0.top_*"]
    unfreeze_after = 25
    unfreeze_learning_rate = 1e-5
  }
}
"""
EFFICIENTNET_SIZE = 224


def the_examples_model(weights: str) -> keras.Model:
    """The example's `build_model` and `unfreeze_model`, line for line (the backbone's layers in the model itself:
    `input_tensor=`), but for the weights: the file given, not ImageNet's download."""
    inputs = keras.layers.Input(shape=(EFFICIENTNET_SIZE, EFFICIENTNET_SIZE, 3))
    model = keras.applications.EfficientNetB0(include_top=False, input_tensor=inputs, weights=weights)
    model.trainable = False
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(model.output)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dropout(0.2, name="top_dropout")(x)
    outputs = keras.layers.Dense(120, activation="softmax", name="pred")(x)
    model = keras.Model(inputs, outputs, name="EfficientNet")
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2), loss="categorical_crossentropy")
    return model


def unfreeze_the_examples_model(model: keras.Model) -> None:
    for layer in model.layers[-20:]:
        if not isinstance(layer, keras.layers.BatchNormalization):
            layer.trainable = True


def _trainable(model: keras.Model) -> list[tuple[str, tuple[int, ...]]]:
    """The trainable weights by layer and kind (`top_conv/kernel`), whatever model holds the layer; the head's
    batch norm is `f` in the spec (the step its binding ends with), `batch_normalization` in the example."""
    named = {"f": "batch_normalization"}
    found = []
    for weight in model.trainable_weights:
        layer, kind = weight.path.split("/")[-2:]
        found.append((f"{named.get(layer, layer)}/{kind}", tuple(weight.shape)))
    return sorted(found)


@pytest.mark.slow
def test_the_efficientnet_example_as_a_spec_is_the_examples_model_in_both_phases(tmp_path, monkeypatch):
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    from netdsl.backend.compiler import unfreeze
    from netdsl.syntax.formatter import format_text

    assert len([line for line in EFFICIENTNET.splitlines() if line.strip()]) <= 15  # and the blank after the import
    assert format_text(EFFICIENTNET) == EFFICIENTNET  # as `netdsl fmt` writes it
    home = tmp_path / "keras-home"
    (home / "models").mkdir(parents=True)
    family = BY_NAME["efficientnet_b0"]
    file = home / "models" / family.notop.fname
    keras.utils.set_random_seed(5)
    drawn = keras.applications.EfficientNetB0(
        weights=None, include_top=False, input_shape=(EFFICIENTNET_SIZE, EFFICIENTNET_SIZE, 3)
    )
    varied_batch_norms(drawn, EFFICIENTNET_SIZE)  # drawn statistics would leave every picture the same output
    import h5py

    with h5py.File(file, "w") as h5:
        save_weights_to_hdf5_group(h5, drawn)
    monkeypatch.setenv("KERAS_HOME", str(home))
    unpinned = dataclasses.replace(family, notop=dataclasses.replace(family.notop, file_hash=None))
    monkeypatch.setitem(zoo_weights.BY_NAME, "efficientnet_b0", unpinned)
    spec = tmp_path / "dogs.net"
    spec.write_text(EFFICIENTNET)

    # the example's own layer names (its batch norm `batch_normalization`: Keras numbers the names it makes up
    # by the models built before in the process), then the spec's model
    keras.backend.clear_session(free_memory=False)
    theirs = the_examples_model(str(file))
    ours = netdsl.build(spec)
    theirs.get_layer("pred").set_weights(ours.get_layer("pred").get_weights())  # the new head's random start
    theirs.get_layer("batch_normalization").set_weights(ours.get_layer("f").get_weights())
    assert ours.count_params() == theirs.count_params()
    assert _trainable(ours) == _trainable(theirs)  # the head alone: pred and its batch norm
    rng = np.random.default_rng(1)
    pictures = rng.uniform(0, 255, (3, EFFICIENTNET_SIZE, EFFICIENTNET_SIZE, 3)).astype("float32")
    got, want = ours.predict(pictures, verbose=0), theirs.predict(pictures, verbose=0)
    assert got.shape == want.shape == (3, 120)
    assert np.max(np.abs(want[0] - want[1])) > 0.01 * np.max(want)  # the pictures' signal reaches the head
    assert np.max(np.abs(got - want)) <= 1e-5

    unfreeze(ours)
    unfreeze_the_examples_model(theirs)
    # the second phase: block 7a and the top of the backbone, its batch norms excepted, and the head
    assert _trainable(ours) == _trainable(theirs)
    assert {name.split("/")[0] for name, _ in _trainable(ours)} >= {"top_conv", "block7a_project_conv", "pred"}
    assert not any(name.startswith(("top_bn", "block7a_bn", "block6")) for name, _ in _trainable(ours))
    assert float(ours.optimizer.learning_rate) == pytest.approx(1e-5)
