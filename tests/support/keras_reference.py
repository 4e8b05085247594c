"""Hand-written Keras 3 models: the reference each spec in `specs/` must equal.

Every builder here is plain functional Keras code written from the paper or
the tutorial, not generated from a spec. `tests/backend/test_specs.py` builds each
spec and its reference, compares parameter counts, copies the reference's
weights into the spec-built model and compares outputs; `bench/` times the
hand-written ResNet-50 and MobileNetV2 against the spec builds.

`REFERENCES` maps (spec file, model name) to the reference builder.
netdsl's shipped custom layers (`linear`, `scale`, `attention`, `residual`,
...) are used here as the Keras classes they are; layers and activations a
spec declares (`declared.net`) are written by hand below as ordinary Keras
layers, so the expression runtime is checked against independent code.
"""

from __future__ import annotations

import contextlib
import math

import keras
from keras import layers, ops

# ====================================================================== ResNet-50


def resnet50() -> keras.Model:
    """`keras.applications.ResNet50`, untrained: 25,636,712 parameters."""
    return keras.applications.ResNet50(weights=None)


def _resnet_bottleneck(x, filters, stride=1, project=False, name=""):
    eps = 1.001e-5
    if project:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = layers.BatchNormalization(epsilon=eps, name=f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    y = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    y = layers.BatchNormalization(epsilon=eps, name=f"{name}_1_bn")(y)
    y = layers.Activation("relu", name=f"{name}_1_relu")(y)
    y = layers.Conv2D(filters, 3, padding="same", name=f"{name}_2_conv")(y)
    y = layers.BatchNormalization(epsilon=eps, name=f"{name}_2_bn")(y)
    y = layers.Activation("relu", name=f"{name}_2_relu")(y)
    y = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(y)
    y = layers.BatchNormalization(epsilon=eps, name=f"{name}_3_bn")(y)
    y = layers.Add(name=f"{name}_add")([shortcut, y])
    return layers.Activation("relu", name=f"{name}_out")(y)


def resnet50_handwritten() -> keras.Model:
    """ResNet-50 v1 as Keras applications builds it, written out by hand."""
    image = keras.Input((224, 224, 3), name="image")
    x = layers.ZeroPadding2D(((3, 3), (3, 3)), name="conv1_pad")(image)
    x = layers.Conv2D(64, 7, strides=2, name="conv1_conv")(x)
    x = layers.BatchNormalization(epsilon=1.001e-5, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    for stage, (filters, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=2):
        x = _resnet_bottleneck(x, filters, stride, project=True, name=f"conv{stage}_block1")
        for i in range(2, blocks + 1):
            x = _resnet_bottleneck(x, filters, name=f"conv{stage}_block{i}")
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    probs = layers.Dense(1000, activation="softmax", name="predictions")(x)
    return keras.Model(image, probs, name="resnet50")


# ==================================================================== MobileNetV2


def mobilenet_v2() -> keras.Model:
    """`keras.applications.MobileNetV2`, alpha 1.0, untrained: 3,538,984 parameters."""
    return keras.applications.MobileNetV2(weights=None)


def _make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _bn(name):
    return layers.BatchNormalization(epsilon=1e-3, momentum=0.999, name=name)


def _inverted_residual(x, filters, stride, expansion, name):
    cin = x.shape[-1]
    cout = _make_divisible(filters)
    h = x
    if expansion != 1:
        h = layers.Conv2D(expansion * cin, 1, padding="same", use_bias=False, name=f"{name}_expand")(h)
        h = _bn(f"{name}_expand_BN")(h)
        h = layers.ReLU(6.0, name=f"{name}_expand_relu")(h)
    if stride == 2:
        # imagenet_utils.correct_pad for an even-sized input and a 3x3 kernel
        rows, cols = h.shape[1], h.shape[2]
        pad = ((1 - (1 - rows % 2), 1), (1 - (1 - cols % 2), 1))
        h = layers.ZeroPadding2D(pad, name=f"{name}_pad")(h)
        h = layers.DepthwiseConv2D(3, strides=2, padding="valid", use_bias=False, name=f"{name}_depthwise")(h)
    else:
        h = layers.DepthwiseConv2D(3, padding="same", use_bias=False, name=f"{name}_depthwise")(h)
    h = _bn(f"{name}_depthwise_BN")(h)
    h = layers.ReLU(6.0, name=f"{name}_depthwise_relu")(h)
    h = layers.Conv2D(cout, 1, padding="same", use_bias=False, name=f"{name}_project")(h)
    h = _bn(f"{name}_project_BN")(h)
    if stride == 1 and cin == cout:
        h = layers.Add(name=f"{name}_add")([x, h])
    return h


def mobilenet_v2_handwritten() -> keras.Model:
    """MobileNetV2 (alpha 1.0) as Keras applications builds it, written out by hand."""
    image = keras.Input((224, 224, 3), name="image")
    x = layers.Conv2D(32, 3, strides=2, padding="same", use_bias=False, name="Conv1")(image)
    x = _bn("bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    # (expansion, channels, repeats, first stride), the paper's table 2
    settings = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]
    block = 0
    for expansion, channels, repeats, stride in settings:
        for i in range(repeats):
            x = _inverted_residual(x, channels, stride if i == 0 else 1, expansion, f"block_{block}")
            block += 1
    x = layers.Conv2D(1280, 1, use_bias=False, name="Conv_1")(x)
    x = _bn("Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    probs = layers.Dense(1000, activation="softmax", name="predictions")(x)
    return keras.Model(image, probs, name="mobilenet_v2")


# ========================================================================== U-Net


def _conv_bn_relu(x, filters):
    x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation("relu")(x)


def _double_conv(x, filters):
    return _conv_bn_relu(_conv_bn_relu(x, filters), filters)


def unet() -> keras.Model:
    """A four-level U-Net on 128x128x3, 16..128 filters, a 256-filter bridge."""
    image = keras.Input((128, 128, 3), name="image")
    skips = []
    x = image
    for filters in (16, 32, 64, 128):
        x = _double_conv(x, filters)
        skips.append(x)
        x = layers.MaxPooling2D(2)(x)
    x = _double_conv(x, 256)
    for filters, skip in zip((128, 64, 32, 16), reversed(skips)):
        x = layers.Conv2DTranspose(filters, 2, strides=2, padding="same")(x)
        x = layers.Concatenate(axis=-1)([x, skip])
        x = _double_conv(x, filters)
    mask = layers.Conv2D(1, 1, activation="sigmoid")(x)
    return keras.Model(image, mask, name="unet")


# ======================================================================== Siamese


def siamese() -> keras.Model:
    """Two 28x28x1 images through ONE encoder model; |a - b| -> sigmoid."""
    x = keras.Input((28, 28, 1))
    e = _conv_bn_relu(x, 32)
    e = layers.MaxPooling2D(2)(e)
    e = _conv_bn_relu(e, 64)
    e = layers.MaxPooling2D(2)(e)
    e = layers.GlobalAveragePooling2D()(e)
    e = layers.Dense(64)(e)
    encoder = keras.Model(x, e, name="tower")

    left = keras.Input((28, 28, 1), name="left")
    right = keras.Input((28, 28, 1), name="right")
    a, b = encoder(left), encoder(right)
    distance = layers.Activation(ops.abs)(layers.Subtract()([a, b]))
    same = layers.Dense(1, activation="sigmoid")(distance)
    return keras.Model([left, right], same, name="siamese")


# ==================================================================== Transformer


class PositionEmbedding(layers.Layer):
    """Adds a learned (sequence length, features) table to its input."""

    def build(self, input_shape):
        self.table = self.add_weight(
            name="table", shape=tuple(input_shape[1:]), initializer=keras.initializers.RandomUniform(-0.05, 0.05)
        )

    def call(self, x):
        return x + self.table


def _encoder_block(x, heads, ff_dim, rate):
    d = x.shape[-1]
    attended = layers.MultiHeadAttention(heads, d // heads, dropout=rate)(x, x)
    attended = layers.Dropout(rate)(attended)
    h = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, attended]))
    ff = layers.Dense(ff_dim, activation="relu")(h)
    ff = layers.Dropout(rate)(layers.Dense(d)(ff))
    return layers.LayerNormalization(epsilon=1e-6)(layers.Add()([h, ff]))


def transformer() -> keras.Model:
    """Token + learned position embedding, two encoder blocks, pooled classifier."""
    tokens = keras.Input((200,), dtype="int32", name="tokens")
    x = layers.Embedding(20000, 64)(tokens)
    x = PositionEmbedding()(x)
    for _ in range(2):
        x = _encoder_block(x, heads=4, ff_dim=128, rate=0.1)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    probs = layers.Dense(2, activation="softmax")(x)
    return keras.Model(tokens, probs, name="transformer")


# =================================================================== Multi-output


def multi_output() -> keras.Model:
    """A conv trunk with a 10-class head `probs` and a 4-number box head `box`."""
    image = keras.Input((64, 64, 3), name="image")
    x = layers.Rescaling(1.0 / 255)(image)
    for filters in (32, 64, 128):
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(256, activation="relu")(x)
    x = layers.Dropout(0.3)(x)
    probs = layers.Dense(10, activation="softmax", name="probs")(x)
    box = layers.Dense(4, activation="sigmoid", name="box")(x)
    return keras.Model(image, [probs, box], name="detector")


# ================================================================= Lightning MLP


def lightning_mlp() -> keras.Model:
    """The Lightning tutorial's 784 -> 128 (relu) -> 10 logits: 101,770 parameters."""
    image = keras.Input((28, 28), name="image")
    x = layers.Flatten()(image)
    x = layers.Dense(128, activation="relu")(x)
    logits = layers.Dense(10)(x)
    return keras.Model(image, logits, name="lightning_mlp")


# ================================================================= Custom layers


def _custom():
    import netdsl.custom  # noqa: F401  (registers the classes)
    from netdsl.custom import activations
    from netdsl.custom import layers as custom_layers

    return custom_layers, activations


def linear_mlp() -> keras.Model:
    custom, _ = _custom()
    x = keras.Input((784,))
    h = layers.Activation("relu")(custom.Linear(64)(x))
    h = layers.Activation("relu")(custom.Linear(64)(h))
    return keras.Model(x, custom.Linear(10)(h), name="linear_mlp")


def multiply() -> keras.Model:
    custom, _ = _custom()
    x = keras.Input((16,))
    h = custom.Scale(2.0)(layers.Dense(16)(x))
    return keras.Model(x, custom.Scale(0.5, trainable=True)(h), name="multiply")


def activations() -> keras.Model:
    custom, act = _custom()
    x = keras.Input((16,))
    waves = layers.Dense(32, activation=act.sine)(x)
    soft = layers.Dense(32, activation=act.smooth_relu)(x)
    gated = layers.Activation(act.sigmoid_tanh)(layers.Dense(32)(x))
    squared = layers.Activation(act.square)(layers.Dense(32)(x))
    mixed = layers.Concatenate()([waves, soft, gated, squared])
    score = custom.ScaledSigmoid(5.0)(layers.Dense(1)(mixed))
    return keras.Model(x, score, name="activations")


def attention_example() -> keras.Model:
    custom, _ = _custom()
    queries = keras.Input((8, 32), name="queries")
    context = keras.Input((16, 32), name="context")
    mixed = custom.Attention(32, heads=4)(queries)
    attended, weights = custom.Attention(32, heads=4, return_weights=True)([mixed, context])
    x = layers.GlobalAveragePooling1D()(attended)
    score = layers.Dense(1, activation="sigmoid")(x)
    # The weights leave through an Identity named after the output, as netdsl keeps
    # an output's name when it is not its layer's (here the attention's second output).
    weights = layers.Identity(name="weights")(weights)
    return keras.Model([queries, context], [score, weights], name="attention_example")


@contextlib.contextmanager
def dtype_policy(name: str):
    """Build under a global Keras dtype policy, restoring the previous one."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def residual_net() -> keras.Model:
    """Three `residual` blocks in mixed float16; the classifier in float32."""
    custom, _ = _custom()
    with dtype_policy("mixed_float16"):
        image = keras.Input((32, 32, 3))
        x = layers.Conv2D(16, 3, padding="same")(image)
        x = custom.Residual(16)(x)
        x = custom.Residual(32, stride=2)(x)
        x = custom.Residual(64, stride=2)(x)
        x = layers.GlobalAveragePooling2D()(x)
        probs = layers.Dense(10, activation="softmax", dtype="float32")(x)
        return keras.Model(image, probs, name="residual_net")


# ===================================================== Declared layers, by hand


def mish(x):
    return x * ops.tanh(ops.softplus(x))


def scaled_tanh(x, scale=1.7159, slope=0.6667):
    return scale * ops.tanh(slope * x)


class MyLinear(layers.Layer):
    """`x @ kernel + bias`, kernel glorot-uniform, bias zeros."""

    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units), initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros")

    def call(self, x):
        return ops.matmul(x, self.kernel) + self.bias


class SeedAttention(layers.Layer):
    """softmax((q Wq)(k Wk)^T / sqrt(d)) (v Wv), single head, no bias."""

    def __init__(self, d_model, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model

    def build(self, input_shape):
        d = self.d_model
        self.wq = self.add_weight(name="wq", shape=(d, d), initializer="glorot_uniform")
        self.wk = self.add_weight(name="wk", shape=(d, d), initializer="glorot_uniform")
        self.wv = self.add_weight(name="wv", shape=(d, d), initializer="glorot_uniform")

    def call(self, inputs):
        q, k, v = inputs
        scores = ops.matmul(ops.matmul(q, self.wq), ops.transpose(ops.matmul(k, self.wk), (0, 2, 1)))
        weights = ops.softmax(scores / math.sqrt(self.d_model), axis=-1)
        return ops.matmul(weights, ops.matmul(v, self.wv))


def declared_mlp() -> keras.Model:
    x = keras.Input((20,))
    h = layers.Activation(mish)(MyLinear(64)(x))
    h = layers.Dense(64, activation=scaled_tanh)(h)
    h = layers.Activation(lambda t: scaled_tanh(t, scale=1.0, slope=1.0))(MyLinear(32)(h))
    return keras.Model(x, MyLinear(1)(h), name="declared_mlp")


def declared_attention() -> keras.Model:
    seq = keras.Input((10, 16))
    mixed = SeedAttention(16)([seq, seq, seq])
    x = layers.GlobalAveragePooling1D()(mixed)
    probs = layers.Activation("softmax")(MyLinear(3)(x))
    return keras.Model(seq, probs, name="declared_attention")


# ======================================================================== index

# (spec file under specs/, model name) -> hand-written reference builder
REFERENCES = {
    ("resnet50.net", "resnet50"): resnet50,
    ("mobilenet_v2.net", "mobilenet_v2"): mobilenet_v2,
    ("unet.net", "unet"): unet,
    ("siamese.net", "siamese"): siamese,
    ("transformer.net", "transformer"): transformer,
    ("multi_output.net", "detector"): multi_output,
    ("lightning_mlp.net", "lightning_mlp"): lightning_mlp,
    ("custom_layers.net", "linear_mlp"): linear_mlp,
    ("custom_layers.net", "multiply"): multiply,
    ("custom_layers.net", "activations"): activations,
    ("custom_layers.net", "attention_example"): attention_example,
    ("custom_layers.net", "residual_net"): residual_net,
    ("declared.net", "declared_mlp"): declared_mlp,
    ("declared.net", "declared_attention"): declared_attention,
}

# Parameter counts known independently of both builders.
KNOWN_PARAMS = {
    "resnet50": 25_636_712,
    "mobilenet_v2": 3_538_984,
    "lightning_mlp": 784 * 128 + 128 + 128 * 10 + 10,  # 101,770
}
