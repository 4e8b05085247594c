"""`python -m netdsl.cli ARGS` in a process of its own, without paying TensorFlow's start-up each time.

A fresh `netdsl` process spends most of a short command importing TensorFlow and Keras (about 5 CPU
seconds). `run` gives the same result as `subprocess.run([sys.executable, "-m", "netdsl.cli", *args],
cwd=..., env=..., capture_output=True, text=True, timeout=...)` from a process forked for that one
command from a server that imported them once (as `init_backend` imports them, stderr muted, before
any op runs, so no runtime thread exists to be lost in the fork). The child is a new process:
its own cwd, environment, file descriptors (stdin /dev/null, stdout and stderr captured whole,
C++ output included), exit code and shutdown (threads joined, atexit functions run; the teardown
of every module, 2 s with TensorFlow loaded, is left out); nothing of one command is left for the
next. Only the imports are shared, so a server is kept per backend (the command's `--backend`, else
KERAS_BACKEND, else TensorFlow) and environment (the variables Keras and TensorFlow read at import);
a command whose backend is not plain to see runs as a plain subprocess.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

# Variables that change under the tests without changing what an import does.
_NOT_IMPORT_STATE = frozenset({"PYTEST_CURRENT_TEST"})

_SERVER = r"""
import atexit, json, os, signal, sys, threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["KERAS_BACKEND"] = sys.argv[2]
from netdsl.backend.runtime import muted_stderr

with muted_stderr(True):  # as init_backend imports Keras, less the first op (no runtime threads yet)
    import keras  # noqa: F401
    import tensorflow  # noqa: F401  (every backend reads its data with tf.data)
    try:
        import absl.logging
        absl.logging.set_verbosity(absl.logging.ERROR)
    except ImportError:
        pass
import importlib
import netdsl.cli  # noqa: F401
from netdsl.cli.app import RUNS

for module, _ in RUNS.values():  # every command's module, which `netdsl COMMAND` imports when it runs
    importlib.import_module(f"netdsl.cli.{module}")
import netdsl.training.run.predictions  # noqa: E402,F401  (netdsl.api's, imported when first asked for)
import netdsl.tuning.records  # noqa: E402,F401
os.environ.clear()
os.environ.update(json.loads(sys.argv[1]))
requests, replies = sys.stdin, sys.stdout
replies.write(json.dumps({"ready_cpu_s": sum(os.times()[:2])}) + "\n")
replies.flush()


def child(request):
    import runpy

    os.setsid()  # its own session, which the caller ends on a timeout
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                            (2, request["stderr"], os.O_WRONLY)):
        opened = os.open(path, flags)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
    # sys.stdout and sys.stderr stay the objects a non-terminal start made (nothing is left in their
    # buffers): they now write to the files; stdin is read afresh
    sys.stdin = sys.__stdin__ = open(0, closefd=False)
    try:
        if request["script"] is None:
            sys.path[0] = os.getcwd()  # as `python -m` puts the working folder first
            sys.argv = [sys.argv[0], *request["args"]]
            runpy.run_module("netdsl.cli", run_name="__main__", alter_sys=True)
        else:  # `python SCRIPT ARGS`: the script's folder first
            sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))
            sys.argv = [request["script"], *request["args"]]
            runpy.run_path(request["script"], run_name="__main__")
        code = 0
    except SystemExit as stop:  # as the interpreter reads it
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException as error:
        sys.excepthook(type(error), error, error.__traceback__)
        code = 1
        if isinstance(error, KeyboardInterrupt):
            code = -signal.SIGINT
    # The interpreter's shutdown, less the teardown of every module (2 s with TensorFlow loaded, and
    # nothing a command does): its threads joined, its exit functions run, its output flushed.
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


for line in requests:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(request)  # ends the child
    replies.write(json.dumps({"pid": pid}) + "\n")
    replies.flush()
    _, status, usage = os.wait4(pid, 0)
    replies.write(json.dumps({"code": os.waitstatus_to_exitcode(status),
                              "cpu_s": usage.ru_utime + usage.ru_stime}) + "\n")
    replies.flush()
"""


class _Server:
    def __init__(self, env: dict[str, str], backend: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, json.dumps(env), backend],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=tempfile.gettempdir(),
        )
        assert self.process.stdout is not None
        self.counted_cpu_s = json.loads(self.process.stdout.readline())["ready_cpu_s"]  # its imports
        _count(self.counted_cpu_s)
        self.lock = threading.Lock()

    def run(
        self, args: list[str], cwd: Path, env: dict[str, str], timeout: float, script: str | None
    ) -> subprocess.CompletedProcess:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self.lock, tempfile.TemporaryDirectory(prefix="netdsl-forked-") as folder:
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            out.touch()
            err.touch()
            self.process.stdin.write(
                json.dumps(
                    {
                        "args": args,
                        "cwd": str(cwd),
                        "env": env,
                        "stdout": str(out),
                        "stderr": str(err),
                        "script": script,
                    }
                )
                + "\n"
            )
            self.process.stdin.flush()
            pid = json.loads(self.process.stdout.readline())["pid"]
            killed = threading.Event()
            timer = threading.Timer(timeout, _kill_group, (pid, killed))
            timer.start()
            try:
                reply = self.process.stdout.readline()
            except BaseException:  # (Ctrl-C) the reply would be read by the next command: end both
                _kill_group(pid, killed)
                self.process.kill()
                raise
            finally:
                timer.cancel()
            command = [sys.executable, *(["-m", "netdsl.cli"] if script is None else [script]), *args]
            if killed.is_set():
                raise subprocess.TimeoutExpired(command, timeout, out.read_bytes(), err.read_bytes())
            if not reply:
                raise RuntimeError("the netdsl fork server ended")
            ended = json.loads(reply)
            self.counted_cpu_s += ended["cpu_s"]
            _count(ended["cpu_s"])
            return subprocess.CompletedProcess(command, ended["code"], _text(out.read_bytes()), _text(err.read_bytes()))

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=60)
        # waited for, the server's CPU and its children's join this process's own children's: counted once
        _count(-self.counted_cpu_s)
        self.counted_cpu_s = 0.0


def _kill_group(pid: int, killed: threading.Event) -> None:
    killed.set()
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _text(data: bytes) -> str:
    """As subprocess.run(text=True) decodes: the locale's encoding, universal newlines."""
    import locale

    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


_children_cpu_s = 0.0  # the CPU seconds of the servers and their commands not yet waited for here (--room-times)


def _count(seconds: float) -> None:
    global _children_cpu_s
    _children_cpu_s += seconds


def children_cpu_seconds() -> float:
    """The CPU seconds of the servers' imports and commands (a server's children are not this process's own
    children until the server ends and is waited for)."""
    return _children_cpu_s


MAX_SERVERS = 3  # TensorFlow, JAX and torch side by side (about 0.5 GB each)
_servers: dict[tuple[str, tuple[tuple[str, str], ...]], _Server] = {}
_servers_lock = threading.Lock()


def _close_all() -> None:
    for server in _servers.values():
        server.close()


atexit.register(_close_all)


def _backend(args: list[str], env: Mapping[str, str]) -> str | None:
    """The backend the command picks (`--backend`, else KERAS_BACKEND, else TensorFlow), or None if unsure."""
    picked = []
    for i, arg in enumerate(args):
        if arg == "--backend":
            picked.append(args[i + 1] if i + 1 < len(args) else "")
        elif arg.startswith("--backend="):
            picked.append(arg.split("=", 1)[1])
    if len(picked) > 1:
        return None
    name = picked[0] if picked else env.get("KERAS_BACKEND") or "tensorflow"
    return name if name in ("tensorflow", "jax", "torch") else None


def run(
    args: list[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = 600,
    *,
    script: Path | None = None,
    backend: str | None = None,
) -> subprocess.CompletedProcess:
    """`python -m netdsl.cli ARGS` in `cwd` with exactly `env`: exit code and text of stdout and stderr.
    With `script`, `python SCRIPT ARGS` instead, on `backend` (a script that picks it itself)."""
    args, env = [str(a) for a in args], dict(env)
    if script is None:
        backend = _backend(args, env)
    if backend is None or (env.get("KERAS_BACKEND") or backend) != backend:
        command = [sys.executable, *(["-m", "netdsl.cli"] if script is None else [str(script)]), *args]
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    key = (backend, tuple(sorted((k, v) for k, v in env.items() if k not in _NOT_IMPORT_STATE)))
    with _servers_lock:
        server = _servers.pop(key, None)
        if server is None or server.process.poll() is not None:
            server = _Server(env, backend)
        _servers[key] = server  # the most recently used last
        while len(_servers) > MAX_SERVERS:  # another environment or backend replaces the oldest
            _servers.pop(next(iter(_servers))).close()
    return server.run(args, Path(cwd), env, timeout, None if script is None else str(script))
