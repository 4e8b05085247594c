"""Sweeps with real processes: `kill -9` of a sweep, or of one of its workers, and `--resume auto`
end with exactly N trials, none counted twice; two `netdsl sweep` processes (two "machines")
share one study in a real PostgreSQL server started here, in a temporary folder.

Every process started here is bounded by a timeout and ended in a `finally`, the database
server included (`pg_ctl stop -m immediate`, then its postmaster's pid if that fails).
"""

from __future__ import annotations

import contextlib
import csv
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netdsl.training.scale.launch import reserved_port
from tests.tuning.test_sweep import SPEC, write_data

optuna = pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.processes]  # several processes

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "dsl"), "TF_CPP_MIN_LOG_LEVEL": "3"}
SLOW_SPEC = SPEC.replace("epochs = 2", "epochs = 3").replace("batch_size = 16", "batch_size = 4")


def start(cwd: Path, *argv: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "netdsl.cli", "sweep", *argv],
        cwd=cwd,
        env=ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(process: subprocess.Popen, timeout: float = 600) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(process)
        out, err = process.communicate(timeout=30)
        pytest.fail(f"the sweep did not end:\n{out}\n{err}")
    return process.returncode, out, err


def stop_group(process: subprocess.Popen) -> None:
    """Kill a sweep and its workers (they share its session), if still running."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)


def wait_for(condition, process: subprocess.Popen, timeout: float = 400) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_group(process)
            out, err = process.communicate(timeout=30)
            pytest.fail(f"the sweep ended or hung before the moment to kill it:\n{out}\n{err}")
        time.sleep(0.05)


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tiny.net").write_text(SLOW_SPEC)
    write_data(tmp_path)
    return tmp_path


def test_kill_9_of_a_sweep_then_resume_auto_finishes_exactly_n_trials(project):
    argv = ("tiny.net", "--data", "data.npz", "--seed", "4", "-o", "out")
    folder = project / "out" / "tiny-sweep-1"
    process = start(project, *argv)
    try:
        wait_for(lambda: (folder / "trials" / "1" / "checkpoint.npz").is_file(), process)
        process.kill()  # SIGKILL in the middle of trial 1 (one epoch done)
        process.wait(timeout=30)
    finally:
        stop_group(process)
    assert json.loads((folder / "sweep.json").read_text())["status"] == "running"
    killed = json.loads((folder / "trials" / "1" / "config.json").read_text())["defines"]

    # the data, seed and trials come from the sweep folder
    code, out, err = finish(start(project, "tiny.net", "--resume", "auto", "-o", "out"))
    assert code == 0, err
    summary = rows(folder / "summary.csv")
    assert [(int(r["trial"]), r["state"], r["epochs"]) for r in summary] == [(k, "complete", "3") for k in range(3)]
    assert [r["resumed"] for r in summary] == ["0", "1", "0"]  # the killed trial, taken up again
    assert sorted(p.name for p in (folder / "trials").iterdir()) == ["0", "1", "2"]
    # trial 1 went on from its own checkpoint, with its own parameters: each epoch once in its history
    run = folder / "trials" / "1"
    assert json.loads((run / "config.json").read_text())["defines"] == killed
    assert [r["epoch"] for r in rows(run / "history.csv")] == ["1", "2", "3"]
    assert json.loads((run / "report.json").read_text())["status"] == "finished"
    assert json.loads((folder / "sweep.json").read_text())["status"] == "finished"
    study = optuna.load_study(study_name="tiny-sweep", storage=f"sqlite:///{folder / 'study.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3


def test_kill_9_of_one_worker_the_sweep_still_ends_with_n_trials(project):
    folder = project / "out" / "tiny-sweep-1"
    process = start(
        project,
        "tiny.net",
        "--data",
        "data.npz",
        "--trials",
        "4",
        "--workers",
        "2",
        "--seed",
        "6",
        "--epochs",
        "2",
        "-o",
        "out",
    )
    try:
        wait_for(lambda: any((folder / "trials").glob("*/checkpoint.npz")), process)
        run = next((folder / "trials").glob("*/checkpoint.npz")).parent
        study = optuna.load_study(study_name="tiny-sweep", storage=f"sqlite:///{folder / 'study.db'}")
        victim = study.trials[int(run.name)].user_attrs["worker"]["pid"]
        os.kill(victim, signal.SIGKILL)
        code, out, err = finish(process)
    finally:
        stop_group(process)
    assert code == 0, err
    summary = rows(folder / "summary.csv")
    assert [(int(r["trial"]), r["state"], r["epochs"]) for r in summary] == [(k, "complete", "2") for k in range(4)]
    # the killed worker's trial was finished by the starting process, from its checkpoint
    assert [r["resumed"] for r in summary] == ["1" if int(r["trial"]) == int(run.name) else "0" for r in summary]
    assert [r["epoch"] for r in rows(run / "history.csv")] == ["1", "2"]
    assert json.loads((folder / "sweep.json").read_text())["status"] == "finished"


# ------------------------------------------------------------------ PostgreSQL


def postgres_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return versions[-1] if versions else None


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throw-away PostgreSQL cluster on 127.0.0.1, as an unprivileged user (the server refuses
    root); its URL. Always stopped and removed at the end."""
    initdb, pg_ctl = postgres_binary("initdb"), postgres_binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip(
            "PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql; `make test` installs them)"
        )
    pytest.importorskip("psycopg", reason="psycopg (netdsl[sweep]) is not installed")
    base = Path(tempfile.mkdtemp(prefix="netdsl-pg-"))  # short: the socket's path has a length limit
    as_user: list[str] = []
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]
    data = base / "data"
    with reserved_port() as port:  # kept from other processes until the server binds it
        quiet = {
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.PIPE,
            "timeout": 180,
            "cwd": base,
        }
        try:
            subprocess.run(
                [*as_user, initdb, "-D", str(data), "-U", "netdsl", "-A", "trust", "-E", "UTF8", "--no-sync"],
                check=True,
                **quiet,
            )
            subprocess.run(
                [
                    *as_user,
                    pg_ctl,
                    "-D",
                    str(data),
                    "-l",
                    str(base / "server.log"),
                    "-w",
                    "-t",
                    "120",
                    "-o",
                    f"-p {port} -k {base} -h 127.0.0.1 -c fsync=off",
                    "start",
                ],
                check=True,
                **quiet,
            )
            yield f"postgresql://netdsl@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "-t", "60", "stop"], check=False, **quiet
            )
            with contextlib.suppress(OSError, ValueError, IndexError):  # pg_ctl could not stop it: its pid
                os.kill(int((data / "postmaster.pid").read_text().splitlines()[0]), signal.SIGKILL)
            shutil.rmtree(base, ignore_errors=True)


def test_two_machines_share_a_study_in_postgresql(project):
    with postgres_server() as url:
        argv = ("tiny.net", "--data", "data.npz", "--trials", "4", "--epochs", "1", "--storage", url)
        first = start(project, *argv, "--seed", "1", "-o", "machine1")
        second = start(project, *argv, "--seed", "2", "-o", "machine2")
        try:
            results = [finish(first), finish(second)]
        finally:
            stop_group(first)
            stop_group(second)
        for code, _, err in results:
            assert code == 0, err
        folders = [project / "machine1" / "tiny-sweep-1", project / "machine2" / "tiny-sweep-1"]
        mine = [sorted(int(p.name) for p in (f / "trials").iterdir()) for f in folders]
        assert sorted(mine[0] + mine[1]) == [0, 1, 2, 3]  # each trial trained once, by one of them
        study = optuna.load_study(
            study_name="tiny-sweep", storage=url.replace("postgresql://", "postgresql+psycopg://")
        )
        counted = [t for t in study.trials if not t.user_attrs.get("excess")]
        assert [t.state.name for t in counted] == ["COMPLETE"] * 4
        shown = subprocess.run(
            [sys.executable, "-m", "netdsl.cli", "sweep", "--show", str(folders[0])],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines()[0] == "tiny-sweep: 4 trials (4 complete); minimize val_loss"
        assert sorted(int(line.split()[0]) for line in shown.stdout.splitlines()[2:]) == [0, 1, 2, 3]
        assert json.loads((folders[0] / "sweep.json").read_text())["storage"] == url


# The tiny classifier with two objectives: val_loss, and one sample's forward FLOPs (20 * width + 3).
MULTI_SPEC = SPEC.replace("objective = minimize(val_loss)", "objectives = [minimize(val_loss), minimize(flops)]")


def test_several_objectives_in_postgresql_with_two_workers(project):
    """A multi-objective study in a real PostgreSQL server, its trials shared by `--workers 2`: every trial
    told both values, the front in summary.csv Optuna's own."""
    (project / "multi.net").write_text(MULTI_SPEC)
    with postgres_server() as url:
        argv = ("multi.net", "--data", "data.npz", "--trials", "4", "--epochs", "1", "--workers", "2")
        code, _, err = finish(start(project, *argv, "--storage", url, "--seed", "5", "-o", "out"))
        assert code == 0, err
        study = optuna.load_study(
            study_name="tiny-sweep", storage=url.replace("postgresql://", "postgresql+psycopg://")
        )
        counted = [t for t in study.trials if not t.user_attrs.get("excess")]
        assert [t.state.name for t in counted] == ["COMPLETE"] * 4
        assert study.directions == [optuna.study.StudyDirection.MINIMIZE] * 2
        summary = rows(project / "out" / "tiny-sweep-1" / "summary.csv")
        assert [float(r["flops"]) for r in summary] == [20 * t.params["width"] + 3 for t in counted]
        front = {t.number for t in study.best_trials}
        assert {int(r["trial"]) for r in summary if r["pareto"] == "true"} == front


def test_a_password_for_a_real_server_is_written_nowhere_and_reaches_the_workers(project):
    """Its password in the URL (with a `/`, as SQLAlchemy reads it) and a key's password in the query:
    masked in sweep.json and best.json (both 0600), in every line printed; the workers of `--workers 2`
    get the URL from the environment, and `--show` asks for it again (flag or NETDSL_SWEEP_STORAGE)."""
    with postgres_server() as plain:  # trust authentication: the server takes any password
        url = plain.replace("netdsl@", "netdsl:s3cr/et@") + "?sslpassword=k3y-s3cret"
        shown = plain.replace("netdsl@", "netdsl:***@") + "?sslpassword=***"
        code, out, err = finish(
            start(
                project,
                "tiny.net",
                "--data",
                "data.npz",
                "--trials",
                "2",
                "--epochs",
                "1",
                "--workers",
                "2",
                "--seed",
                "3",
                "--storage",
                url,
                "-o",
                "pw",
            )
        )
        assert code == 0, err
        folder = project / "pw" / "tiny-sweep-1"
        texts = [out, err]
        for name in ("sweep.json", "best.json"):
            assert (folder / name).stat().st_mode & 0o777 == 0o600
            record = json.loads((folder / name).read_text())
            assert record["storage"] == shown and "storage_url" not in record
            texts.append((folder / name).read_text())
        assert [r["state"] for r in rows(folder / "summary.csv")] == ["complete", "complete"]
        show = [sys.executable, "-m", "netdsl.cli", "sweep", "--show", str(folder)]
        asked = subprocess.run(show, env=ENV, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert (asked.returncode, asked.stderr) == (
            2,
            f"netdsl sweep: error: this sweep's study is in {shown}; give "
            "the URL again with --storage URL (or in NETDSL_SWEEP_STORAGE)\n",
        )
        given = subprocess.run(
            show,
            env={**ENV, "NETDSL_SWEEP_STORAGE": url},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert given.returncode == 0, given.stderr
        assert given.stdout.splitlines()[0] == "tiny-sweep: 2 trials (2 complete); minimize val_loss"
        texts += [asked.stdout, asked.stderr, given.stdout, given.stderr]
        for text in texts:
            assert "s3cr" not in text and "k3y" not in text
