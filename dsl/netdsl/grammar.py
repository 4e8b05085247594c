"""Where netdsl's one grammar file is: `grammar/netdsl.lark` in the source tree,
`netdsl/netdsl.lark` inside the wheel. The parser and the syntax highlighter both
read it from here, so neither can drift from the other."""

from __future__ import annotations

import functools
from pathlib import Path

__all__ = ["grammar_path", "grammar_text"]


@functools.lru_cache(maxsize=1)
def grammar_path() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "netdsl.lark", here.parent.parent / "grammar" / "netdsl.lark"):
        if candidate.is_file():
            return candidate
    raise RuntimeError("netdsl's grammar file is missing from the installation")


def grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")
