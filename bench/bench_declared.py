"""Does a spec-declared activation cost more than Keras' own? Measured in the same run.

The same MLP is built twice from one spec: once with `mish` declared in the
spec (`activation mish(x) = x * tanh(smooth_relu(x))`, evaluated from its
expression tree), once with Keras' built-in `mish`. Prints the median time of
a training step (`train_on_batch`) for each and their ratio.
Target: declared / built-in <= 1.1.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dsl"))

import numpy as np  # noqa: E402

import netdsl  # noqa: E402

SPEC = """
activation declared_mish(x) = x * tanh(smooth_relu(x))

model declared {
  input x: (512,)
  h = x -> (dense(1024) -> declared_mish) * 3
  output y = h -> dense(10)
  train {
    optimizer = adam(learning_rate=1e-3)
    loss = mse
  }
}

model builtin {
  input x: (512,)
  h = x -> (dense(1024) -> mish) * 3
  output y = h -> dense(10)
  train {
    optimizer = adam(learning_rate=1e-3)
    loss = mse
  }
}
"""


def step_times(model, x, y, steps: int) -> list[float]:
    for _ in range(5):  # warm up: tracing, first allocations
        model.train_on_batch(x, y)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    program = netdsl.parse(SPEC, filename="bench_declared.net")
    models = netdsl.build_all(program)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 512)).astype("float32")
    y = rng.normal(size=(256, 10)).astype("float32")
    rounds = {"declared": [], "builtin": []}
    for _ in range(3):  # interleave, so drift in machine load hits both alike
        for name in rounds:
            rounds[name].extend(step_times(models[name], x, y, steps=20))
    declared = statistics.median(rounds["declared"])
    builtin = statistics.median(rounds["builtin"])
    print("training step (batch 256, 3 x dense(1024) + activation), median of 60:")
    print(f"  mish declared in the spec   {declared * 1e3:8.2f} ms")
    print(f"  Keras' built-in mish        {builtin * 1e3:8.2f} ms")
    print(f"  ratio declared / built-in   {declared / builtin:8.3f}   (target <= 1.10)")


if __name__ == "__main__":
    main()
