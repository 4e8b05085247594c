"""The keras.io examples written as specs (`specs/keras_io/`), each equal to the example's own code.

Every spec there has its reference below: the example's Keras code, written as keras.io writes
it (its names, its calls), built at small sizes through the spec's `let`s (`-D`), so the test
runs in a second. The spec-built model has the same parameters, and the same outputs once the
reference's weights are copied into it (<= 1e-6); it saves and reloads with `safe_mode=True`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import ops

import netdsl
from tests.support.keras_io_layers import TokenAndPositionEmbedding
from tests.support.keras_io_layers import loss as keras_io_loss

ROOT = Path(__file__).resolve().parents[2]
KERAS_IO = ROOT / "specs" / "keras_io"
RNG = np.random.default_rng(30)


# ====================================================================== the references


def lstm_seq2seq(latent_dim: int, num_encoder_tokens: int, num_decoder_tokens: int) -> keras.Model:
    """keras.io/examples/nlp/lstm_seq2seq, "Build the model", as written there."""
    # Define an input sequence and process it.
    encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
    encoder = keras.layers.LSTM(latent_dim, return_state=True)
    encoder_outputs, state_h, state_c = encoder(encoder_inputs)

    # We discard `encoder_outputs` and only keep the states.
    encoder_states = [state_h, state_c]

    # Set up the decoder, using `encoder_states` as initial state.
    decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))

    # We set up our decoder to return full output sequences,
    # and to return internal states as well. We don't use the
    # return states in the training model, but we will use them in inference.
    decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
    decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
    decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
    decoder_outputs = decoder_dense(decoder_outputs)

    # Define the model that will turn
    # `encoder_input_data` & `decoder_input_data` into `decoder_target_data`
    return keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)


def text_classification_with_transformer(
    vocab_size: int, maxlen: int, embed_dim: int, num_heads: int, ff_dim: int
) -> keras.Model:
    """keras.io/examples/nlp/text_classification_with_transformer, as written there."""

    class TransformerBlock(keras.layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential(
                [
                    keras.layers.Dense(ff_dim, activation="relu"),
                    keras.layers.Dense(embed_dim),
                ]
            )
            self.layernorm1 = keras.layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = keras.layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = keras.layers.Dropout(rate)
            self.dropout2 = keras.layers.Dropout(rate)

        def call(self, inputs):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output)
            return self.layernorm2(out1 + ffn_output)

    inputs = keras.layers.Input(shape=(maxlen,))
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
    x = transformer_block(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dropout(0.1)(x)
    x = keras.layers.Dense(20, activation="relu")(x)
    x = keras.layers.Dropout(0.1)(x)
    outputs = keras.layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def image_classification_from_scratch(image_size: int, num_classes: int) -> keras.Model:
    """keras.io/examples/vision/image_classification_from_scratch, `make_model` as written there, with its
    data augmentation made part of the model ("Option 1")."""
    layers = keras.layers
    data_augmentation_layers = [
        layers.RandomFlip("horizontal"),
        layers.RandomRotation(0.1),
    ]

    def data_augmentation(images):
        for layer in data_augmentation_layers:
            images = layer(images)
        return images

    def make_model(input_shape, num_classes):
        inputs = keras.Input(shape=input_shape)
        x = data_augmentation(inputs)  # Option 1
        # Entry block
        x = layers.Rescaling(1.0 / 255)(x)
        x = layers.Conv2D(128, 3, strides=2, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)

        previous_block_activation = x  # Set aside residual

        for size in [256, 512, 728]:
            x = layers.Activation("relu")(x)
            x = layers.SeparableConv2D(size, 3, padding="same")(x)
            x = layers.BatchNormalization()(x)

            x = layers.Activation("relu")(x)
            x = layers.SeparableConv2D(size, 3, padding="same")(x)
            x = layers.BatchNormalization()(x)

            x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

            # Project residual
            residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
            x = layers.add([x, residual])  # Add back residual
            previous_block_activation = x  # Set aside next residual

        x = layers.SeparableConv2D(1024, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)

        x = layers.GlobalAveragePooling2D()(x)
        if num_classes == 2:
            units = 1
        else:
            units = num_classes

        x = layers.Dropout(0.25)(x)
        # We specify activation=None so as to return logits
        outputs = layers.Dense(units, activation=None)(x)
        return keras.Model(inputs, outputs)

    return make_model(input_shape=(image_size, image_size) + (3,), num_classes=num_classes)


def mlp_image_classification(
    num_classes: int,
    input_size: int,
    image_size: int,
    patch_size: int,
    embedding_dim: int,
    dropout_rate: float,
    num_blocks: int,
    blocks: keras.Model | None = None,
) -> keras.Model:
    """keras.io/examples/vision/mlp_image_classification, the MLP-Mixer (or the model of other `blocks`), as
    written there (its `data_augmentation` not adapted: the test copies the spec's weights into both)."""
    layers = keras.layers
    input_shape = (input_size, input_size, 3)
    num_patches = (image_size // patch_size) ** 2

    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.Resizing(image_size, image_size),
            layers.RandomFlip("horizontal"),
            layers.RandomZoom(height_factor=0.2, width_factor=0.2),
        ],
        name="data_augmentation",
    )

    class Patches(layers.Layer):
        def __init__(self, patch_size, **kwargs):
            super().__init__(**kwargs)
            self.patch_size = patch_size

        def call(self, x):
            patches = keras.ops.image.extract_patches(x, self.patch_size)
            batch_size = keras.ops.shape(patches)[0]
            num_patches = keras.ops.shape(patches)[1] * keras.ops.shape(patches)[2]
            patch_dim = keras.ops.shape(patches)[3]
            out = keras.ops.reshape(patches, (batch_size, num_patches, patch_dim))
            return out

    def build_classifier(blocks, positional_encoding=False):
        inputs = layers.Input(shape=input_shape)
        # Augment data.
        augmented = data_augmentation(inputs)
        # Create patches.
        patches = Patches(patch_size)(augmented)
        # Encode patches to generate a [batch_size, num_patches, embedding_dim] tensor.
        x = layers.Dense(units=embedding_dim)(patches)
        # Process x using the module blocks.
        x = blocks(x)
        # Apply global average pooling to generate a [batch_size, embedding_dim] representation tensor.
        representation = layers.GlobalAveragePooling1D()(x)
        # Apply dropout.
        representation = layers.Dropout(rate=dropout_rate)(representation)
        # Compute logits outputs.
        logits = layers.Dense(num_classes)(representation)
        # Create the Keras model.
        return keras.Model(inputs=inputs, outputs=logits)

    class MLPMixerLayer(layers.Layer):
        def __init__(self, num_patches, hidden_units, dropout_rate, *args, **kwargs):
            super().__init__(*args, **kwargs)

            self.mlp1 = keras.Sequential(
                [
                    layers.Dense(units=num_patches, activation="gelu"),
                    layers.Dense(units=num_patches),
                    layers.Dropout(rate=dropout_rate),
                ]
            )
            self.mlp2 = keras.Sequential(
                [
                    layers.Dense(units=num_patches, activation="gelu"),
                    layers.Dense(units=hidden_units),
                    layers.Dropout(rate=dropout_rate),
                ]
            )
            self.normalize = layers.LayerNormalization(epsilon=1e-6)

        def call(self, inputs):
            # Apply layer normalization.
            x = self.normalize(inputs)
            # Transpose inputs from [num_batches, num_patches, hidden_units] to [num_batches, hidden_units, num_patches].
            x_channels = keras.ops.transpose(x, axes=(0, 2, 1))
            # Apply mlp1 on each channel independently.
            mlp1_outputs = self.mlp1(x_channels)
            # Transpose mlp1_outputs from [num_batches, hidden_dim, num_patches] to [num_batches, num_patches, hidden_units].
            mlp1_outputs = keras.ops.transpose(mlp1_outputs, axes=(0, 2, 1))
            # Add skip connection.
            x = mlp1_outputs + inputs
            # Apply layer normalization.
            x_patches = self.normalize(x)
            # Apply mlp2 on each patch independtenly.
            mlp2_outputs = self.mlp2(x_patches)
            # Add skip connection.
            x = x + mlp2_outputs
            return x

    mlpmixer_blocks = keras.Sequential(
        [MLPMixerLayer(num_patches, embedding_dim, dropout_rate) for _ in range(num_blocks)]
    )
    return build_classifier(mlpmixer_blocks if blocks is None else blocks)


def gmlp_image_classification(
    num_classes: int,
    input_size: int,
    image_size: int,
    patch_size: int,
    embedding_dim: int,
    dropout_rate: float,
    num_blocks: int,
) -> keras.Model:
    """keras.io/examples/vision/mlp_image_classification, the gMLP, as written there; its front end,
    `Patches` and classifier are the MLP-Mixer's (`mlp_image_classification`)."""
    layers = keras.layers
    num_patches = (image_size // patch_size) ** 2

    class gMLPLayer(layers.Layer):  # noqa: N801 (the example's name)
        def __init__(self, num_patches, embedding_dim, dropout_rate, *args, **kwargs):
            super().__init__(*args, **kwargs)

            self.channel_projection1 = keras.Sequential(
                [
                    layers.Dense(units=embedding_dim * 2, activation="gelu"),
                    layers.Dropout(rate=dropout_rate),
                ]
            )

            self.channel_projection2 = layers.Dense(units=embedding_dim)

            self.spatial_projection = layers.Dense(units=num_patches, bias_initializer="Ones")

            self.normalize1 = layers.LayerNormalization(epsilon=1e-6)
            self.normalize2 = layers.LayerNormalization(epsilon=1e-6)

        def spatial_gating_unit(self, x):
            # Split x along the channel dimensions.
            # Tensors u and v will in the shape of [batch_size, num_patchs, embedding_dim].
            u, v = keras.ops.split(x, indices_or_sections=2, axis=2)
            # Apply layer normalization.
            v = self.normalize2(v)
            # Apply spatial projection.
            v_channels = keras.ops.transpose(v, axes=(0, 2, 1))
            v_projected = self.spatial_projection(v_channels)
            v_projected = keras.ops.transpose(v_projected, axes=(0, 2, 1))
            # Apply element-wise multiplication.
            return u * v_projected

        def call(self, inputs):
            # Apply layer normalization.
            x = self.normalize1(inputs)
            # Apply the first channel projection. x_projected shape: [batch_size, num_patches, embedding_dim * 2].
            x_projected = self.channel_projection1(x)
            # Apply the spatial gating unit. x_spatial shape: [batch_size, num_patches, embedding_dim].
            x_spatial = self.spatial_gating_unit(x_projected)
            # Apply the second channel projection. x_projected shape: [batch_size, num_patches, embedding_dim].
            x_projected = self.channel_projection2(x_spatial)
            # Add skip connection.
            return x + x_projected

    gmlp_blocks = keras.Sequential([gMLPLayer(num_patches, embedding_dim, dropout_rate) for _ in range(num_blocks)])
    return mlp_image_classification(
        num_classes, input_size, image_size, patch_size, embedding_dim, dropout_rate, num_blocks, blocks=gmlp_blocks
    )


def siamese_contrastive(margin: int) -> keras.Model:
    """keras.io/examples/vision/siamese_contrastive, the model as written there (its loss: `contrastive_loss`)."""

    def euclidean_distance(vects):
        x, y = vects
        sum_square = ops.sum(ops.square(x - y), axis=1, keepdims=True)
        return ops.sqrt(ops.maximum(sum_square, keras.backend.epsilon()))

    input = keras.layers.Input((28, 28, 1))
    x = keras.layers.BatchNormalization()(input)
    x = keras.layers.Conv2D(4, (5, 5), activation="tanh")(x)
    x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Conv2D(16, (5, 5), activation="tanh")(x)
    x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dense(10, activation="tanh")(x)
    embedding_network = keras.Model(input, x)

    input_1 = keras.layers.Input((28, 28, 1))
    input_2 = keras.layers.Input((28, 28, 1))
    tower_1 = embedding_network(input_1)
    tower_2 = embedding_network(input_2)
    merge_layer = keras.layers.Lambda(euclidean_distance, output_shape=(1,))([tower_1, tower_2])
    normal_layer = keras.layers.BatchNormalization()(merge_layer)
    output_layer = keras.layers.Dense(1, activation="sigmoid")(normal_layer)
    return keras.Model(inputs=[input_1, input_2], outputs=output_layer)


@dataclass(frozen=True)
class Example:
    spec: str  # in specs/keras_io/
    model: str
    sizes: dict[str, int]  # the spec's `let`s, small
    reference: Callable[..., keras.Model]  # called with the sizes
    inputs: Callable[[], list[np.ndarray]]  # a batch for both, at those sizes
    # The example's model is functional Keras decompile reads; one of Python subclasses (keras.io's
    # `TransformerBlock`) is code, which decompile refuses by design
    decompiles: bool = True


def _one_hot_sentences(steps: int, tokens: int) -> np.ndarray:
    """A batch of one-hot characters, as the example's encoder_input_data is."""
    return np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, size=(3, steps))]


# The MLP-Mixer's and the gMLP's sizes, small: CIFAR's pictures of 12 pixels, resized to 16, in 16 patches.
SMALL_MLP_MODEL = {
    "num_classes": 5,
    "input_size": 12,
    "image_size": 16,
    "patch_size": 4,
    "embedding_dim": 8,
    "dropout_rate": 0.2,
    "num_blocks": 2,
}


def _small_pictures() -> list[np.ndarray]:
    return [RNG.uniform(0, 1, size=(2, 12, 12, 3)).astype("float32")]


EXAMPLES = [
    Example(
        "lstm_seq2seq.net",
        "lstm_seq2seq",
        {"latent_dim": 16, "num_encoder_tokens": 11, "num_decoder_tokens": 13},
        lstm_seq2seq,
        lambda: [_one_hot_sentences(9, 11), _one_hot_sentences(7, 13)],
    ),
    Example(
        "text_transformer.net",
        "text_transformer",
        {"vocab_size": 50, "maxlen": 12, "embed_dim": 8, "num_heads": 2, "ff_dim": 16},
        text_classification_with_transformer,
        lambda: [RNG.integers(0, 50, size=(3, 12)).astype("int32")],
        decompiles=False,
    ),
    Example(
        "image_classification_from_scratch.net",
        "image_classifier",
        {"image_size": 24, "num_classes": 2},
        image_classification_from_scratch,
        lambda: [RNG.uniform(0, 255, size=(2, 24, 24, 3)).astype("float32")],
    ),
    Example(
        "mlp_mixer.net",
        "mlp_mixer",
        SMALL_MLP_MODEL,
        mlp_image_classification,
        _small_pictures,
        decompiles=False,
    ),
    Example(
        "gmlp.net",
        "gmlp",
        SMALL_MLP_MODEL,
        gmlp_image_classification,
        _small_pictures,
        decompiles=False,
    ),
    Example(
        "siamese_contrastive.net",
        "siamese",
        {"margin": 1},
        siamese_contrastive,
        lambda: [RNG.uniform(0, 1, size=(3, 28, 28, 1)).astype("float32") for _ in range(2)],
        decompiles=False,  # keras.io's distance is a Lambda of Python code
    ),
]


def _weighted_keras_layers(model: keras.Layer) -> dict[tuple, list[keras.Layer]]:
    """Keras' own layers with weights, by class and weight shapes, in order: an example's own classes
    (keras.io's `TransformerBlock`) opened into the Keras layers they hold."""
    found: dict[tuple, list[keras.Layer]] = {}
    for layer in model._flatten_layers(include_self=False, recursive=False):
        if not type(layer).__module__.startswith("keras.") or isinstance(layer, keras.Sequential):
            for kind, layers in _weighted_keras_layers(layer).items():
                found.setdefault(kind, []).extend(layers)
        elif layer.weights:
            kind = (type(layer).__name__, *(tuple(w.shape) for w in layer.weights))
            found.setdefault(kind, []).append(layer)
    return found


def _built(example: Example) -> keras.Model:
    return netdsl.build(KERAS_IO / example.spec, model=example.model, defines=example.sizes)


def _outputs(model: keras.Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    # at inference: Keras' image augmentations act when a call does not say (their `training=True` default)
    got = model(inputs[0] if len(inputs) == 1 else inputs, training=False)
    return [ops.convert_to_numpy(t) for t in (got if isinstance(got, (list, tuple)) else [got])]


# ====================================================================== the tests


# Specs whose example is held to its code by a test of its own (FNet's encoder is keras_hub's, transcribed
# there: its layers are not one for one with the spec's).
TESTED_ELSEWHERE = {"fnet.net": ROOT / "tests" / "zoo" / "test_keras_io_fnet.py"}


def test_every_keras_io_spec_has_its_reference():
    assert all(path.exists() for path in TESTED_ELSEWHERE.values())
    assert sorted(p.name for p in KERAS_IO.glob("*.net")) == sorted([*(e.spec for e in EXAMPLES), *TESTED_ELSEWHERE])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.model)
def test_the_spec_is_the_example_s_model(example):
    ours, theirs = _built(example), example.reference(**example.sizes)
    assert ours.count_params() == theirs.count_params()
    mine, other = _weighted_keras_layers(ours), _weighted_keras_layers(theirs)
    assert sorted(mine) == sorted(other)  # the same Keras layers, kind (and weight shapes) by kind
    for kind, layers in other.items():  # paired in order within a kind (keras.io's classes hold theirs
        for a, b in zip(mine[kind], layers, strict=True):  # in their own order)
            a.set_weights(b.get_weights())
    inputs = example.inputs()
    for a, b in zip(_outputs(ours, inputs), _outputs(theirs, inputs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_lstm_seq2seq_at_the_example_s_sizes_has_its_parameters_and_training():
    """At keras.io's sizes (latent 256, 71 English and 93 French characters): 718,173 parameters,
    known to `summary` without Keras, and the example's compile and fit settings."""
    spec = KERAS_IO / "lstm_seq2seq.net"
    assert netdsl.summary(spec)["lstm_seq2seq"]["params"] == lstm_seq2seq(256, 71, 93).count_params() == 718_173
    model = netdsl.build(spec, defines={"latent_dim": 8})
    assert type(model.optimizer).__name__ == "RMSprop" and model.loss.fn.__name__ == "categorical_crossentropy"
    assert netdsl.fit_kwargs(model) == {"batch_size": 64, "epochs": 100, "validation_split": 0.2}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.model)
def test_the_built_spec_reloads_in_safe_mode(example, tmp_path):
    model = _built(example)
    model.save(tmp_path / "model.keras")
    back = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    inputs = example.inputs()
    for a, b in zip(_outputs(model, inputs), _outputs(back, inputs), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.decompiles], ids=lambda e: e.model)
def test_the_example_s_keras_model_decompiles_and_round_trips(example):
    """`netdsl decompile` of the example's own model: a spec that rebuilds it (parameters, weights,
    outputs) and decompiles to the same text."""
    from netdsl.decompiler.verify import verify_round_trip

    theirs = example.reference(**example.sizes)
    text = netdsl.decompile(theirs)
    result, _ = verify_round_trip(theirs, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text


def test_the_siamese_spec_trains_with_the_example_s_contrastive_loss():
    """The spec's declared loss is the example's `loss(margin)`, on the model's own predictions."""
    model = netdsl.build(KERAS_IO / "siamese_contrastive.net", model="siamese", defines={"margin": 2})
    labels = RNG.integers(0, 2, size=(6, 1)).astype("float32")
    predictions = RNG.uniform(0, 1, size=(6, 1)).astype("float32")
    ours = float(model.loss(labels, predictions))
    theirs = float(keras_io_loss(margin=2)(labels, predictions))
    assert abs(ours - theirs) <= 1e-6 and theirs > 0
    assert netdsl.fit_kwargs(model) == {"batch_size": 16, "epochs": 10}


def test_lstm_seq2seq_decompiles_to_its_initial_state():
    """The encoder's states, named where they are made, are the decoder's initial_state by keyword."""
    text = " ".join(netdsl.decompile(lstm_seq2seq(16, 11, 13)).split())
    encoder = re.search(r"(\w+), (\w+), (\w+) = \w+ -> lstm\(16, return_state=true\)", text)
    assert encoder is not None, text
    _, h, c = encoder.groups()
    decoder = f"-> lstm( 16, return_sequences=true, return_state=true, initial_state=[{h}, {c}], )"
    assert decoder in text


@pytest.mark.parametrize("path", sorted(KERAS_IO.glob("*.net")), ids=lambda p: p.stem)
def test_the_spec_checks_clean_and_is_formatted(path):
    text = path.read_text(encoding="utf-8")
    assert [str(d) for d in netdsl.check(path)] == []
    assert netdsl.format(text=text, filename=str(path)) == text, f"run: netdsl fmt {path.relative_to(ROOT)}"
