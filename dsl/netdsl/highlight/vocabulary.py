"""What a highlighter needs to know about `.net` text, read from the sources of truth.

The keywords, operators and token patterns come from `grammar/netdsl.lark`
(found by `netdsl.grammar`, as the parser finds it), and the built-in names
from the registry's data file, so a keyword, operator or layer added there is
highlighted without touching this room. Nothing here imports the parser or the
registry modules (they sit beside or above this room): the registry's file is
read as plain data.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from lark import Lark

from ..grammar import grammar_text

# The registry's data file, read as data: the registry room sits above this one.
REGISTRY_DATA = Path(__file__).resolve().parent.parent / "registry" / "data.json"

# Symbols that separate or group rather than compute. Every other non-word
# literal of the grammar is an operator, so a new one can never go unnoticed.
PUNCTUATION = frozenset("()[]{},:.;")

# How each keyword reads (unknown ones still highlight as plain keywords).
KEYWORD_ROLES = {
    "import": "namespace",
    "as": "statement",
    "let": "declaration",
    "model": "declaration",
    "block": "declaration",
    "activation": "declaration",
    "layer": "declaration",
    "sweep": "declaration",
    "input": "statement",
    "output": "statement",
    "weight": "statement",
    "shared": "statement",
    "train": "statement",
    "if": "control",
    "else": "control",
    "true": "constant",
    "false": "constant",
    "none": "constant",
    "and": "word_operator",
    "or": "word_operator",
    "not": "word_operator",
}

# The terminals whose patterns the highlighters reuse as they are.
PATTERN_TERMINALS = ("NAME", "INT", "FLOAT", "STRING", "COMMENT", "WS", "_NL", "ARROW")


@dataclass(frozen=True)
class Vocabulary:
    keywords: tuple[str, ...]  # every NAME-shaped literal of the grammar
    soft_keywords: tuple[str, ...]  # keywords that may also name things
    operators: tuple[str, ...]  # longest first, as the parser's lexer tries them
    punctuation: tuple[str, ...]
    patterns: dict[str, str]  # PATTERN_TERMINALS -> regular expression
    name_char: str  # the class of NAME's later characters
    builtins: frozenset[str]  # every registry key of every kind
    step_builtins: frozenset[str]  # registry layers and activations (steps)

    def role(self, keyword: str) -> str:
        return KEYWORD_ROLES.get(keyword, "other")


def _literal_alternatives(pattern) -> list[str]:
    """The literal strings a terminal matches: "->" for ARROW, the six
    comparisons for COMPARE; [] for a real regular expression (NAME, INT...)."""
    if pattern.type == "str":
        return [pattern.value]
    body = pattern.value
    if body.startswith("(?:") and body.endswith(")"):
        body = body[3:-1]
    parts = body.split("|")
    if all(re.fullmatch(r"(\\.|[^\\\[\](){}*+?.^$|])+", p) for p in parts):
        return [re.sub(r"\\(.)", r"\1", p) for p in parts]
    return []


def _read_grammar() -> tuple[list[str], list[str], list[str], dict[str, str]]:
    # Earley with the basic lexer: the same terminals the parser's LALR build
    # has, without computing parse tables we do not need.
    lark = Lark(grammar_text(), parser="earley", lexer="basic")
    by_name = {t.name: t for t in lark.terminals}
    soft = sorted(
        {by_name[s.name].pattern.value for r in lark.rules if r.origin.name == "soft_keyword" for s in r.expansion}
    )
    name_re = re.compile(by_name["NAME"].pattern.to_regexp())
    keywords, symbols = set(), []
    # The parser's lexer tries terminals by priority, then longest first
    # (lark's own order): `->` before `-`, `**` before `*`, `==` before `=`.
    ordered = sorted(lark.terminals, key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    for term in ordered:
        for literal in _literal_alternatives(term.pattern):
            if name_re.fullmatch(literal):
                keywords.add(literal)
            elif literal not in symbols:
                symbols.append(literal)
    symbols.sort(key=len, reverse=True)  # stable: keeps lark's order among equals
    patterns = {name: by_name[name].pattern.to_regexp() for name in PATTERN_TERMINALS}
    return sorted(keywords), soft, symbols, patterns


def _name_char(name_pattern: str) -> str:
    """`[A-Za-z0-9_]` from NAME's `[A-Za-z_][A-Za-z0-9_]*`: what may continue a
    word, so a keyword is matched only as a whole word, as the parser does."""
    match = re.fullmatch(r"\[[^\]]+\](\[[^\]]+\])\*", name_pattern)
    if match is None:
        raise RuntimeError(f"unexpected NAME pattern in the grammar: {name_pattern!r}")
    return match.group(1)


def _read_registry() -> tuple[frozenset[str], frozenset[str]]:
    data = json.loads(REGISTRY_DATA.read_text(encoding="utf-8"))["kinds"]
    every, steps = set(), set()
    for kind, entries in data.items():
        for name, entry in entries.items():
            keys = {name, *entry.get("aliases", ())}
            every |= keys
            if kind in ("layer", "activation"):
                steps |= keys
    return frozenset(every), frozenset(steps)


@functools.lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    keywords, soft, symbols, patterns = _read_grammar()
    builtins, step_builtins = _read_registry()
    return Vocabulary(
        keywords=tuple(keywords),
        soft_keywords=tuple(soft),
        operators=tuple(s for s in symbols if s not in PUNCTUATION),
        punctuation=tuple(s for s in symbols if s in PUNCTUATION),
        patterns=patterns,
        name_char=_name_char(patterns["NAME"]),
        builtins=builtins,
        step_builtins=step_builtins,
    )
