"""Journey (b), as a user takes it on the command line: my own CSV (class names as labels, an id column)
-> a trained model (the id left out with --drop) -> evaluate -> predictions on new rows -> an ONNX file
-> the same classes.

Issue 28, item 8(b). Every step runs `netdsl` in its own process and checks what the user sees: the
warning that names the id column, the class names in evaluate's output and in the predictions.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tests.journeys import netdsl

SEGMENTS = ("high", "low", "mid")  # sorted: the order the classes take
SPEC = """\
model customers {
  input x: (4,)
  output segment = x -> dense(16, activation=relu) -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=0.02)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    epochs = 20
  }
}
"""


def segment(features: np.ndarray) -> str:
    score = features[0] + 0.5 * features[1]
    return "low" if score < -0.6 else "mid" if score < 0.6 else "high"


@pytest.fixture(scope="module")
def journey(tmp_path_factory):
    """customers.csv (id, f0..f3, segment: low / mid / high) and new.csv (id and f0..f3 only)."""
    work = tmp_path_factory.mktemp("table_journey")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 4))
    with (work / "customers.csv").open("w") as fh:
        fh.write("id,f0,f1,f2,f3,segment\n")
        fh.writelines(f"{7000 + i},{','.join(f'{v:.4f}' for v in row)},{segment(row)}\n" for i, row in enumerate(x))
    new = np.array(
        [
            [2.0, 1.0, 0.0, 0.0],
            [-2.0, -1.0, 0.3, 0.1],
            [0.0, 0.1, -0.5, 0.2],
            [1.8, 0.8, 0.1, -0.4],
            [-1.5, -1.2, 0.0, 0.0],
        ]
    )
    with (work / "new.csv").open("w") as fh:
        fh.write("id,f3,f2,f1,f0\n")  # the columns in another order: read by the names the run recorded
        fh.writelines(f"{9000 + i},{row[3]},{row[2]},{row[1]},{row[0]}\n" for i, row in enumerate(new))
    (work / "customers.net").write_text(SPEC)
    return work, [segment(row) for row in new]


@pytest.fixture(scope="module")
def trained(journey):
    """`netdsl train` refused without `--drop id` (whether it left a run folder), then the run with it,
    runs/customers-1: trained once for the journey and the label test, each asserting what it reads."""
    work, _ = journey
    wide = netdsl(work, "train", "customers.net", "--data", "customers.csv", "--progress", "none")
    runs_after_the_refusal = (work / "runs").exists()
    trained = netdsl(
        work, "train", "customers.net", "--data", "customers.csv", "--drop", "id", "--seed", "0", "--progress", "none"
    )
    return wide, runs_after_the_refusal, trained


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow  # trains in `netdsl` processes
def test_a_table_with_class_names_and_an_id_to_predictions_and_an_onnx_file(journey, trained):
    work, truth = journey
    wide, runs_after_the_refusal, trained = trained
    # the spec takes 4 values; the file has 5 numeric columns: the id is named, with the fix
    assert (wide.returncode, wide.stderr) == (
        1,
        (
            "customers.csv:1:1: error: input 'x' expects 4 values per row (shape (4,)), found 5 numeric columns; 'id' "
            "holds a different integer on every row, like an identifier: leave it out with --drop id\n"
        ),
    )
    assert not runs_after_the_refusal

    assert trained.returncode == 0, trained.stderr
    assert "warning" not in trained.stderr
    config = json.loads((work / "runs/customers-1/config.json").read_text())
    assert config["classes"] == {"segment": list(SEGMENTS)}
    assert config["columns"] == {"x": ["f0", "f1", "f2", "f3"]} and config["data"]["drop"] == ["id"]

    evaluated = netdsl(work, "evaluate", "runs/customers-1")
    assert evaluated.returncode == 0, evaluated.stderr
    lines = evaluated.stdout.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["loss", "accuracy"]
    assert float(lines[1].split()[1]) >= 0.8
    assert lines[2] == "classes: high, low, mid"

    predicted = netdsl(work, "predict", "runs/customers-1", "--data", "new.csv", "-o", "preds.csv")
    assert predicted.returncode == 0, predicted.stderr
    table = rows(work / "preds.csv")
    assert list(table[0]) == ["source", "class", *SEGMENTS]
    assert [row["source"] for row in table] == ["2", "3", "4", "5", "6"]  # each row's line in new.csv
    assert [row["class"] for row in table] == truth
    assert predicted.stdout.splitlines()[-1] == "wrote preds.csv (5 samples; segment (5, 3))"

    exported = netdsl(work, "export", "runs/customers-1", "--format", "onnx")
    assert exported.returncode == 0, exported.stderr
    onnx = netdsl(work, "predict", "runs/customers-1/customers.onnx", "--data", "new.csv", "-o", "onnx.csv")
    assert onnx.returncode == 0, onnx.stderr
    from_file = rows(work / "onnx.csv")
    assert [(row["source"], row["class"]) for row in from_file] == [(row["source"], row["class"]) for row in table]
    # the file holds the run's best epoch (best.keras): its probabilities are that model's
    best = netdsl(work, "predict", "runs/customers-1/best.keras", "--data", "new.csv", "-o", "best.csv")
    assert best.returncode == 0, best.stderr
    np.testing.assert_allclose(
        [[float(row[s]) for s in SEGMENTS] for row in from_file],
        [[float(row[s]) for s in SEGMENTS] for row in rows(work / "best.csv")],
        atol=1e-5,
    )
    scored = netdsl(work, "evaluate", "runs/customers-1/customers.onnx", "--data", "customers.csv")
    assert scored.returncode == 0, scored.stderr
    assert scored.stdout.splitlines()[-1] == "classes: high, low, mid"


@pytest.mark.slow  # trains in `netdsl` processes
def test_an_id_column_the_model_would_take_is_named_in_a_warning(journey):
    work, _ = journey
    (work / "wide.net").write_text(SPEC.replace("customers", "wide").replace("(4,)", "(5,)"))
    trained = netdsl(work, "train", "wide.net", "--data", "customers.csv", "--epochs", "1", "--progress", "none")
    assert trained.returncode == 0, trained.stderr
    assert trained.stderr.splitlines()[0] == (
        "netdsl train: warning: customers.csv: column 'id' holds a different integer on every row, like an "
        "identifier, and is part of input 'x'; leave it out with --drop id (or name the input's columns with "
        "--features)"
    )
    picked = netdsl(
        work,
        "train",
        "customers.net",
        "--data",
        "customers.csv",
        "--features",
        "f0,f1,f2,f3",
        "--epochs",
        "1",
        "--progress",
        "none",
    )
    assert picked.returncode == 0, picked.stderr
    assert "warning" not in picked.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--features", "f0,f1,f9,f3"],
            1,
            "customers.csv:1:1: error: no column 'f9' (named by --features); columns: id, f0, f1, f2, f3, segment",
        ),
        (
            ["--features", "f0,f1,f2,segment"],
            1,
            "customers.csv:1:1: error: column 'segment' holds the targets of output "
            "'segment'; it cannot be a feature too",
        ),
        (
            ["--drop", "ID"],
            1,
            "customers.csv:1:1: error: no column 'ID' (named by --drop); columns: id, f0, f1, f2, f3, segment",
        ),
        (
            ["--drop", "id", "--features", "f0"],
            2,
            "netdsl train: error: give the input's columns with --features or leave some out with --drop, not both",
        ),
    ],
)
def test_columns_named_wrong_are_one_line_before_anything_trains(journey, args, code, message):
    work, _ = journey
    done = netdsl(work, "train", "customers.net", "--data", "customers.csv", "--progress", "none", "-o", "wrong", *args)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", message + "\n")
    assert not (work / "wrong").exists()


@pytest.mark.slow  # trains in `netdsl` processes
def test_a_label_the_run_never_saw_is_named_at_its_line(journey, trained):
    work, _ = journey
    *_, trained = trained  # the journey's run: its classes are the three segments
    assert trained.returncode == 0, trained.stderr
    run = trained.stdout.splitlines()[-1].removeprefix("run folder: ")
    (work / "other.csv").write_text("id,f0,f1,f2,f3,segment\n1,0.1,0.2,0.3,0.4,low\n2,0.1,0.2,0.3,0.4,huge\n")
    done = netdsl(work, "evaluate", run, "--data", "other.csv")
    assert (done.returncode, done.stderr) == (
        1,
        "other.csv:3:19: error: 'huge' is not one of the classes the model "
        "was trained on (high, low, mid) (column 'segment')\n",
    )
