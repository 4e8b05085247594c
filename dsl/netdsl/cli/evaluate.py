"""`netdsl evaluate RUN_DIR|MODEL.keras --data SRC [--json] [--batch-size N]`: loss and metrics on data.

A run folder means its model.keras (and its batch size). The data is read
as `train` reads it, by the model's input and output names. `--json`
prints the values as one JSON object instead of a table.
"""

from __future__ import annotations

import argparse
import json

from netdsl.cli.common import add_plugin, load_plugins
from netdsl.cli.train import add_targets, load_tensorflow, parse_targets


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser("evaluate", help="the loss and metrics of a trained model on data")
    cmd.add_argument("trained", metavar="RUN_DIR|MODEL.keras")
    cmd.add_argument("--data", required=True, metavar="SRC")
    cmd.add_argument("--batch-size", type=int, metavar="N")
    add_targets(cmd)
    add_plugin(cmd)
    cmd.add_argument("--json", action="store_true", help="print the values as JSON")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    targets = parse_targets(args.targets)
    load_tensorflow()
    load_plugins(args.plugin, args.trained)  # a saved model may hold plugin layers
    from netdsl.training.inference import evaluate

    values = evaluate(args.trained, args.data, args.batch_size, targets)
    if args.json:
        print(json.dumps(values, indent=2))
    else:
        width = max(len(k) for k in values)
        for key, value in values.items():
            print(f"{key:<{width}}  {value:.6g}")
    return 0
