"""Fuzzed inputs never crash the front end: a diagnostic or a clean check, never a traceback.

A seeded few hundred inputs of the harness in tests/fuzz/ (programs derived
from the grammar, token-level mutations of every spec and fixture), each
checked in the harness's worker process under its 1 GB memory limit. The
time limits here only catch a hang: CI machines differ, so the bounds on
time (2 s up to 64 KB, 10 s up to the size cap) are measured by the long
hand run, `python -m tests.fuzz --count 100000` (its figures are in the
closing note of issue 9).
"""

from __future__ import annotations

import random

import pytest

import netdsl
from tests.fuzz import Bounds, run
from tests.fuzz.grammar_gen import GrammarGenerator
from tests.fuzz.mutate import Mutator, load_corpus

HANG = Bounds(small_seconds=20.0, large_seconds=60.0, slack=1.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_fuzzed_inputs_get_diagnostics_not_tracebacks(seed):
    report = run(150, seed=seed, bounds=HANG, big=0.0)
    assert report.inputs == 150
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []
    assert report.sources["grammar"] > 30 and report.sources["mutation"] > 30


def test_the_same_seed_makes_the_same_inputs():
    corpus = load_corpus()
    first = [Mutator(random.Random(5), corpus).mutate() for _ in range(3)]
    again = [Mutator(random.Random(5), corpus).mutate() for _ in range(3)]
    assert first == again
    assert GrammarGenerator(random.Random(9)).generate() == GrammarGenerator(random.Random(9)).generate()


def test_grammar_programs_mostly_parse():
    """The generator follows the grammar: most of its programs get past the parser."""
    rng = random.Random(2)
    parsed = 0
    for _ in range(40):
        try:
            netdsl.parse(GrammarGenerator(rng).generate(), filename="g.net")
            parsed += 1
        except netdsl.SpecError:
            pass
    assert parsed >= 25
