"""Mutated specs never crash the front end: a diagnostic or a clean check, never a traceback.

Seeded, so a failure reproduces: the mutations insert tokens of the
language, delete runs of characters and duplicate fragments of the example
specs and formatter fixtures.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import netdsl

ROOT = Path(__file__).resolve().parents[1]
CORPUS = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("specs/*.net")) + sorted(ROOT.glob("tests/fmt/*.net"))]
TOKENS = ["->", "(", ")", "{", "}", "[", "]", ",", "=", ":", "*", "+", "-", "x", "dense", "if", "else", "model",
          "block", "input", "output", "shared", "let", "1", "0", "-1", "none", "true", '"s"', "\n", ";", ".",
          "shape", "@", "**", "layer", "weight", "train", "x.shape[-1]", "1e309", "relu", "//", "%"]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.4:
            text = text[:pos] + rng.choice(TOKENS) + text[pos:]
        elif roll < 0.8:
            text = text[:pos] + text[pos + rng.randint(1, 8):]
        else:
            start = rng.randrange(len(text) + 1)
            text = text[:pos] + text[start:start + 20] + text[pos:]
    return text


@pytest.mark.parametrize("seed", range(4))
def test_mutated_specs_get_diagnostics_not_tracebacks(seed):
    rng = random.Random(seed)
    for _ in range(150):
        text = mutate(rng.choice(CORPUS), rng)
        diagnostics = netdsl.check(text, filename=str(ROOT / "specs" / "fuzz.net"))  # never raises
        for d in diagnostics:
            assert d.line >= 1 and d.col >= 1 and d.message
