"""`format_ir`: printing IR built in memory (what `netdsl decompile` prints) in `netdsl fmt` form.

Every spec and formatter fixture, parsed and printed without its source text, must
read back as the same IR and be a fixed point of `netdsl fmt`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netdsl.errors import Span
from netdsl.syntax import ir
from netdsl.syntax.formatter import format_ir, format_text, number_text
from netdsl.syntax.transform import to_ir
from tests.syntax.test_formatter import plain

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(ROOT.glob("specs/**/*.net")) + sorted((ROOT / "tests" / "fixtures" / "fmt").glob("*.net"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_printed_ir_reads_back_and_is_formatted(path):
    tree = to_ir(path.read_text(encoding="utf-8"), str(path))
    text = format_ir(tree.decls)
    assert plain(to_ir(text, "<out>").model_dump()["decls"]) == plain(tree.model_dump()["decls"])
    assert format_text(text) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (1.001e-05, "1.001e-5"),
        (1e-3, "0.001"),
        (1e16, "1e16"),
        (6.0, "6.0"),
        (-2, "-2"),
        (0.5, "0.5"),
    ],
)
def test_numbers_print_as_a_spec_writes_them(value, text):
    assert number_text(value) == text
    assert float(text) == value


def test_long_flow_breaks_before_arrows():
    span = Span.at("<decompile>", 1, 1)
    step = ir.Call.model_construct(
        span=span,
        kind="call",
        func=ir.Name.model_construct(span=span, kind="name", id="dense"),
        args=[ir.Number.model_construct(span=span, kind="number", value=1024)],
        kwargs=[],
    )
    flow = ir.Flow.model_construct(
        span=span, kind="flow", items=[ir.Name.model_construct(span=span, kind="name", id="x")] + [step] * 12
    )
    body = [ir.Assign.model_construct(span=span, kind="assign", targets=["y"], value=flow)]
    text = format_ir([ir.ModelDecl.model_construct(span=span, kind="model", name="m", body=body)])
    lines = text.splitlines()
    assert lines[0] == "model m {"
    assert lines[1].startswith("  y = x -> dense(1024) -> ")
    assert all(len(line) <= 88 for line in lines)
    assert all(line.lstrip().startswith("-> ") for line in lines[2:-1])
    assert format_text(text) == text
