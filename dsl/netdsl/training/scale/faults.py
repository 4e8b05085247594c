"""When one process of a job fails, every other one stops within seconds and says which and how.

Left to itself a JAX job handles failures slowly: a Python exception in one
process leaves the others waiting in the next collective (and the failed
one at the shutdown barrier, 300 s by default); a killed process is noticed
after the 100 s heartbeat timeout; a hanging one never. Here:

- a process that raises reports `process I: <the error>` in the job's
  key-value store (JAX's coordination service) and leaves with `os._exit`,
  skipping the shutdown barrier (`fail`);
- a watchdog thread in every process polls the store twice a second: a
  failure reported by another process, a process the service no longer
  sees alive (killed: its heartbeats stop), or the service itself gone
  (process 0 killed) ends this process too, naming the process and why;
- `step_clock()` marks every finished batch; when no step finishes for
  `STEP_TIMEOUT_S` (the step's compilation is allowed longer) the process
  that lags behind the others is named as hanging, and the job ends.

The coordination service has no authentication of its own, and loopback is
shared by every account of the machine. So every process proves that it holds
the job's secret (`NETDSL_JOB_SECRET`, made by the `--processes` launcher and
passed in its children's environment, which only this user can read): process
0 publishes a fresh nonce, every process publishes an HMAC of it bound to its
process id, and every process checks every other one's before training. Every
message netdsl reads from the store is sealed the same way, so a program that
joins the service without the secret can stop a job (as any process of it can)
but cannot take a process's place or put its own words in netdsl's mouth.
Without the variable (a job started by hand) the key is empty: docs/scaling.md
says where the trust boundary then lies.

JAX installs a SIGTERM handler of its own (preemption sync) that ignores the
signal; it is put back to the default here, so `kill` and the launcher's
SIGTERM stop a process (the run's own handler takes over while it trains).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import signal
import sys
import threading
import time
from typing import Any

from netdsl.errors import printable

__all__ = [
    "watch",
    "fail",
    "fail_after",
    "leave",
    "step_clock",
    "one_line",
    "prove",
    "seal",
    "opened",
    "STEP_TIMEOUT_S",
    "SECRET_ENV",
]

INIT_TIMEOUT_S = 120  # every process must have joined by then (JAX's default: 300)
HEARTBEAT_S = 10  # a silent process is declared dead after this (JAX's default: 100)
SHUTDOWN_S = 10  # a finished process waits this long for the others (JAX's default: 300)
STEP_TIMEOUT_S = float(os.environ.get("NETDSL_STEP_TIMEOUT", "20"))
COMPILE_TIMEOUT_S = float(os.environ.get("NETDSL_COMPILE_TIMEOUT", "300"))  # the first step of a phase
POLL_S = 0.5
FAILED, PROGRESS, DONE = "netdsl/failed/", "netdsl/progress/", "netdsl/done"
NONCE, PROOF = "netdsl/nonce", "netdsl/proof/"
SECRET_ENV = "NETDSL_JOB_SECRET"
UNPROVEN = (
    "did not prove the job's secret: another program has joined the job's coordination service, "
    "or the processes were given different NETDSL_JOB_SECRET values"
)
DONE_WAIT_MS = 24 * 3600 * 1000  # writing the run folder may take long; a dead process 0 is seen by the watchdog

_state: dict[str, Any] = {
    "topology": None,
    "client": None,
    "leaving": False,
    "last": None,
    "armed": False,
    "where": "starting",
    "published": 0.0,
    "steps": 0,
}
_lock = threading.Lock()


def watch(topology: Any) -> None:
    """Start the watchdog for this process of the job (after `jax.distributed.initialize`)."""
    from jax._src import distributed  # the client of the coordination service JAX already holds

    _state["topology"], _state["client"] = topology, distributed.global_state.client
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    unproven = prove(topology.process_id, topology.num_processes, _state["client"])
    if unproven is not None:
        _stop_with(f"netdsl: process {topology.process_id} stops: process {unproven} {UNPROVEN}")
    _mark("joining the job", armed=False)  # a hang before the first step: caught after COMPILE_TIMEOUT_S
    threading.Thread(target=_watchdog, name="netdsl-watchdog", daemon=True).start()


def prove(me: int, processes: int, client: Any, timeout_s: float = INIT_TIMEOUT_S) -> int | None:
    """Prove this process holds the job's secret and check every other one's proof; the first
    process that did not prove it, or None."""
    if me == 0:
        client.key_value_set(NONCE, secrets.token_hex(16), allow_overwrite=True)
    wait_ms = int(timeout_s * 1000)
    try:
        nonce = client.blocking_key_value_get(NONCE, wait_ms)
    except Exception:
        return 0
    client.key_value_set(PROOF + str(me), seal(PROOF + str(me), nonce), allow_overwrite=True)
    for other in range(processes):
        if other == me:
            continue
        try:
            proof = client.blocking_key_value_get(PROOF + str(other), wait_ms)
        except Exception:
            return other
        if opened(PROOF + str(other), proof) != nonce:
            return other
    return None


def seal(key: str, message: str) -> str:
    """`message` with the HMAC-SHA256 of (key, message) under the job's secret in front."""
    secret = os.environ.get(SECRET_ENV, "").encode()
    mac = hmac.new(secret, f"{key}\0{message}".encode(), hashlib.sha256).hexdigest()
    return f"{mac}|{message}"


def opened(key: str, value: str) -> str | None:
    """The message of a sealed value, or None when it was not sealed with the job's secret."""
    mac, _, message = str(value).partition("|")
    return message if hmac.compare_digest(seal(key, message).partition("|")[0], mac) else None


def fail(message: str, code: int = 1) -> None:
    """Report this process's failure to the others, print it, and leave at once (no shutdown barrier)."""
    topology = _state["topology"]
    if topology is not None:
        _publish(FAILED + str(topology.process_id), message)
    print(printable(message), file=sys.stderr, flush=True)
    _exit(code)


def fail_after(exc: BaseException, me: str) -> None:
    """This process's step failed (usually a collective cut short by another process's end):
    name the process that failed first, when the job's store or its heartbeats tell within
    a heartbeat timeout, and leave."""
    cause = _cause_elsewhere(HEARTBEAT_S + 3)
    if cause is not None:
        _stop_with(f"netdsl: {me} stops: {cause}")
    fail(f"{me}: training failed: {one_line(exc)}")


def _cause_elsewhere(seconds: float) -> str | None:
    topology, client = _state["topology"], _state["client"]
    if topology is None:
        return None
    me, everyone = topology.process_id, list(range(topology.num_processes))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            failed = [
                _message(key, value)
                for key, value in client.key_value_dir_get(FAILED)
                if key.rsplit("/", 1)[-1] != str(me)
            ]
            if failed:
                return failed[0]
            gone = [p for p in everyone if p not in client.get_live_nodes(everyone)]
        except Exception:
            return f"process 0 (the coordinator at {topology.coordinator}) stopped answering: it was killed or lost"
        if gone:
            return f"process {gone[0]} stopped: it was killed or lost (no heartbeat for {HEARTBEAT_S} s)"
        time.sleep(0.25)
    return None


def _stop_with(message: str) -> None:
    _state["leaving"] = True  # the watchdog must not print a second message
    print(printable(message), file=sys.stderr, flush=True)
    _exit(1)


def leave() -> None:
    """Leave a finished job together. Process 0 may still be writing the run folder when the
    others finish: they wait for its word (the watchdog still ends them if it dies), then every
    process passes JAX's shutdown barrier at about the same moment."""
    import jax

    topology, client = _state["topology"], _state["client"]
    if topology.writes:
        _publish(DONE, "1")
    else:
        client.blocking_key_value_get(DONE, DONE_WAIT_MS)
    _state["leaving"] = True  # a process leaving now is no failure
    try:
        jax.distributed.shutdown()
    except Exception:
        pass


def one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def step_clock() -> Any:
    """A Keras callback marking this process's progress for the watchdog (Keras loaded by now)."""
    import keras

    class StepClock(keras.callbacks.Callback):
        epoch = 0

        def on_train_begin(self, logs: Any = None) -> None:
            _mark("training starts", armed=False)

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.epoch = epoch + 1
            _mark(f"epoch {epoch + 1}, step 1", armed=False)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            _mark(f"epoch {self.epoch}, step {batch + 2}", armed=True)

        def on_test_begin(self, logs: Any = None) -> None:
            _mark("evaluation starts", armed=False)

        def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
            _mark(f"evaluation step {batch + 2}", armed=True)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            _mark(f"end of epoch {epoch + 1}", armed=False)

        def on_train_end(self, logs: Any = None) -> None:
            with _lock:
                _state["last"] = None  # no clock outside training

    return StepClock()


# ------------------------------------------------------------------ internals


def _mark(where: str, armed: bool) -> None:
    now = time.monotonic()
    with _lock:
        _state["last"], _state["where"], _state["armed"] = now, where, armed
        _state["steps"] += 1
        due = now - _state["published"] >= 1.0
        if due:
            _state["published"] = now
    if due and _state["topology"] is not None:
        _publish(PROGRESS + str(_state["topology"].process_id), f"{_state['steps']}|{where}")


def _watchdog() -> None:
    topology, client = _state["topology"], _state["client"]
    me, everyone = topology.process_id, list(range(topology.num_processes))
    while True:
        time.sleep(POLL_S)
        if _state["leaving"]:
            return
        try:
            failed = [
                (key, value) for key, value in client.key_value_dir_get(FAILED) if key.rsplit("/", 1)[-1] != str(me)
            ]
            live = client.get_live_nodes(everyone)
        except Exception as exc:  # the service is gone: process 0 died (or this one was cut off)
            _stop(
                me,
                f"process 0 (the coordinator at {topology.coordinator}) stopped answering "
                f"({one_line(exc)}): it was killed or lost",
            )
            return
        if failed:
            _stop(me, _message(*failed[0]))
            return
        gone = [p for p in everyone if p not in live]
        if gone:
            _stop(me, f"process {gone[0]} stopped: it was killed or lost (no heartbeat for {HEARTBEAT_S} s)")
            return
        stalled = _stalled()
        if stalled is not None:
            message = f"{_laggard(client, everyone, me)}: no training step finished for {stalled:.0f} s"
            _publish(FAILED + str(me), message)
            _stop(me, message)
            return


def _stalled() -> float | None:
    with _lock:
        last, armed = _state["last"], _state["armed"]
    if last is None:
        return None
    waited = time.monotonic() - last
    return waited if waited > (STEP_TIMEOUT_S if armed else COMPILE_TIMEOUT_S) else None


def _laggard(client: Any, everyone: list[int], me: int) -> str:
    """The process with the fewest steps done: the one the others wait for."""
    progress = {}
    try:
        for key, value in client.key_value_dir_get(PROGRESS):
            steps, _, where = (opened(key, value) or "").partition("|")
            progress[int(key.rsplit("/", 1)[-1])] = (int(steps), where)
    except Exception:
        pass
    with _lock:
        progress[me] = (_state["steps"], _state["where"])
    slowest = min(everyone, key=lambda p: progress.get(p, (-1, ""))[0])
    where = progress.get(slowest, (0, "before its first step"))[1]
    return f"process {slowest} hangs (last seen at {where})"


def _message(key: str, value: str) -> str:
    """A failure another process reported, or what it means when it is not sealed with the secret."""
    message = opened(key, value)
    if message is None:
        return f"a message in the job's store was not sealed with the job's secret: {UNPROVEN}"
    return message


def _stop(me: int, why: str) -> None:
    if _state["leaving"]:
        return
    print(f"netdsl: process {me} stops: {printable(why)}", file=sys.stderr, flush=True)
    _exit(1)


def _publish(key: str, value: str) -> None:
    try:
        _state["client"].key_value_set(key, seal(key, value), allow_overwrite=True)
    except Exception:
        pass  # the service may be gone; the others find out through their own watchdog


def _exit(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
