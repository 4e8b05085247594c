"""Token-level mutations of every spec and fixture of the repository.

A file is cut into tokens (names, numbers, strings, comments, operators,
blanks, line ends) and changed a few times at random: a token deleted,
inserted, replaced, duplicated or swapped; a number made extreme; a span of
another file spliced in; a line repeated (now and then thousands of times,
to reach the size classes of the bounds); brackets nested. The result is
usually almost a spec, which is what reaches the checker's corners.
"""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path

from netdsl.syntax.keywords import KEYWORDS as LANGUAGE_KEYWORDS
from netdsl.syntax.keywords import OPERATOR_KEYWORDS

ROOT = Path(__file__).resolve().parents[2]
CORPUS_GLOBS = [
    "specs/*.net",
    "specs/lib/*.net",
    "tests/fixtures/fmt/*.net",
    "tests/fixtures/errors/*.net",
    "tests/fixtures/compat/*.net",
]

TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\[^\n])*"?|#[^\n]*|\d+\.\d*(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?|'
    r"[A-Za-z_][A-Za-z0-9_]*|->|\*\*|//|==|!=|<=|>=|\n|[ \t]+|.",
    re.S,
)
OPERATORS = [
    "->",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    "=",
    ":",
    "*",
    "+",
    "-",
    "/",
    "//",
    "%",
    "**",
    "@",
    ".",
    ";",
    "\n",
    "==",
    "<",
    *OPERATOR_KEYWORDS,
]
KEYWORDS = [k for k in LANGUAGE_KEYWORDS if k not in OPERATOR_KEYWORDS]
EXTREME_NUMBERS = [
    "0",
    "-1",
    "1",
    "10000",
    "10001",
    "50001",
    "99999999",
    "1e308",
    "1e309",
    "2147483648",
    "9" * 39,
    "9" * 41,
    "0.0",
    "-0.5",
]


def load_corpus(root: Path = ROOT) -> list[tuple[str, str]]:
    """(relative path, text) of every spec and fixture that is UTF-8 text."""
    found = []
    for pattern in CORPUS_GLOBS:
        for path in sorted(root.glob(pattern)):
            try:
                found.append((str(path.relative_to(root)), path.read_text(encoding="utf-8")))
            except (UnicodeDecodeError, OSError):
                continue
    return found


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


@functools.lru_cache(maxsize=4)
def _tokenized(corpus: tuple[tuple[str, str], ...]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The corpus cut into tokens, and its vocabulary: made once, not once per input (the runner
    makes a Mutator per input, and cutting the whole corpus took 30 ms each time)."""
    files = [(name, tokens(text)) for name, text in corpus if text.strip()]
    return files, sorted({t for _, toks in files for t in toks if t.strip()})


class Mutator:
    """`mutate()`: a corpus file changed 1 to 4 times; the same seed gives the same inputs."""

    def __init__(self, rng: random.Random, corpus: list[tuple[str, str]], big: float = 0.01):
        self.rng = rng
        self.corpus, self.vocabulary = _tokenized(tuple(corpus))
        self.big = big  # the share of inputs grown towards the size cap

    def mutate(self) -> tuple[str, str]:
        """(the corpus file it started from, the mutated text)."""
        name, toks = self.rng.choice(self.corpus)
        toks = list(toks)
        for _ in range(self.rng.randint(1, 4)):
            toks = self.rng.choice(self._MUTATIONS)(self, toks)
        if self.rng.random() < self.big:
            toks = self._grow(toks)
        return name, "".join(toks)

    # ------------------------------------------------------------ mutations
    def _where(self, toks: list[str]) -> int:
        return self.rng.randrange(len(toks) + 1)

    def _delete(self, toks: list[str]) -> list[str]:
        if not toks:
            return toks
        i = self.rng.randrange(len(toks))
        return toks[:i] + toks[i + self.rng.randint(1, 3) :]

    def _insert(self, toks: list[str]) -> list[str]:
        i = self._where(toks)
        return toks[:i] + [" ", self._any_token(), " "] + toks[i:]

    def _replace(self, toks: list[str]) -> list[str]:
        solid = [i for i, t in enumerate(toks) if t.strip()]
        if not solid:
            return self._insert(toks)
        i = self.rng.choice(solid)
        return toks[:i] + [self._any_token()] + toks[i + 1 :]

    def _duplicate(self, toks: list[str]) -> list[str]:
        if not toks:
            return toks
        i = self.rng.randrange(len(toks))
        span = toks[i : i + self.rng.randint(1, 12)]
        j = self._where(toks)
        return toks[:j] + span + toks[j:]

    def _swap(self, toks: list[str]) -> list[str]:
        if len(toks) < 2:
            return toks
        i, j = self.rng.randrange(len(toks)), self.rng.randrange(len(toks))
        toks = list(toks)
        toks[i], toks[j] = toks[j], toks[i]
        return toks

    def _extreme_number(self, toks: list[str]) -> list[str]:
        numbers = [i for i, t in enumerate(toks) if t[:1].isdigit()]
        if not numbers:
            return self._insert(toks)
        i = self.rng.choice(numbers)
        return toks[:i] + [self.rng.choice(EXTREME_NUMBERS)] + toks[i + 1 :]

    def _splice(self, toks: list[str]) -> list[str]:
        _, other = self.rng.choice(self.corpus)
        if not other:
            return toks
        start = self.rng.randrange(len(other))
        span = other[start : start + self.rng.randint(1, 60)]
        i = self._where(toks)
        return toks[:i] + span + toks[i:]

    def _repeat_line(self, toks: list[str]) -> list[str]:
        lines = _lines(toks)
        if not lines:
            return toks
        i = self.rng.randrange(len(lines))
        times = self.rng.choice([2, 3, 10, 50, 200])
        return [t for line in lines[:i] for t in line] + lines[i] * times + [t for line in lines[i:] for t in line]

    def _nest(self, toks: list[str]) -> list[str]:
        solid = [i for i, t in enumerate(toks) if t.strip()]
        if not solid:
            return toks
        i = self.rng.choice(solid)
        depth = self.rng.choice([1, 2, 5, 30, 70])
        opener, closer = self.rng.choice([("(", ")"), ("[", "]")])
        return toks[:i] + [opener] * depth + [toks[i]] + [closer] * depth + toks[i + 1 :]

    def _odd_character(self, toks: list[str]) -> list[str]:
        i = self._where(toks)
        return (
            toks[:i]
            + [self.rng.choice(["\t", "\r", "\x00", "\ufeff", "é", "\u200b", "\\", "'", "$", "`", "\x7f", "🙂"])]
            + toks[i:]
        )

    _MUTATIONS = [
        _delete,
        _delete,
        _insert,
        _insert,
        _replace,
        _replace,
        _duplicate,
        _swap,
        _extreme_number,
        _splice,
        _repeat_line,
        _nest,
        _odd_character,
    ]

    def _any_token(self) -> str:
        roll = self.rng.random()
        if roll < 0.3:
            return self.rng.choice(OPERATORS)
        if roll < 0.45:
            return self.rng.choice(KEYWORDS)
        if roll < 0.55:
            return self.rng.choice(EXTREME_NUMBERS)
        return self.rng.choice(self.vocabulary)

    def _grow(self, toks: list[str]) -> list[str]:
        """Repeat lines until the text is between 64 KB and the 2 MiB cap."""
        lines = _lines(toks) or [["\n"]]
        target = self.rng.choice([64 * 1024, 256 * 1024, 2 * 1024 * 1024 - 4096])
        size = sum(len(t) for t in toks)
        line = self.rng.choice(lines)
        width = max(sum(len(t) for t in line), 1)
        i = self.rng.randrange(len(lines))
        grown = line * max(1, (target - size) // width)
        return [t for ln in lines[:i] for t in ln] + grown + [t for ln in lines[i:] for t in ln]


def _lines(toks: list[str]) -> list[list[str]]:
    lines, current = [], []
    for t in toks:
        current.append(t)
        if t == "\n":
            lines.append(current)
            current = []
    if current:
        lines.append(current)
    return lines
