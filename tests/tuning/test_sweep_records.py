"""A sweep folder's records are data someone else may have written (a received folder, a shared study):
what the sweep fuzz target found, kept with the exact line `netdsl sweep --show` prints (issue 27)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from netdsl.cli import main
from tests.fuzz.targets import SWEEP_RECORD, base_study

pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")


def plant(folder: Path, record: dict, *edits: tuple[str, object]) -> Path:
    sweep = folder / "mlp-sweep-1"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps(record))
    (sweep / "study.db").write_bytes(base_study())
    with sqlite3.connect(sweep / "study.db") as db:
        for statement, value in edits:
            db.execute(statement, (value,))
    return sweep


def edited(**changes: object) -> dict:
    record = json.loads(json.dumps(SWEEP_RECORD))
    for key, value in changes.items():
        if value is None:
            record.pop(key)
        else:
            record[key] = value
    return record


@pytest.mark.parametrize(
    "record, edits, message",
    [
        (edited(objective=None), (), "cannot read sweep.json: it names no objective metric"),
        (edited(objective=[1]), (), "cannot read sweep.json: 'objective' holds list, not dict"),
        (edited(trials="5"), (), "cannot read sweep.json: 'trials' holds str, not int"),
        (
            edited(space={"width": {}}),
            (),
            "cannot read sweep.json: 'space' holds a parameter that is not described by a string",
        ),
        (
            edited(objective={"metric": "loss", "direction": "sideways"}),
            (),
            "cannot read sweep.json: 'objective.direction' is neither minimize nor maximize",
        ),
        (
            edited(),
            [("UPDATE trials SET state = ? WHERE rowid = 1", "x")],
            "cannot read the study: LookupError: 'x' is not among the defined enum values. Enum name: trialstate. "
            "Possible values: RUNNING, COMPLETE, PRUNED, ..., WAITING",
        ),
        (
            edited(),
            [("UPDATE trial_params SET distribution_json = ? WHERE rowid = 1", "{")],
            "cannot read the study: JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 "
            "(char 1)",
        ),
        (
            edited(objectives=[{"direction": "minimize", "name": "val_loss", "figure": None}] * 2),
            (),
            "cannot read the study: it optimizes 1 objective, sweep.json names 2",
        ),
        (
            edited(objectives=[{"direction": "up", "name": "val_loss", "figure": None}]),
            (),
            "cannot read sweep.json: 'objectives' holds an entry that is not {direction, name, figure}",
        ),
    ],
)
def test_a_damaged_sweep_folder_is_one_line(tmp_path, capsys, record, edits, message):
    sweep = plant(tmp_path, record, *edits)
    assert main(["sweep", "--show", str(sweep)]) == 1
    assert capsys.readouterr().err == f"{sweep}: error: {message}\n"


def test_values_of_the_wrong_kind_in_a_trial_are_left_out(tmp_path, capsys):
    sweep = plant(tmp_path, edited(), ("UPDATE trial_user_attributes SET value_json = ? WHERE key = 'epochs'", '"two"'))
    assert main(["sweep", "--show", str(sweep)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "mlp-sweep: 5 trials (2 complete, 1 pruned, 1 failed, 1 running); minimize val_loss"
    assert all(row.split()[-1] == "1.5" for row in table[2:] if "running" not in row)  # seconds kept, epochs gone
