"""A run killed with SIGKILL at any point, or stopped with Ctrl-C, resumes to the very weights
an uninterrupted run ends with; every epoch appears once in history.csv.

Real processes: `python -m netdsl.cli train ...`, killed from here. Each is
bounded by a timeout and killed if still alive at the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest

import netdsl
from tests.support import paused_cli

# `processes`: it interrupts runs at chosen moments, each one a step where the run stopped itself
# (tests/support/paused_cli.py): with another test on the second core, a 0.4 s epoch used to end
# before a Ctrl-C sent on seeing its start arrived.
pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]
SPEC = """\
model steady {
  input x: (16,)
  h = x -> dense(32, activation=relu)
  output y = h -> dense(3)
  train {
    optimizer = adam(learning_rate=1e-3)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [sparse_categorical_accuracy]
    batch_size = 4
    epochs = 6
    shuffle = false
  }
}
"""


def _start(tmp_path: Path, *args: str, stop_at: tuple[int, int] | None = None) -> subprocess.Popen:
    """`netdsl train steady.net ...`; with `stop_at` (epoch, step), stopped by itself (SIGSTOP) at that step."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "dsl"), str(ROOT)]), "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = ["train", "steady.net", "-o", "runs", "--progress", "line", *args]
    return subprocess.Popen(
        [sys.executable, "-m", "netdsl.cli", *command] if stop_at is None else paused_cli.command(*stop_at, *command),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(condition, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate(timeout=30)
            pytest.fail(f"the run ended or hung before the moment to interrupt it:\n{out}\n{err}")
        time.sleep(0.01)


def _rows(folder: Path) -> int:
    try:
        return len((folder / "history.csv").read_text().splitlines()) - 1
    except FileNotFoundError:
        return 0


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate(timeout=30)
        pytest.fail(f"the run did not end:\n{out}\n{err}")
    return process.returncode, out, err


def test_sigkill_anywhere_and_ctrl_c_then_resume_gives_the_uninterrupted_weights(tmp_path):
    rng = np.random.default_rng(1)
    x, y = rng.random((2000, 16)).astype("float32"), rng.integers(0, 3, 2000)
    np.savez(tmp_path / "d.npz", x=x, y=y)
    (tmp_path / "steady.net").write_text(SPEC)
    folder = tmp_path / "runs" / "steady-1"
    processes = []
    try:
        # 1. killed while starting: no epoch recorded yet
        first = _start(tmp_path, "--data", "d.npz", "--seed", "4")
        processes.append(first)
        _wait_for(lambda: (folder / "report.json").exists(), first)
        first.kill()
        first.wait(timeout=30)
        assert json.loads((folder / "report.json").read_text())["status"] == "running"

        # 2. resumed, then killed in the middle of epoch 3 (stopped there by itself: on a loaded machine a
        # kill sent when history.csv showed two epochs came after the third had ended)
        second = _start(tmp_path, "--resume", "auto", stop_at=(3, 250))
        processes.append(second)
        paused_cli.wait_until_stopped(second.pid)
        second.kill()
        second.wait(timeout=30)
        assert _rows(folder) == 2

        # 3. resumed, then Ctrl-C in the middle of epoch 4: a clean stop with a resumable state. The Ctrl-C
        # is sent while the process is stopped there, and handled as it continues.
        third = _start(tmp_path, "--resume", "auto", stop_at=(4, 250))
        processes.append(third)
        paused_cli.wait_until_stopped(third.pid)
        assert _rows(folder) == 3
        third.send_signal(signal.SIGINT)
        third.send_signal(signal.SIGCONT)
        code, out, err = _finish(third)
        assert code == 130, err
        report = json.loads((folder / "report.json").read_text())
        assert report["status"] == "stopped" and "SIGINT" in report["reason"]
        assert f"resume with: netdsl train steady.net --resume {Path('runs') / 'steady-1'}" in out
        assert "Traceback" not in err

        # 4. resumed to the end
        code, out, err = _finish(_start(tmp_path, "--resume", "auto"))
        assert code == 0, err
        assert "status: finished (6 of 6 epochs" in out and "run folder: runs/steady-1" in out
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)

    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["steady-1"]
    history = (folder / "history.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in history[1:]] == ["1", "2", "3", "4", "5", "6"]

    whole = netdsl.train(str(tmp_path / "steady.net"), data=str(tmp_path / "d.npz"), seed=4, out=tmp_path / "whole")
    resumed = keras.saving.load_model(folder / "model.keras", safe_mode=True)
    assert all(np.array_equal(a, b) for a, b in zip(resumed.get_weights(), whole.model.get_weights()))
    assert (whole.dir / "history.csv").read_text().splitlines() == history
