"""Found by the spec fuzz campaign of issue 22 on main: a 2 MiB file of one line repeated gave 41,853
diagnostics (7.9 MB to print). A check reports at most MAX_DIAGNOSTICS, then says how many more."""

from __future__ import annotations

import netdsl
from netdsl.limits import MAX_DIAGNOSTICS


def test_a_check_reports_at_most_max_diagnostics_then_how_many_more():
    text = "let s = 1\n" * (MAX_DIAGNOSTICS + 250) + "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"
    diagnostics = netdsl.check(text=text, filename="many.net")
    assert len(diagnostics) == MAX_DIAGNOSTICS + 1
    assert [d.message for d in diagnostics[:2]] == ["'s' is already defined at line 1"] * 2
    last = diagnostics[-1]
    assert (last.line, last.severity, last.message) == (
        MAX_DIAGNOSTICS + 2,
        "error",
        "249 more diagnostics from here on are not shown",
    )
