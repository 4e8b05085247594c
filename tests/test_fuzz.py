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

import json
import os
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


# ------------------------------------------------------------------ the report folder (review 2026-12b N14)

VICTIM = b"the user's own file\n"


def _planted_report_folder(tmp_path, mode: int = 0o777):
    """`tmp_path/fuzz` as another account leaves it in /tmp: open to all, links named like the outputs."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    folder = tmp_path / "fuzz"
    folder.mkdir()
    for name in ("summary.json.part", "summary.json", "seed1_0_bad.txt"):
        os.symlink(victim, folder / name)
    folder.chmod(mode)
    return folder, victim


def test_a_report_folder_others_may_write_to_is_refused(tmp_path, capsys):
    from tests.fuzz.__main__ import main

    folder, victim = _planted_report_folder(tmp_path)
    assert main(["--count", "1", "--report", str(folder)]) == 1
    assert capsys.readouterr().err == (
        f"{folder}: error: other accounts may write into the report folder; give one "
        f"only you can write to (mktemp -d)\n"
    )
    assert victim.read_bytes() == VICTIM


@pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder to another account needs root"
)
def test_a_report_folder_of_another_account_is_refused(tmp_path, capsys):
    from tests.fuzz.__main__ import main

    folder, victim = _planted_report_folder(tmp_path, 0o755)
    os.chown(folder, os.getuid() + 4242, -1, follow_symlinks=False)
    assert main(["--count", "1", "--report", str(folder)]) == 1
    assert capsys.readouterr().err == (
        f"{folder}: error: the report folder belongs to another account (uid "
        f"{os.getuid() + 4242}); give your own (mktemp -d)\n"
    )
    assert victim.read_bytes() == VICTIM


def test_a_link_as_the_report_folder_is_refused(tmp_path, capsys):
    from tests.fuzz.__main__ import main

    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "fuzz")
    assert main(["--count", "1", "--report", str(tmp_path / "fuzz")]) == 1
    assert capsys.readouterr().err == (
        f"{tmp_path / 'fuzz'}: error: the report folder is a symbolic link; give a folder of your own (mktemp -d)\n"
    )
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_the_summary_and_findings_replace_links_in_the_users_own_folder(tmp_path, capsys):
    from tests.fuzz.__main__ import main
    from tests.fuzz.runner import Finding, Report, _finding

    folder, victim = _planted_report_folder(tmp_path, 0o755)  # the user's own: links in it are replaced
    assert main(["--count", "2", "--seed", "1", "--report", str(folder)]) == 0
    assert json.loads((folder / "summary.json").read_text())["inputs"] == 2
    _finding(Report(1), Finding("bad", 0, "mutation", 3, 0.1, "what went wrong"), "abc", folder)
    assert (folder / "seed1_0_bad.txt").read_text() == "mutation\nwhat went wrong\n"
    assert victim.read_bytes() == VICTIM
    assert not any(os.path.islink(folder / name) for name in ("summary.json", "seed1_0_bad.txt"))
    capsys.readouterr()
