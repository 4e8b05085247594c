"""`netdsl render --cost` (issue 31): each box's FLOPs a sample and output memory for the batch, its fill
the deeper the larger its share of the FLOPs, the model's totals in the title (docs/cost.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from netdsl.cli import main

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _dot(tmp_path: Path, *flags: str) -> str:
    assert main(["render", str(SPECS / "lightning_mlp.net"), "-o", str(tmp_path / "mlp.dot"), *flags]) == 0
    return (tmp_path / "mlp.dot").read_text(encoding="utf-8")


def test_render_cost_shows_each_boxs_flops_and_memory_and_the_totals(tmp_path, capsys):
    dot = _dot(tmp_path, "--cost", "--batch", "4")
    assert (
        "<B>lightning_mlp</B>  101,770 parameters<BR/>204 KFLOPs a sample; batch 4, float32: "
        "inference 411.9 KiB, training 1.6 MiB>"
    ) in dot
    # the first dense: 2 x 100,352 MACs + 128 bias adds + 128 ReLUs; 4 x 128 x 4 bytes
    hidden = next(line for line in dot.splitlines() if line.strip().startswith("n2 "))
    assert '<FONT COLOR="#5c6570">201 KFLOPs  ·  2.0 KiB</FONT>' in hidden
    fills = dict(re.findall(r'^\s*(n\d) .*fillcolor="(#[0-9a-f]{6})"', dot, re.M))
    # the largest step the deepest, the second dense paler, flatten (no FLOPs) the palest; the input its own green
    assert fills == {"n0": "#d3f0dc", "n1": "#fff4e6", "n2": "#f78c3c", "n3": "#fee8d3"}


def test_render_without_cost_is_unchanged(tmp_path):
    dot = _dot(tmp_path)
    assert "FLOPs" not in dot and "#f78c3c" not in dot


def test_render_cost_needs_the_shapes(tmp_path, capsys):
    assert (
        main(["render", str(SPECS / "lightning_mlp.net"), "--cost", "--no-shapes", "-o", str(tmp_path / "m.dot")]) == 2
    )
    assert capsys.readouterr().err == "netdsl render: error: --cost needs the shapes: leave out --no-shapes\n"
    assert not (tmp_path / "m.dot").exists()


def test_the_library_draws_the_same_costed_diagram(tmp_path):
    import netdsl
    from netdsl.errors import UsageError

    drawn = netdsl.render(SPECS / "lightning_mlp.net", cost=True, batch=4)
    assert drawn.source == _dot(tmp_path, "--cost", "--batch", "4")  # byte for byte the command's .dot
    with pytest.raises(UsageError) as raised:
        netdsl.render(SPECS / "lightning_mlp.net", cost=True, shapes=False)
    assert str(raised.value) == "--cost needs the shapes: leave out --no-shapes"
