"""A training process reads, picks and checks its spec once (the `CheckedModel` it resolved is what the
engine builds), in the library, in `netdsl train` and in each process of `netdsl train --processes`.

The counts come from the real runs: tests/support/spec_calls/sitecustomize.py, on PYTHONPATH,
appends one line per run of the checker and per model pick, in every process the command starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.semantics import analysis
from netdsl.semantics import session as spec_session

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "lightning_mlp.net"
COUNTER = ROOT / "tests" / "support" / "spec_calls"
LIMIT_S = 300


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "d.npz"
    rng = np.random.default_rng(0)
    np.savez(path, image=rng.random((64, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, 64))
    return path


def _counted(*argv: str, record: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        NETDSL_SPEC_CALLS=str(record),
        TF_CPP_MIN_LOG_LEVEL="3",
        PYTHONPATH=os.pathsep.join([str(COUNTER), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    env.pop("KERAS_BACKEND", None)
    return subprocess.run(
        [sys.executable, "-m", "netdsl.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=LIMIT_S,
        start_new_session=True,
    )


def _per_process(record: Path) -> list[Counter]:
    """The checks and picks of each process, in the order the processes first counted."""
    found: dict[str, Counter] = {}
    for line in record.read_text().splitlines():
        pid, kind = line.split()
        found.setdefault(pid, Counter())[kind] += 1
    return list(found.values())


def test_the_library_checks_a_training_runs_spec_once(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[object] = []
    original = analysis._analyze

    def counted(program, backend, models, declarations, param_limit):  # type: ignore[no-untyped-def]
        checks.append(backend)
        return original(program, backend, models, declarations, param_limit)

    monkeypatch.setattr(analysis, "_analyze", counted)
    picks: list[str | None] = []
    pick = spec_session.pick_model
    monkeypatch.setattr(spec_session, "pick_model", lambda program, name: picks.append(name) or pick(program, name))
    run = netdsl.train(str(SPEC), data=str(data), epochs=1, out=tmp_path / "runs", seed=1)
    assert run.status == "finished"
    assert checks == [None]  # one pure-Python check; the build replayed its graph
    assert picks == [None]


def test_netdsl_train_checks_its_spec_once(data: Path, tmp_path: Path) -> None:
    record = tmp_path / "calls.txt"
    done = _counted(
        "train",
        str(SPEC),
        "--data",
        str(data),
        "--epochs",
        "1",
        "--seed",
        "1",
        "--progress",
        "none",
        "-o",
        str(tmp_path / "runs"),
        record=record,
    )
    assert done.returncode == 0, done.stderr
    assert _per_process(record) == [Counter(check=1, pick=1)]


@pytest.mark.slow
@pytest.mark.processes
def test_each_process_of_a_job_checks_its_spec_once(data: Path, tmp_path: Path) -> None:
    """The launcher checks the spec before any process starts (its errors once); each process checks it
    once more, for itself, and builds what it checked."""
    record = tmp_path / "calls.txt"
    done = _counted(
        "train",
        str(SPEC),
        "--train",
        str(data),
        "--epochs",
        "1",
        "--seed",
        "1",
        "--progress",
        "none",
        "-o",
        str(tmp_path / "runs"),
        "--backend",
        "jax",
        "--processes",
        "2",
        record=record,
    )
    assert done.returncode == 0, done.stderr
    assert _per_process(record) == [Counter(check=1, pick=1)] * 3  # the launcher, then its two processes
