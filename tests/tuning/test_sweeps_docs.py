"""docs/sweeps.md: its spec checks clean, its error lines are what netdsl prints, its commands run."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import netdsl
from netdsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE, re.S)


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    (tmp_path / "mlp.net").write_text(blocks("net")[0], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_spec_checks_clean_and_its_sweep_is_read(project):
    assert netdsl.check("mlp.net") == []
    from netdsl.semantics.analysis import analyze

    space = analyze(netdsl.parse_file("mlp.net")).sweeps["mlp"]
    assert [p.describe() for p in space.params] == ["choice(32, 64, 128)", "log_uniform(0.0001, 0.01)"]
    assert (space.metric, space.pruner, space.warmup, space.trials) == ("val_loss", "median", 1, 12)


def test_the_override_errors_are_what_netdsl_prints(project, capsys):
    text = blocks("text")[0]
    for command, expected in re.findall(r"\$ (netdsl .*)\n(.*)\n", text):
        args = shlex.split(command)[1:]
        # the guide's spec declares width on its line 2 (under a comment)
        assert main(args) == 1
        assert capsys.readouterr().err.splitlines()[0] == expected


@pytest.mark.slow
def test_the_commands_run(project, capsys):
    commands = [line.split("#")[0].strip() for line in blocks("sh")[0].splitlines()]
    generate, *netdsl_commands = [c for c in commands if c and "--resume" not in c]
    subprocess.run([sys.executable, *shlex.split(generate)[1:]], check=True, capture_output=True, timeout=120)
    for command in netdsl_commands:
        assert main(shlex.split(command)[1:]) == 0, command
    out = capsys.readouterr().out
    assert "sweep folder: sweeps/mlp-sweep-1" in out
    assert sum(line.startswith("trial ") and " -> val_loss " in line for line in out.splitlines()) == 3
    assert out.count("mlp-sweep: 3 trials") == 2  # the end of the sweep and --show print the same table
    assert (project / "sweeps" / "mlp-sweep-1" / "best.json").is_file()


def test_the_pareto_spec_checks_clean_and_its_objectives_are_read(tmp_path):
    (tmp_path / "pareto.net").write_text(blocks("net")[2], encoding="utf-8")
    assert netdsl.check(tmp_path / "pareto.net") == []
    from netdsl.semantics.analysis import analyze

    space = analyze(netdsl.parse_file(tmp_path / "pareto.net")).sweeps["mlp"]
    assert [(o.describe(), o.figure) for o in space.objectives] == [
        ("maximize(val_sparse_categorical_accuracy)", None),
        ("minimize(flops)", "flops"),
    ]
    assert (space.multi, space.metric, [c.text for c in space.constraints]) == (
        True,
        "val_sparse_categorical_accuracy",
        ['train_memory(batch=64) < "2GiB"'],
    )
