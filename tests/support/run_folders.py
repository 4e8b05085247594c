"""Real run folders for the tests of `netdsl runs` (tests/tracking/): two runs of a tiny model that differ
in one `-D` define, and a sweep of 6 trials, trained once per session by the real engine."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def tiny_spec(epochs: int, trials: int) -> str:
    """A tiny classifier with two file-level constants and a sweep over them (shared with tests/tuning)."""
    return f"""\
let width = 8
let lr = 0.01

model tiny {{
  input x: (6,)
  output y = x -> dense(width, activation=relu) -> dense(3)
  train {{
    optimizer = adam(learning_rate=lr)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [sparse_categorical_accuracy]
    batch_size = 16
    epochs = {epochs}
    shuffle = false
  }}
}}

sweep tiny {{
  width = choice(4, 8, 16)
  lr = log_uniform(1e-3, 1e-1)
  objective = minimize(val_loss)
  trials = {trials}
}}
"""


SPEC = tiny_spec(epochs=3, trials=6)


@dataclass(frozen=True)
class Project:
    folder: Path  # tiny.net, data.npz, runs/, sweeps/
    first: Path  # runs/tiny-1: the spec as written
    second: Path  # runs/tiny-2: -D width=16
    sweep: Path  # sweeps/tiny-sweep-1: 6 trials of 1 epoch


def make_project(folder: Path) -> Project:
    import netdsl

    (folder / "tiny.net").write_text(SPEC)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(96, 6)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64")
    np.savez(folder / "data.npz", x=x, y=y)
    first = netdsl.train(folder / "tiny.net", data=folder / "data.npz", seed=1, out=folder / "runs").dir
    second = netdsl.train(
        folder / "tiny.net", data=folder / "data.npz", seed=1, out=folder / "runs", defines={"width": 16}
    ).dir
    sweep = netdsl.sweep(folder / "tiny.net", data=folder / "data.npz", seed=2, epochs=1, out=folder / "sweeps").dir
    assert first is not None and second is not None
    return Project(folder, first, second, sweep)


def copies(run: Path, folder: Path, n: int) -> Path:
    """`n` copies of a run folder in `folder` (`copy-<k>`), as folders brought from another machine are."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        shutil.copytree(run, folder / f"copy-{k}", symlinks=True)
    return folder
