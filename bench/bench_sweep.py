"""How much does `netdsl sweep` add per trial? A sweep of N trials against `netdsl train` of the
same settings run N times, in the same run.

Both sides train specs/lightning_mlp.net's model (784 -> width -> 10, Adam at lr) on the same
generated data (scripts/demo_data.py), in this one process (TensorFlow loaded once, before
the first timing):

  sweep   `netdsl.sweep(SPEC, data=..., trials=N, seed=S)`: Optuna's TPE asks, SQLite in the
          sweep folder, one run folder per trial with the pruning hook, then summary.csv,
          best.json and the two plots
  train   `netdsl.train(SPEC, data=..., seed=S, defines=PARAMS_k)` for the N parameter sets
          that sweep tried, one after the other

The sides alternate (sweep, train, sweep, ...) so drift on a shared machine hits both alike;
the figure is the ratio of the medians (target: at most 1.05) and the overhead per trial in
seconds.

    python bench/bench_sweep.py [--runs 3] [--trials 4] [--epochs 2] [--samples 4000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
sys.path.insert(0, str(ROOT / "scripts"))

SPEC = """\
let width = 128
let lr = 1e-3

model mlp {
  input image: (28, 28)
  h = image -> flatten -> dense(width, activation=relu)
  output logits = h -> dense(10)
  train {
    optimizer = adam(learning_rate=lr)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [sparse_categorical_accuracy]
    batch_size = 64
  }
}

sweep mlp {
  width = choice(64, 128, 256)
  lr = log_uniform(1e-4, 1e-2)
  objective = minimize(val_loss)
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=4000)
    args = parser.parse_args()

    import numpy as np
    from demo_data import generate

    import netdsl

    work = Path(tempfile.mkdtemp(prefix="netdsl-bench-sweep-"))
    spec = work / "mlp.net"
    spec.write_text(SPEC)
    images, labels = generate(args.samples)
    np.savez(work / "digits.npz", image=images, logits=labels)
    data = work / "digits.npz"
    netdsl.train(spec, data=data, epochs=1, seed=0, out=work / "warm")  # TensorFlow loaded, graphs traced once

    sweep_times, train_times = [], []
    for run in range(args.runs):
        start = time.perf_counter()
        result = netdsl.sweep(
            spec, data=data, trials=args.trials, epochs=args.epochs, seed=run, out=work / f"sweeps{run}"
        )
        sweep_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        for trial in result.trials:
            netdsl.train(spec, data=data, epochs=args.epochs, seed=run, out=work / f"runs{run}", defines=trial.params)
        train_times.append(time.perf_counter() - start)
        print(f"run {run}: sweep {sweep_times[-1]:.2f} s, train x{args.trials} {train_times[-1]:.2f} s", flush=True)
    sweep, train = statistics.median(sweep_times), statistics.median(train_times)
    print(
        f"sweep / train x{args.trials}: {sweep / train:.3f} (target <= 1.05); "
        f"overhead per trial {(sweep - train) / args.trials:.3f} s of {train / args.trials:.2f} s"
    )


if __name__ == "__main__":
    main()
