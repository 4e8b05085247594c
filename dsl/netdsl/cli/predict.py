"""`netdsl predict RUN_DIR|MODEL.keras|EXPORTED --data SRC -o PREDS.npz [--batch-size N] [--backend B]`.

An exported file (.onnx, .tflite, a SavedModel folder) runs in its own runtime:
onnxruntime and LiteRT without Keras or TensorFlow.

Writes one array per model output, keyed by the output's name, atomically.
The data needs only the model's inputs (target columns or arrays, when
present, are left aside). It runs in one process on one device (Keras'
predict does not run across processes; see docs/scaling.md); `--backend` as for `train`.
"""

from __future__ import annotations

import argparse

from netdsl.cli.common import add_alias, add_command
from netdsl.cli.evaluate import add_trained_model_arguments, set_up
from netdsl.errors import UsageError, printable
from netdsl.training.errors import TrainingError


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = add_command(sub, "predict", summary="a trained model's outputs on data, as .npz",
                      description="Write a trained model's outputs on the data's inputs as an .npz file, one "
                                  "array per output, keyed by the output's name.",
                      examples=["netdsl predict runs/lightning_mlp-1 --data digits.npz -o preds.npz",
                                "netdsl predict mlp.onnx --data digits.npz -o preds.npz"])
    add_trained_model_arguments(cmd)
    # Required, checked in `run`: argparse's own check would refuse the old spelling --output.
    cmd.add_argument("-o", "--out", metavar="PREDS.npz", help="the .npz file to write (required)")
    add_alias(cmd, "--output", dest="out")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.out:
        raise UsageError("the following arguments are required: -o/--out PREDS.npz")
    targets, scope = set_up(args)
    from netdsl.api import predict
    from netdsl.deploy.inference import is_exported
    from netdsl.training.run.inference import write_predictions

    with scope():
        predictions = predict(args.trained, data=args.data, batch_size=args.batch_size, targets=targets,
                              backend=args.backend if is_exported(args.trained) else None, trust=args.trust)
    try:
        target = write_predictions(predictions, args.out)
    except OSError as exc:
        raise TrainingError(f"cannot write: {exc.strerror or exc}", file=args.out) from None
    shapes = ", ".join(f"{printable(name)} {tuple(array.shape)}" for name, array in predictions.items())
    print(f"wrote {target} ({shapes})")
    return 0
