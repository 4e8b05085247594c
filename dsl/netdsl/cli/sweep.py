"""`netdsl sweep SPEC [--model M] (--data SRC | --train SRC [--val SRC] [--test SRC]) [--trials N]
[--workers K] [--storage URL] [--study NAME] [--seed S] [-o DIR] [--resume auto|DIR]` and
`netdsl sweep --show DIR [--json]`: a spec's sweep section searched with Optuna (docs/sweeps.md).

Exit codes: 0 the sweep has its trials (pruned and failed trials included), 1 spec or data
errors, 2 usage errors (a flag, Optuna missing, a storage that cannot be opened), 130 stopped
by Ctrl-C (`--resume auto` goes on).
"""

from __future__ import annotations

import argparse
import json
import sys

from netdsl import api
from netdsl.cli.common import (
    EXIT_STOPPED,
    check_data_flags,
    data_keywords,
    load_plugins,
)
from netdsl.errors import UsageError, printable


def run(args: argparse.Namespace) -> int:
    if args.show:
        _print(api.show_sweep(args.show, storage=args.storage), as_json=args.json)
        return 0
    if not args.spec:
        raise UsageError("give a SPEC to sweep, or --show DIR")
    check_data_flags(args)
    if not args.plugin:  # the installed plugins, before the spec is checked (netdsl.sweep loads --plugin's)
        load_plugins([], args.spec)
    keywords = data_keywords(args)
    defines = api.parse_defines(args.defines, args.spec)
    try:
        result = api.sweep(
            args.spec,
            model=args.model,
            **keywords,
            trials=args.trials,
            workers=args.workers,
            storage=args.storage,
            study=args.study,
            seed=args.seed,
            out=args.out,
            resume=args.resume,
            epochs=args.epochs,
            batch_size=args.batch_size,
            defines=defines,
            include=args.include,
            plugins=args.plugin,
            join=args.join,
            echo=not args.json,  # --json: the result alone on stdout
            track=args.track if not args.join else None,
        )
    except KeyboardInterrupt:
        print("netdsl sweep: stopped; `netdsl sweep ... --resume auto` goes on", file=sys.stderr)
        return EXIT_STOPPED
    if args.join:  # one of the processes of --workers K: the starting process sums up
        return 0
    _print(result, as_json=args.json)
    if not args.json:
        print(f"sweep folder: {printable(result.dir)}")
    return 0


def _print(result: api.SweepResult, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(api.sweep_json(result), indent=2, allow_nan=False, default=str))
    else:
        print(api.sweep_table(result))
