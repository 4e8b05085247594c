"""`netdsl sweep SPEC [--model M] (--data SRC | --train SRC [--val SRC] [--test SRC]) [--trials N]
[--workers K] [--storage URL] [--study NAME] [--seed S] [-o DIR] [--resume auto|DIR]` and
`netdsl sweep --show DIR`: a spec's sweep section searched with Optuna (docs/sweeps.md).

Exit codes: 0 the sweep has its trials (pruned and failed trials included), 1 spec or data
errors, 2 usage errors (a flag, Optuna missing, a storage that cannot be opened), 130 stopped
by Ctrl-C (`--resume auto` goes on).
"""

from __future__ import annotations

import argparse
import sys

from netdsl.cli.common import (
    EXIT_STOPPED,
    add_command,
    add_data_flags,
    add_define,
    add_include,
    add_model,
    add_plugin,
    check_data_flags,
    data_request,
    load_plugins,
)
from netdsl.errors import UsageError, printable
from netdsl.semantics.defines import parse_defines
from netdsl.tuning.records import SweepResult, show_table
from netdsl.tuning.runner import SweepRequest, resolve_sweep, run_sweep
from netdsl.tuning.show import read_sweep as show_sweep


def add_parser(sub: argparse._SubParsersAction) -> None:
    sweep = add_command(sub, "sweep", summary="search a spec's constants (its sweep section) with Optuna",
                        description="Run the trials of the spec's `sweep MODEL { ... }` section: each trial an "
                                    "ordinary run folder (trials/<k>/) trained with its values as -D defines; "
                                    "summary.csv, best.json and plots in OUT/<model>-sweep-N/.",
                        examples=["netdsl sweep mlp.net --data digits.npz --trials 12",
                                  "netdsl sweep mlp.net --data digits.npz --workers 2 --seed 0",
                                  "netdsl sweep --show sweeps/mlp-sweep-1"])
    sweep.add_argument("spec", metavar="SPEC", nargs="?", help="the .net spec file with a sweep section")
    sweep.add_argument("--show", metavar="DIR", help="print a sweep folder's trials, best first, and stop")
    add_model(sweep, "the model the spec's one sweep section names")
    add_data_flags(sweep, {"--data": "one source, split by --split (as netdsl train)",
                           "--split": "train,validation[,test] fractions of --data",
                           "--test": "the test source (with --train)"})
    sweep.add_argument("--trials", type=int, metavar="N", help="the study's total (default: the spec's trials)")
    sweep.add_argument("--workers", type=int, default=1, metavar="K", help="processes sharing the study")
    sweep.add_argument("--storage", metavar="URL", help="the study's database (default: SQLite in the sweep "
                                                       "folder); postgresql://... for many machines; or in "
                                                       "NETDSL_SWEEP_STORAGE (a password stays out of ps)")
    sweep.add_argument("--study", metavar="NAME", help="the study's name in --storage (default: MODEL-sweep)")
    sweep.add_argument("--seed", type=int, metavar="S", help="the sampler's seed and every trial's")
    sweep.add_argument("--epochs", type=int, metavar="N", help="epochs per trial (default: the spec's train section)")
    sweep.add_argument("--batch-size", type=int, metavar="N", help="batch size (default: the spec's train section)")
    sweep.add_argument("-o", "--out", "--output", dest="out", default="sweeps", metavar="DIR",
                       help="where sweep folders go (sweeps/)")
    sweep.add_argument("--resume", metavar="auto|DIR", help="finish a stopped or killed sweep")
    sweep.add_argument("--track", metavar="URI", help="push the sweep as its trials train, as `netdsl runs push "
                                                      "--to URI` does (mlflow:<tracking URI> or tensorboard:"
                                                      "<folder>); a server that is down never fails the sweep")
    sweep.add_argument("--join", metavar="DIR", help=argparse.SUPPRESS)  # a worker of --workers K
    add_plugin(sweep)
    add_include(sweep)
    add_define(sweep)
    sweep.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.show:
        print(show_table(show_sweep(args.show, storage=args.storage)))
        return 0
    if not args.spec:
        raise UsageError("give a SPEC to sweep, or --show DIR")
    check_data_flags(args)
    if args.track:
        from netdsl.tracking.push import check_uri

        check_uri(args.track, "--track")  # before anything loads or trains
    load_plugins(args.plugin, args.spec)
    data = data_request(args)
    defines = parse_defines(args.define, args.spec)
    request = SweepRequest(spec=args.spec, model=args.model, data=data, trials=args.trials, workers=args.workers,
                           storage=args.storage, study=args.study, seed=args.seed, out=args.out, resume=args.resume,
                           epochs=args.epochs, batch_size=args.batch_size, defines=defines, include=args.include,
                           plugins=args.plugin, join=args.join, echo=True)
    try:
        result = _tracked_sweep(request, args.track if not args.join else None)  # what netdsl.sweep runs
    except KeyboardInterrupt:
        print("netdsl sweep: stopped; `netdsl sweep ... --resume auto` goes on", file=sys.stderr)
        return EXIT_STOPPED
    if args.join:  # one of the processes of --workers K: the starting process sums up
        return 0
    print(show_table(result))
    print(f"sweep folder: {printable(result.dir)}")
    return 0


def _tracked_sweep(request: SweepRequest, track: str | None) -> SweepResult:
    """run_sweep, pushed as it goes with `--track URI` (docs/runs.md): the process that starts the sweep
    tracks it; the processes of --workers K do not (their trials go when the sweep ends)."""
    config = resolve_sweep(request)
    if track is None:
        return run_sweep(config)
    from netdsl.tracking.live import Tracker

    tracker = Tracker.attach_sweep(track, config)
    try:
        return run_sweep(config)
    finally:
        tracker.finish()
