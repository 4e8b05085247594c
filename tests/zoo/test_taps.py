"""Taps: a backbone's intermediate feature maps by keras.applications' layer names (`mobilenet_v2.block_13_expand_relu`),
as a U-Net or FPN takes them — TensorFlow's image segmentation tutorial written as a spec, against the tutorial's
own Keras code; a tap of a user's own nested model; the mistakes, each one line at the tap."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import pytest

import netdsl
from netdsl import pipeline
from netdsl.cli import main
from netdsl.zoo import weights as zoo_weights
from netdsl.zoo.catalog import BY_NAME
from tests.support.backbones import varied_batch_norms

SIZE = 128

# tensorflow.org/tutorials/images/segmentation: MobileNetV2's five feature maps, upsampled by pix2pix's
# `upsample` blocks (Conv2DTranspose without bias, batch norm, ReLU) and concatenated on the way up.
UNET = """\
import "zoo:mobilenet_v2"

block upsample(filters) {
  input x
  output y = x -> conv2d_transpose(filters, 3, strides=2, padding="same", use_bias=false) -> batch_norm -> relu
}

model unet {
  input image: (128, 128, 3)
  features = image -> mobilenet_v2
  x = (mobilenet_v2.block_16_project -> upsample(512), mobilenet_v2.block_13_expand_relu) -> concatenate
  x = (x -> upsample(256), mobilenet_v2.block_6_expand_relu) -> concatenate
  x = (x -> upsample(128), mobilenet_v2.block_3_expand_relu) -> concatenate
  x = (x -> upsample(64), mobilenet_v2.block_1_expand_relu) -> concatenate
  output mask = x -> conv2d_transpose(3, 3, strides=2, padding="same")
}
"""

TAPPED = [
    "block_1_expand_relu",
    "block_3_expand_relu",
    "block_6_expand_relu",
    "block_13_expand_relu",
    "block_16_project",
]


def tutorial_unet() -> keras.Model:
    """The tutorial's `unet_model(output_channels=3)`, as it writes it."""
    base_model = keras.applications.MobileNetV2(input_shape=[SIZE, SIZE, 3], include_top=False, weights=None)
    base_model_outputs = [base_model.get_layer(name).output for name in TAPPED]
    down_stack = keras.Model(inputs=base_model.input, outputs=base_model_outputs)

    def upsample(filters: int) -> keras.Sequential:
        return keras.Sequential(
            [
                keras.layers.Conv2DTranspose(filters, 3, strides=2, padding="same", use_bias=False),
                keras.layers.BatchNormalization(),
                keras.layers.ReLU(),
            ]
        )

    inputs = keras.layers.Input(shape=[SIZE, SIZE, 3])
    skips = down_stack(inputs)
    x = skips[-1]
    for up, skip in zip([upsample(512), upsample(256), upsample(128), upsample(64)], reversed(skips[:-1])):
        x = keras.layers.Concatenate()([up(x), skip])
    last = keras.layers.Conv2DTranspose(filters=3, kernel_size=3, strides=2, padding="same")
    return keras.Model(inputs=inputs, outputs=last(x)), down_stack


def test_the_segmentation_tutorials_unet_is_the_tutorials_model(tmp_path: Path) -> None:
    spec = tmp_path / "unet.net"
    spec.write_text(UNET)
    # check and summary know it without Keras: the nested model is the five taps alone, as the tutorial's
    # down_stack is (MobileNetV2's last convolution, which only its declared output needs, is not in it)
    ((_, split),) = pipeline.inferred_splits(pipeline.load(spec), ["unet"]).values()
    assert split.total == 6_504_227  # the tutorial's model.summary()
    ours = netdsl.build(spec)
    keras.utils.set_random_seed(5)
    theirs, down_stack = tutorial_unet()
    assert ours.count_params() == theirs.count_params() == 6_504_227
    backbone = ours.get_layer("mobilenet_v2")
    assert backbone.output_names == [TAPPED[-1], *TAPPED[-2::-1]]  # in the order the body first names them
    # the layers of the tutorial's down_stack, by keras.applications' names: not MobileNetV2's last
    # convolution nor block_16_project_BN, which no tap needs
    assert [layer.name for layer in backbone.layers[1:]] == [layer.name for layer in down_stack.layers[1:]]
    varied_batch_norms(theirs, SIZE)
    ours.set_weights(theirs.get_weights())
    rng = np.random.default_rng(0)  # a noisy picture and a flat bright one
    pictures = np.stack([rng.uniform(-1, 1, (SIZE, SIZE, 3)), rng.uniform(0.4, 0.6, (SIZE, SIZE, 3))]).astype("float32")
    want = keras.ops.convert_to_numpy(theirs(pictures, training=False))
    got = keras.ops.convert_to_numpy(ours(pictures, training=False))
    assert np.max(np.abs(want[0] - want[1])) > 0.1 * np.max(np.abs(want))  # each picture's own mask
    assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want))))
    ours.save(tmp_path / "unet.keras")
    loaded = keras.saving.load_model(tmp_path / "unet.keras", safe_mode=True)
    assert np.array_equal(keras.ops.convert_to_numpy(loaded(pictures, training=False)), got)


def test_a_tap_beside_the_declared_output_keeps_both(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A tap of a user's own model, by the name its layer was given, beside the model's declared output: the
    nested model has both (declared first), as `keras.Model(enc.input, [enc.output, enc.get_layer("hid").output])`."""
    spec = tmp_path / "ae.net"
    spec.write_text(
        'model encoder {\n  input x: (16,)\n  h = x -> dense(8, activation=relu, name="hid")\n'
        "  output z = h -> dense(4)\n}\n\n"
        "model ae {\n  input x: (16,)\n  z = x -> encoder\n"
        "  output y = (z, encoder.hid) -> concatenate -> dense(16)\n}\n"
    )
    assert main(["summary", str(spec), "--model", "ae"]) == 0
    assert "z              model encoder  (4,), (8,)       172" in capsys.readouterr().out
    model = netdsl.build(spec, model="ae")
    x = keras.Input((16,))
    encoder = keras.Model(x, [keras.layers.Dense(4)(h := keras.layers.Dense(8, activation="relu")(x)), h])
    y = keras.Input((16,))
    z, hid = encoder(y)
    reference = keras.Model(y, keras.layers.Dense(16)(keras.layers.Concatenate()([z, hid])))
    assert model.count_params() == reference.count_params() == 380
    reference.set_weights(model.get_weights())
    data = np.random.default_rng(1).normal(size=(3, 16)).astype("float32")
    assert np.allclose(model(data), reference(data), atol=1e-6)


TAP_ERRORS = [
    (
        "  f = image -> mobilenet_v2\n  skip = mobilenet_v2.block_13_expand_rel\n  output y = (f, skip) -> concatenate\n",
        "6:23: error: model 'mobilenet_v2' has no layer 'block_13_expand_rel'; did you mean 'block_13_expand_relu'?",
    ),
    (
        "  skip = mobilenet_v2.block_13_expand_relu\n  output y = image -> mobilenet_v2\n",
        "5:10: error: 'mobilenet_v2.block_13_expand_relu' is a tensor of a call of model 'mobilenet_v2', and there "
        "is none before it; call the model first: features = x -> mobilenet_v2",
    ),
    (
        "  f = image -> mobilenet_v2\n  g = image -> mobilenet_v2\n"
        "  output y = (f, g, mobilenet_v2.out_relu) -> concatenate\n",
        "6:16: error: model 'mobilenet_v2' is called again; 'mobilenet_v2.out_relu' taps its one call (at 5:16); "
        "a model tapped by layer name is called once in the body",
    ),
]


@pytest.mark.parametrize(("body", "message"), TAP_ERRORS)
def test_a_wrong_tap_is_one_line_at_the_tap(
    tmp_path: Path, capsys: pytest.CaptureFixture, body: str, message: str
) -> None:
    spec = tmp_path / "bad.net"
    spec.write_text(f'import "zoo:mobilenet_v2"\n\nmodel seg {{\n  input image: (64, 64, 3)\n{body}}}\n')
    assert main(["check", str(spec)]) == 1
    assert capsys.readouterr().err.splitlines()[0] == f"{spec}:{message}"


def test_the_tapped_backbone_loads_its_published_weights_by_layer_name(tmp_path: Path, monkeypatch) -> None:
    """keras.applications' file holds 104 weighted layers, the U-Net's backbone 101 of them (the taps need no
    more): a Keras 2 file is matched in order, and then by layer name when the model holds fewer of its layers."""
    from tests.zoo.test_backbone import published_file

    (tmp_path / "models").mkdir()
    reference = published_file(tmp_path / "models" / BY_NAME["mobilenet_v2"].notop.fname)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setitem(zoo_weights.BY_NAME, "mobilenet_v2", _unpinned("mobilenet_v2"))
    spec = tmp_path / "unet.net"
    train = '  train {\n    optimizer = adam\n    loss = mse\n    init = {"mobilenet_v2": "zoo:mobilenet_v2"}\n'
    spec.write_text(UNET.replace("  output mask", train + '    freeze = ["mobilenet_v2"]\n  }\n  output mask'))
    model = netdsl.build(spec)
    assert model.count_params() == 6_504_227
    backbone = model.get_layer("mobilenet_v2")
    assert not backbone.trainable
    weighted = [layer for layer in backbone.layers if layer.weights]
    assert len(weighted) == 101
    for layer in weighted:
        for ours, theirs in zip(layer.get_weights(), reference.get_layer(layer.name).get_weights()):
            assert np.array_equal(ours, theirs), layer.name


def _unpinned(name: str):
    import dataclasses

    family = BY_NAME[name]
    return dataclasses.replace(family, notop=dataclasses.replace(family.notop, file_hash=None))
