"""A `freeze` pattern freezes exactly the layers it names, by the names `summary`, `render` and the `frozen:` line show.

`check`, `summary` and the build share one rule (`semantics.fine_tuning.part_layer_names`):
a layer answers to its name in `summary`/`render` (`e.enc.y.proj`), to its Keras
layer's (a shared instance's `e.enc.proj`, a nested model's `sub`) and to the block
instances it lies in (`e.enc`). Each pattern below is checked, counted and built;
after training, the layers it names keep their weights bit for bit and every other
layer's change. A pattern that names nothing is an error of `check` at the pattern.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

import netdsl
from netdsl import pipeline

SPEC = """\
block enc(units) {
  input x
  shared proj = dense(units)
  output y = x -> proj -> relu -> dense(units)
}

block tower(units) {
  input x
  output y = x -> dense(units)
}

model sub {
  input x: (6,)
  output z = x -> dense(6, activation=tanh)
}

model m {
  input a: (6,)
  input b: (6,)
  e = a -> enc(6)
  shared s = tower(6)
  shared p = dense(6)
  t = (e -> s, b -> s) -> add -> p
  u = t -> p
  f = u -> sub
  output y = f -> dense(1)

  train {
    optimizer = adam(0.05)
    loss = mse
    freeze = [FREEZE]
  }
}
"""

WEIGHTED = ["e.enc.proj", "e.enc.y", "s", "p", "sub", "y"]  # model m's layers with weights, in model.layers order

# (pattern, the Keras layers it freezes)
CASES = [
    ("e.enc.y.proj", ["e.enc.proj"]),  # a shared layer in a block instance, by the name summary and render show
    ("e.enc.proj", ["e.enc.proj"]),  # ... by its Keras layer's (the frozen: line)
    ("e.enc", ["e.enc.proj", "e.enc.y"]),  # a block instance: every layer in it
    ("e.*", ["e.enc.proj", "e.enc.y"]),
    ("*proj", ["e.enc.proj"]),
    ("s", ["s"]),  # a shared block (a nested Keras model), by its instance name ...
    ("t.s_2", ["s"]),  # ... or by one of its uses: the same weights everywhere
    ("p", ["p"]),  # a shared layer
    ("u.p", ["p"]),
    ("f", ["sub"]),  # a nested model by its binding ...
    ("sub", ["sub"]),  # ... or its name
    ("t.*", ["s", "p"]),
    ("s.y", ["s/y"]),  # a layer inside a nested model (a shared block's), named after the model's name ...
    ("t.s_2.y", ["s/y"]),  # ... or after one of its uses
    ("f.z", ["sub/z"]),  # inside a nested model, after its binding ...
    ("sub.z", ["sub/z"]),  # ... or its name
    ("*", WEIGHTED),
]


def _spec(tmp_path, pattern: str):
    path = tmp_path / "freeze.net"
    path.write_text(SPEC.replace("FREEZE", f'"{pattern}"'), encoding="utf-8")
    return path


def _weights(model) -> dict[str, list[np.ndarray]]:
    return {layer.name: [np.array(w) for w in layer.get_weights()] for layer in model.layers if layer.weights}


@pytest.mark.parametrize("pattern, frozen", CASES, ids=[c[0] for c in CASES])
def test_a_pattern_freezes_exactly_the_layers_it_names(tmp_path, pattern, frozen):
    path = _spec(tmp_path, pattern)
    assert netdsl.check(path) == []
    ((graph, split),) = pipeline.inferred_splits(pipeline.load(path), ["m"]).values()  # summary, without Keras
    assert list(split.frozen) == frozen

    keras.utils.set_random_seed(3)
    model = netdsl.build(path, model="m")
    assert [layer.name for layer in model.layers if layer.weights] == WEIGHTED
    assert pipeline.frozen_layers(model) == frozen
    assert pipeline.built_split(model) == split  # summary built with Keras says the same
    before = _weights(model)
    rng = np.random.default_rng(5)
    x = {"a": rng.normal(size=(32, 6)).astype("float32"), "b": rng.normal(size=(32, 6)).astype("float32")}
    model.fit(x, rng.normal(size=(32, 1)).astype("float32"), epochs=2, batch_size=8, verbose=0)
    after = _weights(model)
    kept = {name.split("/")[0] for name in frozen}  # s/y, sub/z: the one weighted layer of s, of sub
    for name in WEIGHTED:
        equal = [np.array_equal(b, a) for b, a in zip(before[name], after[name])]
        if name in kept:
            assert all(equal), f"{name} is frozen by {pattern!r} and changed"
        else:
            assert not any(equal), f"{name} is not frozen by {pattern!r} and kept a weight"


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("e.proj", "'e.proj' names no layer, block instance or nested model of 'm'; did you mean 'e.enc.proj'?"),
        ("s.yy", "'s.yy' names no layer, block instance or nested model of 'm'; did you mean 's.y'?"),
        ("f.zz", "'f.zz' names no layer, block instance or nested model of 'm'; did you mean 'f.z'?"),
        ("t", "'t' names no layer, block instance or nested model of 'm'"),
    ],
)
def test_a_pattern_that_names_nothing_is_an_error_at_the_pattern(tmp_path, pattern, message):
    path = _spec(tmp_path, pattern)
    found = [(d.line, d.col, d.text) for d in netdsl.check(path)]
    assert [(line, col) for line, col, _ in found] == [(31, 15)]
    assert found[0][2] == message


NAMED = """\
model w {
  input x: (4,)
  h = x -> dense(4, name="hid")
  output y = h -> dense(1)
  train {
    optimizer = adam
    loss = mse
    SETTING
  }
}
"""


@pytest.mark.parametrize("pattern", ["h", "hid"])
def test_a_layer_given_a_name_answers_to_it_and_to_its_binding(tmp_path, pattern):
    # dense(4, name="hid") is Keras layer "hid": check accepted "h" and summary counted it
    # frozen, but the build looked for a Keras layer "h" and froze nothing.
    path = tmp_path / "named.net"
    path.write_text(NAMED.replace("SETTING", f'freeze = ["{pattern}"]'), encoding="utf-8")
    assert netdsl.check(path) == []
    ((graph, split),) = pipeline.inferred_splits(pipeline.load(path), ["w"]).values()
    assert list(split.frozen) == ["hid"]
    model = netdsl.build(path, model="w")
    assert [(layer.name, layer.trainable) for layer in model.layers] == [("x", True), ("hid", False), ("y", True)]
    assert pipeline.built_split(model) == split
