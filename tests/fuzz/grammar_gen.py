"""Random programs derived from grammar/netdsl.lark, the one copy of the syntax.

The grammar's rules are read through lark (its helper rules for `*`, `?` and
`|` included), and a derivation picks an expansion at random at each step;
past a depth it takes the expansion that ends soonest, so every program is
finite. Terminals with a fixed text are written as such; names come from a
vocabulary of what a spec may mean (registry layers and activations, the
constant functions, a few local names), so that many programs get past the
parser and exercise the checker.
"""

from __future__ import annotations

import functools
import random

from lark import Lark
from lark.grammar import NonTerminal, Terminal

from netdsl.grammar import grammar_text

NAMES = (
    "x y z h a b c k n i w units filters blk inner outer m lib seq state probs image "
    "dense conv2d lstm gru bidirectional time_distributed spectral_normalization dropout "
    "relu softmax sigmoid tanh batch_norm flatten reshape concatenate add multiply "
    "scale linear attention residual embedding max_pool2d global_average_pooling2d "
    "min max len int float round abs glorot_uniform zeros adam mse accuracy l2 "
    "shape mish sine nosuch"
).split()
INTS = [
    "0",
    "1",
    "2",
    "3",
    "4",
    "8",
    "16",
    "64",
    "100",
    "1000",
    "10000",
    "60000",
    "99999999",
    "12345678901234567890",
    "2147483648",
]
FLOATS = ["0.5", "1.0", "1e-3", "3.0", ".5", "1e309", "2.5e10", "0.0"]
STRINGS = ['"same"', '"valid"', '"relu"', '"lib.net"', '""', '"float32"', '"a\\"b"', '"../x.net"']
COMPARES = ["==", "!=", "<", "<=", ">", ">="]
DECLARED = {"DICT_LBRACE": "{", "DICT_RBRACE": "}", "_NL": "\n"}


@functools.lru_cache(maxsize=1)
def _grammar() -> tuple[dict, dict]:
    parser = Lark(grammar_text(), parser="lalr", lexer="basic")
    rules: dict[str, list[list]] = {}
    for rule in parser.rules:
        rules.setdefault(rule.origin.name, []).append(list(rule.expansion))
    literals = {t.name: t.pattern.value for t in parser.terminals if t.pattern.type == "str"}
    return rules, literals


@functools.lru_cache(maxsize=1)
def _heights() -> dict[str, int]:
    """The fewest derivation levels each rule needs to end (a fixed point)."""
    rules, _ = _grammar()
    height = {name: 10**9 for name in rules}
    changed = True
    while changed:
        changed = False
        for name, expansions in rules.items():
            best = min(
                1 + max([height[s.name] for s in exp if isinstance(s, NonTerminal)] or [0]) for exp in expansions
            )
            if best < height[name]:
                height[name], changed = best, True
    return height


class GrammarGenerator:
    """`generate()`: one random program; the same seed gives the same programs."""

    def __init__(self, rng: random.Random, max_depth: int = 14):
        self.rng = rng
        self.max_depth = max_depth
        self.rules, self.literals = _grammar()
        self.heights = _heights()

    def generate(self) -> str:
        out: list[str] = []
        self._derive("start", 0, out)
        return _join(out)

    def _derive(self, name: str, depth: int, out: list[str]) -> None:
        expansions = self.rules[name]
        if depth >= self.max_depth:
            expansion = min(expansions, key=self._expansion_height)
        else:
            expansion = self.rng.choice(expansions)
        for symbol in expansion:
            if isinstance(symbol, Terminal):
                out.append(self._terminal(symbol.name))
            else:
                self._derive(symbol.name, depth + 1, out)

    def _expansion_height(self, expansion: list) -> int:
        return max([self.heights[s.name] for s in expansion if isinstance(s, NonTerminal)] or [0])

    def _terminal(self, name: str) -> str:
        rng = self.rng
        if name in DECLARED:
            return DECLARED[name]
        if name in self.literals:
            return self.literals[name]
        if name == "NAME":
            return rng.choice(NAMES)
        if name == "INT":
            return rng.choice(INTS)
        if name == "FLOAT":
            return rng.choice(FLOATS)
        if name == "STRING":
            return rng.choice(STRINGS)
        if name == "COMPARE":
            return rng.choice(COMPARES)
        raise KeyError(f"no generator for terminal {name}")


def _join(tokens: list[str]) -> str:
    text = []
    for tok in tokens:
        if tok == "\n" or (text and text[-1] == "\n"):
            text.append(tok)
        else:
            text.append(" " + tok if text else tok)
    return "".join(text)
