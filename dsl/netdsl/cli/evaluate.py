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
from pathlib import Path
from typing import Any

from netdsl import api
from netdsl.cli.common import load_plugins, parse_targets, print_weights, warning_line
from netdsl.errors import UsageError, printable
from netdsl.training.errors import RunError
from netdsl.training.scale import processes


def set_up(args: argparse.Namespace, need_targets: bool = True) -> tuple[dict, Any]:
    """The targets asked for and the scope to run in; the backend and plugins loaded
    (neither for an exported file, which runs in its own runtime). What can be told of the data
    without the model (its path, its format, an image folder's class sub-folders) is checked first."""
    import contextlib

    targets = parse_targets(args.targets)
    if args.data is not None:
        api.check_data(args.trained, args.data, targets, need_targets)
    if api.is_exported(args.trained):
        return targets, contextlib.nullcontext
    scope = processes.set_up_one_process(args.backend)
    load_plugins(args.plugin, args.trained)  # a saved model may hold plugin layers
    return targets, scope


def run(args: argparse.Namespace) -> int:
    exported = api.is_exported(args.trained)
    if not os.path.exists(args.trained):  # a typo: say so, not what evaluate needs without --data
        raise RunError("no such file or folder", file=args.trained)
    if args.data is None and (exported or not Path(args.trained).is_dir()):
        raise UsageError("evaluate needs --data SRC, except for a run folder (its own test split by default)")
    targets, scope = set_up(args)
    if exported:
        load_plugins(args.plugin, args.trained)  # the spec scoring it may use plugin layers
    from netdsl.deploy.errors import SpecChangedWarning  # here: the parser of every command imports this module

    with scope(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecChangedWarning)
        print_weights(args.trained, args.checkpoint)
        values = api.evaluate(args.trained, data=args.data, batch_size=args.batch_size, targets=targets,
                              split=args.split, spec=args.spec, model=args.model, include=args.include,
                              backend=args.backend if exported else None, checkpoint=args.checkpoint,
                              trust=args.trust)
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
        for line in _class_lines(args.trained):
            print(line)
    return 0


def _class_lines(trained: str) -> list[str]:
    """`classes: a, b, c` (per output when several): the names the run or the file records."""
    classes = api.class_names(trained)
    single = len(classes) == 1
    return [f"classes{'' if single else ' of ' + printable(name)}: {printable(', '.join(names))}"
            for name, names in classes.items()]
