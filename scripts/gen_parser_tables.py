"""Write dsl/netdsl/syntax/netdsl_tables.json: lark's LALR(1) tables of grammar/netdsl.lark.

Run by a developer after editing the grammar:

    .venv/bin/python scripts/gen_parser_tables.py          # write the file
    .venv/bin/python scripts/gen_parser_tables.py --check  # exit 1 if it would change

The parser reads the committed file (package data, plain JSON: nothing is
cached or unpickled at run time); see dsl/netdsl/syntax/tables.py. The output
does not depend on hashing or on the machine, so tests/syntax/test_parser_tables.py
regenerates it in memory and compares it with the committed bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dsl"))

from netdsl.grammar import grammar_text  # noqa: E402
from netdsl.syntax.tables import TABLES_PATH, generate, render  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the file is up to date")
    args = parser.parse_args()
    text = render(generate(grammar_text()))
    current = TABLES_PATH.read_text(encoding="utf-8") if TABLES_PATH.exists() else None
    if args.check:
        if current != text:
            print(f"{TABLES_PATH} is out of date: run scripts/gen_parser_tables.py", file=sys.stderr)
            return 1
        return 0
    if current != text:
        TABLES_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {TABLES_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
