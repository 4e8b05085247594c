"""`netdsl train`: a spec's model trained on data, one run folder per run.

    netdsl train SPEC [--model NAME] (--data SRC [--split 0.8,0.1,0.1] | --train SRC [--val SRC] [--test SRC])
                 [--targets OUT=COLUMN] [--epochs N] [--batch-size N] [--seed S] [-o DIR]
                 [--resume auto|RUN_DIR] [--progress auto|bar|line|none] [--tensorboard]
                 [--init-from FILE.keras]
                 [--backend tensorflow|jax|torch] [--devices N]
                 [--processes N | --coordinator HOST:PORT --num-processes N --process-id I]

Exit codes: 0 a finished (or early-stopped) run, 1 a spec or data error or
a failed run, 2 a usage error, 130 a run stopped by Ctrl-C or SIGTERM
(resumable). The spec and the flags are checked before TensorFlow loads.
Progress goes to stderr; the summary (status, train loss, val_loss,
test_loss, the run folder) to stdout.

Several devices and processes (issue 11, training/scale/processes.py): `--devices N`
trains on N devices of this process; `--processes N` starts N local
processes of one job; `--coordinator/--num-processes/--process-id` (or
SLURM / Open MPI variables) make this process one of a job. Only process 0
prints and writes the run folder; a data path holding `{process}` names
each process's own file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from netdsl.cli.common import (
    EXIT_STOPPED,
    add_alias,
    add_command,
    add_data_flags,
    add_define,
    add_device_flags,
    add_include,
    add_job_flags,
    add_model,
    add_plugin,
    add_spec,
    check_data_flags,
    data_request,
    load_plugins,
)
from netdsl.errors import UsageError, printable
from netdsl.semantics.defines import parse_defines
from netdsl.training.errors import DataError
from netdsl.training.run.settings import PROGRESS, TrainRequest, resolve
from netdsl.training.scale import processes


def add_parser(sub: argparse._SubParsersAction) -> None:
    train = add_command(sub, "train", summary="train a spec's model on data; one run folder per run",
                        description="Train one model of the spec on data found by its input and output names "
                                    "(.npz, CSV, TFRecord, an image folder), in a new run folder "
                                    "OUT/<model>-N/ (models, history, report, curves); resumable.",
                        examples=["netdsl train specs/lightning_mlp.net --data digits.npz --epochs 3 --seed 0",
                                  "netdsl train my.net --train train.csv --val val.csv --targets probs=label",
                                  "netdsl train specs/lightning_mlp.net --data digits.npz --resume auto"])
    add_spec(train)
    add_model(train, "the spec's only model")
    add_data_flags(train)
    train.add_argument("--epochs", type=int, metavar="N", help="epochs to train (default: the spec's, else 1)")
    train.add_argument("--batch-size", type=int, metavar="N",
                       help="samples per step (default: the spec's, else 32)")
    train.add_argument("--seed", type=int, metavar="S",
                       help="the seed of weights, split and shuffling: the same seed, the same run "
                            "(default: a random one, recorded in the run folder)")
    train.add_argument("-o", "--out", default="runs", metavar="DIR", help="the folder run folders go into")
    add_alias(train, "--output", dest="out")
    train.add_argument("--resume", metavar="auto|RUN_DIR",
                       help="continue a stopped run: RUN_DIR, or auto for the newest unfinished run of the "
                            "model in OUT (default: a new run)")
    train.add_argument("--progress", choices=PROGRESS, default="auto",
                       help="on stderr: bar (redrawn), line (one per epoch), none, or auto (a bar on a "
                            "terminal, else lines)")
    train.add_argument("--tensorboard", action="store_true", help="TensorBoard logs in the run folder")
    train.add_argument("--track", metavar="URI", help="push the run as it trains, as `netdsl runs push --to URI` "
                                                      "does (mlflow:<tracking URI> or tensorboard:<folder>); a "
                                                      "server that is down never fails the run")
    train.add_argument("--init-from", default=None, metavar="FILE",
                       help="the whole model's initial weights from FILE (.keras or .weights.h5), matched by "
                            "layer name as a train section's init = \"FILE\" (read as arrays only)")
    add_device_flags(train)
    add_job_flags(train)
    add_plugin(train)
    add_include(train)
    add_define(train)
    train.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_data_flags(args)
    if args.track:
        from netdsl.tracking.push import check_uri

        check_uri(args.track, "--track")  # before anything loads or trains
    if not (args.data or args.train or args.resume):
        raise UsageError("no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]")
    if args.processes is not None:  # --processes N: this process launches the job's N processes
        if not args.plugin:  # (plugins load Keras: each process checks the spec after loading them)
            _checked(args, 0)  # spec errors and bad flags once, before any process starts
        joins = bool(args.coordinator) or args.num_processes is not None or args.process_id is not None
        return processes.launch_job(args.argv, args.processes, args.backend, joins)
    topology = processes.topology_of(args.backend, args.devices, args.coordinator, args.num_processes,
                                     args.process_id)
    # Spec errors and bad flags before TensorFlow loads; with --plugin, after the backend (a plugin imports Keras).
    try:
        config = None if args.plugin else _checked(args, topology.process_id)
    except DataError as exc:
        if not topology.multi_process:
            raise
        # Its own data (a shard), refused before joining: name this process, as errors after joining are.
        print(f"process {topology.process_id}: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    if topology.multi_process:
        from netdsl.training.scale.job import run_in_job

        check = lambda: _checked(args, topology.process_id)  # noqa: E731
        own_files = processes.own_roles(args.data, {"train": args.train, "val": args.val, "test": args.test})
        summarize = lambda result: _print_summary(result, args.spec)  # noqa: E731
        return run_in_job(config, topology, own_files, check, _announce, summarize)
    from netdsl.training.scale.distribute import set_up

    distribution = set_up(topology)
    config = config or _checked(args, topology.process_id)
    from netdsl.training.run.engine import run_training

    config.on_start = _announce
    tracker = _tracker(args, config)
    try:
        result = run_training(config, distribution)
    finally:
        if tracker is not None:
            tracker.finish()
    _print_summary(result, args.spec)
    return EXIT_STOPPED if result.status == "stopped" else 0


def _request(args: argparse.Namespace, process_id: int) -> TrainRequest:
    own = lambda path: processes.own_file(path, process_id)  # noqa: E731 - `{process}` in a data path
    data = data_request(args, own)
    progress = args.progress if process_id == 0 else "none"
    return TrainRequest(spec=args.spec, model=args.model, data=data, epochs=args.epochs,
                        batch_size=args.batch_size, seed=args.seed, out=args.out, resume=args.resume,
                        progress=progress, tensorboard=args.tensorboard, include=args.include,
                        defines=parse_defines(args.define, args.spec), init_from=args.init_from)


def _checked(args: argparse.Namespace, process_id: int) -> Any:
    """Load the plugins (the installed ones, and --plugin once the backend is loaded), then check
    the spec and the flags: the spec may name the plugins' layers."""
    load_plugins(args.plugin, args.spec)
    return resolve(_request(args, process_id))


def _tracker(args: argparse.Namespace, config: Any) -> Any:
    """`--track URI`: a tracker told the run folder and each epoch (docs/runs.md); None without it."""
    if not args.track:
        return None
    from netdsl.tracking.live import Tracker

    return Tracker.attach(args.track, config)


def _announce(folder: Path, first_epoch: int) -> None:
    resumed = f" (resuming after epoch {first_epoch})" if first_epoch else ""
    print(f"run folder: {printable(folder)}{resumed}", file=sys.stderr, flush=True)


def _weights_line(report: dict) -> str:
    from netdsl.training.run.runs import weights_line

    used = report.get("test_weights") or {}
    why = "no validation data, so no best epoch" if used.get("checkpoint") == "last" else None
    return weights_line(str(used.get("checkpoint", "last")), used.get("epoch"), report.get("epochs_run"),
                        used.get("val_loss"), why)


def _print_summary(result: Any, spec: str) -> None:
    from netdsl.training.run.report import shown_value

    report = result.report
    seconds, speed = report.get("seconds") or 0.0, report.get("samples_per_second")
    rate = f", {speed:,.0f} samples/s" if speed else ""
    print(f"status: {report['status']} ({report['epochs_run']} of {report['epochs']} epochs, {seconds:.1f} s{rate})")
    for group, prefix in (("train", ""), ("val", "val_"), ("test", "test_")):
        values = report.get(group) or {}
        if values and group == "test":  # scored with the weights evaluate RUN uses; stderr, as every command's
            print(_weights_line(report), file=sys.stderr, flush=True)
        if values:
            print(f"{group + ':':<6} " + "  ".join(f"{prefix}{k} {shown_value(v, '.4f')}" for k, v in values.items()))
    if result.dir is None:  # stopped before the data was checked: nothing was written
        print("run folder: none (nothing was written)")
        return
    if report["status"] == "stopped":
        print(f"resume with: netdsl train {printable(spec)} --resume {printable(result.dir)}")
    print(f"run folder: {printable(result.dir)}")
