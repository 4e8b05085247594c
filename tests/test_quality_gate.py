"""The quality gate runs in `make test`: ruff (lint, import order and format) and mypy, as `make lint` and pre-commit
do.

mypy reads its settings from pyproject.toml: gradual for the package, strict
for syntax/, semantics/ and registry/layers/. Both tools come with the `dev`
extra; where one is missing the test says so and is skipped.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_finds_nothing():
    done = _run_tool("ruff", "check", "--no-cache", "dsl", "tests", "bench", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_in_ruff_formats_style():
    done = _run_tool("ruff", "format", "--check", "--no-cache", "dsl", "tests", "bench", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr  # `ruff format dsl tests bench scripts` fixes it


@pytest.mark.slow
def test_mypy_finds_nothing(tmp_path):
    done = _run_tool("mypy", "--cache-dir", str(tmp_path / "mypy_cache"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
