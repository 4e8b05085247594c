"""A step no output depends on (an unused step) is not in the Keras model: every count leaves it out.

Keras' functional model keeps only the layers between its inputs and its
outputs, so `keras.Model.count_params()` of a model holding an unused step,
and of every model that nests it, leaves that step's weights out. The
pure-Python counts must say the same: the nested model's estimate
(`fill_estimates`), `render`'s title and nested-model boxes (drawn without
Keras, the same bytes as drawn after a Keras build) and `summary`'s totals.
The unused step itself keeps its own row and box, with its own count.
"""

from __future__ import annotations

import re

import pytest

import netdsl
from netdsl import pipeline
from netdsl.backend.compiler import compile_program
from netdsl.diagram.render import render_graph
from netdsl.semantics.analysis import checked_graphs
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.trainable import keras_layer_name

SUB = """\
model sub {
  input x: (4,)
  h = x -> dense(5)
  unused = h -> dense(5)
  output z = h -> dense(2)
}
"""

# (case, spec text, the model asked, its nested model's binding, Keras' count of the model, of the nested one)
CASES = [
    (
        "nested",
        SUB
        + """\
model top {
  input x: (4,)
  output y = x -> sub
}
""",
        "top",
        "y",
        37,
        37,
    ),
    ("top_level", SUB, "sub", None, 37, None),
    (
        "nested_twice",
        SUB
        + """\
model mid {
  input x: (4,)
  spare = x -> dense(9)
  output m = x -> sub -> dense(3)
}
model top {
  input x: (4,)
  output y = x -> mid -> dense(1)
}
""",
        "top",
        "y.mid",
        37 + 9 + 4,
        37 + 9,
    ),
    (
        "shared_layer_used_on_both",
        """\
model sub {
  input x: (4,)
  shared p = dense(4)
  unused = x -> p -> dense(6)
  output z = x -> p
}
model top {
  input x: (4,)
  output y = x -> sub -> dense(1)
}
""",
        "top",
        "y.sub",
        20 + 5,
        20,
    ),
    (
        "unused_block_instance_and_input",
        """\
block pair(units) {
  input x
  output y = x -> dense(units) -> dense(units)
}
model sub {
  input x: (4,)
  input extra: (3,)
  side = extra -> pair(8)
  dead = x -> pair(2)
  output z = x -> dense(2)
}
model top {
  input x: (4,)
  input extra: (3,)
  output y = (x, extra) -> sub
}
""",
        "top",
        "y",
        10,
        10,
    ),
    (
        "shared_block",
        """\
block enc(units) {
  input x
  side = x -> dense(7)
  output y = x -> dense(units)
}
model top {
  input a: (4,)
  input b: (4,)
  shared e = enc(3)
  output y = (a -> e, b -> e) -> add
}
""",
        "top",
        "y.e",
        15,
        15,
    ),
]


def _title_count(source: str) -> int:
    found = re.search(r"label=<<B>[^<]*</B>  ([0-9,]+) parameters?>", source)
    assert found is not None, source
    return int(found.group(1).replace(",", ""))


def _box_count(source: str, binding: str) -> int:
    found = re.search(rf'COLOR="#5c6570">{re.escape(binding)}</FONT><BR/>[^\n]*?  ·  ([0-9,]+) params?>', source)
    assert found is not None, source
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("case, text, model, nested, total, nested_total", CASES, ids=[c[0] for c in CASES])
def test_every_count_leaves_an_unused_step_out_as_keras_does(tmp_path, case, text, model, nested, total, nested_total):
    path = tmp_path / f"{case}.net"
    path.write_text(text)
    graph = checked_graphs(netdsl.parse_file(path), [model])[model]
    assert fill_estimates(graph), "the inference is sure of this model: render and summary stay pure Python"
    analysis, models = compile_program(netdsl.parse_file(path), models=[model])
    built = models[model]
    assert built.count_params() == total  # the hand-counted figure is Keras' own
    if nested is not None:
        node = next(n for n in graph.nodes if n.name == nested)
        assert built.get_layer(keras_layer_name(node)).count_params() == nested_total
        assert node.params == nested_total

    drawn = netdsl.render(path, model=model).source
    assert drawn == render_graph(analysis.graphs[model]).source  # the same bytes as after a Keras build
    assert _title_count(drawn) == total
    if nested is not None:
        assert _box_count(drawn, nested) == nested_total

    inferred = pipeline.inferred_splits(netdsl.parse_file(path), [model])
    assert inferred is not None
    assert (inferred[model][1].total, inferred[model][1].trainable) == (total, total)
    assert netdsl.summary(path, model=model)[model]["params"] == total


def test_the_unused_step_keeps_its_own_box_and_row(tmp_path):
    path = tmp_path / "sub.net"
    path.write_text(SUB)
    drawn = netdsl.render(path, model="sub").source
    assert _box_count(drawn, "unused") == 30
    assert _title_count(drawn) == 37
    table = pipeline.summaries(netdsl.parse_file(path), ["sub"])
    graph, split = table["sub"]
    assert [(n.name, n.params) for n in graph.nodes] == [("x", 0), ("h", 25), ("unused", 30), ("z", 12)]
    assert split.total == 37
