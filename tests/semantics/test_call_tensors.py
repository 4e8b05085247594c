"""Issue 30, item 1: tensors passed by keyword to a layer's call, and an RNN's states by name.

`dec -> lstm(64, initial_state=[h, c])` is Keras' `LSTM(64)(dec, initial_state=[h, c])`; an
attention layer takes its masks, and multi_head_attention its value and key, the same way. Each
spec is compared with the Keras code a person writes for it: parameters, and outputs equal after
the weights are copied; `check` counts and shapes the tensors in pure Python, and a wrong one is
one error at its argument naming both shapes. A built model saves and reloads with
`safe_mode=True`, and decompiles back to the same calls.
"""

from __future__ import annotations

import textwrap

import keras
import numpy as np
import pytest
from keras import layers, ops

import netdsl
from netdsl.semantics.analysis import analyze
from netdsl.semantics.graph import KeywordInput

RNG = np.random.default_rng(30)


def parse(text: str):
    return netdsl.parse(textwrap.dedent(text), filename="keywords.net")


def build(text: str, model: str | None = None):
    return netdsl.build(parse(text), model=model)


def checked(text: str, model: str):
    analysis = analyze(parse(text))
    assert not analysis.errors, analysis.errors
    return analysis.graphs[model]


def errors(text: str) -> list[tuple[int, int, str]]:
    return [(e.line, e.col, e.message) for e in analyze(parse(text)).errors]


def outputs(model, *inputs) -> list[np.ndarray]:
    got = model(inputs[0] if len(inputs) == 1 else list(inputs))
    got = got if isinstance(got, (list, tuple)) else [got]
    return [ops.convert_to_numpy(t) for t in got]


def assert_same_model(ours, theirs, *inputs) -> None:
    """The same parameters, and the same outputs once `theirs`' weights are copied into `ours`: layer
    by layer of the same name where `theirs` names its layers as the spec does, else in order."""
    assert ours.count_params() == theirs.count_params()
    mine = [layer for layer in ours.layers if layer.weights]
    named = {layer.name: layer for layer in theirs.layers}
    if all(layer.name in named for layer in mine):
        other = [named[layer.name] for layer in mine]
    else:
        other = [layer for layer in theirs.layers if layer.weights]
    assert [type(a).__name__ for a in mine] == [type(b).__name__ for b in other]
    for a, b in zip(mine, other):
        a.set_weights(b.get_weights())
    for a, b in zip(outputs(ours, *inputs), outputs(theirs, *inputs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def normal(*shape: int) -> np.ndarray:
    return RNG.normal(size=(2, *shape)).astype("float32")


# ====================================================================== RNN states

STATES = """
    model states {
      input enc: (7, 5)
      input dec: (6, 4)
      seq, h, c = enc -> lstm(8, return_state=true)
      g, gh = enc -> gru(8, return_sequences=true, return_state=true)
      fwd, fh, fc, bh, bc = enc -> bidirectional(lstm(3, return_state=true))
      output a = dec -> lstm(8, return_sequences=true, initial_state=[h, c])
      output b = dec -> gru(8, initial_state=gh)
      output c2 = dec -> bidirectional(lstm(3), initial_state=[fh, fc, bh, bc])
      output s = dec -> simple_rnn(8, initial_state=[h])
      output seq, g, fwd
    }
"""


def keras_states():
    enc, dec = keras.Input((7, 5)), keras.Input((6, 4))
    seq, h, c = layers.LSTM(8, return_state=True)(enc)
    g, gh = layers.GRU(8, return_sequences=True, return_state=True)(enc)
    fwd, fh, fc, bh, bc = layers.Bidirectional(layers.LSTM(3, return_state=True))(enc)
    a = layers.LSTM(8, return_sequences=True)(dec, initial_state=[h, c])
    b = layers.GRU(8)(dec, initial_state=gh)
    c2 = layers.Bidirectional(layers.LSTM(3))(dec, initial_state=[fh, fc, bh, bc])
    s = layers.SimpleRNN(8)(dec, initial_state=[h])
    return keras.Model([enc, dec], [a, b, c2, s, seq, g, fwd])


def test_rnn_states_by_name_start_other_rnns_as_in_keras_code():
    ours, theirs = build(STATES), keras_states()
    assert_same_model(ours, theirs, normal(7, 5), normal(6, 4))


def test_check_knows_every_state_s_shape_and_the_keyword_inputs_of_each_call():
    graph = checked(STATES, "states")
    shapes = {node.name: node.output_shapes for node in graph.nodes}
    assert shapes["seq"] == [(8,), (8,), (8,)]
    assert shapes["g"] == [(7, 8), (8,)]
    assert shapes["fwd"] == [(6,), (3,), (3,), (3,), (3,)]  # the merged output, then each direction's h and c
    assert shapes["a"] == [(6, 8)] and shapes["c2"] == [(6,)]
    a = next(node for node in graph.nodes if node.name == "a")
    assert a.keywords == (KeywordInput("initial_state", 2, True),) and a.positional_count == 1
    assert [graph.node_of(ref).name for ref in a.inputs] == ["dec", "seq", "seq"]  # h and c: outputs 1 and 2
    b = next(node for node in graph.nodes if node.name == "b")
    assert b.keywords == (KeywordInput("initial_state", 1, False),)
    assert not graph.uncertain


def test_summary_counts_the_layers_whose_only_use_is_a_state():
    """The encoder's sequence is unused; its states reach the output through the decoder's call."""
    spec = """
        model s2s {
          input enc: (none, 5)
          input dec: (none, 4)
          seq, h, c = enc -> lstm(8, return_state=true)
          output y = dec -> lstm(8, initial_state=[h, c]) -> dense(2)
        }
    """
    assert (
        netdsl.summary(parse(spec))["s2s"]["params"]
        == build(spec).count_params()
        == (4 * 8 * (5 + 8) + 32) + (4 * 8 * (4 + 8) + 32) + (8 * 2 + 2)
    )


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "y = dec -> lstm(8, initial_state=[h])",
            "'initial_state' of 'lstm' takes 2 tensors (its states h and c), received 1",
        ),
        (
            "y = dec -> lstm(16, initial_state=[h, c])",
            "'initial_state' of 'lstm' takes 2 tensors of shape (16,) (its units), received (8,) and (8,)",
        ),
        (
            "y = dec -> gru(8, initial_state=[h, c])",
            "'initial_state' of 'gru' takes 1 tensor (its state), received 2",
        ),
        (
            "y = dec -> bidirectional(lstm(8), initial_state=[h, c])",
            "'initial_state' of 'bidirectional' takes 4 tensors (the forward layer's 2 states, then the "
            "backward one's), received 2",
        ),
        (
            "y = dec -> lstm(8, mask=h)",
            "'mask' of 'lstm' takes a tensor of shape (6,) (one flag per step of its input (6, 4)), received (8,)",
        ),
        ("y = dec -> lstm(8, mask=[h, c])", "'mask' of 'lstm' takes one tensor, received a list of 2"),
        ("y = dec -> lstm(8, initial_state=4)", "'initial_state' of 'lstm' takes tensors, received the constant 4"),
        ("y = dec -> dense(h)", "parameter 'units' of 'dense' takes a constant; 'h' is a tensor"),
        ("y = dec -> dense(8, initial_state=[h, c])", "unknown parameter 'initial_state' for 'dense'"),
        ("y = (dec, h, c) -> lstm(8)", "'lstm' takes 1 input tensor, received 3"),
        (
            "y = dec -> bidirectional(lstm(8, initial_state=[h, c]))",
            "'initial_state' goes to the call of 'bidirectional', not to the layer it wraps",
        ),
        ("seq, h2 = enc -> lstm(8, return_state=true)", "2 names on the left, but the flow gives 3 tensors"),
        (
            "seq, f, b = enc -> bidirectional(lstm(8, return_state=true))",
            "3 names on the left, but the flow gives 5 tensors",
        ),
    ],
)
def test_a_wrong_tensor_by_keyword_is_one_error_at_its_argument(statement, message):
    text = (
        "model m {\n  input enc: (7, 5)\n  input dec: (6, 4)\n  seq, h, c = enc -> lstm(8, return_state=true)\n"
        f"  {statement}\n  output z = seq\n}}\n"
    )
    assert [(line, text) for line, _, text in errors(text)] == [(5, message)]


def test_none_leaves_a_call_argument_to_keras_default():
    spec = "model m {\n  input x: (6, 4)\n  output y = x -> lstm(8, initial_state=none, mask=none)\n}\n"
    node = checked(spec, "m").nodes[-1]
    assert node.keywords == () and len(node.inputs) == 1


# ====================================================================== attention

ATTENTION = """
    model attention_masks {
      input q: (10, 16)
      input kv: (12, 16)
      input k: (12, 8)
      input pairs: (10, 12) as bool
      input query_steps: (10,) as bool
      input value_steps: (12,) as bool
      output a = q -> multi_head_attention(num_heads=2, key_dim=8, value=kv, key=k, attention_mask=pairs)
      output b = (q, kv) -> multi_head_attention(num_heads=2, key_dim=4, value_mask=value_steps)
      c, scores = q -> multi_head_attention(num_heads=2, key_dim=8, value=kv, return_attention_scores=true)
      output d = (q, kv) -> dot_product_attention(mask=[query_steps, value_steps])
      output c, scores
    }
"""


def keras_attention(with_scores: bool = True):
    q, kv, k = keras.Input((10, 16)), keras.Input((12, 16)), keras.Input((12, 8))
    pairs = keras.Input((10, 12), dtype="bool")
    query_steps, value_steps = keras.Input((10,), dtype="bool"), keras.Input((12,), dtype="bool")
    a = layers.MultiHeadAttention(num_heads=2, key_dim=8, name="a")(q, value=kv, key=k, attention_mask=pairs)
    b = layers.MultiHeadAttention(num_heads=2, key_dim=4, name="b")(q, kv, value_mask=value_steps)
    attend = layers.MultiHeadAttention(num_heads=2, key_dim=8, name="c")
    c, scores = attend(q, value=kv, return_attention_scores=True)
    d = layers.Attention()([q, kv], mask=[query_steps, value_steps])
    return keras.Model(
        [q, kv, k, pairs, query_steps, value_steps], [a, b, d, c, scores] if with_scores else [a, b, d, c]
    )


def test_attention_takes_its_masks_value_and_key_by_keyword_as_in_keras_code():
    ours, theirs = build(ATTENTION), keras_attention()
    q, kv, k = normal(10, 16), normal(12, 16), normal(12, 8)
    masks = [RNG.random((2, 10, 12)) > 0.3, RNG.random((2, 10)) > 0.2, RNG.random((2, 12)) > 0.3]
    assert_same_model(ours, theirs, q, kv, k, *masks)
    unmasked = outputs(ours, q, kv, k, np.ones_like(masks[0]), *masks[1:])
    assert not np.allclose(unmasked[0], outputs(ours, q, kv, k, *masks)[0])  # the mask is used


def test_check_puts_value_and_key_in_their_places_and_shapes_the_scores():
    graph = checked(ATTENTION, "attention_masks")
    a = next(node for node in graph.nodes if node.name == "a")
    assert [graph.node_of(ref).name for ref in a.inputs] == ["q", "kv", "k", "pairs"]
    assert a.keywords == (KeywordInput("attention_mask", 1, False),) and a.positional_count == 3
    c = next(node for node in graph.nodes if node.name == "c")
    assert c.n_outputs == 2 and c.output_shapes[0] == (10, 16)  # the scores: Keras' symbolic shape is off


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "(q, kv) -> multi_head_attention(num_heads=2, key_dim=8, value=kv)",
            "'value' of 'multi_head_attention' is given twice: as input 2 of the tuple and by keyword",
        ),
        (
            "q -> multi_head_attention(num_heads=2, key_dim=8, key=kv)",
            "'key' of 'multi_head_attention' needs 'value' too",
        ),
        (
            "(q, kv) -> multi_head_attention(num_heads=2, key_dim=8, attention_mask=steps)",
            "'attention_mask' of 'multi_head_attention' takes a tensor of a shape that broadcasts to (10, 12) "
            "(query steps by value steps), received (12,)",
        ),
        (
            "(q, kv) -> multi_head_attention(num_heads=2, key_dim=8, query_mask=steps)",
            "'query_mask' of 'multi_head_attention' takes a tensor of shape (10,) (a flag per step of the query), "
            "received (12,)",
        ),
        (
            "(q, kv) -> dot_product_attention(mask=[steps])",
            "'mask' of 'dot_product_attention' takes 2 or 3 tensors ([query_mask, value_mask]), received 1",
        ),
    ],
)
def test_a_wrong_attention_tensor_is_one_error_at_its_argument(call, message):
    text = (
        "model m {\n  input q: (10, 16)\n  input kv: (12, 16)\n  input steps: (12,) as bool\n"
        f"  output y = {call}\n}}\n"
    )
    assert [m for _, _, m in errors(text)] == [message]


def test_a_mask_of_ones_broadcasts_over_the_value_steps():
    spec = """
        model m {
          input q: (10, 16)
          input kv: (12, 16)
          input rows: (10, 1) as bool
          output y = (q, kv) -> multi_head_attention(num_heads=2, key_dim=8, attention_mask=rows)
        }
    """
    assert checked(spec, "m").nodes[-1].output_shapes == [(10, 16)]


MASKS = """
    model masks {
      input x: (6, 4)
      input steps: (6,) as bool
      input cells: (6, 4) as bool
      input ids: (5,) as int32
      input weights: (5,)
      a = x -> softmax(mask=cells)
      b = x -> batch_norm(mask=steps)
      c = x -> global_average_pooling1d(mask=steps)
      d = x -> time_distributed(dense(3), mask=steps)
      f = ids -> category_encoding(num_tokens=10, output_mode="count", count_weights=weights)
      g = x -> lstm(3, mask=steps)
      h = x -> bidirectional(gru(3), mask=steps)
      k = (x, x) -> additive_attention(mask=[steps, steps])
      output a, b, c, d, f, g, h, k
    }
"""


def keras_masks():
    x, steps, cells = keras.Input((6, 4)), keras.Input((6,), dtype="bool"), keras.Input((6, 4), dtype="bool")
    ids, weights = keras.Input((5,), dtype="int32"), keras.Input((5,))
    outs = [
        layers.Softmax()(x, mask=cells),
        layers.BatchNormalization()(x, mask=steps),
        layers.GlobalAveragePooling1D()(x, mask=steps),
        layers.TimeDistributed(layers.Dense(3))(x, mask=steps),
        layers.CategoryEncoding(num_tokens=10, output_mode="count")(ids, count_weights=weights),
        layers.LSTM(3)(x, mask=steps),
        layers.Bidirectional(layers.GRU(3))(x, mask=steps),
        layers.AdditiveAttention()([x, x], mask=[steps, steps]),
    ]
    return keras.Model([x, steps, cells, ids, weights], outs)


def test_every_layer_s_mask_is_given_as_in_keras_code():
    steps, cells = RNG.random((2, 6)) > 0.3, RNG.random((2, 6, 4)) > 0.3
    ids, weights = RNG.integers(0, 10, (2, 5)).astype("int32"), RNG.random((2, 5)).astype("float32")
    assert_same_model(build(MASKS), keras_masks(), normal(6, 4), steps, cells, ids, weights)
    assert [m for _, _, m in errors(MASKS.replace("softmax(mask=cells)", "softmax(mask=steps)"))] == [
        "'mask' of 'softmax' takes a tensor of a shape that broadcasts to (6, 4) (its input's), received (6,)"
    ]


def test_the_tests_give_every_call_tensor_of_the_registry():
    """A call tensor a new Keras adds is tested here, or listed below with the reason it is not."""
    untested = {
        ("conv_lstm1d", "initial_state"): "a ConvLSTM's states follow its convolution: counted, not shaped",
        ("conv_lstm2d", "initial_state"): "as conv_lstm1d",
        ("conv_lstm3d", "initial_state"): "as conv_lstm1d",
        ("conv_lstm1d", "mask"): "as an LSTM's",
        ("conv_lstm2d", "mask"): "as an LSTM's",
        ("conv_lstm3d", "mask"): "as an LSTM's",
        ("group_query_attention", "value"): "as multi_head_attention's",
        ("group_query_attention", "key"): "as multi_head_attention's",
        ("group_query_attention", "query_mask"): "as multi_head_attention's",
        ("group_query_attention", "value_mask"): "as multi_head_attention's",
        ("group_query_attention", "key_mask"): "as multi_head_attention's",
        ("group_query_attention", "attention_mask"): "as multi_head_attention's",
        ("multi_head_attention", "query_mask"): "as value_mask (and shaped in the error tests)",
        ("multi_head_attention", "key_mask"): "as value_mask",
        ("gru", "mask"): "as lstm's",
        ("simple_rnn", "mask"): "as lstm's",
    }
    from netdsl import registry

    every = {(name, t.name) for name in registry.names("layer") for t in registry.lookup("layer", name).call_tensors}
    tested = set()
    for spec in (STATES, ATTENTION, MASKS):
        for node in checked(spec, next(iter(analyze(parse(spec)).graphs))).nodes:
            tested |= {(node.kind, k.name) for k in node.keywords}
    tested |= {("multi_head_attention", "value"), ("multi_head_attention", "key")}  # placed in the tuple
    assert tested | set(untested) == every and not tested & set(untested)


# ====================================================================== shared layers, saving


def test_a_shared_rnn_takes_its_states_at_each_use():
    """keras.io's seq2seq inference calls the trained decoder LSTM again with other states."""
    spec = """
        model twice {
          input x: (5, 3)
          input h0: (4,)
          input c0: (4,)
          shared decoder = lstm(4, return_sequences=true, return_state=true)
          first, h, c = x -> decoder(initial_state=[h0, c0])
          second, h2, c2 = x -> decoder(initial_state=[h, c])
          output first, second
        }
    """
    x, h0, c0 = keras.Input((5, 3)), keras.Input((4,)), keras.Input((4,))
    decoder = layers.LSTM(4, return_sequences=True, return_state=True)
    first, h, c = decoder(x, initial_state=[h0, c0])
    second, _, _ = decoder(x, initial_state=[h, c])
    theirs = keras.Model([x, h0, c0], [first, second])
    assert_same_model(build(spec), theirs, normal(5, 3), normal(4), normal(4))
    assert errors(spec.replace("decoder(initial_state=[h, c])", "decoder(8)")) == [
        (8, 25, "shared instance 'decoder' takes no arguments but the tensors of its call (initial_state=, mask=)")
    ]


def test_a_model_with_tensors_by_keyword_reloads_in_safe_mode(tmp_path):
    model = build(STATES)
    path = tmp_path / "states.keras"
    model.save(path)
    back = keras.saving.load_model(path, safe_mode=True)
    enc, dec = normal(7, 5), normal(6, 4)
    for a, b in zip(outputs(model, enc, dec), outputs(back, enc, dec), strict=True):
        np.testing.assert_array_equal(a, b)


# ====================================================================== decompiling


@pytest.mark.parametrize(
    "make",
    [lambda: build(STATES), lambda: build(ATTENTION), keras_states, lambda: keras_attention(with_scores=False)],
    ids=["spec-states", "spec-attention", "keras-states", "keras-attention"],
)
def test_a_model_decompiles_to_its_tensors_by_keyword(make):
    """The round trip of `netdsl decompile` (parameters, weights, outputs) of a spec-built model and of
    the Keras code's own: Keras' config records the call's tensors, the text gives them by keyword.
    (Keras code's attention scores as an output would come back through an identity layer named
    after the output, as any second output of a layer does.)"""
    from netdsl.decompiler.verify import verify_round_trip

    model = make()
    text = netdsl.decompile(model)
    result, _ = verify_round_trip(model, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text
    assert "initial_state=[" in text or "attention_mask=" in text


# ====================================================================== fmt, summary --cost


def test_fmt_writes_tensors_by_keyword_canonically_and_keeps_their_meaning():
    from netdsl.syntax.formatter import format_text
    from netdsl.syntax.transform import to_ir

    text = "model m {\n  input x: (6, 4)\n  a,h,c = x->lstm(8,return_state=true)\n  output y = x->lstm(8,initial_state=[h,c,],mask=none)\n}\n"
    formatted = format_text(text)
    assert "  output y = x -> lstm(8, initial_state=[h, c], mask=none)\n" in formatted
    assert "  a, h, c = x -> lstm(8, return_state=true)\n" in formatted
    assert format_text(formatted) == formatted

    def without_spans(value):
        if isinstance(value, dict):
            return {k: without_spans(v) for k, v in value.items() if k != "span"}
        return [without_spans(v) for v in value] if isinstance(value, list) else value

    assert without_spans(to_ir(formatted, "m.net").model_dump()) == without_spans(to_ir(text, "m.net").model_dump())


def test_summary_cost_counts_an_rnn_s_work_on_its_sequence_not_on_its_states():
    spec = """
        model s2s {
          input enc: (10, 5)
          input dec: (6, 4)
          seq, h, c = enc -> lstm(8, return_state=true)
          output y = dec -> lstm(8, initial_state=[h, c]) -> dense(2)
        }
    """
    layers = {row["name"]: row for row in netdsl.summary(parse(spec), cost=True)["s2s"]["cost"]["layers"]}
    # an LSTM's multiply-adds: per step, 4 gates of (inputs + units) x units
    assert layers["seq"]["macs"] == 10 * 4 * (5 + 8) * 8
    assert layers["y.lstm"]["macs"] == 6 * 4 * (4 + 8) * 8
