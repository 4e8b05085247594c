"""`netdsl evaluate RUN_DIR|MODEL.keras [--data SRC | --split test|val|train] [--json] [--batch-size N]`.

The loss and metrics on data. A run folder means its model.keras (and its batch size);
without `--data`, its own test split (or `--split val|train`), cut as training cut it. The data is read
as `train` reads it, by the model's input and output names. `--json`
prints the values as one JSON object instead of a table. `--backend` as for
`train`; it runs in one process on one device (Keras' predict does not run
across processes; see docs/scaling.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from netdsl.cli.common import add_backend, add_command, add_json, add_plugin, add_targets, load_plugins, parse_targets
from netdsl.errors import printable
from netdsl.training.errors import UsageError
from netdsl.training.scale import processes


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = add_command(sub, "evaluate", summary="the loss and metrics of a trained model on data",
                      description="Print the loss and each metric of a trained model (a run folder or a .keras "
                                  "file) on data read as train reads it.",
                      examples=["netdsl evaluate runs/lightning_mlp-1 --data digits.npz",
                                "netdsl evaluate build/model.keras --data test.csv --targets probs=label --json"])
    add_trained_model_arguments(cmd, data_required=False)
    cmd.add_argument("--split", choices=("test", "val", "train"), default="test",
                     help="without --data: which part of a run folder's own data")
    add_json(cmd, "the values (one object)")
    cmd.set_defaults(run=run)


def add_trained_model_arguments(cmd: argparse.ArgumentParser, data_required: bool = True) -> None:
    """What `evaluate` and `predict` share: the trained model, its data and how to run it."""
    cmd.add_argument("trained", metavar="RUN_DIR|MODEL.keras", help="a run folder (its model.keras) or a .keras file")
    cmd.add_argument("--data", required=data_required, metavar="SRC",
                     help="the data (.npz, .csv, .tfrecord, image folder), found by the model's input names"
                          + ("" if data_required else " (default: a run folder's own --split)"))
    cmd.add_argument("--batch-size", type=int, metavar="N",
                     help="samples per step (default: the run's batch size, else 32)")
    add_targets(cmd)
    add_plugin(cmd)
    add_backend(cmd)


def set_up(args: argparse.Namespace) -> tuple[dict, Any]:
    """The targets asked for and the scope to run in; the backend and plugins loaded."""
    targets = parse_targets(args.targets)
    scope = processes.set_up_one_process(args.backend)
    load_plugins(args.plugin, args.trained)  # a saved model may hold plugin layers
    return targets, scope


def run(args: argparse.Namespace) -> int:
    if args.data is None and not Path(args.trained).is_dir():
        raise UsageError("evaluate needs --data SRC, except for a run folder (its own test split by default)")
    targets, scope = set_up(args)
    from netdsl.api import evaluate

    with scope():
        values = evaluate(args.trained, data=args.data, batch_size=args.batch_size, targets=targets, split=args.split)
    if args.json:
        print(json.dumps(values, indent=2))
    else:
        width = max(len(k) for k in values)
        for key, value in values.items():
            print(f"{printable(key):<{width}}  {value:.6g}")  # metric names come from the model file
    return 0
