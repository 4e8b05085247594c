"""How fast is `netdsl decompile`? Measured against Keras loading the same file, in the same run.

Saves keras.applications.ResNet152(weights=None) (and ResNet50) to .keras files in a
temporary folder, then prints, as medians of interleaved runs:
  1. whole-process time of `netdsl decompile MODEL.keras` (interpreter start, imports,
     export, printing) vs `python -c "keras.saving.load_model(MODEL.keras)"`, wall
     clock and CPU time (the issue's target: exporting ResNet152 from its .keras file
     in at most 2 s; on a machine shared with other work the wall clock includes waiting);
  2. in-process time of `netdsl.decompile(path)` alone, and of the flat export.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
REPEAT = 5
TARGET_S = 2.0


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): on a shared machine the CPU time is the steadier one."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def saved(folder: Path, name: str) -> Path:
    path = folder / f"{name.lower()}.keras"
    code = f"import keras; keras.applications.{name}(weights=None).save({str(path)!r})"
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    return path


def in_process(path: Path, flat: bool) -> float:
    import netdsl

    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        netdsl.decompile(path, flat=flat)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="netdsl-bench-decompile-") as tmp:
        folder = Path(tmp)
        for name in ("ResNet152", "ResNet50"):
            path = saved(folder, name)
            export_cmd = [python, "-m", "netdsl.cli", "decompile", str(path)]
            load_cmd = [python, "-c", f"import keras; keras.saving.load_model({str(path)!r})"]
            exports, loads = [], []
            for _ in range(REPEAT):  # interleaved, so both see the same machine load
                exports.append(run(export_cmd))
                loads.append(run(load_cmd))
            export_s, export_cpu = (statistics.median(t) for t in zip(*exports))
            load_s, load_cpu = (statistics.median(t) for t in zip(*loads))
            size = path.stat().st_size / 2**20
            print(f"{name} ({size:,.0f} MiB .keras), process time, median of {REPEAT} interleaved runs (wall / CPU):")
            print(
                f"  netdsl decompile {path.name:<22} {export_s:7.3f} s / {export_cpu:6.3f} s"
                + (
                    f"   (target <= {TARGET_S:.1f} s: {'ok' if export_s <= TARGET_S else 'MISSED'})"
                    if name == "ResNet152"
                    else ""
                )
            )
            print(f"  keras.saving.load_model             {load_s:7.3f} s / {load_cpu:6.3f} s")
            print(f"  ratio export / load_model           {export_s / load_s:7.3f}   / {export_cpu / load_cpu:6.3f}")
            print(
                f"  in process: netdsl.decompile(path)     {in_process(path, False):7.3f} s"
                f"   (flat: {in_process(path, True):.3f} s)"
            )
            print()


if __name__ == "__main__":
    main()
