"""Generate the TextMate grammar of `.net` specs from the grammar file and the registry.

    .venv/bin/python scripts/gen_textmate.py          # write both copies
    .venv/bin/python scripts/gen_textmate.py --check  # exit 1 if either would change

Writes `editors/textmate/netdsl.tmLanguage.json` (for any TextMate-grammar
editor) and the identical `editors/vscode/syntaxes/netdsl.tmLanguage.json`
(the VS Code extension must carry its own copy: an installed extension folder
cannot reach outside itself). Run it after changing grammar/netdsl.lark or the
registry; tests/highlight/test_textmate.py fails until you do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dsl"))

from netdsl.atomic import write_bytes  # noqa: E402
from netdsl.highlight.textmate import grammar_json  # noqa: E402

TARGETS = (
    ROOT / "editors" / "textmate" / "netdsl.tmLanguage.json",
    ROOT / "editors" / "vscode" / "syntaxes" / "netdsl.tmLanguage.json",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale copies")
    args = parser.parse_args(argv)
    text = grammar_json().encode("utf-8")
    stale = [t for t in TARGETS if not t.is_file() or t.read_bytes() != text]
    if args.check:
        for target in stale:
            print(f"{target.relative_to(ROOT)} is out of date; run scripts/gen_textmate.py")
        return 1 if stale else 0
    for target in stale:
        write_bytes(target, text)
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
