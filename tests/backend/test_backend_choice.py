"""Backends are a choice (issue 21, part 5): the language side runs with no backend installed.

A process in which Keras, TensorFlow, JAX, PyTorch and Lightning cannot be
imported (as after `pip install netdsl` alone) checks, formats, lists and
draws specs; `netdsl build` says in one line what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_WITHOUT_BACKENDS = """
import sys
for name in ("keras", "tensorflow", "jax", "torch", "lightning"):
    sys.modules[name] = None  # `import` fails and importlib finds nothing: as if not installed
from netdsl.cli import main
codes = [main(args) for args in {commands!r}]
print(sorted(m for m in sys.modules if m.startswith("netdsl.deploy")))  # the export room: not on this path
print(codes)
"""


def _without_backends(commands: list[list[str]], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("KERAS_BACKEND", None)
    code = _WITHOUT_BACKENDS.format(commands=commands)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_the_language_side_needs_no_backend(tmp_path: Path) -> None:
    spec = str(ROOT / "specs" / "resnet50.net")
    result = _without_backends(
        [
            ["check", spec],
            ["fmt", "--check", str(ROOT / "specs" / "unet.net")],
            ["layers", "dense"],
            ["render", spec, "--image-format", "dot", "-o", "r.dot"],
            ["render", spec, "--no-shapes", "--image-format", "dot", "-o", "t.dot"],
        ],
        tmp_path,
    )
    assert result.stdout.splitlines()[-2:] == ["[]", "[0, 0, 0, 0, 0]"], result.stderr
    assert (tmp_path / "r.dot").read_text().startswith("digraph")
    assert "25,636,712" in (tmp_path / "r.dot").read_text()  # shapes and counts, inferred without Keras


def test_build_without_a_backend_says_what_to_install(tmp_path: Path) -> None:
    result = _without_backends([["build", str(ROOT / "specs" / "lightning_mlp.net"), "-o", "out"]], tmp_path)
    assert result.stdout.splitlines()[-1] == "[2]"
    assert result.stderr == (
        "netdsl build: error: the 'tensorflow' backend needs the 'tensorflow' package, which "
        "is not installed: install it with `pip install 'netdsl[tensorflow]'`\n"
    )
    assert not (tmp_path / "out").exists()
