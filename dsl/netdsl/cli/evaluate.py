"""`netdsl evaluate RUN_DIR|MODEL.keras --data SRC [--json] [--batch-size N] [--backend B]`: loss and metrics on data.

A run folder means its model.keras (and its batch size). The data is read
as `train` reads it, by the model's input and output names. `--json`
prints the values as one JSON object instead of a table. `--backend` as for
`train`; it runs in one process on one device (Keras' predict does not run
across processes; see docs/scaling.md).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from netdsl.cli import scaling
from netdsl.cli.common import add_backend, add_plugin, load_plugins
from netdsl.cli.train import add_targets, parse_targets
from netdsl.errors import printable


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser("evaluate", help="the loss and metrics of a trained model on data")
    add_trained_model_arguments(cmd)
    cmd.add_argument("--json", action="store_true", help="print the values as JSON")
    cmd.set_defaults(run=run)


def add_trained_model_arguments(cmd: argparse.ArgumentParser) -> None:
    """What `evaluate` and `predict` share: the trained model, its data and how to run it."""
    cmd.add_argument("trained", metavar="RUN_DIR|MODEL.keras")
    cmd.add_argument("--data", required=True, metavar="SRC")
    cmd.add_argument("--batch-size", type=int, metavar="N")
    add_targets(cmd)
    add_plugin(cmd)
    add_backend(cmd)


def set_up(args: argparse.Namespace) -> tuple[dict, Any]:
    """The targets asked for and the scope to run in; the backend and plugins loaded."""
    targets = parse_targets(args.targets)
    scope = scaling.set_up_one_process(args)
    load_plugins(args.plugin, args.trained)  # a saved model may hold plugin layers
    return targets, scope


def run(args: argparse.Namespace) -> int:
    targets, scope = set_up(args)
    from netdsl.training.inference import evaluate

    with scope():
        values = evaluate(args.trained, args.data, args.batch_size, targets)
    if args.json:
        print(json.dumps(values, indent=2))
    else:
        width = max(len(k) for k in values)
        for key, value in values.items():
            print(f"{printable(key):<{width}}  {value:.6g}")  # metric names come from the model file
    return 0
