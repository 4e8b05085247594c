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


@dataclass(frozen=True)
class Example:
    spec: str  # in specs/keras_io/
    model: str
    sizes: dict[str, int]  # the spec's `let`s, small
    reference: Callable[..., keras.Model]  # called with the sizes
    inputs: Callable[[], list[np.ndarray]]  # a batch for both, at those sizes


def _one_hot_sentences(steps: int, tokens: int) -> np.ndarray:
    """A batch of one-hot characters, as the example's encoder_input_data is."""
    return np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, size=(3, steps))]


EXAMPLES = [
    Example(
        "lstm_seq2seq.net",
        "lstm_seq2seq",
        {"latent_dim": 16, "num_encoder_tokens": 11, "num_decoder_tokens": 13},
        lstm_seq2seq,
        lambda: [_one_hot_sentences(9, 11), _one_hot_sentences(7, 13)],
    ),
]


def _built(example: Example) -> keras.Model:
    return netdsl.build(KERAS_IO / example.spec, model=example.model, defines=example.sizes)


def _outputs(model: keras.Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    got = model(inputs[0] if len(inputs) == 1 else inputs)
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
    mine = [layer for layer in ours.layers if layer.weights]
    other = [layer for layer in theirs.layers if layer.weights]
    assert [type(a).__name__ for a in mine] == [type(b).__name__ for b in other]
    for a, b in zip(mine, other):
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


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.model)
def test_the_example_s_keras_model_decompiles_and_round_trips(example):
    """`netdsl decompile` of the example's own model: a spec that rebuilds it (parameters, weights,
    outputs) and decompiles to the same text."""
    from netdsl.decompiler.verify import verify_round_trip

    theirs = example.reference(**example.sizes)
    text = netdsl.decompile(theirs)
    result, _ = verify_round_trip(theirs, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text


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
