"""`netdsl predict RUN_DIR|MODEL.keras --data SRC -o PREDS.npz [--batch-size N] [--backend B]`.

Writes one array per model output, keyed by the output's name, atomically.
The data needs only the model's inputs (target columns or arrays, when
present, are left aside). It runs in one process on one device (Keras'
predict does not run across processes; see docs/scaling.md); `--backend` as for `train`.
"""

from __future__ import annotations

import argparse

from netdsl.cli.evaluate import add_trained_model_arguments, set_up
from netdsl.errors import printable
from netdsl.training.errors import TrainingError


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser("predict", help="a trained model's outputs on data, as .npz")
    add_trained_model_arguments(cmd)
    cmd.add_argument("-o", "--output", required=True, metavar="PREDS.npz")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    targets, scope = set_up(args)
    from netdsl.training.inference import predict, write_predictions

    with scope():
        predictions = predict(args.trained, args.data, args.batch_size, targets)
    try:
        target = write_predictions(predictions, args.output)
    except OSError as exc:
        raise TrainingError(f"cannot write: {exc.strerror or exc}", file=args.output) from None
    shapes = ", ".join(f"{printable(name)} {tuple(array.shape)}" for name, array in predictions.items())
    print(f"wrote {target} ({shapes})")
    return 0
