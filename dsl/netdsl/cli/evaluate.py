"""`netdsl evaluate RUN_DIR|MODEL.keras|EXPORTED [--data SRC | --split test|val|train] [--spec SPEC.net]
[-I DIR] [--json] [--batch-size N]`.

The loss and metrics on data. A run folder means its model.keras (and its batch size);
an exported file (.onnx, .tflite, a SavedModel folder) runs in its own runtime, scored
with the loss and metrics of --spec (or of the spec its run folder recorded);
without `--data`, its own test split (or `--split val|train`), cut as training cut it. The data is read
as `train` reads it, by the model's input and output names. `--json`
prints the values as one JSON object instead of a table. `--backend` as for
`train`; it runs in one process on one device (Keras' predict does not run
across processes; see docs/scaling.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from netdsl.cli.common import (
    add_backend,
    add_command,
    add_include,
    add_json,
    add_plugin,
    add_targets,
    load_plugins,
    parse_targets,
    warning_line,
)
from netdsl.errors import UsageError, printable
from netdsl.training.scale import processes


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = add_command(sub, "evaluate", summary="the loss and metrics of a trained model on data",
                      description="Print the loss and each metric of a trained model (a run folder, a .keras "
                                  "file, or a file of netdsl export run in its own runtime) on data read as "
                                  "train reads it.",
                      examples=["netdsl evaluate runs/lightning_mlp-1 --data digits.npz",
                                "netdsl evaluate mlp.onnx --data digits.npz --spec specs/lightning_mlp.net",
                                "netdsl evaluate build/model.keras --data test.csv --targets probs=label --json"])
    add_trained_model_arguments(cmd, data_required=False)
    cmd.add_argument("--split", choices=("test", "val", "train"), default="test",
                     help="without --data: which part of a run folder's own data")
    cmd.add_argument("--spec", metavar="SPEC.net",
                     help="an exported file's loss and metrics: this spec's train section (default: the spec "
                          "of the run folder the file is in)")
    cmd.add_argument("--model", metavar="NAME",
                     help="with --spec: the model whose train section scores the file (default: the one the file "
                          "records, or the spec's only model)")
    add_include(cmd)
    add_json(cmd, "the values (one object)")
    cmd.set_defaults(run=run)


def add_trained_model_arguments(cmd: argparse.ArgumentParser, data_required: bool = True) -> None:
    """What `evaluate` and `predict` share: the trained model, its data and how to run it."""
    cmd.add_argument("trained", metavar="RUN_DIR|MODEL.keras|EXPORTED",
                     help="a run folder (its model.keras), a .keras file, or an exported .onnx, .tflite or "
                          "SavedModel folder (run in its own runtime)")
    cmd.add_argument("--data", required=data_required, metavar="SRC",
                     help="the data (.npz, .csv, .tfrecord, image folder), found by the model's input names"
                          + ("" if data_required else " (default: a run folder's own --split)"))
    cmd.add_argument("--batch-size", type=int, metavar="N",
                     help="samples per step (default: the run's batch size, else 32)")
    cmd.add_argument("--trust", action="store_true",
                     help="run a SavedModel folder whose graph holds TensorFlow ops outside netdsl's allow-list "
                          "(a SavedModel is a program: only one from someone you trust)")
    add_targets(cmd)
    add_plugin(cmd)
    add_backend(cmd)


def set_up(args: argparse.Namespace) -> tuple[dict, Any]:
    """The targets asked for and the scope to run in; the backend and plugins loaded
    (neither for an exported file, which runs in its own runtime)."""
    import contextlib

    from netdsl.deploy.inference import is_exported

    targets = parse_targets(args.targets)
    if is_exported(args.trained):
        return targets, contextlib.nullcontext
    scope = processes.set_up_one_process(args.backend)
    load_plugins(args.plugin, args.trained)  # a saved model may hold plugin layers
    return targets, scope


def run(args: argparse.Namespace) -> int:
    from netdsl.deploy.inference import is_exported

    exported = is_exported(args.trained)
    if args.data is None and (exported or not Path(args.trained).is_dir()):
        raise UsageError("evaluate needs --data SRC, except for a run folder (its own test split by default)")
    targets, scope = set_up(args)
    if exported:
        load_plugins(args.plugin, args.trained)  # the spec scoring it may use plugin layers
    from netdsl.api import evaluate
    from netdsl.deploy.errors import SpecChangedWarning  # here: the parser of every command imports this module

    with scope(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecChangedWarning)
        values = evaluate(args.trained, data=args.data, batch_size=args.batch_size, targets=targets, split=args.split,
                          spec=args.spec, model=args.model, include=args.include,
                          backend=args.backend if exported else None, trust=args.trust)
    for warned in caught:  # netdsl's own as one line; anyone else's (a runtime's) as Python shows it
        if issubclass(warned.category, SpecChangedWarning):
            print(warning_line("evaluate", str(warned.message)), file=sys.stderr)
        else:
            warnings.showwarning(warned.message, warned.category, warned.filename, warned.lineno)
    from netdsl.training.run.report import shown_value

    if args.json:
        print(json.dumps(values, indent=2))
    else:
        width = max(len(k) for k in values)
        for key, value in values.items():
            print(f"{printable(key):<{width}}  {shown_value(value, '.6g')}")  # metric names come from the model file
    return 0
