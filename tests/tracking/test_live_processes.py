"""`--track` where several processes train: `netdsl sweep --workers K` (each trial tracked as it trains, by
the starting process, which alone talks to the server: real worker processes, a real MLflow store) and
`netdsl train` as a job of several processes (its process 0 alone tracks the one run folder the job writes)."""

from __future__ import annotations

import csv
import json
import socket
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) makes the sweep")
pytest.importorskip("mlflow", reason="netdsl[mlflow] is not installed")

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "specs" / "lightning_mlp.net")
LARGEST_SEED = 2**32 - 1


def _history(run: Path) -> dict[str, list[tuple[int, float]]]:
    with open(run / "history.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {key: [(int(row["epoch"]), float(row[key])) for row in rows] for key in rows[0] if key != "epoch"}


@pytest.mark.parametrize(
    "flags", [["--processes", "2"], ["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "0"]]
)
def test_a_job_given_a_uri_netdsl_cannot_push_to_is_refused_before_anything_starts(tmp_path, capsys, flags):
    from netdsl.cli import main

    rng = np.random.default_rng(0)
    data = tmp_path / "d.npz"
    np.savez(data, image=rng.random((64, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, 64))
    assert (
        main(
            [
                "train",
                SPEC,
                "--train",
                str(data),
                "--backend",
                "jax",
                "-o",
                str(tmp_path / "runs"),
                *flags,
                "--track",
                "wandb:x",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err == (
        "netdsl train: error: --track takes mlflow:<tracking URI> or tensorboard:<folder>; received 'wandb:x'\n"
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.processes
@pytest.mark.slow
def test_a_job_of_two_processes_is_tracked_once_by_the_process_that_writes_the_run(tmp_path):
    """`train --processes 2 --track`: process 0 alone tracks the one run folder the job writes: one run on the
    server, FINISHED, every epoch of every metric equal to history.csv, its files; process 1 creates nothing.
    The seed is the largest there is: process 0 sends it to process 1, and a seed of 2**31 or more once came
    back negative (JAX sends an int64 as an int32), which failed half the jobs with a drawn seed."""
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    rng = np.random.default_rng(0)
    data = tmp_path / "d.npz"
    np.savez(data, image=rng.random((128, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, 128))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "netdsl.cli",
            "train",
            SPEC,
            "--train",
            str(data),
            "--epochs",
            "2",
            "--backend",
            "jax",
            "--processes",
            "2",
            "--seed",
            str(LARGEST_SEED),
            "--progress",
            "none",
            "-o",
            str(tmp_path / "runs"),
            "--track",
            f"mlflow:{uri}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("netdsl")
    (tracked,) = client.search_runs([experiment.experiment_id])
    assert tracked.info.status == "FINISHED"
    assert json.loads((run / "config.json").read_text())["settings"]["seed"] == LARGEST_SEED  # as process 0 sent it
    for key, values in _history(run).items():
        assert [(m.step, m.value) for m in client.get_metric_history(tracked.info.run_id, key)] == values, key
    assert {"model.keras", "history.csv", "diagram.svg"} <= {a.path for a in client.list_artifacts(tracked.info.run_id)}


def _sweep_project(folder: Path) -> Path:
    from tests.support.run_folders import tiny_spec

    (folder / "tiny.net").write_text(tiny_spec(epochs=2, trials=2))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(96, 6)).astype("float32")
    np.savez(folder / "data.npz", x=x, y=(x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64"))
    return folder


@pytest.mark.slow
def test_the_workers_trials_are_tracked_as_they_train_not_when_the_sweep_ends(tmp_path, monkeypatch, capsys):
    """`--workers 2`: when the workers have ended, before the sweep ends, each of their trials is on the server
    whole (every epoch, FINISHED, its files); the starting process alone created runs: one of each."""
    from mlflow.tracking import MlflowClient

    import netdsl.tuning.runner as runner
    from netdsl.cli import main

    project = _sweep_project(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    folder = tmp_path / "sweeps" / "tiny-sweep-1"
    workers = runner.run_workers
    seen: dict[str, tuple[str, list[int], set[str]]] = {}  # trial: status, val_loss epochs, artifacts

    def look() -> dict[str, tuple[str, list[int], set[str]]]:
        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name("netdsl")
        found = client.search_runs([experiment.experiment_id]) if experiment is not None else []
        return {
            r.info.run_name: (
                r.info.status,
                [m.step for m in client.get_metric_history(r.info.run_id, "val_loss")],
                {a.path for a in client.list_artifacts(r.info.run_id)},
            )
            for r in found
            if r.data.tags.get("netdsl.kind") == "run"
        }

    def then_look(config):  # the workers have ended; the sweep has not (no summary, no best.json yet)
        code = workers(config)
        assert not (folder / "best.json").exists()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen.update(look())
            if all(
                seen.get(f"trial {k}", ("",))[0] == "FINISHED" and "diagram.svg" in seen[f"trial {k}"][2]
                for k in (0, 1)
            ):
                break
            time.sleep(0.5)
        return code

    monkeypatch.setattr(runner, "run_workers", then_look)
    assert (
        main(
            [
                "sweep",
                str(project / "tiny.net"),
                "--data",
                str(project / "data.npz"),
                "--workers",
                "2",
                "--seed",
                "4",
                "-o",
                str(tmp_path / "sweeps"),
                "--track",
                f"mlflow:{uri}",
            ]
        )
        == 0
    )
    assert "warning" not in capsys.readouterr().err
    assert {name: (status, epochs) for name, (status, epochs, _) in seen.items()} == {
        "trial 0": ("FINISHED", [1, 2]),
        "trial 1": ("FINISHED", [1, 2]),
    }
    assert all({"best.keras", "history.csv", "diagram.svg"} <= files for _, _, files in seen.values())
    client = MlflowClient(tracking_uri=uri)
    tracked = client.search_runs([client.get_experiment_by_name("netdsl").experiment_id])
    assert sorted(r.info.run_name for r in tracked) == ["tiny-sweep-1", "trial 0", "trial 1"]
    assert {r.info.status for r in tracked} == {"FINISHED"}
    for run in tracked:
        if run.info.run_name.startswith("trial "):
            history = _history(folder / "trials" / run.info.run_name.split()[1])
            assert {
                name: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
                for name in history
            } == history
    assert main(["runs", "push", str(folder), "--to", f"mlflow:{uri}"]) == 0
    assert capsys.readouterr().out.startswith(
        f"mlflow:{uri}: 0 created, 0 updated, 3 unchanged; 0 metric values, 0 files"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_server_that_is_down_never_fails_a_sweep_of_workers(tmp_path, capsys):
    from netdsl.cli import main

    project = _sweep_project(tmp_path)
    uri = f"mlflow:http://127.0.0.1:{_free_port()}"  # nothing listens there
    assert (
        main(
            [
                "sweep",
                str(project / "tiny.net"),
                "--data",
                str(project / "data.npz"),
                "--workers",
                "2",
                "--epochs",
                "1",
                "--seed",
                "4",
                "-o",
                str(tmp_path / "sweeps"),
                "--track",
                uri,
            ]
        )
        == 0
    )
    folder = tmp_path / "sweeps" / "tiny-sweep-1"
    assert [line for line in capsys.readouterr().err.splitlines() if "warning" in line] == [
        f"netdsl sweep: warning: {uri}: not tracked (cannot reach MLflow: [Errno 111] Connection refused); the sweep "
        f"goes on, and `netdsl runs push {folder} --to URI` completes it later"
    ]
    assert json.loads((folder / "sweep.json").read_text())["status"] == "finished"
