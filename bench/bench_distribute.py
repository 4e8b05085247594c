"""What do several devices and several processes cost per step? Measured against one device, in the same run.

Trains specs/lightning_mlp.net with `netdsl train` (one subprocess per run)
on generated data with the same global batch (the spec's 32, or --batch)
in each configuration:

  tf 1 device      --backend tensorflow
  tf 2 devices     --backend tensorflow --devices 2      (MirroredStrategy)
  jax 1 device     --backend jax
  jax 2 devices    --backend jax --devices 2             (DataParallel)
  jax 2 processes  --backend jax --processes 2           (jax.distributed on 127.0.0.1, gloo)

and prints, per configuration, the median time of one training step (the
run's epoch times from report.json, the first epoch left out: it compiles,
divided by the steps per epoch) and its ratio to one device of the same
backend. Runs are interleaved (every configuration once, then again) so
that drift on a shared machine hits all alike. On a CPU the "devices" are
the CPU cut in logical devices sharing the same cores: the ratio is the
price of the machinery (splitting the batch, reducing gradients), not a
speed-up. With GPUs visible (`nvidia-smi -L`), `--all-gpus` adds the
throughput of 1 GPU against all of them.

    python bench/bench_distribute.py [--repeat N] [--epochs N] [--samples N] [--all-gpus]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "lightning_mlp.net"
CONFIGS = {
    "tf 1 device": ["--backend", "tensorflow"],
    "tf 2 devices": ["--backend", "tensorflow", "--devices", "2"],
    "jax 1 device": ["--backend", "jax"],
    "jax 2 devices": ["--backend", "jax", "--devices", "2"],
    "jax 2 processes": ["--backend", "jax", "--processes", "2"],
}
BASE = {"tf": "tf 1 device", "jax": "jax 1 device"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--all-gpus", action="store_true")
    args = parser.parse_args()
    configs = dict(CONFIGS)
    gpus = _gpu_count() if args.all_gpus else 0
    if gpus > 1:
        configs[f"tf {gpus} GPUs"] = ["--backend", "tensorflow", "--devices", str(gpus)]
        configs[f"jax {gpus} GPUs"] = ["--backend", "jax", "--devices", str(gpus)]

    steps = math.ceil(args.samples / args.batch)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.npz"
        rng = np.random.default_rng(0)
        np.savez(
            data, image=rng.random((args.samples, 28, 28), dtype=np.float32), logits=rng.integers(0, 10, args.samples)
        )
        times: dict[str, list[float]] = {name: [] for name in configs}
        for round_ in range(args.repeat):
            for name, flags in configs.items():
                out = Path(tmp) / f"{name.replace(' ', '_')}-{round_}"
                times[name].extend(_step_seconds(data, out, flags, args, steps))
    print(
        f"netdsl train {SPEC.name}: {args.samples} samples, global batch {args.batch}, {steps} steps per epoch, "
        f"{args.epochs} epochs x {args.repeat} runs each (first epoch of a run left out)"
    )
    print(f"{'configuration':<18} {'ms/step':>9} {'vs 1 device':>12}")
    for name, values in times.items():
        median = statistics.median(values)
        base = statistics.median(times[BASE[name.split()[0]]])
        print(f"{name:<18} {median * 1e3:9.2f} {median / base:12.2f}")


def _step_seconds(data: Path, out: Path, flags: list[str], args: argparse.Namespace, steps: int) -> list[float]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_BACKEND", None)
    command = [
        sys.executable,
        "-m",
        "netdsl.cli",
        "train",
        str(SPEC),
        "--train",
        str(data),
        "--epochs",
        str(args.epochs),
        "--batch-size",
        str(args.batch),
        "--seed",
        "1",
        "--progress",
        "none",
        "-o",
        str(out),
        *flags,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(flags)} failed:\n{result.stdout}\n{result.stderr[-2000:]}")
    (report,) = out.glob("*/report.json")
    epochs = json.loads(report.read_text())["epoch_seconds"][1:]
    return [seconds / steps for seconds in epochs]


def _gpu_count() -> int:
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.splitlines() if line.startswith("GPU "))


if __name__ == "__main__":
    main()
