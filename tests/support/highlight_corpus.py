"""Every piece of `.net` text the project holds, for the highlighter tests:
each spec (specs/, specs/lib/), each fixture (tests/fixtures/errors/, tests/fixtures/fmt/,
tests/fixtures/golden/, tests/fixtures/compat/), each ```net fence of README.md and docs/**/*.md
and each code block of the language reference."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.reference_examples import examples

ROOT = Path(__file__).resolve().parents[2]
NET_FENCE = re.compile(r"```net\n(.*?)```", re.S)


def spec_files() -> list[Path]:
    return sorted([*ROOT.glob("specs/**/*.net"), *ROOT.glob("tests/**/*.net")])


def _utf8(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


def non_utf8_files() -> list[Path]:
    """Files that are not text at all (the parser rejects their bytes before lexing)."""
    return [p for p in spec_files() if _utf8(p) is None]


def fences() -> list[tuple[str, str]]:
    out = []
    for md in sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md")]):
        text = md.read_text(encoding="utf-8")
        for i, code in enumerate(NET_FENCE.findall(text)):
            out.append((f"{md.relative_to(ROOT)}#{i}", code))
    for ident, lang, code in examples():
        if lang in ("", "net"):
            out.append((f"LANGUAGE.md#{ident}", code))
    return out


def texts() -> list[tuple[str, str]]:
    """(id, text) of every spec, fixture and fence that is UTF-8 text."""
    files = [(str(p.relative_to(ROOT)), _utf8(p)) for p in spec_files()]
    return [(ident, text) for ident, text in files if text is not None] + fences()
