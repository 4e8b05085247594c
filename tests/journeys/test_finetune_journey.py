"""Journey (d), as a user takes it on the command line: a pretrained backbone from the zoo, its weights given
offline -> fine-tuned on my pictures (init + freeze + unfreeze_after) -> predictions on new pictures with class
names.

Issue 28, item 8(d), with issue 32's zoo. CI has no network: the "downloaded" file is keras.applications'
MobileNetV2 with random weights written in the published layout (Keras 2's `.h5`, as the file Keras
downloads), handed over with `netdsl zoo fetch mobilenet_v2 --from FILE` as an offline user does (Keras
pins no hash for MobileNetV2's files; the sha256 is reported and recorded). Every step runs `netdsl` in
its own process.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.journeys import netdsl
from tests.journeys.test_image_journey import CLASSES, picture, png

NOTOP = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5"
SPEC = """\
import "zoo:mobilenet_v2"

model shapes {
  input image: (32, 32, 3)
  f = image -> rescaling(1 / 127.5, offset=-1) -> mobilenet_v2 -> global_average_pooling2d
  output probs = f -> dense(3, activation=softmax)

  train {
    optimizer = adam(1e-2)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    init = {"mobilenet_v2": "zoo:mobilenet_v2"}
    freeze = ["mobilenet_v2"]
    unfreeze_after = 2
    unfreeze_learning_rate = 1e-4
    epochs = 3
    batch_size = 16
  }
}
"""


def published_weights(path: Path, pictures: np.ndarray) -> None:
    """keras.applications' MobileNetV2 without its top, written as the published file is: random weights, and
    batch norm statistics of real pictures as a trained network has them (with Keras' initial ones, 0 and 1,
    the random network saturates its ReLU6s and passes no gradient: nothing could be fine-tuned)."""
    import keras
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    keras.utils.set_random_seed(3)
    model = keras.applications.MobileNetV2(weights=None, include_top=False, input_shape=(32, 32, 3))
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in norms:
        layer.momentum = 0.0  # one pass in training mode: each moving statistic is its input's
    model(pictures / 127.5 - 1, training=True)
    with h5py.File(path, "w") as h5:
        save_weights_to_hdf5_group(h5, model)


def upscaled(kind: str, rng: np.random.Generator) -> np.ndarray:
    """The image journey's 16x16 pictures at 32x32 (MobileNetV2 takes 32 or more)."""
    return np.kron(picture(kind, rng), np.ones((2, 2, 1), dtype=np.int64))


@pytest.fixture(scope="module")
def journey(tmp_path_factory):
    work = tmp_path_factory.mktemp("finetune_journey")
    rng = np.random.default_rng(11)
    for kind in CLASSES:
        (work / "pics" / kind).mkdir(parents=True)
        for i in range(16):
            (work / "pics" / kind / f"{i:02d}.png").write_bytes(png(upscaled(kind, rng)))
    (work / "new").mkdir()
    for i, kind in enumerate(CLASSES * 2):
        (work / "new" / f"photo{i}.png").write_bytes(png(upscaled(kind, rng)))
    (work / "downloads").mkdir()
    others = np.stack([upscaled(kind, rng) for kind in CLASSES * 8]).astype("float32")  # not the training set
    published_weights(work / "downloads" / NOTOP, others)
    (work / "shapes.net").write_text(SPEC)
    return work


def layer_weights(h5: h5py.File, layer: str) -> list[np.ndarray]:
    """A layer's arrays from a Keras 2 `.h5` file, in the order its `weight_names` lists them."""
    group = h5[layer]
    return [
        np.asarray(group[name.decode() if isinstance(name, bytes) else name]) for name in group.attrs["weight_names"]
    ]


@pytest.mark.slow  # trains in `netdsl` processes
def test_a_zoo_backbone_fine_tuned_on_my_pictures_predicts_their_classes(journey, monkeypatch):
    work = journey
    monkeypatch.setenv("KERAS_HOME", str(work / "keras-home"))  # a fresh Keras cache, seen by every process

    # offline: the file the user downloaded elsewhere, into Keras' cache
    fetched = netdsl(work, "zoo", "fetch", "mobilenet_v2", "--from", f"downloads/{NOTOP}")
    assert fetched.returncode == 0, fetched.stderr
    cached = work / "keras-home" / "models" / NOTOP
    digest = hashlib.sha256(cached.read_bytes()).hexdigest()
    assert fetched.stdout == f"mobilenet_v2/imagenet-notop: {cached} (sha256 {digest})\n"

    # the cost before anything is built: counted without the weights, without TensorFlow
    summary = netdsl(work, "summary", "shapes.net")
    assert summary.returncode == 0, summary.stderr
    assert "params: 2,261,827 (trainable 3,843, non-trainable 2,257,984)" in summary.stdout.splitlines()

    trained = netdsl(work, "train", "shapes.net", "--data", "pics", "--seed", "0", "--progress", "line")
    assert trained.returncode == 0, trained.stderr
    loaded = f"init: 104 layers of 'mobilenet_v2' from zoo:mobilenet_v2 (sha256 {digest})"
    assert loaded in trained.stderr.splitlines()
    assert trained.stdout.splitlines()[-1] == "run folder: runs/shapes-1"
    assert json.loads((work / "runs/shapes-1/config.json").read_text())["init"] == [loaded]  # the weights, pinned
    history = list(csv.DictReader((work / "runs/shapes-1/history.csv").open()))
    assert len(history) == 3

    # after the second phase: the backbone trained, its batch norms kept ImageNet's statistics (the guide's rule)
    import keras

    from netdsl import custom  # noqa: F401 - netdsl's Keras classes, which the saved model names

    model = keras.saving.load_model(work / "runs/shapes-1/model.keras", compile=False)  # the last epoch's
    backbone = model.get_layer("mobilenet_v2")
    with h5py.File(cached, "r") as published:
        kept, (conv,) = layer_weights(published, "bn_Conv1"), layer_weights(published, "Conv1")
    norms = [layer for layer in backbone.layers if isinstance(layer, keras.layers.BatchNormalization)]
    first_conv = next(layer for layer in backbone.layers if isinstance(layer, keras.layers.Conv2D))
    assert all(np.array_equal(np.asarray(a), b) for a, b in zip(norms[0].get_weights(), kept))
    assert not np.array_equal(np.asarray(first_conv.get_weights()[0]), conv), "the second phase did not train it"

    # new pictures, named by class
    predicted = netdsl(work, "predict", "runs/shapes-1", "--data", "new", "-o", "preds.csv")
    assert predicted.returncode == 0, predicted.stderr
    table = list(csv.DictReader((work / "preds.csv").open()))
    assert list(table[0]) == ["source", "class", *CLASSES]
    assert sorted(row["source"] for row in table) == [f"photo{i}.png" for i in range(6)]
    assert {row["class"] for row in table} <= set(CLASSES)
    config = json.loads((work / "runs/shapes-1/config.json").read_text())
    assert config["classes"] == {"probs": list(CLASSES)}
    assert os.path.exists(work / "runs/shapes-1/best.keras")
