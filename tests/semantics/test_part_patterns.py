"""A fine-tuning part's pattern (`freeze`, `init`): `*` is its only wildcard, as the docs say.

fnmatch would also read `?` (one character) and `[...]` (a set): `a?` and `a[0]`
would name layer `a0`. Here they are themselves, so they name nothing in a model
whose names cannot hold them, and `check` says so at the pattern.
"""

from __future__ import annotations

import pytest

import netdsl
from netdsl import pipeline
from netdsl.semantics.fine_tuning import part_layer_names

SPEC = """\
model w {
  input x: (4,)
  a0 = x -> dense(4)
  ab = a0 -> dense(4)
  ba = ab -> dense(4)
  output y = ba -> dense(1)
  train {
    optimizer = adam
    loss = mse
    SETTING
  }
}
"""


def _program(setting: str):
    return netdsl.parse(SPEC.replace("SETTING", setting), filename="w.net")


@pytest.fixture(scope="module")
def graph():
    return pipeline.model_graphs(_program('freeze = ["a*"]'), ["w"], shapes=False)["w"]


@pytest.mark.parametrize(
    "patterns, named",
    [
        (["a*"], ["a0", "ab"]),
        (["*a"], ["ba"]),
        (["*"], ["a0", "ab", "ba", "y"]),
        (["a?"], []),
        (["a[0]"], []),
        (["a[!b]"], []),
        (["[ab]*"], []),
        (["?0"], []),
        (["a.*"], []),  # `.` is itself too, not a regex's any character
    ],
)
def test_only_star_is_a_wildcard(graph, patterns, named):
    assert part_layer_names(graph, patterns) == named


@pytest.mark.parametrize(
    "setting, col",
    [
        ('freeze = ["a[0]"]', 15),
        ('freeze = ["a?"]', 15),
        ('init = {"a[0]": "w.keras"}', 13),
        ('init = {"a?": "w.keras"}', 13),
    ],
)
def test_a_question_mark_or_bracket_names_nothing_and_check_says_so_at_the_pattern(setting, col):
    pattern = setting.split('"')[1]
    found = [(d.line, d.col, d.text) for d in netdsl.check(_program(setting))]
    assert found == [(10, col, f"'{pattern}' names no layer, block instance or nested model of 'w'")]
