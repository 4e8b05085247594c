"""The fuzzing worker: checks the inputs the runner sends, under a memory limit.

Protocol (binary stdin, text stdout): each input is a 4-byte big-endian
length and that many bytes of JSON `{"text", "filename"}`; each answer is
one JSON line `{"status", "diagnostics", "cpu", "wall", "rss_kb", "detail"}`.
`status` is "ok" (diagnostics or success, all well formed), "bad" (a
diagnostic that is malformed, or the last-resort answer to a RecursionError
or MemoryError: a limit should have come first) or "exception" (anything
else escaped `netdsl.check`). The runner kills the worker when an input
runs past its time, and starts a new one.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import time
import traceback

import netdsl
from netdsl.errors import Sources, render_all

LAST_RESORT = "for netdsl to process it"  # errors.out_of_resources: no limit caught the input


def limit_memory(extra_bytes: int) -> None:
    """At most `extra_bytes` more address space than this process holds now."""
    try:
        with open("/proc/self/statm") as fh:
            held = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        held = 0
    limit = held + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


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
    return {"status": status, "diagnostics": count, "cpu": time.process_time() - start_cpu,
            "wall": time.perf_counter() - start_wall,
            "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "detail": detail}


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
    extra = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
    check_one("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n", "warm.net")  # imports done
    limit_memory(extra)
    stdin, stdout = sys.stdin.buffer, sys.stdout
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return
        (size,) = struct.unpack(">I", head)
        request = json.loads(stdin.read(size).decode("utf-8"))
        answer = check_one(request["text"], request["filename"])
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
