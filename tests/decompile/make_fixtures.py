"""Make the export fixtures: each NAME.json is the config.json of a small Keras model.

Run by hand (`.venv/bin/python tests/decompile/make_fixtures.py`) when Keras changes how
it saves models; then run tests/test_decompile.py with REGEN_DECOMPILE=1 to write the
expected outputs (NAME.expected for errors, NAME.net for specs) and review the diff.
The tests zip each JSON into NAME.keras, as `model.save` would, and export that.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
from keras import layers

import netdsl

HERE = Path(__file__).resolve().parent


@keras.saving.register_keras_serializable(package="mine")
class Twice(layers.Layer):
    def call(self, x):
        return 2 * x


class Subclassed(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(3)

    def call(self, x):
        return self.dense(x)


def small_cnn():
    image = keras.Input((28, 28, 1), name="image")
    x = image
    for filters in (16, 32):
        x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.MaxPooling2D()(x)
    x = layers.Flatten()(x)
    x = layers.Dropout(0.25)(x)
    x = layers.Dense(64, activation="relu", kernel_regularizer=keras.regularizers.L2(1e-4))(x)
    return keras.Model(image, layers.Dense(10, activation="softmax", name="probs")(x), name="small_cnn")


def nested_shared():
    x = keras.Input((16,), name="x")
    encoder = keras.Model(x, layers.Dense(8, name="code")(layers.Dense(32, activation="gelu")(x)), name="encoder")
    left, right = keras.Input((16,), name="left"), keras.Input((16,), name="right")
    norm = layers.LayerNormalization(name="norm")
    a, b = norm(encoder(left)), norm(encoder(right))
    distance = layers.Subtract(name="distance")([a, b])
    same = layers.Dense(1, activation="sigmoid", name="same")(distance)
    joined = layers.Concatenate(name="joined")([a, b])
    return keras.Model([left, right], [same, layers.Dense(4, name="pair")(joined)], name="siamese")


def code_layers():
    x = keras.Input((4,), name="x")
    h = layers.Lambda(lambda t: t * 2, name="double")(x)
    h = Twice(name="twice")(h)
    return keras.Model(x, layers.Dense(2, name="out")(h), name="code_layers")


def operation():
    x = keras.Input((4,), name="x")
    h = layers.Dense(4, name="dense")(x)
    return keras.Model(x, h + x, name="operation")


def subclassed():
    model = Subclassed(name="subclassed")
    model(keras.ops.zeros((1, 4)))
    return model


def declared():
    return netdsl.build(netdsl.parse("""
activation mish(x) = x * tanh(smooth_relu(x))
model declared {
  input x: (8,)
  output y = x -> dense(8) -> mish
}
""", filename="declared.net"))


def main() -> None:
    for make in (small_cnn, nested_shared, code_layers, operation, subclassed, declared):
        config = keras.saving.serialize_keras_object(make())
        text = json.dumps(json.loads(json.dumps(config)), indent=1, sort_keys=False)
        (HERE / f"{make.__name__}.json").write_text(text + "\n", encoding="utf-8")
        print(f"wrote {make.__name__}.json")


if __name__ == "__main__":
    main()
