"""An installed plugin package: pip puts it in an environment, every command finds its layer.

A plugin is found through the `netdsl.layers` entry-point group, the way a
user installs one (`pip install netdsl-something`). The test builds a small
wheel by hand (no build backend, no network), installs it with pip into a
fresh virtual environment that can see this netdsl, and runs the `netdsl`
commands there. A plugin that fails on import is one line, exit 1.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import netdsl

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
PLUGINS = GUIDE[GUIDE.index("## 14. Python plugins") :]
# The plugin and its entry point exactly as the language guide shows them.
TWICE = re.search(r"```python\n(.*?)```", PLUGINS, re.S).group(1)
ENTRY_POINT = re.search(r'```toml\n\[project.entry-points."netdsl.layers"\]\n(\w+) = "(\w+)"\n```', PLUGINS)

BROKEN = 'raise RuntimeError("the plugin is broken")\n'

SPEC = "model m {\n  input x: (3,)\n  output y = x -> twice -> dense(1)\n}\n"


def _wheel(folder: Path, package: str, source: str, entry: str | None = None) -> Path:
    """A wheel of one module whose entry point `entry` (default: the module's name) in
    `netdsl.layers` is that module."""
    dist = f"{package}-1.0.dist-info"
    files = {
        f"{package}/__init__.py": source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: netdsl-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[netdsl.layers]\n{entry or package} = {package}\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join(record + [f"{dist}/RECORD,,"]) + "\n"
    path = folder / f"{package}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def _environment(folder: Path) -> Path:
    """A new virtual environment (no pip of its own) that sees this netdsl, Keras and TensorFlow."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    seen = [sysconfig.get_paths()["purelib"], str(Path(netdsl.__file__).resolve().parents[1])]
    (Path(site) / "netdsl_tests_outer.pth").write_text("\n".join(seen) + "\n")
    return python


def _install(python: Path, wheel: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )


def _netdsl(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(python), "-m", "netdsl.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def test_an_installed_plugin_is_found_by_every_command(tmp_path):
    python = _environment(tmp_path / "venv")
    entry, module = ENTRY_POINT.groups()
    _install(python, _wheel(tmp_path, module, TWICE, entry))
    (tmp_path / "spec.net").write_text(SPEC)

    checked = _netdsl(python, "check", "spec.net", cwd=tmp_path)
    assert (checked.returncode, checked.stderr) == (0, "")
    built = _netdsl(python, "build", "spec.net", "-o", "out", "--no-diagram", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert ["y.twice", "twice", "(3,)", "0"] in [line.split() for line in built.stdout.splitlines()]
    assert (tmp_path / "out" / "m.keras").is_file()
    drawn = _netdsl(python, "render", "spec.net", "--no-shapes", "--format", "dot", "-o", "m.dot", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert "twice" in (tmp_path / "m.dot").read_text()


def test_without_the_plugin_the_layer_is_unknown(tmp_path):
    python = _environment(tmp_path / "venv")
    (tmp_path / "spec.net").write_text(SPEC)
    checked = _netdsl(python, "check", "spec.net", cwd=tmp_path)
    assert checked.returncode == 1
    assert checked.stderr.startswith("spec.net:3:19: error: unknown layer 'twice'")


def test_an_installed_plugin_that_fails_on_import_is_one_line(tmp_path):
    python = _environment(tmp_path / "venv")
    _install(python, _wheel(tmp_path, "netdsl_broken", BROKEN))
    (tmp_path / "spec.net").write_text(SPEC)
    for command in (["check"], ["build", "--no-diagram"], ["summary"], ["render", "--no-shapes"]):
        done = _netdsl(python, command[0], "spec.net", *command[1:], cwd=tmp_path)
        assert (done.returncode, done.stdout) == (1, ""), command
        assert done.stderr == (
            "spec.net:1:1: error: cannot load installed plugins: RuntimeError: the plugin is broken\n"
        ), command
