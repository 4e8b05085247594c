"""`netdsl sweep` / `netdsl.sweep`: Optuna searches a spec's constants; one ordinary run folder per
trial, summary.csv, best.json, plots, `--show`, the same results for the same seed, pruning,
two workers sharing one study, and the mistakes said before anything trains.

Tiny models on generated data, 1-2 epochs, 2-4 trials: the real engine and the real Optuna.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from tests.support.run_folders import tiny_spec

optuna = pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")

ROOT = Path(__file__).resolve().parents[2]

SPEC = tiny_spec(epochs=2, trials=3)


def write_data(folder: Path) -> Path:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(96, 6)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64")
    np.savez(folder / "data.npz", x=x, y=y)
    return folder / "data.npz"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "tiny.net").write_text(SPEC)
    write_data(folder)
    return folder


@pytest.fixture(scope="module")
def first(project):
    return netdsl.sweep(project / "tiny.net", data=project / "data.npz", seed=5, out=project / "sweeps")


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_one_run_folder_per_trial_with_its_parameters(first):
    assert first.dir.name == "tiny-sweep-1"
    assert [t.number for t in first.trials] == [0, 1, 2]
    assert sorted(p.name for p in (first.dir / "trials").iterdir()) == ["0", "1", "2"]
    for trial in first.trials:
        run = Path(trial.run_dir)
        assert run == (first.dir / "trials" / str(trial.number)).resolve()
        config = json.loads((run / "config.json").read_text())
        report = json.loads((run / "report.json").read_text())
        assert config["defines"] == trial.params
        assert config["sweep"]["trial"] == trial.number and config["sweep"]["params"] == trial.params
        assert config["settings"]["seed"] == 5 and report["status"] == "finished"
        assert (run / "model.keras").is_file() and (run / "curves.png").is_file()
        # the objective is the best epoch of the run's own history
        history = read_csv(run / "history.csv")
        assert trial.value == pytest.approx(min(float(row["val_loss"]) for row in history))
        assert trial.state == "complete" and trial.epochs == 2
        assert trial.params["width"] in (4, 8, 16) and 1e-3 <= trial.params["lr"] <= 1e-1


def test_summary_best_and_plots(first):
    rows = read_csv(first.dir / "summary.csv")
    assert list(rows[0]) == ["trial", "width", "lr", "val_loss", "state", "epochs", "seconds", "resumed", "run"]
    assert [r["resumed"] for r in rows] == ["0", "0", "0"]
    assert [int(r["trial"]) for r in rows] == [0, 1, 2]
    assert [float(r["val_loss"]) for r in rows] == pytest.approx([t.value for t in first.trials], rel=1e-5)
    best = json.loads((first.dir / "best.json").read_text())
    winner = min(first.trials, key=lambda t: t.value)
    assert best["trial"] == winner.number == first.best.number
    assert best["params"] == winner.params and best["objective"]["value"] == winner.value
    assert best["run"] == winner.run_dir
    for name in ("history", "params"):
        assert (first.dir / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert b"<svg" in (first.dir / f"{name}.svg").read_bytes()
    sweep = json.loads((first.dir / "sweep.json").read_text())
    assert sweep["status"] == "finished" and sweep["storage"] == "study.db" and sweep["trials"] == 3
    assert sweep["space"] == {"width": "choice(4, 8, 16)", "lr": "log_uniform(0.001, 0.1)"}


def test_show_prints_the_trials_best_first(first, capsys):
    assert main(["sweep", "--show", str(first.dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "tiny-sweep: 3 trials (3 complete); minimize val_loss"
    assert lines[1].split() == ["trial", "width", "lr", "val_loss", "state", "epochs", "seconds"]
    ordered = sorted(first.trials, key=lambda t: t.value)
    assert [int(line.split()[0]) for line in lines[2:]] == [t.number for t in ordered]


def test_show_json_of_one_objective_and_of_a_folder_from_before_objectives(first, tmp_path, capsys):
    """One objective: the front is the best trial; a sweep.json written before `objectives` is read the same."""
    assert main(["sweep", "--show", str(first.dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["objectives"] == [{"name": "val_loss", "direction": "minimize", "figure": None}]
    assert shown["best"] == first.best.number and shown["pareto"] == [first.best.number]
    assert [t["values"] for t in shown["trials"]] == [{"val_loss": t.value} for t in first.trials]
    older = tmp_path / "older"
    shutil.copytree(first.dir, older)
    record = json.loads((older / "sweep.json").read_text())
    del record["objectives"]
    (older / "sweep.json").write_text(json.dumps(record))
    assert main(["sweep", "--show", str(older), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in again.items() if k not in ("dir", "storage")} == {
        k: v for k, v in shown.items() if k not in ("dir", "storage")
    }


def test_the_same_seed_gives_the_same_parameters_and_results(first, project):
    again = netdsl.sweep(project / "tiny.net", data=project / "data.npz", seed=5, out=project / "again")
    assert [t.params for t in again.trials] == [t.params for t in first.trials]
    assert [t.value for t in again.trials] == pytest.approx([t.value for t in first.trials], rel=1e-6)


PRUNED = SPEC.replace(
    """sweep tiny {
  width = choice(4, 8, 16)
  lr = log_uniform(1e-3, 1e-1)
  objective = minimize(val_loss)
  trials = 3
}""",
    """sweep tiny {
  lr = choice(0.05, 1e-9)
  objective = minimize(val_loss)
  pruner = median(warmup=0, startup=1)
  sampler = grid
  trials = 2
}""",
).replace("epochs = 2", "epochs = 3")


def test_a_pruned_trial_stops_and_keeps_its_run_folder(tmp_path):
    (tmp_path / "p.net").write_text(PRUNED)
    # The grid's order comes from the seed: seed 1 tries the good rate first.
    result = netdsl.sweep(tmp_path / "p.net", data=write_data(tmp_path), seed=1, out=tmp_path / "s")
    first, second = result.trials
    assert (first.params, first.state, first.epochs) == ({"lr": 0.05}, "complete", 3)
    # a rate of 1e-9 learns nothing: worse than the median after its first epoch, so pruned there
    assert (second.params, second.state, second.epochs) == ({"lr": 1e-9}, "pruned", 1)
    report = json.loads((Path(second.run_dir) / "report.json").read_text())
    assert report["status"] == "pruned" and report["epochs_run"] == 1
    assert (Path(second.run_dir) / "checkpoint.npz").is_file()
    assert read_csv(result.dir / "summary.csv")[1]["state"] == "pruned"
    assert json.loads((result.dir / "best.json").read_text())["trial"] == 0


def test_two_workers_share_one_study(project):
    """`--workers 2`: two processes, one study (SQLite in the sweep folder), 6 trials in all (the issue's fast case)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "dsl"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "netdsl.cli",
            "sweep",
            "tiny.net",
            "--data",
            "data.npz",
            "--trials",
            "6",
            "--workers",
            "2",
            "--epochs",
            "1",
            "--seed",
            "2",
            "-o",
            "two",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    folder = project / "two" / "tiny-sweep-1"
    assert sorted(int(p.name) for p in (folder / "trials").iterdir()) == [0, 1, 2, 3, 4, 5]
    rows = read_csv(folder / "summary.csv")
    assert [(int(r["trial"]), r["state"], r["epochs"]) for r in rows] == [(k, "complete", "1") for k in range(6)]
    study = optuna.load_study(study_name="tiny-sweep", storage=f"sqlite:///{folder / 'study.db'}")
    workers = {t.user_attrs["worker"]["pid"] for t in study.trials}
    assert len(study.trials) == 6 and len(workers) == 2  # each worker trained trials of the one study
    assert "sweep folder: two/tiny-sweep-1" in done.stdout
    assert sum(line.startswith("trial ") and "->" in line for line in done.stdout.splitlines()) == 6


def sweep_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(["sweep", *argv])
    return code, capsys.readouterr().err


def test_mistakes_are_said_before_anything_trains(project, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(project)
    plain = tmp_path / "plain.net"
    plain.write_text(SPEC.split("sweep tiny")[0])
    assert sweep_cli(capsys, str(plain), "--data", "data.npz") == (
        2,
        "netdsl sweep: error: the spec has no sweep section for model 'tiny'; add one: sweep tiny { width = "
        "choice(32, 64)  objective = minimize(val_loss) }\n",
    )
    assert sweep_cli(capsys, "tiny.net", "--data", "data.npz", "-D", "width=4") == (
        2,
        "netdsl sweep: error: -D width fixes a constant this sweep searches; leave it out of the sweep or of -D\n",
    )
    assert sweep_cli(capsys, "tiny.net", "--train", "data.npz", "-o", str(tmp_path)) == (
        2,
        "netdsl sweep: error: the objective val_loss needs validation data, and this sweep has none; give --val SRC "
        "(with --train), a --split with a validation part, or minimize a training metric such as loss\n",
    )
    assert sweep_cli(capsys, "tiny.net", "--data", "data.npz", "--workers", "0") == (
        2,
        "netdsl sweep: error: --workers takes a whole number from 1 to 64; received 0\n",
    )
    code, err = sweep_cli(
        capsys,
        "tiny.net",
        "--data",
        "data.npz",
        "-o",
        str(tmp_path),
        "--storage",
        "postgresql://someone:secret@127.0.0.1:9/none",
    )
    assert code == 2 and err.startswith(
        "netdsl sweep: error: cannot open the study's storage postgresql://someone:***@127.0.0.1:9/none: "
    )
    assert "secret" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.net", "tiny-sweep-1"]
    assert not (tmp_path / "tiny-sweep-1" / "trials").exists()


def test_an_objective_of_one_value_per_class_is_said_before_anything_trains(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_data(tmp_path)
    Path("f1.net").write_text(
        SPEC.replace(
            "loss = sparse_categorical_crossentropy(from_logits=true)",
            "loss = categorical_crossentropy(from_logits=true)",
        )
        .replace("metrics = [sparse_categorical_accuracy]", "metrics = [f1_score]")
        .replace("objective = minimize(val_loss)", "objective = maximize(val_f1_score)")
    )
    assert sweep_cli(capsys, "f1.net", "--data", "data.npz") == (
        2,
        "netdsl sweep: error: the objective val_f1_score gives one value per class; an objective is one number; "
        'give the metric average="macro" (or "micro", "weighted")\n',
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npz", "f1.net"]
    # r2_score(class_aggregation=none): one R2 per output column
    Path("r2.net").write_text(
        SPEC.replace("metrics = [sparse_categorical_accuracy]", "metrics = [r2_score(class_aggregation=none)]").replace(
            "objective = minimize(val_loss)", "objective = maximize(val_r2_score)"
        )
    )
    assert sweep_cli(capsys, "r2.net", "--data", "data.npz") == (
        2,
        "netdsl sweep: error: the objective val_r2_score gives one value per class; an objective is one number; "
        'give the metric class_aggregation="uniform_average" (or "variance_weighted_average")\n',
    )


# ------------------------------------------------------------------ bounds, secrets, escapes (review 12b)


@pytest.mark.parametrize(
    "searched, at, said",
    [
        (
            "width = int_range(1, 1000000000000)",
            "21:11",
            "the grid has 1,000,000,000,000 points, more than a sweep's 10,000 trials: 'width' alone takes "
            "1,000,000,000,000 values",
        ),
        (
            "width = int_range(1, 1000)\n  lr = choice(0.001, 0.01)\n  a = int_range(1, 1000)\n  b = int_range(0, 999)\n"
            "  c = int_range(2, 2000, 2)",
            "23:7",
            "the grid has 2,000,000,000,000 points, more than a sweep's 10,000 trials: 'a' takes 1,000 values, "
            "times 2,000 from the parameters before it",
        ),
    ],
)
def test_a_grid_too_large_is_refused_before_any_folder(project, tmp_path, capsys, monkeypatch, searched, at, said):
    """Counted at `check`, never listed: one diagnostic at the parameter that takes the grid past the bound."""
    monkeypatch.chdir(tmp_path)
    Path("grid.net").write_text(
        SPEC.replace("let lr = 0.01", "let lr = 0.01\nlet a = 1\nlet b = 1\nlet c = 1")
        .replace("  width = choice(4, 8, 16)\n  lr = log_uniform(1e-3, 1e-1)", f"  {searched}")
        .replace("trials = 3", "sampler = grid")
    )
    first = (
        f"grid.net:{at}: error: {said}; narrow the ranges, give int_range a STEP, or use sampler = tpe with trials = N"
    )
    assert main(["check", "grid.net"]) == 1
    checked = capsys.readouterr().err.splitlines()
    assert checked[0] == first and len(checked) == 3  # the line, the source line, its caret
    code, err = sweep_cli(capsys, "grid.net", "--data", str(project / "data.npz"), "-o", "out")
    assert code == 1 and err.splitlines() == checked
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.net"]  # no sweep folder


SECRET_URLS = [  # (the URL, its secret, how it is shown)
    ("postgresql://sweeper:s3cr/et@127.0.0.1:1/sweeps", "s3cr/et", "postgresql://sweeper:***@127.0.0.1:1/sweeps"),
    (
        "postgresql://sweeper:p%40ss%2Fw0rd@127.0.0.1:1/sweeps",
        "p@ss/w0rd",
        "postgresql://sweeper:***@127.0.0.1:1/sweeps",
    ),
    (
        "postgresql://sweeper@127.0.0.1:1/sweeps?password=s3cr/et&connect_timeout=5",
        "s3cr/et",
        "postgresql://sweeper@127.0.0.1:1/sweeps?connect_timeout=5&password=***",
    ),
    (
        "postgresql://sweeper@127.0.0.1:1/sweeps?sslpassword=k3y-s3cret",
        "k3y-s3cret",
        "postgresql://sweeper@127.0.0.1:1/sweeps?sslpassword=***",
    ),
]


@pytest.mark.parametrize("url, secret, shown", SECRET_URLS)
@pytest.mark.parametrize("given", ["flag", "environment"])
def test_a_storage_password_is_never_written_nor_printed(
    project, tmp_path, capsys, monkeypatch, url, secret, shown, given
):
    """Port 1 on 127.0.0.1: the connection fails at once, after sweep.json was written."""
    pytest.importorskip("psycopg", reason="psycopg (netdsl[sweep]) is not installed")
    monkeypatch.chdir(project)
    argv = ["tiny.net", "--data", "data.npz", "-o", str(tmp_path)]
    if given == "flag":
        argv += ["--storage", url]
    else:
        monkeypatch.setenv("NETDSL_SWEEP_STORAGE", url)
    code = main(["sweep", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith(f"netdsl sweep: error: cannot open the study's storage {shown}: ")
    assert len(err.splitlines()) == 1 and out == ""
    record = tmp_path / "tiny-sweep-1" / "sweep.json"
    saved = json.loads(record.read_text())
    assert saved["storage"] == shown and "storage_url" not in saved
    for text in (out, err, record.read_text()):
        assert secret not in text and secret.replace("/", "%2F") not in text
    assert record.stat().st_mode & 0o777 == 0o600


def test_a_password_with_an_at_sign_written_plain_is_refused_masked(project, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, err = sweep_cli(
        capsys,
        "tiny.net",
        "--data",
        "data.npz",
        "-o",
        str(tmp_path),
        "--storage",
        "postgresql://sweeper:s3cr@t99@127.0.0.1:1/sweeps",
    )
    assert (code, err) == (
        2,
        "netdsl sweep: error: cannot open the study's storage "
        "postgresql://sweeper:***@***@127.0.0.1:1/sweeps: its host holds '@'; write an '@' of "
        "the user name or password as %40\n",
    )
    assert "s3cr" not in (tmp_path / "tiny-sweep-1" / "sweep.json").read_text()


ESCAPED = (
    SPEC.replace("let lr = 0.01", 'let lr = 0.01\nlet act = "relu"')
    .replace("dense(width, activation=relu)", "dense(width, activation=act)")
    .replace(
        "  width = choice(4, 8, 16)\n  lr = log_uniform(1e-3, 1e-1)",
        '  act = choice("relu", "x$\\\\alpha$\x1b]0;PWNED\x07\x1b[31mred")\n  sampler = grid',
    )
    .replace("trials = 3", "trials = 2")
    .replace("epochs = 2", "epochs = 1")
)


def test_outside_text_is_escaped_in_the_output_and_drawn_as_it_is(tmp_path, capsys, monkeypatch):
    """A choice value and a study name with ESC, BEL and `$...$`: the trial lines, the table and
    `--show` print escapes; the plots draw the text as it is (no mathtext), and the sweep finishes."""
    monkeypatch.chdir(tmp_path)
    write_data(tmp_path)
    Path("esc.net").write_text(ESCAPED)
    study = "m$\\notacommand$\x1b]0;PWNED\x07\x1b[2J"
    assert main(["sweep", "esc.net", "--data", "data.npz", "--seed", "0", "--study", study]) == 0
    out, err = capsys.readouterr()
    folder = tmp_path / "sweeps" / "tiny-sweep-1"
    assert main(["sweep", "--show", str(folder)]) == 0
    shown = capsys.readouterr().out
    for text in (out, err, shown):  # matplotlib's warnings included: the plots draw the escapes too
        assert "\x1b" not in text and "\x07" not in text
    value = '"x$\\\\alpha$\\x1b]0;PWNED\\x07\\x1b[31mred"'  # describe_value: the spec's text, escaped
    failed = next(line for line in out.splitlines() if line.startswith("trial ") and "(failed)" in line)
    assert failed.startswith("trial ") and "act=x$\\alpha$\\x1b]0;PWNED\\x07\\x1b[31mred -> " in failed
    assert "unknown activation" in failed
    title = shown.splitlines()[0]  # the counts in the order of the trials' numbers
    assert title in (
        f"m$\\notacommand$\\x1b]0;PWNED\\x07\\x1b[2J: 2 trials ({counts}); minimize val_loss"
        for counts in ("1 complete, 1 failed", "1 failed, 1 complete")
    )
    rows = {
        next(w for w in line.split() if w in ("complete", "failed")): line.split()[1]  # state: act
        for line in shown.splitlines()[2:]
    }
    assert rows == {"complete": '"relu"', "failed": value}
    assert out.splitlines()[-1] == "sweep folder: sweeps/tiny-sweep-1"
    record = json.loads((folder / "sweep.json").read_text())
    assert record["status"] == "finished" and record["study"] == study
    assert sorted(r["state"] for r in read_csv(folder / "summary.csv")) == ["complete", "failed"]
    assert json.loads((folder / "best.json").read_text())["study"] == study
    for name in ("history", "params"):
        assert (folder / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert b"<svg" in (folder / f"{name}.svg").read_bytes()
