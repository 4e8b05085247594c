"""Regenerate tests/fixtures/data_errors/*.expected from the current code (run from the repo root).

Each NAME.expected starts with the command line (`$ netdsl train ...`, run
inside tests/fixtures/data_errors with `-o RUNS --progress none` added); the rest is
the exit code and the exact stderr, the runs folder written as RUNS. Review
every changed file by hand before committing: these are the messages users see.
"""

import contextlib
import io
import os
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dsl"))

from netdsl.cli import main  # noqa: E402

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "data_errors"


def run_case(command: str, runs: str) -> str:
    args = shlex.split(command)[1:]  # drop "netdsl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main([*args, "-o", runs, "--progress", "none"])
    return f"exit {code}\n" + err.getvalue().replace(runs, "RUNS")


if __name__ == "__main__":
    os.chdir(HERE)
    for expected in sorted(HERE.glob("*.expected")):
        command = expected.read_text(encoding="utf-8").splitlines()[0][2:]
        with tempfile.TemporaryDirectory() as runs:
            expected.write_text(f"$ {command}\n{run_case(command, runs)}", encoding="utf-8")
        print(expected.name)
