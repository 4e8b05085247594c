"""The code blocks of the language reference (../shared/LANGUAGE.md), as test cases.

Every block must parse and check; the import example gets a small
`lib/blocks.net` beside it, as the reference asks. A copy of the reference
ships in docs/ so the tests run where ../shared is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = [ROOT.parent / "shared" / "LANGUAGE.md", ROOT / "docs" / "reference" / "LANGUAGE.md"]

LIB_BLOCKS = """\
# The library the reference's import example reads.
let width = 64

block bottleneck(filters, stride=1) {
  input x
  output y = x -> conv2d(filters, 1, strides=stride) -> batch_norm -> relu
}
"""


def reference_path() -> Path:
    for path in CANDIDATES:
        if path.is_file():
            return path
    raise FileNotFoundError("LANGUAGE.md not found in ../shared or docs/reference")


def examples() -> list[tuple[str, str, str]]:
    """(id, language, code) for each fenced block, in order."""
    text = reference_path().read_text(encoding="utf-8")
    out = []
    for i, match in enumerate(re.finditer(r"```(\w*)\n(.*?)```", text, re.S)):
        lang, code = match.group(1), match.group(2)
        heading = text[: match.start()].rsplit("\n## ", 1)[-1].split("\n", 1)[0]
        out.append((f"{i}-{heading.split('.')[0].strip()}", lang, code))
    return out


def write_example(folder: Path, code: str) -> Path:
    (folder / "lib").mkdir(exist_ok=True)
    (folder / "lib" / "blocks.net").write_text(LIB_BLOCKS, encoding="utf-8")
    spec = folder / "example.net"
    spec.write_text(code, encoding="utf-8")
    return spec
