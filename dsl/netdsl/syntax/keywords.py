"""The language's keywords, written once.

Every reserved word of `grammar/netdsl.lark`, by what it starts. The parser
reads the grammar itself; everything else that needs the words (the
registry's name check, the editor's completion and rename, the exporter's
names, the syntax errors' recovery, the fuzzer) imports them from here, and
tests/syntax/test_keywords.py checks that this module and the grammar agree.
"""

from __future__ import annotations

__all__ = [
    "DECLARATION_KEYWORDS",
    "STATEMENT_KEYWORDS",
    "OPERATOR_KEYWORDS",
    "CONSTANT_KEYWORDS",
    "KEYWORDS",
    "SOFT_KEYWORDS",
]

DECLARATION_KEYWORDS = ("import", "let", "model", "block", "activation", "layer", "loss", "metric", "sweep")
"""Each starts a top-level declaration (a `*_decl` rule of the grammar)."""

STATEMENT_KEYWORDS = ("input", "output", "weight", "shared", "train")
"""Each starts a statement inside a body; `if` starts one too and is listed with the operators."""

OPERATOR_KEYWORDS = ("if", "else", "and", "or", "not", "as")
"""Words inside expressions (`a if c else b`, `not x`) and `import "f" as lib`."""

CONSTANT_KEYWORDS = ("true", "false", "none")

KEYWORDS: tuple[str, ...] = DECLARATION_KEYWORDS + STATEMENT_KEYWORDS + OPERATOR_KEYWORDS + CONSTANT_KEYWORDS
"""Every keyword, in the order above (completion lists show them so); none can name a registry entry."""

SOFT_KEYWORDS = frozenset(
    ("activation", "layer", "weight", "shared", "train", "model", "block", "sweep", "loss", "metric")
)
"""Keywords the grammar also accepts as a name where no statement can start (`soft_keyword`), e.g. `x.model`."""
