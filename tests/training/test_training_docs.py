"""docs/training.md: its library example runs, its commands run, its error lines are the fixtures' own."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE, re.S)


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_library_example_runs(project):
    code = blocks("python")[0]
    namespace: dict = {}
    exec(compile(code, "docs/training.md", "exec"), namespace)  # the guide's own example
    run = namespace["run"]
    assert run.dir == Path("runs/lightning_mlp-1") and run.report["status"] == "finished"
    assert len(run.history["val_loss"]) == 2
    assert set(namespace["scores"]) == {"loss", "sparse_categorical_accuracy"}
    assert namespace["outputs"]["logits"].shape == (200, 10)


@pytest.mark.slow
def test_the_commands_run_and_print_what_the_guide_shows(project, capsys):
    commands = [line.split("#")[0].strip() for line in blocks("sh")[0].splitlines()]
    generate, *netdsl_commands = [
        c for c in commands if c and "--resume" not in c
    ]  # resuming: training/test_engine.py, training/test_checkpoint_kill.py
    subprocess.run([sys.executable, *shlex.split(generate)[1:]], check=True, capture_output=True, timeout=120)
    for command in netdsl_commands:
        args = shlex.split(command)[1:]
        assert main([*args, "--progress", "none"] if args[0] == "train" else args) == 0, command
    out = capsys.readouterr().out
    shown = blocks("text")[0].splitlines()
    summary = [line for line in out.splitlines() if line.split(":")[0] in ("status", "train", "val", "test")][:4]
    for got, expected in zip(summary, shown):
        assert re.sub(r"[\d.,]+", "#", got) == re.sub(r"[\d.,]+", "#", expected)
    assert "run folder: runs/lightning_mlp-1" in out
    assert Path("preds.npz").exists()


def test_the_error_lines_are_exactly_what_the_fixtures_print():
    fixtures = "".join(p.read_text() for p in (ROOT / "tests" / "fixtures" / "data_errors").glob("*.expected"))
    lines = blocks("text")[1].strip().splitlines()
    assert len(lines) >= 6
    for line in lines:
        assert f"\n{line}\n" in fixtures, line
