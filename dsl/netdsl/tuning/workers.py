"""`--workers K`: K processes of `netdsl sweep --join FOLDER` on one study, started and waited for.

Each worker gets the sweep's flags on its command line and the storage URL in its
environment (a password stays out of `ps`); each proposes with its own seed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from typing import Any

from netdsl.errors import UsageError
from netdsl.semantics.values import describe_value
from netdsl.training.run.signals import EXIT_STOPPED
from netdsl.tuning.settings import STORAGE_ENV, SweepConfig


def run_workers(config: SweepConfig) -> int:
    """Start `--workers K` processes of `netdsl sweep --join FOLDER` and wait for them; 130 when stopped."""
    argv = _worker_argv(config)
    children: list[subprocess.Popen] = []
    stop: dict[str, int | None] = {"signal": None}  # the signal that stopped the workers, if one did

    def forward(signum: int, _frame: Any) -> None:
        stop["signal"] = signum
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    previous = (
        {
            s: signal.signal(s, forward)
            for s in (signal.SIGINT, signal.SIGTERM)
            if signal.getsignal(s) is not signal.SIG_IGN
        }
        if _main_thread()
        else {}
    )
    try:
        for index in range(config.request.workers):
            env = {**os.environ, "NETDSL_SWEEP_WORKER": str(index + 1), STORAGE_ENV: config.storage}
            children.append(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL))
        codes = [child.wait() for child in children]
    finally:
        for child in children:  # an error here must not leave a worker behind
            if child.poll() is None:
                child.kill()
                child.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if stop["signal"] is not None:
        return EXIT_STOPPED
    bad = [c for c in codes if c not in (0, -signal.SIGKILL, 137)]
    if bad and all(c == bad[0] for c in codes):  # every worker refused the same way: say so once
        raise UsageError(f"the sweep's workers ended with exit code {bad[0]} (see their messages above)")
    return 0


def _worker_argv(config: SweepConfig) -> list[str]:
    request = config.request
    argv = [
        sys.executable,
        "-m",
        "netdsl.cli",
        "sweep",
        os.path.abspath(config.program.root),
        "--model",
        config.model,
        "--join",
        str(config.folder.path.resolve()),
        "--trials",
        str(config.trials),
        "--study",
        config.study,
        "--seed",
        str(config.seed),
    ]
    if not isinstance(request.spec, (str, os.PathLike)):
        raise UsageError("--workers K runs `netdsl sweep` processes: give the spec as a path")
    for key in ("data", "train", "val", "test"):
        value = getattr(request.data, key)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise UsageError("--workers K runs `netdsl sweep` processes: give the data as paths")
        if value is not None:
            argv += [f"--{key}", os.path.abspath(value)]
    if request.data.split is not None:
        argv += ["--split", ",".join(str(f) for f in request.data.split)]
    for out, column in request.data.targets.items():
        argv += ["--targets", f"{out}={column}"]
    if request.data.features is not None:
        argv += ["--features", ",".join(request.data.features)]
    if request.data.drop:
        argv += ["--drop", ",".join(request.data.drop)]
    for flag, value in (("--epochs", request.epochs), ("--batch-size", request.batch_size)):
        if value is not None:
            argv += [flag, str(value)]
    for name, value in request.defines.items():
        argv += ["-D", f"{name}={describe_value(value, limit=None, raw_controls=True)}"]  # read back by parse_defines
    for folder in request.include:
        argv += ["--include", str(folder)]
    for module in request.plugins:
        argv += ["--plugin", module]
    if not request.echo:  # `--json` (or the library's echo=False): the workers print no trial lines either
        argv.append("--json")
    return argv


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
