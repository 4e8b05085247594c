"""`--processes N`: start N processes of one job on this machine, as `torchrun --nproc_per_node` does.

    code = launch(["train", "mlp.net", "--data", "d.npz", "--backend", "jax"], processes=2)

Each child runs the same command with `--coordinator 127.0.0.1:PORT
--num-processes N --process-id I` (a free loopback port; the coordination
service listens on loopback only) and the job's secret in its environment
(`NETDSL_JOB_SECRET`, fresh for each job): loopback is shared by every
account of the machine, so each process proves the secret to the others
before training (faults.prove) and another program cannot take its place. The launcher imports nothing heavy and
only watches:

- all children exit 0: exit 0;
- one exits non-zero or is killed: it says which and how, ends the others
  (SIGTERM, then SIGKILL after `GRACE_S`) and exits 1 — or 130 when the run
  was stopped on purpose;
- SIGINT (Ctrl-C) or SIGTERM to the launcher: passed on as SIGTERM to every
  child (each writes a resumable state), SIGKILL after `GRACE_S`; exit 130.

No child outlives the launcher: every path out of `launch` ends them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

from netdsl.training.run.signals import EXIT_STOPPED
from netdsl.training.scale.faults import SECRET_ENV  # (faults imports nothing heavy until a job joins)

__all__ = ["launch", "reserved_port", "GRACE_S"]

GRACE_S = 10.0
POLL_S = 0.1


@contextlib.contextmanager
def reserved_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A TCP port of `host` picked by the kernel and kept bound while the block runs.

    A port found free and let go can be taken by another process before the server meant
    for it binds it (a race). Here the socket stays bound, not listening, with SO_REUSEADDR
    (and SO_REUSEPORT): a server that binds with SO_REUSEADDR, as gRPC (JAX's coordination
    service), PostgreSQL, chromedriver and torch's TCPStore do, still binds and listens on
    it, while the kernel gives it to no one else (no bind(0), no outgoing connection, no
    plain bind). Give the port to the server inside the block."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, 0))
        yield sock.getsockname()[1]


def launch(command: Sequence[str], processes: int, env: dict | None = None) -> int:
    """Run `netdsl <command>` as `processes` processes of one job; the job's exit code."""
    with reserved_port() as port:  # held until the job ends: no other process takes it meanwhile
        return _launch(command, processes, env, f"127.0.0.1:{port}")


def _launch(command: Sequence[str], processes: int, env: dict | None, coordinator: str) -> int:
    env = dict(os.environ if env is None else env)
    env[SECRET_ENV] = secrets.token_hex(32)  # readable by this user only (/proc/PID/environ is 0400)
    children: list[subprocess.Popen] = []
    stopping: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, frame: stopping.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        for rank in range(processes):
            children.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "netdsl.cli",
                        *command,
                        "--coordinator",
                        coordinator,
                        "--num-processes",
                        str(processes),
                        "--process-id",
                        str(rank),
                    ],
                    env=env,
                )
            )
        return _watch(children, stopping)
    finally:
        _end(children)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _watch(children: list[subprocess.Popen], stopping: list[int]) -> int:
    while True:
        if stopping:
            name = signal.Signals(stopping[0]).name
            print(f"netdsl: {name} received: stopping all {len(children)} processes", file=sys.stderr, flush=True)
            _end(children, signal.SIGTERM)
            return EXIT_STOPPED
        codes = [child.poll() for child in children]
        if all(code == 0 for code in codes):
            return 0
        for rank, code in enumerate(codes):
            if code not in (None, 0):
                running = [r for r, c in enumerate(codes) if c is None]
                others = f"; stopping process {', '.join(map(str, running))}" if running else ""
                print(f"netdsl: process {rank} {_how(code)}{others}", file=sys.stderr, flush=True)
                _end(children, signal.SIGTERM)
                return EXIT_STOPPED if code == EXIT_STOPPED else 1
        time.sleep(POLL_S)


def _how(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    if code == EXIT_STOPPED:
        return "was stopped (exit 130)"
    return f"failed (exit {code})"


def _end(children: list[subprocess.Popen], first: int = signal.SIGKILL) -> None:
    """Send `first` to every running child; SIGKILL whoever is still there after GRACE_S; reap all."""
    for child in children:
        if child.poll() is None:
            child.send_signal(first)
    deadline = time.monotonic() + (GRACE_S if first != signal.SIGKILL else 0)
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
