"""The fuzzing worker: checks the inputs the runner sends, under a memory limit.

Protocol (binary stdin, text stdout): each input is a 4-byte big-endian
length and that many bytes of JSON `{"text", "filename"}` (a spec), or
`{"target": "keras" | "data" | "sweep" | "weights" | "saved_model" | "onnx" | "tflite", "payload": base64,
"suffix"}` (a file for the Keras -> .net reader, the data readers, a sweep folder's readers, the weights
reader, `targets.py`, or an exported file's readers, `exported.py`); each answer is
one JSON line `{"status", "diagnostics", "cpu", "wall", "rss_kb", "detail"}`.
`status` is "ok" (diagnostics or success, all well formed), "bad" (a
diagnostic that is malformed, or the last-resort answer to a RecursionError
or MemoryError: a limit should have come first) or "exception" (anything
else escaped `netdsl.check`). The runner kills the worker when an input
runs past its time, and starts a new one.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import shutil
import struct
import sys
import time
import traceback
from pathlib import Path

import netdsl
from netdsl.errors import Sources, render_all

from . import exported
from .targets import DATA_KINDS, unpack_sweep

LAST_RESORT = "for netdsl to process it"  # errors.out_of_resources: no limit caught the input
LAST_RESORT_FILE = "needs more memory than there is"  # the same for a weights file


def limit_memory(extra_bytes: int) -> None:
    """At most `extra_bytes` more address space than this process holds now."""
    try:
        with open("/proc/self/statm") as fh:
            held = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        held = 0
    limit = held + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def peak_rss_kb() -> int:
    """This process's own peak resident memory (kB): VmHWM, its memory map's high-water mark. Not
    `ru_maxrss`: Linux carries that over `exec` from the process that started the worker (subprocess
    forks, then execs), so a worker started by a pytest process of 4.5 GB reported 4.5 GB itself."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def check_one(text: str, filename: str) -> dict:
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    try:
        diagnostics = netdsl.check(text=text, filename=filename)
        rendered = render_all(diagnostics, Sources({filename: text}))  # what the CLI prints
    except BaseException:  # noqa: BLE001 - exactly what the fuzzer looks for
        status, count, detail = "exception", 0, traceback.format_exc(limit=-12)
    else:
        count, detail = len(diagnostics), _malformed(diagnostics, rendered)
        status = "bad" if detail else "ok"
    return {
        "status": status,
        "diagnostics": count,
        "cpu": time.process_time() - start_cpu,
        "wall": time.perf_counter() - start_wall,
        "rss_kb": peak_rss_kb(),
        "detail": detail,
    }


def check_file(target: str, data: bytes, suffix: str, folder: str) -> dict:
    """Write `data` to a file of `suffix` in `folder` and hand it to the target's reader."""
    from netdsl.errors import SpecError, UsageError
    from netdsl.training.errors import TrainingError

    path = os.path.join(folder, "input" + suffix)
    if target in exported.EXPORTED_TARGETS:
        path = str(exported.place(target, data, suffix, folder))
    elif suffix == ".sweep":  # a sweep folder: sweep.json and its study.db
        path = os.path.join(folder, "mlp-sweep-1")
        os.makedirs(path)
        for name, content in zip(("sweep.json", "study.db"), unpack_sweep(data)):
            with open(os.path.join(path, name), "wb") as fh:
                fh.write(content)
    elif suffix == ".png":  # an image folder: two classes, the input among them
        path = os.path.join(folder, "imgs")
        for name in ("a", "b"):
            os.makedirs(os.path.join(path, name), exist_ok=True)
        with open(os.path.join(path, "a", "x.png"), "wb") as fh:
            fh.write(data)
        with open(os.path.join(path, "b", "y.png"), "wb") as fh:
            fh.write(data)
    else:
        with open(path, "wb") as fh:
            fh.write(data)
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    status, count, detail = "ok", 0, ""
    try:
        if target in exported.EXPORTED_TARGETS:
            exported.check(target, Path(path))
        elif target == "keras":
            from netdsl.decompiler import decompile_model

            decompile_model(path)
        elif target == "sweep":
            _show_sweep(path)
        elif target == "weights":
            from netdsl.backend.fine_tuning import load_weights_file

            load_weights_file(_weights_model(), path)
        else:
            _read_data(path, suffix)
    except (SpecError, TrainingError, UsageError) as exc:  # what the CLI prints must be one escaped line per error
        count = 1
        text = render_all(exc.diagnostics, exc.sources) if isinstance(exc, SpecError) else str(exc)
        several = not isinstance(exc, SpecError) and "\n" in text  # a file's error: one line
        if LAST_RESORT in text or LAST_RESORT_FILE in text or "\x1b" in text or several:
            what = "a message of several lines" if several else "a message no limit shaped"
            status, detail = "bad", f"{what}: {text[:300]!r}"
    except BaseException:  # noqa: BLE001 - exactly what the fuzzer looks for
        status, detail = "exception", traceback.format_exc(limit=-12)
    return {
        "status": status,
        "diagnostics": count,
        "cpu": time.process_time() - start_cpu,
        "wall": time.perf_counter() - start_wall,
        "rss_kb": peak_rss_kb(),
        "detail": detail,
    }


def _show_sweep(path: str) -> None:
    """What `netdsl sweep --show DIR [--json]` prints: the table must be escaped text, the JSON strict JSON."""
    import json

    from netdsl.tuning.records import show_table, sweep_json
    from netdsl.tuning.show import read_sweep

    result = read_sweep(path)
    table = show_table(result)
    if "\x1b" in table or "\x07" in table:
        raise AssertionError(f"a raw terminal escape in the table: {table[:300]!r}")
    json.loads(json.dumps(sweep_json(result), allow_nan=False, default=str))


_MODEL: list = []


def _weights_model():
    """The model weights files are loaded into (tests/support/hostile_weights.MODEL), built once."""
    if not _MODEL:
        from tests.support.hostile_weights import MODEL

        _MODEL.append(netdsl.build(text=MODEL, filename="weights.net"))
    return _MODEL[0]


def _read_data(path: str, suffix: str) -> None:
    """What `netdsl train` does with a data file before and at its first step: open the source
    against the model (input x: (4,) or a 4x4 image, output y), then read its first batch."""
    import numpy as np
    import tensorflow as tf

    from netdsl.training.data.signature import Signature, TensorSpec
    from netdsl.training.data.source import open_source
    from netdsl.training.errors import DataError, tensorflow_message

    shape = (4, 4) if suffix == ".png" else (4,)
    signature = Signature((TensorSpec("x", shape, "float32"),), (TensorSpec("y", (3,), "float32"),))
    source = open_source(path, signature)
    try:
        for _ in source.dataset(np.arange(min(source.n, 8)), 8).take(1):
            pass
    except tf.errors.OpError as exc:  # the engine reports these as data TensorFlow could not use
        raise DataError(f"training stopped on data TensorFlow could not use: {tensorflow_message(exc)}") from None


def _malformed(diagnostics: list, rendered: str) -> str:
    for d in diagnostics:
        if d.line < 1 or d.col < 1 or not d.message or d.severity not in ("error", "warning"):
            return f"malformed diagnostic: {d!r}"
        if LAST_RESORT in d.message:
            return f"last-resort diagnostic (no limit caught it): {d.message}"
        if "\n" in d.message:
            return f"a message of several lines: {d.message!r}"
    if len(rendered) > 4 * 1024 * 1024:
        return f"{len(rendered):,} characters of diagnostics"
    return ""


def main() -> None:
    import tempfile

    extra = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
    target = sys.argv[2] if len(sys.argv) > 2 else "spec"
    folder = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="netdsl-fuzz-")  # the runner removes it
    check_one("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n", "warm.net")  # imports done
    if target != "spec":  # the readers' imports (TensorFlow for data) before the limit
        warm = {
            "data": DATA_KINDS,
            "keras": (".keras",),
            "sweep": (".sweep",),
            "weights": (".weights.h5", ".keras"),
            **exported.SUFFIXES,
        }[target]
        for suffix in warm:
            check_file(target, b"", suffix, tempfile.mkdtemp(dir=folder))
    limit_memory(extra)
    sys.stdout.write("ready\n")  # the runner times inputs from here, not the imports (TensorFlow: tens of s)
    sys.stdout.flush()
    stdin, stdout = sys.stdin.buffer, sys.stdout
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return
        (size,) = struct.unpack(">I", head)
        request = json.loads(stdin.read(size).decode("utf-8"))
        if request.get("target", "spec") == "spec":
            answer = check_one(request["text"], request["filename"])
        else:
            scratch = tempfile.mkdtemp(dir=folder)
            answer = check_file(request["target"], base64.b64decode(request["payload"]), request["suffix"], scratch)
            shutil.rmtree(scratch, ignore_errors=True)  # 100,000 inputs would leave 100,000 folders
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
