"""`netdsl evaluate RUN_DIR|MODEL.keras|EXPORTED [--data SRC | --split test|val|train] [--spec SPEC.net]
[-I DIR] [--json] [--batch-size N]`.

The loss and metrics on data. A run folder means its best.keras when it had validation data, else its
model.keras (`--checkpoint best|last` chooses; the line `weights: ...` on stderr says which), and its
batch size;
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
import os
import sys
import warnings

from netdsl import api
from netdsl.cli.common import load_plugins, parse_targets, print_weights, warning_line
from netdsl.errors import UsageError, printable
from netdsl.training.errors import RunError


def opened(args: argparse.Namespace, need_targets: bool = True) -> tuple[api.TrainedModel, dict]:
    """The trained thing `args.trained` names (`api.open_trained`) and the targets asked for; what can be told
    of the data without the model (its path, its format, an image folder's class sub-folders) checked first."""
    trained = api.open_trained(args.trained, checkpoint=args.checkpoint, trust=args.trust)
    targets = parse_targets(args.targets)
    if args.data is not None:
        trained.check_data(args.data, targets, need_targets)
    return trained, targets


def run(args: argparse.Namespace) -> int:
    if not os.path.exists(args.trained):  # a typo: say so, not what evaluate needs without --data
        raise RunError("no such file or folder", file=args.trained)
    trained, targets = opened(args)
    if args.data is None and not trained.has_own_splits:
        raise UsageError("evaluate needs --data SRC, except for a run folder (its own test split by default)")
    from netdsl.deploy.errors import SpecChangedWarning  # here: the parser of every command imports this module

    with (
        trained.session(args.backend, scoring=True, load_plugins=lambda: load_plugins(args.plugin, args.trained)),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", SpecChangedWarning)
        print_weights(trained.weights_line)
        values = trained.evaluate(
            args.data,
            batch_size=args.batch_size,
            targets=targets,
            split=args.split,
            spec=args.spec,
            model=args.model,
            include=args.include,
        )
    for warned in caught:  # netdsl's own as one line; anyone else's (a runtime's) as Python shows it
        if issubclass(warned.category, SpecChangedWarning):
            print(warning_line("evaluate", str(warned.message)), file=sys.stderr)
        else:
            warnings.showwarning(warned.message, warned.category, warned.filename, warned.lineno)
    if args.json:
        print(json.dumps(values, indent=2))
    else:
        width = max(len(k) for k in values)
        for key, value in values.items():
            # metric names come from the model file
            print(f"{printable(key):<{width}}  {api.shown_value(value, '.6g')}")
        for line in _class_lines(trained.classes):
            print(line)
    return 0


def _class_lines(classes: dict[str, tuple[str, ...]]) -> list[str]:
    """`classes: a, b, c` (per output when several): the names the run or the file records."""
    single = len(classes) == 1
    return [
        f"classes{'' if single else ' of ' + printable(name)}: {printable(', '.join(names))}"
        for name, names in classes.items()
    ]
