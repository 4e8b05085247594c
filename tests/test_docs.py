"""Every `net` example of the language guide (docs/language.md) checks clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import netdsl

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
EXAMPLES = re.findall(r"```net\n(.*?)```", GUIDE, re.S)


def test_the_guide_has_examples():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_guide_example_checks_clean(code, tmp_path):
    spec = tmp_path / "example.net"
    spec.write_text(code, encoding="utf-8")
    assert [d.text for d in netdsl.check(spec)] == []


def test_guide_names_layers_as_documented():
    from netdsl.semantics.analysis import analyze

    graph = analyze(netdsl.parse(EXAMPLES[0], filename="g.net")).graphs["mnist_mlp"]
    assert [n.name for n in graph.nodes] == ["image", "h.flatten", "h", "logits", "probs"]
