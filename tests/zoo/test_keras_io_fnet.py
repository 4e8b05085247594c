"""keras.io's "Text Classification using FNet" as a spec (issue 30, items 3 and 7): `specs/keras_io/fnet.net`.

The example builds its classifier from keras_hub's `TokenAndPositionEmbedding` and three
`FNetEncoder`s, whose token mixing is `ops.fft2` of the tokens and zeros, its real part kept. keras_hub
is not a dependency of netdsl: the two layers are written here as keras_hub has them
(`keras_hub/src/layers/modeling/{f_net_encoder,token_and_position_embedding,position_embedding}.py`),
their `call`s line for line, and the model as the example assembles it. The spec, at small sizes, has
the same parameters and, given the same weights, the same outputs; at the example's sizes `check`
counts the example's parameters without Keras.
"""

from __future__ import annotations

import re
from pathlib import Path

import keras
import numpy as np
from keras import ops

import netdsl
from netdsl.semantics.analysis import analyze

SPEC = Path(__file__).resolve().parents[2] / "specs" / "keras_io" / "fnet.net"
SMALL = {"vocab_size": 50, "maxlen": 16, "embed_dim": 8, "intermediate_dim": 32}


def spec_text(sizes: dict[str, int] | None = None) -> str:
    """The spec, its `let`s of sizes replaced by `sizes`."""
    text = SPEC.read_text(encoding="utf-8")
    for name, value in (sizes or {}).items():
        text, count = re.subn(rf"^let {name} = \d+$", f"let {name} = {value}", text, flags=re.MULTILINE)
        assert count == 1, name
    return text


class PositionEmbedding(keras.layers.Layer):
    """keras_hub.layers.PositionEmbedding (its weight and call)."""

    def __init__(self, sequence_length, initializer="glorot_uniform", hierarchical_alpha=0.4, **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = int(sequence_length)
        self.hierarchical_alpha = hierarchical_alpha
        self.initializer = keras.initializers.get(initializer)

    def build(self, inputs_shape):
        self.position_embeddings = self.add_weight(
            name="embeddings", shape=[self.sequence_length, inputs_shape[-1]], initializer=self.initializer
        )

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        feature_length, sequence_length = shape[-1], shape[-2]
        position_embeddings = ops.convert_to_tensor(self.position_embeddings)
        if sequence_length < self.sequence_length:
            position_embeddings = ops.slice(position_embeddings, (start_index, 0), (sequence_length, feature_length))
        else:
            embeddings = position_embeddings - self.hierarchical_alpha * position_embeddings[:1]
            embeddings = embeddings / (1 - self.hierarchical_alpha)
            position_ids = ops.arange(sequence_length, dtype="int32")
            embeddings_x = ops.take(embeddings, position_ids // self.sequence_length, axis=0)
            embeddings_y = ops.take(embeddings, position_ids % self.sequence_length, axis=0)
            position_embeddings = self.hierarchical_alpha * embeddings_x + (1 - self.hierarchical_alpha) * embeddings_y
        return ops.broadcast_to(position_embeddings, shape)


class TokenAndPositionEmbedding(keras.layers.Layer):
    """keras_hub.layers.TokenAndPositionEmbedding: a token embedding plus a position embedding."""

    def __init__(self, vocabulary_size, sequence_length, embedding_dim, mask_zero=False, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = keras.layers.ReversibleEmbedding(
            vocabulary_size, embedding_dim, tie_weights=True, embeddings_initializer="uniform", mask_zero=mask_zero
        )
        self.position_embedding = PositionEmbedding(sequence_length=sequence_length, initializer="uniform")
        self.embedding_dim = embedding_dim
        self.supports_masking = self.token_embedding.supports_masking

    def build(self, input_shape):
        self.token_embedding.build(tuple(input_shape))
        self.position_embedding.build(tuple(input_shape) + (self.embedding_dim,))

    def call(self, inputs):
        embedded_tokens = self.token_embedding(inputs)
        embedded_positions = self.position_embedding(embedded_tokens)
        return embedded_tokens + embedded_positions

    def compute_mask(self, inputs, mask=None):
        return self.token_embedding.compute_mask(inputs, mask=mask)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.embedding_dim,)


class FNetEncoder(keras.layers.Layer):
    """keras_hub.layers.FNetEncoder: Fourier mixing, add and norm, feed-forward, add and norm."""

    def __init__(self, intermediate_dim, dropout=0, activation="relu", layer_norm_epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon

    def build(self, inputs_shape):
        feature_size = inputs_shape[-1]
        self._mixing_layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon)
        self._mixing_layer_norm.build(inputs_shape)
        self._output_layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon)
        self._output_layer_norm.build(inputs_shape)
        self._intermediate_dense = keras.layers.Dense(self.intermediate_dim, activation=self.activation)
        self._intermediate_dense.build(inputs_shape)
        self._output_dense = keras.layers.Dense(feature_size)
        self._output_dense.build(self._intermediate_dense.compute_output_shape(inputs_shape))
        self._output_dropout = keras.layers.Dropout(rate=self.dropout)

    def call(self, inputs, training=None):
        def fourier_transform(input):
            input_dtype = input.dtype
            input = ops.cast(input, "float32")
            real_in, imaginary_in = (input, ops.zeros_like(input))
            real_out, _ = ops.fft2((real_in, imaginary_in))
            return ops.cast(real_out, input_dtype)

        def add_and_norm(input1, input2, norm_layer):
            return norm_layer(input1 + input2)

        def feed_forward(input):
            x = self._intermediate_dense(input)
            x = self._output_dense(x)
            return self._output_dropout(x, training=training)

        mixing_output = fourier_transform(inputs)
        mixing_output = add_and_norm(inputs, mixing_output, self._mixing_layer_norm)
        feed_forward_output = feed_forward(mixing_output)
        return add_and_norm(mixing_output, feed_forward_output, self._output_layer_norm)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape


def the_examples_model(vocab_size: int, maxlen: int, embed_dim: int, intermediate_dim: int) -> keras.Model:
    """The example's model, as it assembles it."""
    input_ids = keras.Input(shape=(None,), dtype="int64", name="input_ids")
    x = TokenAndPositionEmbedding(
        vocabulary_size=vocab_size, sequence_length=maxlen, embedding_dim=embed_dim, mask_zero=True
    )(input_ids)
    x = FNetEncoder(intermediate_dim=intermediate_dim)(x)
    x = FNetEncoder(intermediate_dim=intermediate_dim)(x)
    x = FNetEncoder(intermediate_dim=intermediate_dim)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dropout(0.1)(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(input_ids, outputs, name="fnet_classifier")


def varied(weights: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Weights moved off their starting values (layer norms' ones and zeros, zero biases), so that every
    weight the comparison copies changes the outputs."""
    return [w + rng.normal(0.0, 0.2, w.shape).astype(w.dtype) for w in weights]


def copy_weights(ours: keras.Model, theirs: keras.Model, rng: np.random.Generator) -> None:
    """Varied weights into theirs, then layer by layer into ours (the spec's names)."""
    embedding = next(layer for layer in theirs.layers if isinstance(layer, TokenAndPositionEmbedding))
    encoders = [layer for layer in theirs.layers if isinstance(layer, FNetEncoder)]
    pairs = [(ours.get_layer("tokens"), embedding.token_embedding)]
    pairs.append((ours.get_layer("positions"), embedding.position_embedding))
    for i, encoder in enumerate(encoders):
        block = "x.fnet_encoder" + ("" if i == 0 else f"_{i + 1}")
        pairs += [
            (ours.get_layer(f"{block}.mixed_2"), encoder._mixing_layer_norm),
            (ours.get_layer(f"{block}.ff.dense"), encoder._intermediate_dense),
            (ours.get_layer(f"{block}.ff"), encoder._output_dense),
            (ours.get_layer(f"{block}.y"), encoder._output_layer_norm),
        ]
    pairs.append((ours.get_layer("y"), theirs.layers[-1]))
    for mine, other in pairs:
        other.set_weights(varied(other.get_weights(), rng))
        mine.set_weights(other.get_weights())
    assert sum(len(mine.weights) for mine, _ in pairs) == len(ours.weights) == len(theirs.weights)


def test_the_fnet_example_as_a_spec_is_the_examples_model():
    ours = netdsl.build(netdsl.parse(spec_text(SMALL), filename="fnet.net"))
    theirs = the_examples_model(**SMALL)
    # embeddings 50x8 and 16x8; per encoder two layer norms, dense 8 -> 32 and 32 -> 8; the head 8 -> 1
    assert ours.count_params() == theirs.count_params() == 50 * 8 + 16 * 8 + 3 * (2 * 16 + 8 * 32 + 32 + 32 * 8 + 8) + 9
    rng = np.random.default_rng(30)
    copy_weights(ours, theirs, rng)
    ids = rng.integers(1, SMALL["vocab_size"], size=(4, SMALL["maxlen"])).astype("int64")
    ids[:2, 11:] = 0  # padding, as the example's tokenizer pads: the mask the example makes is dropped
    got, want = (ops.convert_to_numpy(model(ids)) for model in (ours, theirs))
    assert got.shape == want.shape == (4, 1)
    assert np.std(want) > 1e-3  # the reviews give outputs apart: the comparison can fail
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_check_and_summary_count_the_examples_parameters_at_its_sizes():
    """At the example's sizes (15,000 words, 512 tokens, 128 channels, 512 hidden): 2,382,337 parameters,
    what its code builds (its table's 2,321,921 counts a vocabulary of 14,528), every shape known to
    `check`; `summary` says so from the pure-Python inference."""
    analysis = analyze(netdsl.parse(spec_text(), filename="fnet.net"))
    assert not analysis.errors, analysis.errors
    graph = analysis.graphs["fnet_classifier"]
    assert not graph.uncertain
    assert all(isinstance(s, tuple) and None not in s for node in graph.nodes for s in node.output_shapes)
    found = netdsl.summary(text=spec_text(), filename="fnet.net")["fnet_classifier"]
    assert found["params"] == 1_920_000 + 512 * 128 + 3 * (2 * 256 + 128 * 512 + 512 + 512 * 128 + 128) + 129
    assert found["params"] == 2_382_337 and found["outputs"] == {"y": [1]}


def test_summary_s_shapes_are_the_built_model_s():
    text = spec_text(SMALL)
    model = netdsl.build(netdsl.parse(text, filename="fnet.net"))
    graph = analyze(netdsl.parse(text, filename="fnet.net")).graphs["fnet_classifier"]
    for node in graph.kept_nodes():
        if node.op == "input":
            continue
        layer = model.get_layer(node.name)
        built = layer.output if isinstance(layer.output, (list, tuple)) else [layer.output]
        assert [tuple(t.shape[1:]) for t in built] == node.output_shapes, node.name


def test_the_built_fnet_decompiles_to_a_spec_that_rebuilds_it():
    from netdsl.decompiler.verify import verify_round_trip

    model = netdsl.build(netdsl.parse(spec_text(SMALL), filename="fnet.net"))
    text = netdsl.decompile(model)
    result, _ = verify_round_trip(model, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text
    assert text.count("= fft2(") == 3 and "arange(16) -> embedding(16, 8)" in text
