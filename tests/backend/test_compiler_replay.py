"""Two ways to build, one result: a certain, clean check is replayed into Keras layer by layer;
anything else is expanded again with Keras building as it goes (exact shapes, Keras' errors)."""

from __future__ import annotations

import numpy as np
import pytest

import netdsl
from netdsl.backend import builder
from netdsl.registry.layers import anatomy
from netdsl.semantics.analysis import analyze

ADAPT = """
block adapt(filters) {
  input x
  if x.shape[-1] != filters {
    s = x -> conv2d(filters, 1)
  } else {
    s = x
  }
  output y = (x -> conv2d(filters, 3, padding="same") + s) -> relu
}

model m {
  input a: (8, 8, 16)
  output c = a -> adapt(16) -> adapt(32)
}
"""


def parse(text: str):
    return netdsl.parse(text, filename="replay.net")


@pytest.fixture
def paths(monkeypatch):
    """What each replay answered: "replay" (built), or "diverged" (then the build expands again, Keras
    building each layer as it goes: `compile_program`'s contract)."""
    taken = []
    replay = builder.replay

    def spy_replay(graph, backend):
        ok = replay(graph, backend)
        taken.append("replay" if ok else "diverged")
        return ok

    monkeypatch.setattr(builder, "replay", spy_replay)
    return taken


def weights_and_config(model):
    return model.to_json(), [w.shape for w in model.get_weights()]


def test_a_certain_check_is_replayed_and_equals_the_interleaved_build(paths, monkeypatch):
    replayed = netdsl.build(parse(ADAPT))
    assert paths == ["replay"]
    monkeypatch.setattr(builder, "replay", lambda graph, backend: False)  # as a diverging replay answers
    interleaved = netdsl.build(parse(ADAPT))
    assert weights_and_config(replayed) == weights_and_config(interleaved)
    assert [layer.name for layer in replayed.layers].count("c.adapt_2.s") == 1


def test_an_uncertain_check_builds_the_interleaved_way(paths):
    # time_distributed's output count is left to Keras (bidirectional's is known since issue 30)
    text = "model m {\n  input x: (5, 3)\n  output y = x -> time_distributed(dense(4))\n}\n"
    assert analyze(parse(text)).graphs["m"].uncertain
    model = netdsl.build(parse(text))
    assert paths == ["diverged"]
    assert [tuple(o.shape) for o in model.outputs] == [(None, 5, 4)]


def test_a_wrong_inferred_shape_falls_back_to_keras(paths, monkeypatch):
    # If a shape rule were ever wrong, the replay must notice and let Keras decide.
    dense = anatomy.TABLE["dense"]
    wrong = anatomy.Anatomy(lambda args, shapes_: shapes_[0][:-1] + (args["units"] + 1,), dense.params)
    monkeypatch.setitem(anatomy.TABLE, "dense", wrong)
    model = netdsl.build(parse("model m {\n  input x: (4,)\n  output y = x -> dense(3)\n}\n"))
    assert paths == ["diverged"]
    assert model.output_shape == (None, 3)


def test_a_keras_error_after_a_clean_check_is_reported_in_keras_terms(paths):
    with pytest.raises(netdsl.SpecError) as info:
        netdsl.build(
            parse("model m {\n  input x: (8, 4)\n  output y = x -> adaptive_average_pooling1d(output_size=(2, 2))\n}\n")
        )
    assert paths == ["diverged"]
    assert "`output_size` tuple must have length 1" in info.value.diagnostics[0].message


ENC = "model enc {\n  input x: (6,)\n  output h = x -> dense(4)\n}\n"
PAIR = (
    "model pair {\n  input a: (6,)\n  input b: (6,)\n  shared proj = dense(2)\n"
    "  ha = a -> enc -> proj\n  hb = b -> enc -> proj\n  output d = (ha, hb) -> subtract\n}\n"
)


# build_all replays the models in the file's order, and the checker shares one Graph per model, so
# `pair`'s call of `enc` and the model `enc` are one graph, built once:
# - `enc` declared first: its own replay, then `pair`'s, which finds `enc` built and reuses it;
# - `pair` declared first: `pair`'s replay builds `enc` inside it, and the model `enc` is then
#   already built, so it is not replayed a second time.
@pytest.mark.parametrize(
    "text, taken", [(ENC + PAIR, ["replay", "replay"]), (PAIR + ENC, ["replay"])], ids=["enc-first", "pair-first"]
)
def test_replayed_nested_and_shared_models_share_weights(paths, text, taken):
    models = netdsl.build_all(parse(text))
    assert paths == taken
    pair = models["pair"]
    assert pair.count_params() == 6 * 4 + 4 + 4 * 2 + 2
    x = np.ones((1, 6), "float32")
    np.testing.assert_allclose(pair.predict([x, x], verbose=0), np.zeros((1, 2)), atol=1e-6)
