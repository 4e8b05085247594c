"""Another local account cannot join a multi-process job (issue 22, security review 2026-12 finding 3).

JAX's coordination service has no authentication and loopback is shared by every account: each process
proves the job's secret (`NETDSL_JOB_SECRET`, made by the `--processes` launcher) before training, and
every message read from the job's store is sealed with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from netdsl.training.scale import faults
from netdsl.training.scale.launch import reserved_port

ROOT = Path(__file__).resolve().parents[2]


class Store:
    """The coordination service's key-value store as JAX's client sees it (blocking gets time out)."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.changed = threading.Condition()

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None:
        with self.changed:
            self.data[key] = value
            self.changed.notify_all()

    def blocking_key_value_get(self, key: str, timeout_ms: int) -> str:
        with self.changed:
            if not self.changed.wait_for(lambda: key in self.data, timeout_ms / 1000):
                raise TimeoutError(key)
            return self.data[key]


def test_processes_holding_the_secret_prove_it_to_each_other(monkeypatch):
    monkeypatch.setenv(faults.SECRET_ENV, "s3cret")
    store = Store()
    results = []
    threads = [
        threading.Thread(target=lambda me=me: results.append(faults.prove(me, 3, store, timeout_s=10)))
        for me in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [None, None, None]
    assert sorted(store.data) == ["netdsl/nonce", "netdsl/proof/0", "netdsl/proof/1", "netdsl/proof/2"]


def test_a_process_without_the_secret_is_named(monkeypatch):
    monkeypatch.setenv(faults.SECRET_ENV, "s3cret")
    store = Store()
    # the intruder takes process 1's place: it can read the nonce but seals with a guess
    threading.Timer(
        0.2,
        lambda: store.key_value_set(
            "netdsl/proof/1", "0" * 64 + "|" + store.blocking_key_value_get("netdsl/nonce", 5000)
        ),
    ).start()
    assert faults.prove(0, 2, store, timeout_s=10) == 1
    assert faults.prove(0, 2, Store(), timeout_s=0.2) == 1  # no proof at all


def test_sealed_messages_open_only_with_the_secret(monkeypatch):
    monkeypatch.setenv(faults.SECRET_ENV, "s3cret")
    sealed = faults.seal("netdsl/failed/1", "process 1: out of memory")
    assert faults.opened("netdsl/failed/1", sealed) == "process 1: out of memory"
    assert faults.opened("netdsl/failed/2", sealed) is None  # bound to its key
    assert faults.opened("netdsl/failed/1", "\x1b]0;PWNED\x07 process 1: text of the intruder's choosing") is None
    monkeypatch.setenv(faults.SECRET_ENV, "another")
    assert faults.opened("netdsl/failed/1", sealed) is None


INTRUDER = """
import sys, time
from jax._src.lib import _jax
client = _jax.get_distributed_runtime_client(f"127.0.0.1:{sys.argv[1]}", 1, init_timeout=90,
                                             use_compression=True, heartbeat_timeout=10)
client.connect()
print("intruder: joined the job as process 1", flush=True)
nonce = client.blocking_key_value_get("netdsl/nonce", 90_000)
client.key_value_set("netdsl/proof/1", "0" * 64 + "|" + nonce)
client.key_value_set("netdsl/failed/1", "\\x1b]0;PWNED\\x07\\x1b[31mprocess 1: text of the intruder's choosing\\x1b[0m")
time.sleep(20)
"""


@pytest.mark.slow
@pytest.mark.processes  # two processes with bounded waits
def test_the_reviews_intruder_cannot_take_a_processs_place(tmp_path):
    pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "good.npz", x=rng.normal(size=(40, 4)).astype("float32"), y=rng.integers(0, 3, 40))
    (tmp_path / "spec.net").write_text(
        "model clf {\n  input x: (4,)\n  output y = x -> dense(3)\n  train {\n"
        "    optimizer = adam\n    loss = sparse_categorical_crossentropy(from_logits"
        "=true)\n    epochs = 1\n    batch_size = 8\n  }\n}\n"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1", NETDSL_JOB_SECRET="the job's own")
    env.pop("KERAS_BACKEND", None)
    with reserved_port() as port:  # no other process takes it before process 0 binds it
        _intrude(tmp_path, env, port)


def _intrude(tmp_path, env: dict, port: int) -> None:
    started = []
    try:
        first = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "netdsl.cli",
                "train",
                "spec.net",
                "--data",
                "good.npz",
                "--backend",
                "jax",
                "--coordinator",
                f"127.0.0.1:{port}",
                "--num-processes",
                "2",
                "--process-id",
                "0",
                "-o",
                "runs",
                "--progress",
                "none",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(first)
        intruder_env = {k: v for k, v in env.items() if k != "NETDSL_JOB_SECRET"}
        intruder = subprocess.Popen(
            [sys.executable, "-c", INTRUDER, str(port)],
            cwd=tmp_path,
            env=intruder_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(intruder)
        out, _ = first.communicate(timeout=180)
        assert first.returncode == 1
        text = out.decode()
        assert text.splitlines()[-1] == (
            "netdsl: process 0 stops: process 1 did not prove the job's secret: another program has joined the job's "
            "coordination service, or the processes were given different NETDSL_JOB_SECRET values"
        ), text
        assert "\x1b" not in text and "\x07" not in text and "intruder's choosing" not in text
        assert not (tmp_path / "runs").exists()  # nothing was written: the job never trained
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
