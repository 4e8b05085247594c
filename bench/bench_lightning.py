"""How fast is `netdsl.lightning.SpecModule`? Epoch time against the same network written by hand
as a `LightningModule`, both in the same Trainer (issue 28; the December review measured 1.35x).

The network (both sides): conv 16 3x3 same + ReLU, max-pool 2, conv 32 3x3 same + ReLU, max-pool 2,
flatten, dense 64 + ReLU, dropout 0.25, dense 10; Adam(1e-3), cross-entropy and accuracy logged
every step. The data: generated 28x28 images, batch 64, shuffled; the hand side gets the same
tensors permuted to NCHW before timing (the spec side reads them with `channels_first=True`, so
both are given the same DataLoader layout, NCHW, and `--channels-last` gives the spec NHWC).
`torch.set_num_threads(THREADS)` on both (default 1: on a shared CPU more threads swing both
sides 5-10x). Each run is a fresh process; runs alternate (spec, hand, spec, ...); the first
epoch is left out and each run's figure is the median of the others; printed: the medians over
runs, wall and process CPU seconds per epoch, and the ratio spec/hand.

    python bench/bench_lightning.py [--runs 3] [--epochs 4] [--samples 2000] [--threads 1] [--channels-last]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
model cnn {
  input image: (28, 28, 1)
  h = image -> conv2d(16, 3, padding="same", activation=relu) -> max_pool2d(2)
            -> conv2d(32, 3, padding="same", activation=relu) -> max_pool2d(2)
            -> flatten -> dense(64, activation=relu) -> dropout(0.25)
  output logits = h -> dense(10)
  train {
    optimizer = adam(learning_rate=1e-3)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [accuracy]
  }
}
"""

CHILD = r"""
import json, os, sys, time
os.environ["KERAS_BACKEND"] = "torch"
import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

side, spec, epochs, samples, threads, channels_last, out = sys.argv[1:8]
torch.set_num_threads(int(threads))
rng = np.random.default_rng(0)
images = torch.tensor(rng.random((int(samples), 28, 28, 1), dtype=np.float32))
labels = torch.tensor(rng.integers(0, 10, int(samples)))
if side == "hand" or channels_last != "1":
    images = images.permute(0, 3, 1, 2).contiguous()  # NCHW, as torchvision gives


class Hand(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 64), torch.nn.ReLU(), torch.nn.Dropout(0.25),
            torch.nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        accuracy = (logits.argmax(-1) == y).float().mean()
        self.log("train_loss_step", loss, on_step=True, on_epoch=False, batch_size=len(y), prog_bar=True)
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(y))
        self.log("train_accuracy", accuracy, on_step=False, on_epoch=True, batch_size=len(y))
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3, eps=1e-7)


class Clock(L.Callback):
    def __init__(self):
        self.epochs = []

    def on_train_epoch_start(self, *_):
        self.start = (time.perf_counter(), time.process_time())

    def on_train_epoch_end(self, *_):
        self.epochs.append((time.perf_counter() - self.start[0], time.process_time() - self.start[1]))


L.seed_everything(0, verbose=False)
if side == "spec":
    from netdsl.lightning import SpecModule
    module = SpecModule(spec, channels_first=channels_last != "1")
else:
    module = Hand()
clock = Clock()
trainer = L.Trainer(max_epochs=int(epochs), accelerator="cpu", logger=False, enable_progress_bar=False,
                    enable_checkpointing=False, enable_model_summary=False, callbacks=[clock])
trainer.fit(module, DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True))
open(out, "w").write(json.dumps(clock.epochs))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--channels-last", action="store_true", help="give the spec side NHWC batches")
    args = parser.parse_args()
    env = dict(os.environ, KERAS_BACKEND="torch", TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "dsl"), *filter(None, [os.environ.get("PYTHONPATH")])])
    figures: dict[str, list[tuple[float, float]]] = {"spec": [], "hand": []}
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "cnn.net"
        spec.write_text(SPEC)
        for run in range(args.runs):
            for side in ("spec", "hand"):
                out = Path(tmp) / f"{side}-{run}.json"
                child = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        CHILD,
                        side,
                        str(spec),
                        str(args.epochs),
                        str(args.samples),
                        str(args.threads),
                        "1" if args.channels_last else "0",
                        str(out),
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                if child.returncode != 0:  # (the child's own error, not a CalledProcessError of the script)
                    sys.exit(f"bench_lightning: the {side} run failed:\n{child.stderr[-3000:]}")
                epochs = json.loads(out.read_text())[1:]
                figures[side].append((statistics.median(e[0] for e in epochs), statistics.median(e[1] for e in epochs)))
    wall = {side: statistics.median(f[0] for f in runs) for side, runs in figures.items()}
    cpu = {side: statistics.median(f[1] for f in runs) for side, runs in figures.items()}
    print(f"SpecModule  {wall['spec']:.3f} s/epoch wall, {cpu['spec']:.3f} s CPU")
    print(f"hand        {wall['hand']:.3f} s/epoch wall, {cpu['hand']:.3f} s CPU")
    print(
        f"ratio       {wall['spec'] / wall['hand']:.2f}x wall, {cpu['spec'] / cpu['hand']:.2f}x CPU "
        f"(threads {args.threads}, {args.samples} samples, batch 64; goal: at most 1.1x)"
    )


if __name__ == "__main__":
    main()
