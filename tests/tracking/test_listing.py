"""`netdsl runs [DIR]`, `netdsl runs compare` and `netdsl.runs`/`netdsl.open_run` (issue 33): real run
folders and a real sweep, read back as files; no backend needed to list or compare them."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

import netdsl
from netdsl.cli import main
from tests.support.run_folders import Project, make_project

pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) makes the sweep")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    return make_project(tmp_path_factory.mktemp("runs"))


def test_one_line_per_run_and_sweep_newest_first(project, capsys, monkeypatch):
    monkeypatch.chdir(project.folder)
    assert main(["runs"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0].split() == ["NAME", "MODEL", "STATUS", "EPOCHS", "BEST", "SPEC"]
    assert [line.split()[0] for line in lines[1:]] == ["sweeps/tiny-sweep-1/", "runs/tiny-2", "runs/tiny-1"]
    best = json.loads((project.sweep / "best.json").read_text())
    sha = json.loads((project.first / "config.json").read_text())["spec"]["sha256"]
    assert lines[1].split() == [
        "sweeps/tiny-sweep-1/",
        "tiny",
        "finished",
        "6",
        "trials",
        "val_loss",
        f"{best['objective']['value']:.4g}",
        sha[:12],
    ]
    report = json.loads((project.second / "report.json").read_text())
    assert lines[2].split() == [
        "runs/tiny-2",
        "tiny",
        "finished",
        "3",
        "val_loss",
        f"{report['best']['val_loss']:.4g}",
        sha[:12],
    ]
    assert out.err == ""


def test_json_lists_the_same(project, capsys):
    assert main(["runs", str(project.folder / "runs"), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(e["kind"], e["name"], e["epochs"]) for e in listed] == [("run", "tiny-2", 3), ("run", "tiny-1", 3)]
    report = json.loads((project.first / "report.json").read_text())
    assert listed[1]["best_metric"] == "val_loss" and listed[1]["best"] == report["best"]["val_loss"]


def test_compare_marks_exactly_the_define_that_differs(project, capsys, tmp_path):
    assert main(["runs", "compare", str(project.first), str(project.second), "--out", str(tmp_path / "c.svg")]) == 0
    out = capsys.readouterr()
    marked = [line.split()[1:] for line in out.out.splitlines() if line.startswith("*")]
    assert marked == [["define", "width", "-", "16"]]
    assert "final val_loss" in out.out and "best epoch" in out.out
    assert out.err == f"wrote {tmp_path / 'c.svg'}\n"
    assert (tmp_path / "c.svg").read_text().count("<svg") == 1
    assert main(["runs", "compare", str(project.first), str(project.second), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["differ"] == ["define width"]


def test_open_run_gives_history_csv_exactly(project):
    run = netdsl.open_run(project.first)
    assert isinstance(run, netdsl.Run) and run.status == "finished" and run.epochs == [1, 2, 3]
    with open(project.first / "history.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert run.history["val_loss"] == [float(row["val_loss"]) for row in rows]
    assert run.config["defines"] == {} and netdsl.open_run(project.second).config["defines"] == {"width": 16}
    assert [r.name for r in netdsl.runs(project.folder / "runs")] == ["tiny-2", "tiny-1"]


def test_train_returns_the_same_run(project):
    run = netdsl.open_run(project.second)
    assert run.model is None and set(run.history) == {
        "loss",
        "sparse_categorical_accuracy",
        "val_loss",
        "val_sparse_categorical_accuracy",
    }


def test_another_accounts_or_a_writable_folder_is_passed_over(project, tmp_path, capsys):
    import shutil

    shutil.copytree(project.first, tmp_path / "runs" / "tiny-9")
    os.chmod(tmp_path / "runs" / "tiny-9", 0o777)
    assert main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        f"netdsl runs: warning: {tmp_path / 'runs' / 'tiny-9'}: other accounts may write into this "
        "run folder (it is world-writable); passed over\nno runs under "
        f"{tmp_path}\n"
    )
    with pytest.raises(netdsl.RunError, match="world-writable"):
        netdsl.open_run(tmp_path / "runs" / "tiny-9")


def test_mistakes_are_one_line(project, tmp_path, capsys):
    assert main(["runs", str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err == f"{tmp_path / 'nowhere'}: error: no such folder\n"
    assert main(["runs", "compare", str(project.first)]) == 2
    assert capsys.readouterr().err == "netdsl runs: error: compare takes two run folders or more\n"
    bad = tmp_path / "bad"
    import shutil

    shutil.copytree(project.first, bad)
    (bad / "history.csv").write_text("epoch,loss\n1,0.5\n2,zero\x1b[31m\n")
    assert main(["runs", "compare", str(project.first), str(bad)]) == 1
    assert capsys.readouterr().err == (
        f"{bad}: error: cannot read history.csv: line 3: could not convert string to float: 'zero\\x1b[31m'\n"
    )
    assert main(["runs", "push", str(project.first)]) == 2
    assert capsys.readouterr().err == (
        "netdsl runs: error: push needs --to mlflow:<tracking URI> or --to tensorboard:<folder>\n"
    )


_WITHOUT_BACKENDS = """
import sys
for name in ("keras", "tensorflow", "jax", "torch", "lightning", "optuna", "mlflow"):
    sys.modules[name] = None  # as if not installed
from netdsl.cli import main
print([main(args) for args in {commands!r}])
"""


def test_list_and_compare_need_no_backend(project):
    commands = [["runs", str(project.folder)], ["runs", "compare", str(project.first), str(project.second)]]
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_BACKENDS.format(commands=commands)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=project.folder,
        stdin=subprocess.DEVNULL,
    )
    assert done.stdout.splitlines()[-1] == "[0, 0]", done.stderr
    assert "runs/tiny-1" in done.stdout and "define width" in done.stdout
