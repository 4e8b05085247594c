"""An `init` part loads exactly the layers it names, by the rule `freeze` uses (`part_layer_names`).

Model m of test_freeze_names (a block instance with a shared layer, a shared block,
a shared layer, a nested model) is built, trained a step and saved whole (m.keras)
and its nested model alone (sub.keras). The same spec with `init = {PART: FILE}`,
built from another seed, must pass `check` and build with the part's layers
bitwise equal to the file's and every other layer's weights its own. A part that
names nothing is an error of `check` at the part, as for `freeze`.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

import netdsl
from tests.backend.test_freeze_names import SPEC, WEIGHTED

# (part, file, the Keras layers it loads)
CASES = [
    ("e.enc", "m.keras", ["e.enc.proj", "e.enc.y"]),  # a block instance: every layer in it
    ("e.enc.y.proj", "m.keras", ["e.enc.proj"]),  # a shared layer in a block instance, by its shown name ...
    ("e.enc.proj", "m.keras", ["e.enc.proj"]),  # ... and by its Keras layer's
    ("p", "m.keras", ["p"]),  # a shared layer ...
    ("u.p", "m.keras", ["p"]),  # ... by one of its uses
    ("s", "m.keras", ["s"]),  # a shared block (a nested Keras model)
    ("t.s_2", "m.keras", ["s"]),
    ("f", "m.keras", ["sub"]),  # a nested model by its binding ...
    ("sub", "m.keras", ["sub"]),  # ... or its name, from a file holding it
    ("f", "sub.keras", ["sub"]),  # ... or from its own file
    ("sub", "sub.keras", ["sub"]),
    ("t.*", "m.keras", ["s", "p"]),
    ("*", "m.keras", WEIGHTED),
]


def _spec(folder, part: str, file: str = "m.keras"):
    path = folder / "init.net"
    path.write_text(SPEC.replace("freeze = [FREEZE]", f'init = {{"{part}": "{file}"}}'), encoding="utf-8")
    return path


def _weights(model) -> dict[str, list[np.ndarray]]:
    return {layer.name: [np.array(w) for w in layer.get_weights()] for layer in model.layers if layer.weights}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """m trained a step (so no weight is its initializer's), saved whole and its nested model alone."""
    folder = tmp_path_factory.mktemp("init")
    path = folder / "m.net"
    path.write_text(SPEC.replace("freeze = [FREEZE]", ""), encoding="utf-8")
    keras.utils.set_random_seed(3)
    model = netdsl.build(path, model="m")
    rng = np.random.default_rng(5)
    x = {"a": rng.normal(size=(32, 6)).astype("float32"), "b": rng.normal(size=(32, 6)).astype("float32")}
    model.fit(x, rng.normal(size=(32, 1)).astype("float32"), epochs=1, batch_size=8, verbose=0)
    model.save(folder / "m.keras")
    model.get_layer("sub").save(folder / "sub.keras")
    return folder


@pytest.mark.parametrize("part, file, loaded", CASES, ids=[f"{c[0]}<-{c[1]}" for c in CASES])
def test_a_part_loads_exactly_the_layers_it_names(saved, part, file, loaded):
    path = _spec(saved, part, file)
    assert netdsl.check(path) == []
    keras.utils.set_random_seed(4)
    model = netdsl.build(path, model="m")
    want = _weights(keras.saving.load_model(saved / "m.keras"))
    if file == "sub.keras":
        want = {"sub": [np.array(w) for w in keras.saving.load_model(saved / file).get_weights()]}
    got = _weights(model)
    assert list(got) == WEIGHTED
    for name in WEIGHTED:
        if name in loaded:
            assert all(np.array_equal(g, w) for g, w in zip(got[name], want[name], strict=True)), name
        elif name in want:
            assert not any(np.array_equal(g, w) for g, w in zip(got[name], want[name])), name


@pytest.mark.parametrize(
    "part, message",
    [
        ("e.proj", "'e.proj' names no layer, block instance or nested model of 'm'; did you mean 'e.enc.proj'?"),
        (
            "s.y",
            "'s.y' names no layer, block instance or nested model of 'm'; "
            '\'s\' is a nested model, loaded whole: init = {"s": "m.keras"}',
        ),
        (
            "f.z",
            "'f.z' names no layer, block instance or nested model of 'm'; "
            '\'f\' is a nested model, loaded whole: init = {"f": "m.keras"}',
        ),
        ("t", "'t' names no layer, block instance or nested model of 'm'"),
    ],
)
def test_a_part_that_names_nothing_is_an_error_at_the_part(tmp_path, part, message):
    found = [(d.line, d.col, d.text) for d in netdsl.check(_spec(tmp_path, part))]
    assert found == [(31, 13, message)]


@pytest.mark.parametrize("part", ["h", "hid"])
def test_a_layer_given_a_name_loads_by_it_and_by_its_binding(tmp_path, part):
    from tests.backend.test_freeze_names import NAMED

    source = tmp_path / "source.net"
    source.write_text(NAMED.replace("SETTING", ""), encoding="utf-8")
    keras.utils.set_random_seed(1)
    netdsl.build(source, model="w").save(tmp_path / "w.keras")
    path = tmp_path / "named.net"
    path.write_text(NAMED.replace("SETTING", f'init = {{"{part}": "w.keras"}}'), encoding="utf-8")
    assert netdsl.check(path) == []
    keras.utils.set_random_seed(2)
    got = _weights(netdsl.build(path, model="w"))
    want = _weights(keras.saving.load_model(tmp_path / "w.keras"))
    assert all(np.array_equal(g, w) for g, w in zip(got["hid"], want["hid"], strict=True))
    assert not np.array_equal(got["y"][0], want["y"][0])
