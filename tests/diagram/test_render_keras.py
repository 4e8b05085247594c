"""Diagrams with real Keras shapes and parameter counts, against those `render` draws.

`render(..., shapes=True)` takes shapes and counts from the pure-Python
inference where it is certain (tests/semantics/test_estimates.py: which models,
and without TensorFlow); here every spec's model is built with Keras and
must draw the same bytes.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import netdsl
from netdsl import render as render_model
from netdsl.backend.compiler import compile_program
from netdsl.cli import main
from netdsl.diagram.render import render_graph, write_diagram

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
SPECS = ROOT / "specs"
SPEC_FILES = sorted(SPECS.glob("*.net"))
ESTIMATES = GOLDEN / "render_estimates.net"  # models the pure-Python inference draws, and some it must decline
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def test_keras_shapes_give_the_golden_diagram():
    """Built with Keras, the golden spec draws byte for byte what the pure-Python inference drew:
    its inferred shapes and estimated parameter counts are Keras's."""
    analysis, _ = compile_program(netdsl.parse_file(GOLDEN / "render_small.net"), models=["small"])
    source = render_graph(analysis.graphs["small"]).source
    assert source.encode("utf-8") == (GOLDEN / "render_small.dot").read_bytes()
    assert render_model(GOLDEN / "render_small.net").source == source


def _models():
    for path in [*SPEC_FILES, ESTIMATES]:
        for name in netdsl.parse_file(path).model_names:
            yield pytest.param(path, name, id=f"{path.stem}:{name}")


@pytest.mark.slow
@needs_dot
@pytest.mark.parametrize("path,name", list(_models()))
def test_every_model_renders_with_keras_shapes(path, name, tmp_path):
    """`render` (pure-Python shapes where certain, else Keras) draws exactly what the built model draws."""
    analysis, models = compile_program(netdsl.parse_file(path), models=[name])
    digraph = render_model(path, model=name)
    assert digraph.source == render_graph(analysis.graphs[name]).source
    title = re.search(r"label=<<B>[^<]*</B>  ([0-9,]+) parameters>", digraph.source)
    assert title is not None and int(title.group(1).replace(",", "")) == models[name].count_params()
    assert "\u00b7  ? params" not in digraph.source
    for fmt, magic in (("svg", b"<?xml"), ("png", b"\x89PNG")):
        assert write_diagram(digraph, tmp_path / name, fmt).read_bytes().startswith(magic)
    folded = render_model(path, model=name, depth=0)
    assert len(folded.source) <= len(digraph.source)


@pytest.mark.slow
@needs_dot
def test_cli_render_with_shapes(tmp_path, capsys):
    assert main(["render", str(SPECS / "resnet50.net"), "--depth", "1", "-o", str(tmp_path) + "/"]) == 0
    svg = (tmp_path / "resnet50.svg").read_text(encoding="utf-8")
    assert "25,636,712 parameters" in svg and "bottleneck" in svg


DOC = (ROOT / "docs" / "render.md").read_text(encoding="utf-8")


@pytest.mark.slow
@needs_dot
def test_the_render_guide_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    commands = [
        line.split("#")[0].split()
        for block in re.findall(r"```sh\n(.*?)```", DOC, re.S)
        for line in block.splitlines()
        if line.strip()
    ]
    assert len(commands) == 3
    for command in commands:
        assert command[:2] == ["netdsl", "render"]
        args = [str(ROOT / a) if a.startswith("specs/") else a for a in command[2:]]
        assert main(["render", *args]) == 0, command
    assert (tmp_path / "resnet50.png").read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in (tmp_path / "diagrams").iterdir()) == ["detector.svg"]
    assert (tmp_path / "siamese.dot").exists()
    (python,) = re.findall(r"```python\n(.*?)```", DOC, re.S)
    (tmp_path / "resnet50.png").unlink()
    exec(compile(python.replace('"specs/', f'"{ROOT}/specs/'), "docs/render.md", "exec"), {})
    assert (tmp_path / "resnet50.png").read_bytes().startswith(b"\x89PNG")
