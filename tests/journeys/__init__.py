"""Users' journeys across commands, end to end (issue 28): one test file each. `netdsl(work, ...)` runs
the command line in its own process, in `work`, as a user's shell would, with this checkout's code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def netdsl(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "dsl"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "netdsl.cli", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
