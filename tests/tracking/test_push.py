"""`netdsl runs push ... --to URI` (issue 33): real run folders and a real sweep pushed to a real MLflow
server the test starts (SQLite backend, a free port), to a SQLite tracking URI directly, and to
TensorBoard event files read back with TensorBoard's own reader. Pushing twice creates nothing new."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from netdsl.cli import main
from tests.support.run_folders import Project, copies, make_project

pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) makes the sweep")
mlflow = pytest.importorskip("mlflow", reason="netdsl[mlflow] is not installed")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    return make_project(tmp_path_factory.mktemp("push"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_mlflow_server(folder: Path, port: int) -> subprocess.Popen:
    """`mlflow server` on a SQLite database in `folder` and `port`, started, not waited for."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
            "--artifacts-destination",
            str(folder / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=folder,
        # No job runner: it is a third process (its imports alone 2-3 CPU seconds) for MLflow's GenAI jobs.
        env=dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"),
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "server.log", "wb"),
        stdin=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def _serving(process: subprocess.Popen, folder: Path, port: int) -> Iterator[str]:
    """The server's URL once it answers its health check; the server stopped afterwards."""
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("mlflow server did not start: " + (folder / "server.log").read_text()[-2000:])
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _mlflow_server(folder: Path, port: int) -> contextlib.AbstractContextManager[str]:
    return _serving(_start_mlflow_server(folder, port), folder, port)


@pytest.fixture(scope="module", autouse=True)
def _server_starting(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, Path, int]]:
    """The module's server, started first so that it comes up (10-30 s, mostly waiting) while the
    project's runs and sweep are made; `server` waits for it."""
    folder, port = tmp_path_factory.mktemp("mlflow-server"), _free_port()
    process = _start_mlflow_server(folder, port)
    yield process, folder, port
    if process.poll() is None:  # never waited for (no test of the module used it)
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def server(_server_starting):
    with _serving(*_server_starting) as url:
        yield url


def _history(run: Path) -> dict[str, list[tuple[int, float]]]:
    with open(run / "history.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {key: [(int(row["epoch"]), float(row[key])) for row in rows] for key in rows[0] if key != "epoch"}


def _pushed_metrics(client, run_id: str, names) -> dict[str, list[tuple[int, float]]]:
    return {name: sorted((m.step, m.value) for m in client.get_metric_history(run_id, name)) for name in names}


def _metric_rows(client, runs) -> int:
    return sum(len(client.get_metric_history(r.info.run_id, key)) for r in runs for key in r.data.metrics)


def test_a_sweep_and_runs_on_a_real_server_twice(project, server, capsys):
    from mlflow.tracking import MlflowClient

    assert main(["runs", "push", str(project.folder / "runs"), str(project.sweep), "--to", f"mlflow:{server}"]) == 0
    assert capsys.readouterr().out.startswith(f"mlflow:{server}: 9 created, 0 updated, 0 unchanged;")
    client = MlflowClient(tracking_uri=server)
    experiment = client.get_experiment_by_name("netdsl")
    runs = client.search_runs([experiment.experiment_id], max_results=100)
    assert len(runs) == 9
    parent = next(r for r in runs if r.data.tags["netdsl.kind"] == "sweep")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 6
    best = json.loads((project.sweep / "best.json").read_text())
    best_child = next(r for r in children if r.info.run_name == f"trial {best['trial']}")
    assert best_child.data.metrics["val_loss"] == best["objective"]["value"]  # 1 epoch: its last is its best
    assert parent.data.params["sweep.best_trial"] == str(best["trial"])
    second = next(r for r in runs if r.info.run_name == "tiny-2")
    assert second.data.params["define.width"] == "16" and second.data.params["backend"] == "tensorflow"
    assert second.data.params["seed"] == "1" and second.data.params["data.data.path"].endswith("data.npz")
    assert second.info.status == "FINISHED"
    assert _pushed_metrics(client, second.info.run_id, _history(project.second)) == _history(project.second)
    artifacts = {a.path for a in client.list_artifacts(second.info.run_id)}
    assert {
        "config.json",
        "history.csv",
        "report.json",
        "curves.svg",
        "curves.png",
        "best.keras",
        "spec",
        "diagram.svg",
    } <= artifacts
    assert all("diagram.svg" in {a.path for a in client.list_artifacts(child.info.run_id)} for child in children)
    rows = _metric_rows(client, runs)

    assert main(["runs", "push", str(project.folder / "runs"), str(project.sweep), "--to", f"mlflow:{server}"]) == 0
    assert capsys.readouterr().out.startswith(f"mlflow:{server}: 0 created, 0 updated, 9 unchanged; 0 metric values")
    again = client.search_runs([experiment.experiment_id], max_results=100)
    assert len(again) == 9 and _metric_rows(client, again) == rows


def test_a_hundred_runs_into_a_sqlite_file_exactly_once(project, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    folder = copies(project.first, tmp_path / "copies", 100)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["runs", "push", str(folder), "--to", f"mlflow:{uri}"]) == 0
    assert capsys.readouterr().out.startswith(f"mlflow:{uri}: 100 created, 0 updated, 0 unchanged;")
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("netdsl")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    history = _history(project.first)
    assert len(runs) == 100
    assert all(_pushed_metrics(client, r.info.run_id, history) == history for r in runs[:5] + runs[-5:])
    rows = _metric_rows(client, runs)
    assert rows == 100 * sum(len(v) for v in history.values())
    assert main(["runs", "push", str(folder), "--to", f"mlflow:{uri}"]) == 0
    assert capsys.readouterr().out.startswith(f"mlflow:{uri}: 0 created, 0 updated, 100 unchanged; 0 metric values")
    again = client.search_runs([experiment.experiment_id], max_results=1000)
    assert len(again) == 100 and _metric_rows(client, again) == rows


def _diagram(client, run) -> bytes:
    return Path(client.download_artifacts(run.info.run_id, "diagram.svg")).read_bytes()


def test_the_diagram_is_drawn_from_the_spec_as_the_run_read_it(project, tmp_path, capsys):
    """A run folder holds no diagram: push draws the one `netdsl render` draws of its spec with its -D defines."""
    from mlflow.tracking import MlflowClient

    import netdsl

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["runs", "push", str(project.first), str(project.second), "--to", f"mlflow:{uri}"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"mlflow:{uri}: 2 created, 0 updated, 0 unchanged;") and err == ""
    client = MlflowClient(tracking_uri=uri)
    runs = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("netdsl").experiment_id])}
    spec = project.folder / "tiny.net"
    assert _diagram(client, runs["tiny-1"]) == netdsl.render(spec).pipe(format="svg")
    assert _diagram(client, runs["tiny-2"]) == netdsl.render(spec, defines={"width": 16}).pipe(format="svg")
    assert _diagram(client, runs["tiny-1"]) != _diagram(client, runs["tiny-2"])
    assert not (project.first / "diagram.svg").exists()  # drawn where push stages, not in the run folder
    assert main(["runs", "push", str(project.first), str(project.second), "--to", f"mlflow:{uri}"]) == 0
    assert capsys.readouterr().out.startswith(
        f"mlflow:{uri}: 0 created, 0 updated, 2 unchanged; 0 metric values, 0 files"
    )


def test_a_run_whose_spec_changed_or_went_is_pushed_without_a_diagram(project, tmp_path, capsys):
    """One warning line each, exit 0; the spec back as it trained: the diagram goes with the next push, once."""
    from mlflow.tracking import MlflowClient

    spec = tmp_path / "moved" / "tiny.net"  # the run as if trained from here (the same text, so the same hash)
    spec.parent.mkdir()
    spec.write_bytes((project.folder / "tiny.net").read_bytes())
    run = copies(project.first, tmp_path / "runs", 1) / "copy-0"
    config = json.loads((run / "config.json").read_text())
    config["spec"]["path"] = str(spec)
    (run / "config.json").write_text(json.dumps(config))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)

    def artifacts() -> set[str]:
        (tracked,) = client.search_runs([client.get_experiment_by_name("netdsl").experiment_id])
        return {a.path for a in client.list_artifacts(tracked.info.run_id)}

    spec.write_text(spec.read_text().replace("let width = 8", "let width = 9"))
    assert main(["runs", "push", str(run), "--to", f"mlflow:{uri}"]) == 0
    out, err = capsys.readouterr()
    assert (
        err == f"netdsl runs: warning: {run}: pushed without a diagram: its spec {spec} changed since the run trained\n"
    )
    assert out.startswith(f"mlflow:{uri}: 1 created, 0 updated, 0 unchanged;")
    assert "diagram.svg" not in artifacts() and "best.keras" in artifacts()

    spec.unlink()
    assert main(["runs", "push", str(run), "--to", f"mlflow:{uri}"]) == 0
    out, err = capsys.readouterr()
    assert err == f"netdsl runs: warning: {run}: pushed without a diagram: its spec {spec} is gone\n"
    assert out.startswith(f"mlflow:{uri}: 0 created, 1 updated, 0 unchanged; 0 metric values, 6 files")
    assert "diagram.svg" not in artifacts()

    spec.write_bytes((project.folder / "tiny.net").read_bytes())
    assert main(["runs", "push", str(run), "--to", f"mlflow:{uri}"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith(f"mlflow:{uri}: 0 created, 1 updated, 0 unchanged; 0 metric values, 8 files")
    assert "diagram.svg" in artifacts()
    assert main(["runs", "push", str(run), "--to", f"mlflow:{uri}"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith(f"mlflow:{uri}: 0 created, 0 updated, 1 unchanged; 0 metric values, 0 files")


def test_without_graphviz_the_diagram_is_its_dot_source(project, tmp_path):
    """No `dot` on PATH (a push in a fresh process: nothing drawn before): diagram.dot, the source Graphviz draws."""
    from mlflow.tracking import MlflowClient

    import netdsl

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**os.environ, "PATH": str(tmp_path / "no-programs"), "PYTHONPATH": str(ROOT / "dsl")}
    done = subprocess.run(
        [sys.executable, "-m", "netdsl.cli", "runs", "push", str(project.second), "--to", f"mlflow:{uri}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    client = MlflowClient(tracking_uri=uri)
    (tracked,) = client.search_runs([client.get_experiment_by_name("netdsl").experiment_id])
    assert "diagram.dot" in {a.path for a in client.list_artifacts(tracked.info.run_id)}
    source = Path(client.download_artifacts(tracked.info.run_id, "diagram.dot")).read_text()
    assert source == netdsl.render(project.folder / "tiny.net", defines={"width": 16}).source


def test_tensorboard_scalars_and_hparams_read_back(project, tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util

    target = tmp_path / "tb"
    assert main(["runs", "push", str(project.second), str(project.sweep), "--to", f"tensorboard:{target}"]) == 0
    assert capsys.readouterr().out.startswith(f"tensorboard:{target}: 8 created, 0 updated, 0 unchanged;")
    files = sorted(p.relative_to(target) for p in target.rglob("events.out.tfevents.*"))
    assert [str(f.parent) for f in files] == ["tiny-2", "tiny-sweep-1", *(f"tiny-sweep-1/trials/{k}" for k in range(6))]
    events = EventAccumulator(str(target / "tiny-2"), size_guidance={"tensors": 0})
    events.Reload()
    history = _history(project.second)
    for name, points in history.items():
        read = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in events.Tensors(name)]
        assert read == points  # float64: history.csv's values exactly
    report = json.loads((project.second / "report.json").read_text())
    best_epoch = report["best"]["epoch"]
    summary = {
        tag: float(tensor_util.make_ndarray(events.Tensors(tag)[0].tensor_proto))
        for tag in events.Tags()["tensors"]
        if tag.startswith("hparams/")
    }
    losses = [v for _, v in history["val_loss"]]
    assert summary["hparams/best_val_loss"] == dict(history["val_loss"])[best_epoch] == report["best"]["val_loss"]
    assert summary["hparams/final_val_loss"] == losses[-1] and summary["hparams/min_val_loss"] == min(losses)
    content = events.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert start.session_start_info.hparams["define.width"].number_value == 16
    before = {p: p.read_bytes() for p in target.rglob("events.out.tfevents.*")}
    assert main(["runs", "push", str(project.second), str(project.sweep), "--to", f"tensorboard:{target}"]) == 0
    assert capsys.readouterr().out.startswith(f"tensorboard:{target}: 0 created, 0 updated, 8 unchanged;")
    assert {p: p.read_bytes() for p in target.rglob("events.out.tfevents.*")} == before


def test_a_server_that_is_down_is_one_line_with_its_password_masked(project, capsys):
    uri = f"mlflow:http://user:s3cret@127.0.0.1:{_free_port()}"
    assert main(["runs", "push", str(project.first), "--to", uri]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"mlflow:http://user:***@127.0.0.1:{uri.rsplit(':', 1)[1]}: error: cannot reach MLflow: "
        "[Errno 111] Connection refused\n"
    )
    assert main(["runs", "push", str(project.first), "--to", "wandb:x"]) == 2
    assert capsys.readouterr().err == (
        "netdsl runs: error: --to takes mlflow:<tracking URI> or tensorboard:<folder>; received 'wandb:x'\n"
    )


def test_train_tracks_as_it_trains_then_push_finds_it_complete(project, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    import netdsl
    from netdsl.training.run.epoch_hook import epoch_hook

    uri = f"sqlite:///{tmp_path / 'live.db'}"
    seen: list[tuple[int, str, list[int]]] = []  # (epoch, the tracked run's status, its val_loss epochs) seen

    def look(epoch: int, logs: dict) -> None:  # before this epoch's push: the epochs before it are there
        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name("netdsl")
        tracked = client.search_runs([experiment.experiment_id]) if experiment is not None else []
        seen.append(
            (
                epoch,
                tracked[0].info.status if tracked else "-",
                [m.step for m in client.get_metric_history(tracked[0].info.run_id, "val_loss")] if tracked else [],
            )
        )

    run = netdsl.train(
        project.folder / "tiny.net",
        data=project.folder / "data.npz",
        seed=3,
        out=tmp_path / "runs",
        track=f"mlflow:{uri}",
        callbacks=[epoch_hook(look)],
    )
    assert run.status == "finished" and run.dir is not None
    assert seen == [(1, "-", []), (2, "RUNNING", [1]), (3, "RUNNING", [1, 2])]
    client = MlflowClient(tracking_uri=uri)
    tracked = client.search_runs([client.get_experiment_by_name("netdsl").experiment_id])
    assert len(tracked) == 1 and tracked[0].info.status == "FINISHED"
    assert _pushed_metrics(client, tracked[0].info.run_id, _history(run.dir)) == _history(run.dir)
    assert {"best.keras", "diagram.svg"} <= {a.path for a in client.list_artifacts(tracked[0].info.run_id)}
    rows = _metric_rows(client, tracked)
    assert main(["runs", "push", str(run.dir), "--to", f"mlflow:{uri}"]) == 0
    assert capsys.readouterr().out.startswith(f"mlflow:{uri}: 0 created, 0 updated, 1 unchanged; 0 metric values")
    assert _metric_rows(client, client.search_runs([tracked[0].info.experiment_id])) == rows


def test_sweep_tracks_its_trials_on_a_real_server(project, server, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    assert (
        main(
            [
                "sweep",
                str(project.folder / "tiny.net"),
                "--data",
                str(project.folder / "data.npz"),
                "--trials",
                "2",
                "--epochs",
                "2",
                "--seed",
                "4",
                "-o",
                str(tmp_path / "sweeps"),
                "--track",
                f"mlflow:{server}",
            ]
        )
        == 0
    )
    assert "warning" not in capsys.readouterr().err
    folder = tmp_path / "sweeps" / "tiny-sweep-1"
    client = MlflowClient(tracking_uri=server)
    experiment = client.get_experiment_by_name("netdsl").experiment_id
    mine = [
        r
        for r in client.search_runs([experiment], max_results=1000)
        if r.data.tags["netdsl.folder"].startswith(str(folder))
    ]
    parent = next(r for r in mine if r.data.tags["netdsl.kind"] == "sweep")
    children = sorted(
        (r for r in mine if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id), key=lambda r: r.info.run_name
    )
    assert len(mine) == 3 and [r.info.run_name for r in children] == ["trial 0", "trial 1"]
    assert {r.info.status for r in mine} == {"FINISHED"}
    for k, child in enumerate(children):
        history = _history(folder / "trials" / str(k))
        assert _pushed_metrics(client, child.info.run_id, history) == history
    best = json.loads((folder / "best.json").read_text())
    assert parent.data.params["sweep.best_trial"] == str(best["trial"])
    rows = _metric_rows(client, mine)
    assert main(["runs", "push", str(folder), "--to", f"mlflow:{server}"]) == 0
    assert capsys.readouterr().out.startswith(f"mlflow:{server}: 0 created, 0 updated, 3 unchanged; 0 metric values")
    assert _metric_rows(client, mine) == rows


def test_a_tracking_server_that_is_down_never_fails_the_run_and_push_completes_it(project, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    port = _free_port()  # nothing listens there yet
    uri = f"mlflow:http://127.0.0.1:{port}"
    code = main(
        [
            "train",
            str(project.folder / "tiny.net"),
            "--data",
            str(project.folder / "data.npz"),
            "--seed",
            "1",
            "-o",
            str(tmp_path / "runs"),
            "--progress",
            "none",
            "--track",
            uri,
        ]
    )
    err = capsys.readouterr().err
    assert code == 0
    run = tmp_path / "runs" / "tiny-1"
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == [
        f"netdsl train: warning: {uri}: not tracked (cannot reach MLflow: [Errno 111] Connection "
        f"refused); the run goes on, and `netdsl runs push {run} --to URI` completes it later"
    ]
    assert json.loads((run / "report.json").read_text())["status"] == "finished"

    (tmp_path / "server").mkdir()
    with _mlflow_server(tmp_path / "server", port) as url:  # the server is up again: push completes the run
        assert main(["runs", "push", str(run), "--to", uri]) == 0
        assert capsys.readouterr().out.startswith(f"{uri}: 1 created, 0 updated, 0 unchanged;")
        client = MlflowClient(tracking_uri=url)
        tracked = client.search_runs([client.get_experiment_by_name("netdsl").experiment_id])
        assert len(tracked) == 1 and tracked[0].info.status == "FINISHED"
        assert _pushed_metrics(client, tracked[0].info.run_id, _history(run)) == _history(run)
        rows = _metric_rows(client, tracked)
        assert main(["runs", "push", str(run), "--to", uri]) == 0
        assert capsys.readouterr().out.startswith(f"{uri}: 0 created, 0 updated, 1 unchanged; 0 metric values")
        assert _metric_rows(client, tracked) == rows

    assert (
        main(
            [
                "train",
                str(project.folder / "tiny.net"),
                "--data",
                str(project.folder / "data.npz"),
                "-o",
                str(tmp_path / "runs"),
                "--track",
                "wandb:x",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.endswith(
        "netdsl train: error: --track takes mlflow:<tracking URI> or tensorboard:<folder>; received 'wandb:x'\n"
    )
    assert (
        main(
            [
                "sweep",
                str(project.folder / "tiny.net"),
                "--data",
                str(project.folder / "data.npz"),
                "-o",
                str(tmp_path / "sweeps"),
                "--track",
                "tensorboard:",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.endswith(
        "netdsl sweep: error: --track takes mlflow:<tracking URI> or tensorboard:<folder>; received 'tensorboard:'\n"
    )
    assert not (tmp_path / "sweeps").exists()
