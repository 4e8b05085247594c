"""Bad data is one line naming what is wrong, exit 1, and no run folder when it is found before
the first step (issue 22: nothing is created until the data is checked); data TensorFlow refuses
mid-run leaves a run folder that says `failed`.

Each tests/fixtures/data_errors/NAME.expected holds the command (`$ netdsl train ...`,
run inside tests/fixtures/data_errors with `-o RUNS --progress none` added), the exit
code and the exact stderr. Regenerate with tests/support/regen_data_error_fixtures.py
and review the diff by hand.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from netdsl.cli import main

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "data_errors"
FIXTURES = sorted(HERE.glob("*.expected"))


@pytest.mark.parametrize("expected", FIXTURES, ids=lambda p: p.stem)
def test_bad_data_prints_its_exact_error(expected, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(HERE)
    command, *rest = expected.read_text(encoding="utf-8").splitlines(keepends=True)
    args = shlex.split(command[2:])[1:]
    runs = str(tmp_path / "runs")
    code = main([*args, "-o", runs, "--progress", "none"])
    captured = capsys.readouterr()
    assert f"exit {code}\n" + captured.err.replace(runs, "RUNS") == "".join(rest)
    assert code in (1, 2) and "Traceback" not in captured.err
    assert len([line for line in captured.err.splitlines() if "error:" in line]) == 1
    folders = list(Path(runs).glob("*")) if Path(runs).exists() else []
    if "run folder:" in captured.err:  # found mid-run: the failed run's folder keeps the reason
        (folder,) = folders
        report = json.loads((folder / "report.json").read_text())
        assert report["status"] == "failed"
        (error,) = [line for line in captured.err.splitlines() if "error:" in line]
        assert report["reason"] == error.removeprefix("netdsl: ")
        assert not (folder / "model.keras").exists()
    else:  # found before the first step (a typo, bad data, a bad flag): no run folder at all
        assert folders == []


def test_every_error_class_the_issue_names_has_a_fixture():
    texts = "".join(p.read_text() for p in FIXTURES)
    assert "no array for input 'image' (or 'x'); keys found:" in texts  # missing key: the input, the keys
    assert "expects shape (N, 4, 4), found (6, 4, 5)" in texts  # shape: input, expected, found
    assert "expects int32 integers, found float64" in texts  # dtype
    assert "csv_not_number.csv:4:5: error: 'abc' is not a number" in texts  # CSV: file, line, column
    assert "the validation split is empty" in texts and "the training data is empty" in texts
    assert "images_corrupt: error: training stopped on data TensorFlow could not use: Invalid PNG" in texts
