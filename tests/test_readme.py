"""The README's examples run: its spec checks clean and its error reads as shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import netdsl
from netdsl.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_readme_has_exactly_two_setup_commands():
    first = blocks("sh")[0].strip().splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make demo", "make test"]


def test_readme_spec_checks_clean(tmp_path):
    (spec,) = blocks("net")
    path = tmp_path / "mnist.net"
    path.write_text(spec, encoding="utf-8")
    assert netdsl.check(path) == []


def test_readme_error_is_what_check_prints(tmp_path, capsys, monkeypatch):
    (spec,) = blocks("net")
    (shown,) = blocks("text")
    monkeypatch.chdir(tmp_path)
    Path("mnist.net").write_text(spec.replace("-> dense(10", "-> dens(10"), encoding="utf-8")
    assert main(["check", "mnist.net"]) == 1
    assert capsys.readouterr().err == shown


def test_readme_library_example_parse_and_error():
    (code,) = blocks("python")
    error_part = code[code.index("try:") :]
    namespace: dict = {"netdsl": netdsl}
    exec(compile(error_part, "README.md", "exec"), namespace)  # the README's own example code
    assert "netdsl.SpecError" in code


@pytest.mark.slow
def test_readme_library_example_runs_whole(monkeypatch):
    (code,) = blocks("python")
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # the README's own example code
    assert namespace["program"].model_names == ["lightning_mlp"]
    assert namespace["model"].count_params() == 101_770
    assert set(namespace["models"]) == {"siamese"}
    assert "digraph" in namespace["diagram"].source
