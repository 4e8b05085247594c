"""How long does `netdsl evaluate FILE.onnx|FILE.tflite` take, and how much memory, scored in NumPy or by Keras?

Exports the `classifier` of tests/fixtures/deploy/scored.net (12 -> 16 -> 3) to .onnx and
.tflite, writes 1,000 samples as .npz, then runs `netdsl evaluate FILE --spec ... --data ...`
in a fresh process per run, interleaved: as netdsl runs it (the loss and metrics in NumPy,
scoring/: no Keras, no TensorFlow) and with the Keras scoring it replaced (forced
by making `scoring.not_in_numpy` name a metric, as a plugin's would). Prints the median wall
time and peak resident memory of each, and their ratios. The machine is shared: read the
ratios of the medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SPEC = ROOT / "tests" / "fixtures" / "deploy" / "scored.net"
ROUNDS = 5
SAMPLES = 1000

KERAS_SCORING = "import netdsl.scoring as s; s.not_in_numpy = lambda train, names: 'forced'\n"
COMMAND = "import sys\nfrom netdsl.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def one_run(file: Path, data: Path, keras_scoring: bool) -> tuple[float, float]:
    """(seconds, peak MiB) of one `netdsl evaluate` in a fresh process."""
    script = (KERAS_SCORING if keras_scoring else "") + COMMAND
    args = [
        sys.executable,
        "-c",
        script,
        "evaluate",
        str(file),
        "--spec",
        str(SPEC),
        "--model",
        "classifier",
        "--data",
        str(data),
        "--json",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "dsl")}
    start = time.perf_counter()
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"netdsl evaluate {file.name} failed (status {status})")
    return seconds, usage.ru_maxrss / 1024  # Linux: KiB


SETUP = """import sys
from pathlib import Path
import numpy as np
import netdsl
folder, spec, samples = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
np.savez(folder / "d.npz", features=rng.standard_normal((samples, 12)).astype("float32"),
         probs=rng.integers(0, 3, samples))
for fmt, name in (("onnx", "c.onnx"), ("litert", "c.tflite")):
    netdsl.export(spec, model="classifier", format=fmt, out=folder / name, seed=5, verify=False)
"""


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="netdsl-bench-evaluate-") as tmp:
        folder = Path(tmp)
        # In a child of its own: the peak memory Linux reports for a child counts what its parent held
        subprocess.run(
            [sys.executable, "-c", SETUP, str(folder), str(SPEC), str(SAMPLES)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "dsl")},
            capture_output=True,
        )
        data = folder / "d.npz"
        files = [folder / "c.onnx", folder / "c.tflite"]
        print(f"netdsl evaluate FILE --data ({SAMPLES} samples): median of {ROUNDS} interleaved fresh processes")
        for file in files:
            runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            for _ in range(ROUNDS):
                for keras_scoring in (True, False):
                    runs[keras_scoring].append(one_run(Path(file), data, keras_scoring))
            numpy_s, keras_s = (statistics.median(r[0] for r in runs[k]) for k in (False, True))
            numpy_mb, keras_mb = (statistics.median(r[1] for r in runs[k]) for k in (False, True))
            print(
                f"  {Path(file).name:<9} NumPy scoring {numpy_s:6.2f} s {numpy_mb:6.0f} MiB | Keras scoring "
                f"{keras_s:6.2f} s {keras_mb:6.0f} MiB | time x{keras_s / numpy_s:.1f}, memory "
                f"x{keras_mb / numpy_mb:.1f}"
            )


if __name__ == "__main__":
    main()
