"""Users' journeys across commands, end to end (issue 28): one test file each. `netdsl(work, ...)` runs
the command line in its own process, in `work`, as a user's shell would, with this checkout's code
(forked from a process that imported TensorFlow once: tests/support/forked_cli.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import forked_cli

ROOT = Path(__file__).resolve().parents[2]


def netdsl(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "dsl"), os.environ.get("PYTHONPATH", "")])}
    return forked_cli.run(list(args), work, env, timeout=600)
