"""How fast is `netdsl train`? Epoch time against the hand-written `model.fit`, in the same run.

Both sides train specs/lightning_mlp.net (784 -> 128 -> 10, Adam) on the
same generated data (scripts/demo_data.py), each in a fresh process:

  netdsl   `netdsl train SPEC --train data.npz --epochs E --progress none`:
           data read by name and streamed with tf.data, a checkpoint,
           history.csv and report.json written after every epoch
  hand     `keras.utils.set_random_seed(S); model = netdsl.build(SPEC);
           model.fit(x, y, batch_size=B, epochs=E, shuffle=..., verbose=0)`
           on arrays loaded with np.load

The spec is copied with `shuffle` and `steps_per_execution` set from the
flags, so both sides run the same compiled model (steps_per_execution is
part of its compile settings). The first epoch (tracing) is left out; each
run's epoch time is the median of the others; the figure is the median over
runs, which alternate (netdsl, hand, netdsl, ...) so drift on a shared
machine hits both alike. Printed: the ratio netdsl/hand (target: at most
1.05) and the data-loading share, the time to read one epoch of batches
through netdsl's pipeline alone over netdsl's epoch time (the pipeline runs
ahead of the model with prefetch, so this is work overlapped, not added).

    python bench/bench_train.py [--runs 4] [--epochs 4] [--samples 20000] [--shuffle] [--steps-per-execution 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "lightning_mlp.net"

HAND = """
import json, sys, time
import numpy as np, keras
import netdsl
spec, data, seed, batch, epochs, shuffle = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \\
    int(sys.argv[5]), sys.argv[6] == "1"
with np.load(data) as arrays:
    x, y = arrays["image"], arrays["logits"]
times = []
class Clock(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()
    def on_epoch_end(self, epoch, logs=None):
        times.append(time.perf_counter() - self.start)
keras.utils.set_random_seed(seed)
model = netdsl.build(spec)
model.fit(x, y, batch_size=batch, epochs=epochs, shuffle=shuffle, verbose=0, callbacks=[Clock()])
print(json.dumps(times))
"""


def bench_spec(folder: Path, shuffle: bool, steps: int | None, spec: Path = SPEC) -> Path:
    """A copy of `spec` (its train block says `epochs = 1`) with `shuffle` and `steps_per_execution` set
    (`steps` None: left out, the backend's default)."""
    flag = "true" if shuffle else "false"
    steps_line = f"    steps_per_execution = {steps}\n" if steps is not None else ""
    text = spec.read_text().replace("    epochs = 1\n", f"    epochs = 1\n    shuffle = {flag}\n{steps_line}")
    path = folder / spec.name
    path.write_text(text)
    return path


def env(backend: str | None = None, threads: int | None = None) -> dict:
    """The environment of a benchmarked process: this checkout's netdsl, TensorFlow quiet, Keras on `backend`,
    and with `threads` every backend's CPU thread pools that size (`--threads`)."""
    extra = {"KERAS_BACKEND": backend} if backend else {}
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "dsl"),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        **extra,
        **(thread_env(threads) if threads else {}),
    }


def thread_env(threads: int) -> dict:
    """The variables that size each backend's CPU thread pools: OpenMP's (PyTorch, oneDNN), TensorFlow's
    two pools, XLA's (JAX). On a shared machine PyTorch's default, one thread per core, waits at every
    operation for threads that have no core (measured here: the MLP's 63 steps 2.9 s with 2 threads, 0.14 s
    with 1, load about 4 on 2 cores)."""
    n = str(threads)
    return {
        "OMP_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
        "TF_NUM_INTRAOP_THREADS": n,
        "TF_NUM_INTEROP_THREADS": n,
        "XLA_FLAGS": f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
        f"intra_op_parallelism_threads={n}",
    }


def run_netdsl(
    spec: Path, data: Path, out: Path, args: argparse.Namespace, backend: str | None = None
) -> tuple[list[float], list[float]]:
    """`netdsl train` in a fresh process: its epoch times and its per-epoch write times, from report.json."""
    chosen = ["--backend", backend] if backend else []
    out.mkdir(parents=True, exist_ok=True)
    # A folder of this call's own: run folders are numbered per model (small_cnn-1 after lightning_mlp-6),
    # so "the highest number" in a shared folder can be another network's older run.
    own = Path(tempfile.mkdtemp(dir=out))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "netdsl.cli",
            "train",
            str(spec),
            "--train",
            str(data),
            "--epochs",
            str(args.epochs),
            "--batch-size",
            str(args.batch_size),
            "--seed",
            "0",
            "--progress",
            "none",
            *chosen,
            "-o",
            str(own),
        ],
        env=env(backend, getattr(args, "threads", None)),
        check=True,
        capture_output=True,
        timeout=900,
    )
    (folder,) = own.iterdir()
    report = json.loads((folder / "report.json").read_text())
    return report["epoch_seconds"], report["write_seconds"]


def run_hand(spec: Path, data: Path, args: argparse.Namespace, backend: str | None = None) -> list[float]:
    """The hand-written `model.fit` of the spec's model in a fresh process: its epoch times."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            HAND,
            str(spec),
            str(data),
            "0",
            str(args.batch_size),
            str(args.epochs),
            "1" if args.shuffle else "0",
        ],
        env=env(backend, getattr(args, "threads", None)),
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def pipeline_epoch(spec: Path, data: Path, args: argparse.Namespace) -> float:
    """Seconds to read one epoch of batches through netdsl's pipeline, with no model (median of 3)."""
    sys.path.insert(0, str(ROOT / "dsl"))
    import numpy as np

    import netdsl
    from netdsl.training.data.signature import Signature
    from netdsl.training.data.source import open_source
    from netdsl.training.data.tf_data import EpochOrder

    source = open_source(str(data), Signature.of(netdsl.build(spec)))
    order = EpochOrder(0) if args.shuffle else None
    times = []
    for epoch in range(4):
        if order is not None:
            order.epoch = epoch
        start = time.perf_counter()
        for _ in source.dataset(np.arange(source.n), args.batch_size, order):
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--shuffle", action="store_true", help="shuffle every epoch on both sides")
    parser.add_argument("--steps-per-execution", type=int, default=1)
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (the first one is left out)")

    sys.path.insert(0, str(ROOT / "scripts"))
    import numpy as np
    from demo_data import generate

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec = bench_spec(folder, args.shuffle, args.steps_per_execution)
        images, labels = generate(args.samples)
        data = folder / "digits.npz"
        np.savez(data, image=images, logits=labels)
        print(
            f"lightning_mlp, {args.samples} samples, batch {args.batch_size}, {args.epochs} epochs, "
            f"shuffle {'on' if args.shuffle else 'off'}, steps_per_execution {args.steps_per_execution}; "
            f"{args.runs} interleaved runs per side\n"
        )
        ours, hand, writes = [], [], []
        for i in range(args.runs):
            epochs, written = run_netdsl(spec, data, folder / "runs", args)
            ours.append(statistics.median(epochs[1:]))
            writes.append(statistics.median(written[1:]))
            hand.append(statistics.median(run_hand(spec, data, args)[1:]))
            print(f"run {i + 1}: netdsl {ours[-1]:.3f} s/epoch   hand {hand[-1]:.3f} s/epoch")
        loading = pipeline_epoch(spec, data, args)
    netdsl_epoch, hand_epoch = statistics.median(ours), statistics.median(hand)
    print(f"\nepoch time (median): netdsl {netdsl_epoch:.3f} s, hand-written fit {hand_epoch:.3f} s")
    print(
        f"ratio netdsl/hand: {netdsl_epoch / hand_epoch:.3f}  (target <= 1.05); best runs: {min(ours) / min(hand):.3f}"
    )
    print(
        f"state written after each epoch (checkpoint, history, report): {statistics.median(writes):.3f} s "
        f"= {statistics.median(writes) / netdsl_epoch:.1%} of netdsl's epoch"
    )
    print(
        f"data loading alone: {loading:.3f} s per epoch = {loading / netdsl_epoch:.1%} of netdsl's epoch "
        f"(overlapped with training by prefetch)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
