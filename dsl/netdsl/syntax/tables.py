"""The parser's tables: lark's LALR(1) analysis of grammar/netdsl.lark, committed as JSON.

Building the LALR tables from the grammar takes lark about a second, so netdsl
ships them: `netdsl_tables.json` next to this module, written by

    .venv/bin/python scripts/gen_parser_tables.py          # after editing the grammar
    .venv/bin/python scripts/gen_parser_tables.py --check  # exit 1 if it would change

and checked by tests/syntax/test_parser_tables.py (regenerating it must give the same
bytes). Nothing is cached at run time and nothing is unpickled: the file is
package data read with `json`, and it records the SHA-256 of the grammar it was
made from. When the grammar no longer matches (someone edited it and did not
regenerate), the tables are built from the grammar in memory instead, so the
parser never disagrees with the grammar file.

The file holds, in an order that does not depend on hashing (states numbered
breadth-first from the start state, rules sorted by name):

- `lexer`: the terminals in the order lark's basic lexer tries them, the
  keywords each name-like terminal turns into, the ignored and the
  newline-carrying terminals;
- `rules`: each rule's name, its symbols and how lark shapes its children
  (alias, `?` inlining, `!` kept tokens, `[..]` placeholders);
- `states`: per state, symbol -> action; an action >= 0 shifts to (or, for a
  rule name, goes to) that state, an action < 0 reduces by rule `~action`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netdsl.grammar import grammar_text

TABLES_PATH = Path(__file__).with_name("netdsl_tables.json")
FORMAT = 1
END = "$END"


@dataclass(frozen=True)
class Rule:
    """One grammar rule (an alternative), with what lark does to its children."""

    index: int
    origin: str
    symbols: tuple[tuple[str, bool, bool], ...]  # (name, is_terminal, filtered out of the tree)
    alias: str | None
    expand1: bool  # a `?rule`: one child left means the child itself
    keep_all_tokens: bool  # a `!rule`
    empty_indices: tuple[bool, ...]  # where `[..]` left a None placeholder
    order: int
    priority: int | None
    template_source: str | None

    @property
    def size(self) -> int:
        return len(self.symbols)

    @property
    def name(self) -> str:
        """The name its children are handed to: its alias, or the rule's own."""
        return self.alias or self.origin


class Tables:
    """The loaded tables, in the shapes the lexer and the LALR driver use."""

    def __init__(self, data: dict[str, Any]):
        lexer = data["lexer"]
        # The terminals in lark's order, then any one character, unnamed: every
        # match starts where the previous one ended, and no terminal matching
        # shows as a match without a name (`lexer.lex` reports it).
        self.token_re = re.compile("|".join(f"(?P<{name}>{regexp})" for name, regexp in lexer["terminals"]) + "|(?s:.)")
        self.keywords: dict[str, dict[str, str]] = lexer["keywords"]
        self.ignore = frozenset(lexer["ignore"])
        self.newline_types = frozenset(lexer["newline_types"])
        self.rules = [_rule(i, r) for i, r in enumerate(data["rules"])]
        self.states: list[dict[str, int]] = data["states"]
        self.start_state: int = data["start_state"]
        self.end_state: int = data["end_state"]
        self.climbs: dict[Any, Any] = {}  # see lalr.Reductions
        self.recognizer: Any = None  # see lalr.recognizer

    def expected(self, state: int) -> set[str]:
        """The terminals the parser accepts in `state` (as lark reports them)."""
        return {s for s in self.states[state] if s.isupper()}


def _rule(index: int, r: list[Any]) -> Rule:
    origin, symbols, alias, expand1, keep_all_tokens, empty_indices, order, priority, template_source = r
    return Rule(
        index,
        origin,
        tuple((s[0], s[1], s[2]) for s in symbols),
        alias,
        expand1,
        keep_all_tokens,
        tuple(empty_indices),
        order,
        priority,
        template_source,
    )


def grammar_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def load_tables() -> Tables:
    """The committed tables, or tables built in memory when they do not match the grammar."""
    grammar = grammar_text()
    try:
        data = json.loads(TABLES_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    current = isinstance(data, dict) and data.get("format") == FORMAT
    if not current or data.get("grammar_sha256") != grammar_digest(grammar):
        data = generate(grammar)
    return Tables(data)


# ----------------------------------------------------------------- generating


class _NewlinesKept:
    """Stands for the layout post-lexer while lark builds the tables: it only
    needs to know that `_NL` is always passed on."""

    always_accept = ("_NL",)

    def process(self, stream: Any) -> Any:  # pragma: no cover - lark only reads always_accept here
        return stream


def generate(grammar: str) -> dict[str, Any]:
    """lark's analysis of the grammar, in the committed file's format."""
    from lark import Lark
    from lark.lexer import BasicLexer, UnlessCallback

    parser = Lark(grammar, parser="lalr", lexer="basic", maybe_placeholders=True, postlex=_NewlinesKept())
    lexer = BasicLexer(parser.lexer_conf)
    scanner = lexer.scanner  # builds lexer.callback too: the keywords hidden in NAME
    keywords: dict[str, dict[str, str]] = {}
    for terminal_name, callback in sorted(lexer.callback.items()):
        assert isinstance(callback, UnlessCallback), callback
        terminals = sorted(callback.scanner.terminals, key=lambda t: t.name)
        keywords[terminal_name] = {t.pattern.value: t.name for t in terminals}
        assert all(not t.pattern.flags and t.pattern.type == "str" for t in callback.scanner.terminals)

    rules = sorted(parser.rules, key=lambda r: (r.origin.name, [s.name for s in r.expansion], r.alias or ""))
    rule_index = {id(r): i for i, r in enumerate(rules)}
    table = parser.parser.parser._parse_table  # lark's LALR(1) table: {state: {symbol: (action, arg)}}
    states, start, end = _renumbered(table, rule_index)
    return {
        "format": FORMAT,
        "grammar_sha256": grammar_digest(grammar),
        "lexer": {
            "terminals": [[t.name, t.pattern.to_regexp()] for t in scanner.terminals],
            "keywords": keywords,
            "ignore": sorted(lexer.ignore_types),
            "newline_types": sorted(lexer.newline_types),
        },
        "rules": [
            [
                r.origin.name,
                [[s.name, s.is_term, bool(getattr(s, "filter_out", False))] for s in r.expansion],
                r.alias,
                bool(r.options.expand1),
                bool(r.options.keep_all_tokens),
                [bool(b) for b in (r.options.empty_indices or ())],
                r.order,
                r.options.priority,
                r.options.template_source,
            ]
            for r in rules
        ],
        "states": states,
        "start_state": start,
        "end_state": end,
    }


def _renumbered(table: Any, rule_index: dict[int, int]) -> tuple[list[dict[str, int]], int, int]:
    """The states numbered breadth-first from the start state, symbols in name order."""
    from lark.parsers.lalr_analysis import Shift

    old_start = table.start_states["start"]
    number = {old_start: 0}
    queue = [old_start]
    for old in queue:
        for symbol in sorted(table.states[old]):
            action, arg = table.states[old][symbol]
            if action is Shift and arg not in number:
                number[arg] = len(number)
                queue.append(arg)
    old_end = table.end_states["start"]
    assert old_end in number and len(number) == len(table.states)
    states: list[dict[str, int]] = [{} for _ in number]
    for old, new in number.items():
        row = table.states[old]
        for symbol in sorted(row):
            action, arg = row[symbol]
            states[new][symbol] = number[arg] if action is Shift else ~rule_index[id(arg)]
    return states, 0, number[old_end]


def render(data: dict[str, Any]) -> str:
    """The file's text: one state or rule per line, so a grammar change reads as a diff."""
    head = {k: v for k, v in data.items() if k not in ("lexer", "rules", "states")}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"{json.dumps(key)}: {json.dumps(value)},")
    lines.append('"lexer": {')
    lexer_items = list(data["lexer"].items())
    for i, (key, value) in enumerate(lexer_items):
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{',' if i < len(lexer_items) - 1 else ''}")
    lines.append("},")
    for key in ("rules", "states"):
        items = data[key]
        lines.append(f"{json.dumps(key)}: [")
        lines.extend(f"  {json.dumps(item)}{',' if i < len(items) - 1 else ''}" for i, item in enumerate(items))
        lines.append("]," if key == "rules" else "]")
    lines.append("}")
    return "\n".join(lines) + "\n"
