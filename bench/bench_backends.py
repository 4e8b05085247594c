"""Epoch time per backend: netdsl on TensorFlow, JAX and PyTorch against each backend's hand-written loop.

Two networks, each trained in a fresh process per backend (Keras picks its
backend once per process), on generated digits (scripts/demo_data.py):

  lightning_mlp   specs/lightning_mlp.net (784 -> 128 -> 10, Adam)
  small_cnn       bench/small_cnn.net (two conv2d + max_pool2d, dense; 28x28x1)

Sides, per network and backend:

  netdsl       `netdsl train SPEC --backend B` (bench_train.run_netdsl) with
               `steps_per_execution = 1` in the spec, as the hand-written side
  default      the same with the spec saying nothing: the backend's defaults
               (backend/execution.py: 32 steps per execution on TensorFlow and
               JAX, 1 on torch)
  hand         TF/JAX: Keras `model.fit` of the same model (bench_train.run_hand);
               torch: a plain PyTorch loop of the same architecture, written
               below (nn.Sequential, Adam, cross-entropy, batches sliced from
               tensors, accuracy counted as the spec's metric is)
  keras fit    torch only: Keras `model.fit` of the same model on torch, so that
               netdsl/hand splits into netdsl/keras (what netdsl adds) and
               keras/hand (what Keras' torch backend adds to plain PyTorch)

Shuffling is off on every side (same batches). Every process's first epoch
(tracing, compiling) is left out and its epoch time is the median of the
rest; each figure is the median over runs, and the runs interleave every
side so drift on a shared machine hits all alike. Printed per network:
s/epoch of each side, netdsl/hand, netdsl/keras fit, netdsl on B / netdsl on
TensorFlow, and default / spe 1.

    python bench/bench_backends.py [--runs 2] [--epochs 3] [--samples 2000] [--backends tensorflow,jax,torch]
                                   [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench_train import ROOT, bench_spec, env, run_hand, run_netdsl

sys.path.insert(0, str(ROOT / "dsl"))
from netdsl.backend import profiles  # noqa: E402 - the table alone (pure Python), from this checkout

SPECS = {"lightning_mlp": ROOT / "specs" / "lightning_mlp.net", "small_cnn": ROOT / "bench" / "small_cnn.net"}
BACKENDS = profiles.NAMES

# The hand-written PyTorch loop: the same architectures, Adam(1e-3), cross-entropy on logits.
TORCH_HAND = """
import json, sys, time
import numpy as np, torch
from torch import nn
network, data, seed, batch, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
with np.load(data) as arrays:
    x, y = torch.from_numpy(arrays["image"]), torch.from_numpy(arrays["logits"])
torch.manual_seed(seed)
if network == "lightning_mlp":
    model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, 10))
else:
    x = x.permute(0, 3, 1, 2).contiguous()  # NHWC -> NCHW, once, before the clock
    model = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 5 * 5, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
times = []
for epoch in range(epochs):
    start = time.perf_counter()
    model.train()
    correct = 0
    for i in range(0, len(x), batch):
        xb, yb = x[i:i + batch], y[i:i + batch]
        optimizer.zero_grad()
        logits = model(xb)
        loss = loss_fn(logits, yb)
        loss.backward()
        optimizer.step()
        correct += int((logits.argmax(1) == yb).sum())
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


@dataclass(frozen=True)
class Side:
    """One timed configuration of one network: who trains it, on which backend, with which steps_per_execution
    (None: the spec says nothing, the backend's default)."""

    network: str
    trainer: str  # "netdsl", "hand" or "keras" (Keras `fit` on torch, where "hand" is plain PyTorch)
    backend: str
    steps: int | None = 1

    @property
    def label(self) -> str:
        return f"{self.network} {self.trainer} {self.backend} spe {self.steps or 'default'}"


def sides(networks: list[str], backends: list[str], defaults_only: bool = False) -> list[Side]:
    """Every side the bench times, in the order one run takes them (`defaults_only`: netdsl's sides alone,
    one step per execution and the backend's default, where that default is more than one step)."""
    out = []
    for network in networks:
        for backend in backends:
            if defaults_only and profiles.PROFILES[backend].steps_per_execution == 1:
                continue
            out.append(Side(network, "netdsl", backend))
            if not defaults_only:
                out.append(Side(network, "hand", backend))
                if backend == "torch":
                    out.append(Side(network, "keras", backend))
            out.append(Side(network, "netdsl", backend, None))
    return out


def epoch_time(times: list[float]) -> float:
    """One process's epoch time: the median of its epochs after the first (tracing and compiling)."""
    return statistics.median(times[1:])


def run_torch_hand(network: str, data: Path, args: argparse.Namespace) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-c", TORCH_HAND, network, str(data), "0", str(args.batch_size), str(args.epochs)],
        env=env("torch", args.threads),
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def time_side(
    side: Side, specs: dict[tuple[str, int], Path], data: dict[str, Path], folder: Path, args: argparse.Namespace
) -> float:
    spec = specs[side.network, side.steps]
    if side.trainer == "netdsl":
        times, _ = run_netdsl(spec, data[side.network], folder / "runs", args, side.backend)
    elif side.backend == "torch" and side.trainer == "hand":
        times = run_torch_hand(side.network, data[side.network], args)
    else:
        times = run_hand(spec, data[side.network], args, side.backend)
    return epoch_time(times)


def ratio(top: float | None, bottom: float | None) -> str:
    return "-" if top is None or bottom is None else f"{top / bottom:.2f}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(medians: dict[Side, float], networks: list[str], backends: list[str]) -> list[str]:
    """The printed figures: per network and backend, s/epoch of each side and the ratios between them
    (netdsl and hand: steps_per_execution 1; default: the backend's default)."""
    head = (
        f"{'backend':<11}{'netdsl':>9}{'hand':>9}{'netdsl/hand':>13}{'keras fit':>11}{'netdsl/keras':>14}"
        f"{'vs netdsl TF':>14}{'default':>9}{'default/1':>11}"
    )
    lines = []
    for network in networks:
        lines += [f"{network} (s/epoch, median)", head]
        tf = medians.get(Side(network, "netdsl", "tensorflow"))
        for backend in backends:
            ours = medians.get(Side(network, "netdsl", backend))
            hand = medians.get(Side(network, "hand", backend))
            default = medians.get(Side(network, "netdsl", backend, None))
            keras_fit = medians.get(Side(network, "keras" if backend == "torch" else "hand", backend))
            lines.append(
                f"{backend:<11}{seconds(ours):>9}{seconds(hand):>9}{ratio(ours, hand):>13}"
                f"{seconds(keras_fit):>11}{ratio(ours, keras_fit):>14}"
                f"{ratio(ours, tf):>14}{seconds(default):>9}{ratio(default, ours):>11}"
            )
        lines.append("")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="interleaved runs of every side (figures: medians)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per process; the first is left out")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--networks", default=",".join(SPECS))
    parser.add_argument(
        "--defaults-only",
        action="store_true",
        help="time netdsl alone, one step per execution against each backend's default "
        "(backend/profiles.py; a backend whose default is one step is left out)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="size every backend's CPU thread pools (bench_train.thread_env); default: each its own",
    )
    args = parser.parse_args()
    args.shuffle = False
    backends = [b for b in args.backends.split(",") if b]
    networks = [n for n in args.networks.split(",") if n]
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (the first one is left out)")
    if unknown := sorted(set(backends) - set(BACKENDS)) + sorted(set(networks) - set(SPECS)):
        parser.error(f"unknown backend or network: {', '.join(unknown)}")

    sys.path.insert(0, str(ROOT / "scripts"))
    import numpy as np
    from demo_data import generate

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        images, labels = generate(args.samples)
        data = {"lightning_mlp": folder / "digits.npz", "small_cnn": folder / "digits_nhwc.npz"}
        np.savez(data["lightning_mlp"], image=images, logits=labels)
        np.savez(data["small_cnn"], image=images[..., None], logits=labels)
        specs = {}
        for network in networks:
            for steps in (1, None):
                target = folder / f"spe{steps or 'default'}"
                target.mkdir(exist_ok=True)
                specs[network, steps] = bench_spec(target, False, steps, SPECS[network])
        order = sides(networks, backends, args.defaults_only)
        threads = f"{args.threads} CPU thread(s) per pool" if args.threads else "each backend's own thread pools"
        print(
            f"{args.samples} samples, batch {args.batch_size}, {args.epochs} epochs per process (first left out), "
            f"shuffle off, {threads}; {args.runs} interleaved runs of {len(order)} sides\n",
            flush=True,
        )
        results: dict[Side, list[float]] = {side: [] for side in order}
        for run in range(args.runs):
            for side in order if run % 2 == 0 else reversed(order):
                results[side].append(time_side(side, specs, data, folder, args))
                print(f"run {run + 1}: {side.label}: {results[side][-1]:.3f} s/epoch", flush=True)
    medians = {side: statistics.median(times) for side, times in results.items()}
    print()
    print("\n".join(table(medians, networks, backends)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
