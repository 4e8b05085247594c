"""`check`'s pure-Python shapes agree with Keras wherever `check` claims to know one.

For every model of every example spec, each node whose shape the checker
inferred (not unknown) must have exactly the shape Keras gives the built
layer. A wrong rule would make `check` reject valid specs or decide a
shape-dependent `if` differently from `build`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import netdsl
from netdsl.semantics.analysis import analyze
from netdsl.semantics.values import UNKNOWN

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(p for p in (ROOT / "specs").glob("*.net"))
GUIDE = [
    code
    for code in re.findall(r"```net\n(.*?)```", (ROOT / "docs" / "language.md").read_text(), re.S)
    if "\nmodel " in "\n" + code
]


# A model of any picture size, called on pictures of one size: Keras gives the call that size's
# shapes, and so must check (a zoo backbone is such a model; its `(none, none, 1280)` once made every
# spec using one fall back from replaying the checked graph to a second, interleaved build).
ANY_SIZE = """
model features {
  input x: (none, none, 3)
  h = x -> conv2d(8, 3, strides=2) -> max_pooling2d
  output y = h -> conv2d(16, 3, padding="same") -> relu
}

model tagger {
  input image: (33, 47, 3)
  output probs = image -> features -> global_average_pooling2d -> dense(4, activation=softmax)
}
"""

CASES = (
    [(p.stem, p.read_text(encoding="utf-8")) for p in SPECS]
    + [(f"guide{i}", c) for i, c in enumerate(GUIDE)]
    + [("nested_any_size", ANY_SIZE)]
)


@pytest.mark.slow
@pytest.mark.parametrize("text", [t for _, t in CASES], ids=[i for i, _ in CASES])
def test_inferred_shapes_equal_keras_shapes(text, tmp_path):
    from netdsl.backend.compiler import compile_program

    weights = re.findall(r'"(\w+)": "(\w+\.keras)"', text)  # a train section's `init`: parts from files
    folder = tmp_path if weights else ROOT / "specs"  # imports resolve in specs/
    program = netdsl.parse(text, filename=str(folder / "case.net"))
    for model, file in weights:
        netdsl.build(program, model=model).save(tmp_path / file)
    inferred = analyze(program).graphs
    built, _ = compile_program(program)
    compared = 0
    for name, graph in inferred.items():
        keras_shapes = {node.name: node.output_shapes for node in built.graphs[name].nodes}
        for node in graph.nodes:
            for mine, theirs in zip(node.output_shapes, keras_shapes[node.name]):
                if mine is UNKNOWN:
                    continue
                assert mine == tuple(theirs), f"{name}: {node.name} ({node.kind})"
                compared += 1
    assert compared > 0


def test_declared_layer_shapes_are_inferred():
    program = netdsl.parse_file(ROOT / "specs" / "declared.net")
    graph = analyze(program).graphs["declared_attention"]
    assert {n.name: n.output_shapes for n in graph.nodes}["mixed"] == [(10, 16)]


def test_a_nested_model_of_any_size_has_its_callers_shapes():
    graph = analyze(netdsl.parse(ANY_SIZE)).graphs["tagger"]
    assert {n.name: n.output_shapes for n in graph.nodes}["probs.features"] == [(8, 11, 16)]
