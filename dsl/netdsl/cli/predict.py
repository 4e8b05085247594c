"""`netdsl predict RUN_DIR|MODEL.keras|EXPORTED --data SRC -o PREDS.csv|.npz|.json [--batch-size N] [--backend B]`.

An exported file (.onnx, .tflite, a SavedModel folder) runs in its own runtime:
onnxruntime and LiteRT without Keras or TensorFlow.

The data needs only the model's inputs: an image folder (class sub-folders or
not, searched recursively), one image, a CSV file or an .npz (label columns or
arrays, when present, are left aside). The output, by its suffix: .csv (one row
per sample: `source`, then a classifier's predicted `class` and one probability
column per class, or an output's values), .npz (the same arrays, `source` and
`class` as text), .json; on a terminal the first rows are printed as a table. It runs in one
process on one device (Keras' predict does not run across processes; see
docs/scaling.md); `--backend` as for `train`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from netdsl.cli.common import load_plugins, print_weights
from netdsl.cli.evaluate import opened
from netdsl.errors import UsageError, printable
from netdsl.training.errors import TrainingError

WRITTEN = (".csv", ".npz", ".json")


def run(args: argparse.Namespace) -> int:
    if not args.out:
        raise UsageError("the following arguments are required: -o/--out PREDS.npz")
    if Path(args.out).suffix.lower() not in WRITTEN:
        raise UsageError(f"-o takes a .csv, .npz or .json file; received {printable(repr(args.out))}")
    trained, targets = opened(args, need_targets=False)

    with trained.session(args.backend, scoring=False, load_plugins=lambda: load_plugins(args.plugin, args.trained)):
        print_weights(trained.weights_line)
        predictions = trained.predict(args.data, batch_size=args.batch_size, targets=targets)
    try:
        target = predictions.write(args.out)
    except OSError as exc:
        raise TrainingError(f"cannot write: {exc.strerror or exc}", file=args.out) from None
    if sys.stdout.isatty():  # the first rows, for a person; a pipe or a script gets the summary line alone
        print(predictions.table())
    shapes = ", ".join(f"{printable(name)} {tuple(array.shape)}" for name, array in predictions.items())
    count = len(predictions.sources)
    print(f"wrote {printable(target)} ({count} sample{'' if count == 1 else 's'}; {shapes})")
    return 0
