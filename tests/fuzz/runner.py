"""The fuzzing runner: makes the inputs, feeds a worker, and keeps the figures.

Input `i` of seed `s` is made from its own `random.Random` (so any one input
can be made again alone: `--only i`). An input counts as a finding when the
worker answers "exception" or "bad", when it runs past its time bound (the
worker is then killed and a new one started), when the worker dies (memory
limit), or when its CPU time is over the bound of its size class.
"""

from __future__ import annotations

import base64
import json
import os
import random
import select
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from netdsl.atomic import write_bytes

from .exported import EXPORTED_TARGETS, make_exported
from .grammar_gen import GrammarGenerator
from .mutate import ROOT, Mutator, load_corpus
from .targets import keras_corpus, make_data, make_keras, make_sweep, make_weights, weights_corpus


@dataclass(frozen=True)
class Bounds:
    """The promise of netdsl.limits: time per size class, memory for every input."""

    small_bytes: int = 64 * 1024
    small_seconds: float = 2.0
    large_seconds: float = 10.0
    memory_bytes: int = 1 << 30
    # A worker is killed after slack x the bound of CPU time (measured by the runner, so an
    # input stuck in C code is caught too); the worker's own CPU time is compared with the bound.
    slack: float = 3.0

    def seconds(self, size: int) -> float:
        return self.small_seconds if size <= self.small_bytes else self.large_seconds


@dataclass
class Finding:
    kind: str  # exception | bad | timeout | died | slow
    index: int
    source: str
    size: int
    seconds: float
    detail: str


@dataclass
class Report:
    seed: int
    inputs: int = 0
    sources: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)  # clean | diagnostics | finding kinds
    findings: list[Finding] = field(default_factory=list)
    slowest: list[tuple[float, int, str, int]] = field(default_factory=list)  # (cpu s, bytes, source, index)
    peak_rss_kb: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    largest_input: int = 0

    def summary(self) -> dict:
        out = asdict(self)
        out["findings"] = [asdict(f) for f in self.findings]
        out["slowest"] = [
            {"cpu_seconds": round(s, 3), "bytes": b, "source": src, "index": i} for s, b, src, i in self.slowest
        ]
        out["sources"], out["outcomes"] = dict(self.sources), dict(self.outcomes)
        return out


def make_input(seed: int, index: int, corpus: list, generated_share: float = 0.4, big: float = 0.01) -> tuple[str, str]:
    """(where it came from, text) of input `index` of `seed`."""
    rng = random.Random(seed * 1_000_003 + index)
    if rng.random() < generated_share:
        return "grammar", GrammarGenerator(rng).generate()
    name, text = Mutator(rng, corpus, big=big).mutate()
    return f"mutation of {name}", text


def make_file(target: str, seed: int, index: int, corpus: list) -> tuple[str, str, bytes]:
    """(where it came from, suffix, bytes) of input `index` of `seed` for a target other than `spec`."""
    rng = random.Random(seed * 1_000_003 + index)
    if target in EXPORTED_TARGETS:
        return make_exported(target, rng)
    if target == "keras":
        source, data = make_keras(rng, corpus)
        return source, ".keras", data
    if target == "sweep":
        source, data = make_sweep(rng)
        return source, ".sweep", data
    if target == "weights":
        return make_weights(rng, corpus)
    return make_data(rng)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux: /proc/PID/stat fields 14 and 15)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:  # it has died: the caller reads the end of its output
        return float("inf")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


WALL_FACTOR = 20  # a worker blocked without running is stopped after this many times its CPU bound
STARTUP_S = 600  # a worker's imports (TensorFlow for the data target) on a loaded machine


class Worker:
    """A `worker.py` process; started again after a timeout or a death."""

    def __init__(self, bounds: Bounds, target: str = "spec"):
        self.bounds, self.target = bounds, target
        self.proc: subprocess.Popen | None = None
        self.folder: str | None = None  # the worker's scratch files, removed with it
        self.failure = ""  # why the last check had no answer: "timeout" or "died"

    def start(self) -> None:
        package = __package__ or "fuzz"
        cwd = Path(__file__).resolve().parents[len(package.split("."))]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(cwd)] + sys.path))
        self.folder = tempfile.mkdtemp(prefix="netdsl-fuzz-")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", f"{package}.worker", str(self.bounds.memory_bytes), self.target, self.folder],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_S)
        if not ready or self.proc.stdout.readline() != b"ready\n":
            raise RuntimeError(f"the fuzzing worker did not start within {STARTUP_S} s")

    def check(self, text: str, filename: str, timeout: float, request: dict | None = None) -> dict | None:
        """The worker's answer, or None when it ran past `timeout` or died (then it is stopped)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        payload = json.dumps(request or {"text": text, "filename": filename}).encode("utf-8")
        try:
            self.proc.stdin.write(struct.pack(">I", len(payload)) + payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.failure = "died"
            self.stop()
            return None
        answered = self._answered_within(timeout)
        line = self.proc.stdout.readline() if answered else b""
        if not line:
            self.failure = "died" if answered else "timeout"  # an answer that is the end of the output: a death
            self.stop()
            return None
        return json.loads(line)

    def _answered_within(self, timeout: float) -> bool:
        """Whether an answer came before the worker spent `timeout` s of CPU on the input. The CPU
        time, not the wall time, is what is bounded: on a shared machine a niced worker may wait
        for a core far longer than it runs. A worker that waits without running (blocked on a
        read) is stopped after WALL_FACTOR x `timeout` of wall time."""
        began_wall, began_cpu = time.monotonic(), _cpu_seconds(self.proc.pid)
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], min(timeout, 0.5))
            if ready:
                return True
            if (
                _cpu_seconds(self.proc.pid) - began_cpu > timeout
                or time.monotonic() - began_wall > WALL_FACTOR * timeout
            ):
                return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def run(
    count: int,
    seed: int = 0,
    bounds: Bounds = Bounds(),
    start: int = 0,
    only: list[int] | None = None,
    generated_share: float = 0.4,
    big: float = 0.01,
    save_dir: Path | None = None,
    keep_slowest: int = 10,
    progress: Callable[[Report], None] | None = None,
    max_seconds: float | None = None,
    target: str = "spec",
) -> Report:
    """Check `count` inputs (or the `only` ones) of `seed`; findings saved to `save_dir` if given
    (made, or checked by `report_folder`: ValueError saying why it is refused)."""
    if save_dir is not None:
        refusal = report_folder(save_dir)
        if refusal is not None:
            raise ValueError(refusal)
    corpus = {"spec": load_corpus, "weights": weights_corpus}.get(target, keras_corpus)()
    report = Report(seed)
    worker = Worker(bounds, target)
    filename = str(ROOT / "specs" / "fuzz.net")  # relative imports reach specs/ and specs/lib/
    began = time.perf_counter()
    try:
        for index in only if only is not None else range(start, start + count):
            if max_seconds is not None and time.perf_counter() - began > max_seconds:
                break
            if target == "spec":
                source, text = make_input(seed, index, corpus, generated_share, big)
                _check(worker, report, bounds, index, source, text, filename, save_dir, keep_slowest)
            else:
                source, suffix, data = make_file(target, seed, index, corpus)
                request = {"target": target, "payload": base64.b64encode(data).decode("ascii"), "suffix": suffix}
                _check(worker, report, bounds, index, source, data, filename, save_dir, keep_slowest, request)
            if progress is not None and report.inputs % 1000 == 0:
                report.wall_seconds = time.perf_counter() - began
                progress(report)
    finally:
        worker.stop()
        report.wall_seconds = time.perf_counter() - began
    return report


def _check(
    worker: Worker,
    report: Report,
    bounds: Bounds,
    index: int,
    source: str,
    text: str | bytes,
    filename: str,
    save_dir: Path | None,
    keep_slowest: int,
    request: dict | None = None,
) -> None:
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8"))
    limit = bounds.seconds(size)
    answer = worker.check(text if isinstance(text, str) else "", filename, limit * bounds.slack, request)
    report.inputs += 1
    report.sources["grammar" if source.startswith(("grammar", "generated")) else "mutation"] += 1
    report.largest_input = max(report.largest_input, size)
    if answer is None:
        detail = (
            f"no answer within {limit * bounds.slack:.0f} s of CPU time"
            if worker.failure == "timeout"
            else "the worker died (the memory limit, or a crash of native code)"
        )
        _finding(report, Finding(worker.failure, index, source, size, limit * bounds.slack, detail), text, save_dir)
        return
    report.cpu_seconds += answer["cpu"]
    report.peak_rss_kb = max(report.peak_rss_kb, answer["rss_kb"])
    report.slowest = sorted(report.slowest + [(answer["cpu"], size, source, index)], reverse=True)[:keep_slowest]
    if answer["status"] != "ok":
        _finding(
            report, Finding(answer["status"], index, source, size, answer["cpu"], answer["detail"]), text, save_dir
        )
    elif answer["cpu"] > limit:
        _finding(
            report,
            Finding(
                "slow",
                index,
                source,
                size,
                answer["cpu"],
                f"{answer['cpu']:.2f} s of CPU for {size:,} bytes (bound {limit:.0f} s)",
            ),
            text,
            save_dir,
        )
    else:
        report.outcomes["diagnostics" if answer["diagnostics"] else "clean"] += 1


def _finding(report: Report, finding: Finding, text: str | bytes, save_dir: Path | None) -> None:
    report.outcomes[finding.kind] += 1
    report.findings.append(finding)
    if save_dir is not None:  # checked by run(); written atomically, never through a planted link
        stem = f"seed{report.seed}_{finding.index}_{finding.kind}"
        if isinstance(text, bytes):
            write_bytes(save_dir / f"{stem}.bin", text)
        else:
            write_bytes(save_dir / f"{stem}.net", text.encode("utf-8"))
        write_bytes(save_dir / f"{stem}.txt", f"{finding.source}\n{finding.detail}\n".encode())


def report_folder(folder: Path) -> str | None:
    """Make the report folder (0755, less the umask), or say why the one there is refused: a link,
    not a folder, another account's, or one others may write to (`/tmp/fuzz` made by someone else
    could hold a link named like the next file). None: ready."""
    try:
        os.makedirs(folder, 0o755)
        return None
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot create the report folder: {exc.strerror or exc}"
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        return "the report folder is a symbolic link; give a folder of your own (mktemp -d)"
    if not stat.S_ISDIR(info.st_mode):
        return "the report folder is not a folder"
    if info.st_uid != os.getuid():
        return f"the report folder belongs to another account (uid {info.st_uid}); give your own (mktemp -d)"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "other accounts may write into the report folder; give one only you can write to (mktemp -d)"
    return None
