"""Shapes and parameter counts without TensorFlow (`semantics.estimates`).

`render` with shapes draws from the pure-Python inference when it is certain;
tests/diagram/test_render_keras.py checks those diagrams against the Keras-built ones
byte for byte. Here: which models the inference takes (every example spec)
and which it must decline, and that `netdsl render` then never imports
TensorFlow.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import netdsl
from netdsl.semantics.analysis import checked_graphs
from netdsl.semantics.estimates import fill_estimates

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
ESTIMATES = ROOT / "tests" / "fixtures" / "golden" / "render_estimates.net"

# The models whose shapes or counts the inference cannot be sure of (see the comments in the file).
DECLINED = {"cross_scores", "no_shape_rule", "no_param_formula", "uncertain_wrapper"}


def _estimated(path: Path) -> dict[str, bool]:
    program = netdsl.parse_file(path)
    return {name: fill_estimates(graph) for name, graph in checked_graphs(program, program.model_names).items()}


@pytest.mark.parametrize("path", sorted([*SPECS.glob("*.net"), *SPECS.glob("keras_io/*.net")]), ids=lambda p: p.stem)
def test_every_example_spec_is_estimated(path):
    """`summary` and `render` of every example spec, keras.io's among them (an augmentation front end, an
    RNN's states given by keyword, spectral functions), are pure Python: never a Keras build."""
    assert [name for name, certain in _estimated(path).items() if not certain] == []


def test_the_inference_declines_what_it_cannot_know():
    found = _estimated(ESTIMATES)
    assert {name for name, certain in found.items() if not certain} == DECLINED
    assert {name for name, certain in found.items() if certain} == {"varying", "scores", "bidirectional_states"}


def test_estimates_fill_every_count():
    program = netdsl.parse_file(SPECS / "declared.net")
    graph = checked_graphs(program, ["declared_mlp"])["declared_mlp"]
    assert fill_estimates(graph)
    counts = {node.name: node.params for node in graph.nodes}
    # my_linear(64) on 20 features: a (20, 64) kernel and a (64,) bias; mish has no weights.
    assert counts["h.my_linear"] == 20 * 64 + 64 and counts["h.mish"] == 0 and counts["x"] == 0
    assert sum(counts.values()) == 7_617  # Keras' count_params of the built model


def test_a_declined_count_stays_unknown():
    program = netdsl.parse_file(ESTIMATES)
    graph = checked_graphs(program, ["no_param_formula"])["no_param_formula"]
    assert not fill_estimates(graph)
    assert [node.params for node in graph.nodes] == [0, 18, None]


_RENDER = """
import sys, time
from netdsl.cli import main
start = time.perf_counter()
code = main(["render", sys.argv[1], "-o", sys.argv[2]])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras", "jax", "torch"))
print(code, heavy)
"""


def test_render_with_shapes_of_resnet50_never_imports_tensorflow(tmp_path):
    target = tmp_path / "resnet50.dot"
    done = subprocess.run(
        [sys.executable, "-c", _RENDER, str(SPECS / "resnet50.net"), str(target)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr
    dot = target.read_text(encoding="utf-8")
    assert "25,636,712 parameters" in dot  # Keras' count_params of the built ResNet-50
    assert "(7, 7, 2048)" in dot and "? params" not in dot
