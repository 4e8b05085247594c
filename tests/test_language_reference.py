"""Every example of the language reference parses and checks clean."""

from __future__ import annotations

import pytest

import netdsl
from tests.support.reference_examples import examples, reference_path, write_example

CODE = [(i, code) for i, lang, code in examples() if lang != "text"]


def test_the_reference_has_examples():
    assert len(CODE) >= 7


def test_docs_copy_of_the_reference_is_current():
    from tests.support.reference_examples import CANDIDATES

    shared, copy = CANDIDATES
    if shared.is_file():
        assert copy.read_text() == shared.read_text(), "refresh docs/reference/LANGUAGE.md from ../shared"


@pytest.mark.parametrize("code", [c for _, c in CODE], ids=[i for i, _ in CODE])
def test_reference_example_checks_clean(code, tmp_path):
    spec = write_example(tmp_path, code)
    assert netdsl.check(spec) == []


def test_reference_error_example_reads_as_documented(tmp_path):
    spec = tmp_path / "bad.net"
    spec.write_text("model m {\n  input image: (28, 28, 1)\n\n  h = image -> dens(128)\n  output h\n}\n")
    (d,) = netdsl.check(spec)
    assert d.text == "unknown layer 'dens'; did you mean 'dense'?"
    assert (d.line, d.col, d.end_col - d.col) == (4, 16, 4)


def test_reference_models_are_listed(tmp_path):
    for _, code in CODE:
        program = netdsl.parse(code, filename=str(write_example(tmp_path, code)))
        assert program.model_names == [line.split()[1] for line in code.splitlines() if line.startswith("model ")]
    assert reference_path().name == "LANGUAGE.md"
