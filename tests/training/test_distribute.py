"""Several devices and several processes train exactly as one device does; faults end the whole job.

Every run is a `netdsl train` subprocess with a timeout, in its own session
so that teardown can end it and anything it started; coordinators listen on
127.0.0.1 only. The reference is a one-device run of the same backend with
the same seed and global batch.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main
from netdsl.training.errors import UsageError
from netdsl.training.scale.launch import reserved_port
from netdsl.training.scale.topology import TF_MULTI_PROCESS, first_host, resolve_topology
from tests.support import paused_cli

# The tests that start training processes are marked `processes` (`make test-fast` leaves them out); a
# moment one acts at is one the process stopped at by itself (tests/support/paused_cli.py).
ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "specs" / "lightning_mlp.net")
LIMIT_S = 120  # any one command


# ------------------------------------------------------------------ flags and environments (no Keras)


def test_processes_come_from_slurm() -> None:
    env = {
        "SLURM_PROCID": "3",
        "SLURM_NTASKS": "4",
        "SLURM_JOB_ID": "81234",
        "SLURM_STEP_NODELIST": "gpu[07-08,11],cpu1",
        "KERAS_BACKEND": "jax",
    }
    topology = resolve_topology(None, None, None, None, None, env)
    assert (topology.num_processes, topology.process_id, topology.source) == (4, 3, "SLURM")
    assert topology.coordinator == f"gpu07:{81234 % 4096 + 61440}"
    assert not topology.writes


def test_processes_come_from_open_mpi() -> None:
    env = {
        "OMPI_COMM_WORLD_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "2",
        "OMPI_MCA_orte_hnp_uri": "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911",
    }
    topology = resolve_topology("jax", None, None, None, None, env)
    assert (topology.num_processes, topology.process_id, topology.source) == (2, 0, "Open MPI")
    assert topology.coordinator == f"10.96.0.1:{(1531576320 // 4096) % 4096 + 61440}"


def test_flags_win_over_the_environment() -> None:
    env = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": "n1"}
    topology = resolve_topology("jax", None, "127.0.0.1:29500", 3, 2, env)
    assert (topology.num_processes, topology.process_id, topology.coordinator, topology.source) == (
        3,
        2,
        "127.0.0.1:29500",
        "flags",
    )
    assert topology.loopback


@pytest.mark.parametrize(
    "nodes, first",
    [("node001", "node001"), ("node001,host2", "node001"), ("node[001-0015],host2", "node001"), ("n[7,9-12]", "n7")],
)
def test_first_host_of_a_slurm_node_list(nodes: str, first: str) -> None:
    assert first_host(nodes) == first


@pytest.mark.parametrize(
    "flags, message",
    [
        (("tensorflow", None, "127.0.0.1:1", 2, 0), TF_MULTI_PROCESS),
        (
            ("jax", None, None, 2, 0),
            "several processes need --coordinator HOST:PORT (process 0's address and a free port)",
        ),
        (("jax", None, "127.0.0.1", 2, 0), "--coordinator takes HOST:PORT, like 127.0.0.1:29500; received '127.0.0.1'"),
        (("jax", None, "h:1", 2, 2), "--process-id must be from 0 to 1 for 2 processes; received 2"),
        (("jax", 0, None, None, None), "--devices takes a number of devices of at least 1; received 0"),
    ],
)
def test_flags_that_do_not_fit_are_one_line_errors(flags: tuple, message: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_topology(*flags, environ={})
    assert info.value.message == message


def test_several_tensorflow_processes_say_to_use_jax(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    data = _data(tmp_path / "d.npz", 64)
    code = main(
        [
            "train",
            SPEC,
            "--train",
            str(data),
            "--processes",
            "2",
            "--backend",
            "tensorflow",
            "-o",
            str(tmp_path / "runs"),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == f"netdsl train: error: {TF_MULTI_PROCESS}\n"
    assert not (tmp_path / "runs").exists()


def test_processes_flag_leaves_the_job_flags_to_the_launcher(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    data = _data(tmp_path / "d.npz", 64)
    code = main(
        [
            "train",
            SPEC,
            "--train",
            str(data),
            "--processes",
            "2",
            "--backend",
            "jax",
            "--coordinator",
            "127.0.0.1:29500",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "netdsl train: error: --processes starts the processes itself: leave out "
        "--coordinator, --num-processes and --process-id\n"
    )


def test_a_reserved_port_is_kept_from_others_and_given_to_its_server() -> None:
    """The launcher's coordinator port: no other program binds it between its pick and the
    coordination service's bind (a free port found and let go could be taken meanwhile)."""
    with reserved_port() as port:
        with socket.socket() as other, pytest.raises(OSError) as refused:  # another program, a plain bind
            other.bind(("127.0.0.1", port))
        assert refused.value.errno == errno.EADDRINUSE
        with socket.socket() as server:  # the server it is meant for binds with SO_REUSEADDR, as gRPC does
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
            server.listen()
            with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
                accepted, _ = server.accept()
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"
                accepted.close()


# ------------------------------------------------------------------ running jobs


@contextlib.contextmanager
def _started() -> Iterator[Callable[..., subprocess.Popen]]:
    """Start `netdsl` subprocesses; every one (and its session) is ended on the way out."""
    started: list[subprocess.Popen] = []

    def start(*args: str, log: Path, stop_at_epoch: int | None = None) -> subprocess.Popen:
        """`netdsl ARGS`; with `stop_at_epoch`, stopped by itself (SIGSTOP) as that epoch begins."""
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
        env.pop("KERAS_BACKEND", None)
        if stop_at_epoch is None:
            argv = [sys.executable, "-m", "netdsl.cli", *args]
        else:  # tests.support, importable from the project's root wherever pytest started
            argv = paused_cli.command(stop_at_epoch, 0, *args)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        process = subprocess.Popen(
            argv,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        started.append(process)
        return process

    try:
        yield start
    finally:
        for process in started:
            if process.poll() is None:
                with _suppress():
                    os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture
def jobs() -> Iterator[Callable[..., subprocess.Popen]]:
    with _started() as start:
        yield start


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is ProcessLookupError


def _data(path: Path, n: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    np.savez(path, image=rng.random((n, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, n))
    return path


def _train(jobs, tmp_path: Path, name: str, *flags: str, data: Path, epochs: int = 2) -> tuple[int, str, Path]:
    log = tmp_path / f"{name}.log"
    process = jobs(
        "train",
        SPEC,
        "--train",
        str(data),
        "--epochs",
        str(epochs),
        "--seed",
        "3",
        "--progress",
        "none",
        "-o",
        str(tmp_path / name),
        *flags,
        log=log,
    )
    code = process.wait(timeout=LIMIT_S)
    return code, log.read_text(), tmp_path / name


def _weights(run_dir: Path) -> list[np.ndarray]:
    import keras

    import netdsl  # noqa: F401 - registers netdsl's classes

    (folder,) = [p for p in run_dir.iterdir() if p.is_dir()]
    return keras.saving.load_model(folder / "model.keras", safe_mode=True).get_weights()


def _largest_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    assert [w.shape for w in a] == [w.shape for w in b]
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def _history_epochs(run_dir: Path) -> list[int]:
    (folder,) = [p for p in run_dir.iterdir() if p.is_dir()]
    lines = (folder / "history.csv").read_text().splitlines()[1:]
    return [int(line.split(",")[0]) for line in lines]


@pytest.fixture
def port() -> Iterator[int]:
    """A coordinator port, kept from other processes until the test ends (launch.reserved_port)."""
    with reserved_port() as number:
        yield number


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _data(tmp_path_factory.mktemp("data") / "d.npz", 256)


@pytest.fixture(scope="module")
def jax_one_device(tmp_path_factory: pytest.TempPathFactory, small_data: Path) -> list[np.ndarray]:
    """The weights of one JAX device on small_data (seed 3, 2 epochs): the reference of the two tests
    below that train that way, trained once for both (each compares its own job's weights with it)."""
    folder = tmp_path_factory.mktemp("jax_one_device")
    with _started() as start:
        code, log, one = _train(start, folder, "one", "--backend", "jax", data=small_data)
    assert code == 0, log
    return _weights(one)


@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_two_devices_train_as_one(
    jobs, tmp_path: Path, small_data: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "jax":
        reference = request.getfixturevalue("jax_one_device")
    else:
        code, log, one = _train(jobs, tmp_path, "one", "--backend", backend, data=small_data)
        assert code == 0, log
        reference = _weights(one)
    code, log, two = _train(jobs, tmp_path, "two", "--backend", backend, "--devices", "2", data=small_data)
    assert code == 0, log
    assert _largest_difference(reference, _weights(two)) <= 1e-5
    # A MirroredStrategy is fed one step per execution (its placement says so); JAX's DataParallel, the default.
    (folder,) = [p for p in two.iterdir() if p.is_dir()]
    config = json.loads((folder / "config.json").read_text())
    assert (config["settings"]["steps_per_execution"], config["settings_from"]["steps_per_execution"]) == (
        (1, "default for tensorflow in a distributed job") if backend == "tensorflow" else (32, "default for jax")
    )


# One process that stops before training: it runs in the parallel stage.
def test_steps_per_execution_on_two_tensorflow_devices_is_one_line(jobs, tmp_path: Path, small_data: Path) -> None:
    """Keras fails inside fit ("2 root error(s) found", blamed on the data); netdsl says it at the model,
    before a run folder is made."""
    text = Path(SPEC).read_text().replace("epochs = 1", "epochs = 1\n    steps_per_execution = 4")
    spec = tmp_path / "mlp.net"
    spec.write_text(text)
    log = tmp_path / "two.log"
    process = jobs(
        "train",
        str(spec),
        "--train",
        str(small_data),
        "--progress",
        "none",
        "-o",
        str(tmp_path / "runs"),
        "--backend",
        "tensorflow",
        "--devices",
        "2",
        log=log,
    )
    assert process.wait(timeout=LIMIT_S) == 1
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("model lightning_mlp"))
    import keras

    assert log.read_text().splitlines()[0] == (
        f"{spec}:{line}:1: error: 'lightning_mlp' cannot train on several TensorFlow devices: "
        f"steps_per_execution = 4: Keras {keras.__version__} feeds TensorFlow's MirroredStrategy one step per "
        f"execution; set steps_per_execution = 1, or train with --backend jax --devices 2"
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.processes
@pytest.mark.slow
def test_two_processes_train_as_one_device(
    jobs, tmp_path: Path, small_data: Path, port: int, jax_one_device: list[np.ndarray]
) -> None:
    reference = jax_one_device
    started = time.monotonic()
    code, log, launched = _train(jobs, tmp_path, "launched", "--backend", "jax", "--processes", "2", data=small_data)
    assert code == 0, log
    assert len(list(launched.iterdir())) == 1  # one run folder
    assert _largest_difference(reference, _weights(launched)) <= 1e-6

    commands = [
        jobs(
            "train",
            SPEC,
            "--train",
            str(small_data),
            "--epochs",
            "2",
            "--seed",
            "3",
            "--progress",
            "none",
            "-o",
            str(tmp_path / "by_hand"),
            "--backend",
            "jax",
            "--coordinator",
            f"127.0.0.1:{port}",
            "--num-processes",
            "2",
            "--process-id",
            str(i),
            log=tmp_path / f"by_hand{i}.log",
        )
        for i in (0, 1)
    ]
    assert [c.wait(timeout=LIMIT_S) for c in commands] == [0, 0], (tmp_path / "by_hand0.log").read_text()
    assert time.monotonic() - started <= 2 * LIMIT_S
    assert len(list((tmp_path / "by_hand").iterdir())) == 1
    assert _largest_difference(reference, _weights(tmp_path / "by_hand")) <= 1e-6
    assert "status: finished (2 of 2 epochs" in (tmp_path / "by_hand0.log").read_text()
    assert "status:" not in (tmp_path / "by_hand1.log").read_text()  # only process 0 reports


def _two_by_hand(jobs, tmp_path: Path, data: Path, runs: Path, epochs: int, port: int) -> list[subprocess.Popen]:
    """A job of two processes started one by one; process 1 stops itself (SIGSTOP) as epoch 3 begins, and
    process 0 cannot finish that epoch's first step without it: history.csv then holds epochs 1 and 2, on any
    machine. (Watching history.csv and signalling when epoch 2 appeared lost the race on a loaded one.)"""
    flags = [
        "train",
        SPEC,
        "--train",
        str(data),
        "--epochs",
        str(epochs),
        "--seed",
        "3",
        "--progress",
        "none",
        "-o",
        str(runs),
        "--backend",
        "jax",
        "--coordinator",
        f"127.0.0.1:{port}",
        "--num-processes",
        "2",
    ]
    return [
        jobs(*flags, "--process-id", str(i), log=tmp_path / f"p{i}.log", stop_at_epoch=3 if i else None) for i in (0, 1)
    ]


@pytest.mark.processes
@pytest.mark.slow
def test_each_process_reads_its_own_file(jobs, tmp_path: Path, small_data: Path) -> None:
    """Process i's file holds rows i*16..(i+1)*16 of every batch of 32: the same batches as one device reads."""
    spec = tmp_path / "unshuffled.net"
    spec.write_text(Path(SPEC).read_text().replace("batch_size = 32", "batch_size = 32\n    shuffle = false"))
    data = np.load(small_data)
    batches = {k: data[k].reshape(-1, 2, 16, *data[k].shape[1:]) for k in data.files}
    for i in (0, 1):
        np.savez(tmp_path / f"part-{i}.npz", **{k: v[:, i].reshape(-1, *v.shape[3:]) for k, v in batches.items()})
    runs = []
    for name, flags, source in (("one", [], small_data), ("own", ["--processes", "2"], "part-{process}.npz")):
        process = jobs(
            "train",
            str(spec),
            "--train",
            str(tmp_path / source),
            "--epochs",
            "2",
            "--seed",
            "3",
            "--progress",
            "none",
            "-o",
            str(tmp_path / name),
            "--backend",
            "jax",
            *flags,
            log=tmp_path / f"{name}.log",
        )
        assert process.wait(timeout=LIMIT_S) == 0, (tmp_path / f"{name}.log").read_text()
        runs.append(_weights(tmp_path / name))
    assert _largest_difference(*runs) <= 1e-6


@pytest.mark.processes
@pytest.mark.slow
def test_a_killed_process_ends_the_job_and_the_run_resumes(jobs, tmp_path: Path, port: int) -> None:
    data, runs = _data(tmp_path / "big.npz", 1024, seed=1), tmp_path / "runs"
    first, second = _two_by_hand(jobs, tmp_path, data, runs, epochs=6, port=port)
    paused_cli.wait_until_stopped(second.pid, LIMIT_S)
    os.killpg(second.pid, signal.SIGKILL)
    killed = time.monotonic()
    code = first.wait(timeout=LIMIT_S)
    assert code != 0
    assert time.monotonic() - killed <= 30
    log = (tmp_path / "p0.log").read_text()
    assert "netdsl: process 0 stops: process 1 stopped: it was killed or lost" in log, log
    assert _history_epochs(runs) == [1, 2]

    code, log, _ = _train(
        jobs, tmp_path, "runs", "--backend", "jax", "--processes", "2", "--resume", "auto", data=data, epochs=6
    )
    assert code == 0, log
    assert "(resuming after epoch 2)" in log
    assert _history_epochs(runs) == [1, 2, 3, 4, 5, 6]
    code, log, whole = _train(jobs, tmp_path, "whole", "--backend", "jax", "--processes", "2", data=data, epochs=6)
    assert code == 0, log
    assert _largest_difference(_weights(whole), _weights(runs)) <= 1e-6


@pytest.mark.processes
@pytest.mark.slow
def test_a_hanging_process_ends_the_job_and_is_named(jobs, tmp_path: Path, port: int) -> None:
    data, runs = _data(tmp_path / "big.npz", 1024, seed=1), tmp_path / "runs"
    first, second = _two_by_hand(jobs, tmp_path, data, runs, epochs=6, port=port)
    paused_cli.wait_until_stopped(second.pid, LIMIT_S)  # frozen: alive to the kernel, silent to everyone else
    stopped = time.monotonic()
    code = first.wait(timeout=LIMIT_S)
    assert code != 0
    assert time.monotonic() - stopped <= 30
    log = (tmp_path / "p0.log").read_text()
    # Frozen whole, process 1 also stops its heartbeats: whichever is seen first names it.
    assert (
        "netdsl: process 0 stops: process 1 hangs (last seen at epoch 3" in log
        or "netdsl: process 0 stops: process 1 stopped: it was killed or lost" in log
    ), log


@pytest.mark.processes
@pytest.mark.slow
def test_an_unreadable_shard_ends_both_processes_with_the_error(jobs, tmp_path: Path) -> None:
    _data(tmp_path / "part-0.npz", 128)
    (tmp_path / "part-1.npz").write_bytes(b"PK\x03\x04 not really a zip file")
    started = time.monotonic()
    code, log, runs = _train(
        jobs, tmp_path, "runs", "--backend", "jax", "--processes", "2", data=tmp_path / "part-{process}.npz"
    )
    assert code == 1
    assert time.monotonic() - started <= LIMIT_S
    shard = tmp_path / "part-1.npz"
    assert f"process 1: {shard}: error: not a readable .npz file" in log
    # Each process checks its data before it joins the job (cli/train.run), so process 1 leaves
    # while process 0 still waits to join: the launcher can only have seen process 1 exit. (An
    # error raised after joining is the "either process" rule of docs/scaling.md instead.)
    assert "netdsl: process 1 failed (exit 1); stopping process 0" in log, log


@pytest.mark.processes
@pytest.mark.slow
def test_shards_of_unequal_length_are_refused_before_training(jobs, tmp_path: Path) -> None:
    _data(tmp_path / "part-0.npz", 128)
    _data(tmp_path / "part-1.npz", 96)
    code, log, runs = _train(
        jobs, tmp_path, "runs", "--backend", "jax", "--processes", "2", data=tmp_path / "part-{process}.npz"
    )
    assert code == 1
    assert (
        "error: the processes' train data differ in length (process 0: 128, process 1: 96): every process "
        "runs the same number of steps, so each needs a share of equal length"
    ) in log


@pytest.mark.processes
@pytest.mark.slow
def test_sigterm_to_the_launcher_stops_every_process(jobs, tmp_path: Path) -> None:
    data = _data(tmp_path / "big.npz", 1024, seed=1)
    runs = tmp_path / "runs"
    launcher = jobs(
        "train",
        SPEC,
        "--train",
        str(data),
        "--epochs",
        "50",
        "--seed",
        "3",
        "--progress",
        "none",
        "-o",
        str(runs),
        "--backend",
        "jax",
        "--processes",
        "2",
        log=tmp_path / "launcher.log",
    )
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline and not list(runs.glob("*/history.csv")):
        time.sleep(0.1)
    children = _children(launcher.pid)
    assert len(children) == 2
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=30) == 130
    assert "netdsl: SIGTERM received: stopping all 2 processes" in (tmp_path / "launcher.log").read_text()
    assert not [pid for pid in children if _alive(pid)]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ------------------------------------------------------------------ the step clock, alone


class _FakeStore:
    """The two calls of JAX's coordination client the clock uses, answering from a dict."""

    def __init__(self, values: dict[str, str]):
        self.values = values

    def key_value_dir_get(self, prefix: str) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.values.items() if k.startswith(prefix)]

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None:
        self.values[key] = value


def test_the_step_clock_names_the_process_that_lags(monkeypatch: pytest.MonkeyPatch) -> None:
    from netdsl.training.scale import faults
    from netdsl.training.scale.topology import Topology

    # store messages are sealed with the job's secret (an unsealed one is another account's: ignored)
    store = _FakeStore(
        {
            key: faults.seal(key, value)
            for key, value in {
                "netdsl/progress/1": "12|epoch 3, step 5",
                "netdsl/progress/2": "40|epoch 3, step 18",
            }.items()
        }
    )
    monkeypatch.setitem(faults._state, "topology", Topology("jax", None, 3, 0, "127.0.0.1:1"))
    monkeypatch.setitem(faults._state, "client", store)
    monkeypatch.setitem(faults._state, "steps", 0)
    faults._mark("epoch 3, step 18", armed=True)
    assert faults.opened("netdsl/progress/0", store.values["netdsl/progress/0"]) == "1|epoch 3, step 18"
    assert faults._stalled() is None
    monkeypatch.setitem(faults._state, "last", time.monotonic() - faults.STEP_TIMEOUT_S - 1)
    assert faults._stalled() > faults.STEP_TIMEOUT_S
    monkeypatch.setitem(faults._state, "steps", 41)
    assert faults._laggard(store, [0, 1, 2], 0) == "process 1 hangs (last seen at epoch 3, step 5)"
    # Before a phase's first step (it compiles) the clock waits longer.
    monkeypatch.setitem(faults._state, "armed", False)
    assert faults._stalled() is None
    monkeypatch.setitem(faults._state, "last", None)  # outside training: no clock
    assert faults._stalled() is None
