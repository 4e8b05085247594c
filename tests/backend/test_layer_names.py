"""`check` refuses a model in which two layers get one Keras name (Keras would refuse to assemble it);
what it lets through builds, each layer under the name `graph.keras_layer_name` says."""

from __future__ import annotations

from pathlib import Path

import keras
import pytest

import netdsl
from netdsl.semantics.analysis import checked_graphs
from netdsl.semantics.graph import keras_layer_name

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "repeated_layer_names.net"


def test_the_refused_models_are_ones_keras_refuses() -> None:
    a = keras.Input((3,))
    first = keras.layers.Dense(4, name="x")(a)
    with pytest.raises(ValueError, match='The name "x" is used 2 times'):
        keras.Model(a, keras.layers.Dense(4, name="x")(first))
    messages = [d.message for d in netdsl.check(FIXTURE)]
    assert messages == [
        "the layer name 'x' is given to two layers, 'h.b.o' and 'y.b.o'; Keras needs each name once",
        "the layer name 'h' is given to two layers, 'h' and 'y'; Keras needs each name once",
    ]


def test_a_named_shared_layer_used_twice_builds_under_its_name() -> None:
    program = netdsl.parse_file(FIXTURE)
    graph = checked_graphs(program, ["fine"])["fine"]
    model = netdsl.build(FIXTURE, model="fine")
    assert {layer.name for layer in model.layers} == {keras_layer_name(node) for node in graph.kept_nodes()}
    assert [layer.name for layer in model.layers].count("proj") == 1
