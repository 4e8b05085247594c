"""`netdsl train`: a spec's model trained on data, one run folder per run.

    netdsl train SPEC [--model NAME] (--data SRC [--split 0.8,0.1,0.1] | --train SRC [--val SRC] [--test SRC])
                 [--targets OUT=COLUMN] [--epochs N] [--batch-size N] [--seed S] [-o DIR]
                 [--resume auto|RUN_DIR] [--progress auto|bar|line|none] [--tensorboard]
                 [--init-from FILE.keras] [--max-memory SIZE]
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

from netdsl import api
from netdsl.cli.common import (
    EXIT_STOPPED,
    check_data_flags,
    data_keywords,
    load_plugins,
)
from netdsl.errors import UsageError, printable
from netdsl.training.errors import DataError
from netdsl.training.scale import processes


def run(args: argparse.Namespace) -> int:
    check_data_flags(args)
    if not (args.data or args.train or args.resume):
        raise UsageError("no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]")
    if args.processes is not None:  # --processes N: this process launches the job's N processes
        if args.track is not None:  # each process gets --track: its process 0 tracks the run (`_join_job`)
            api.check_track(args.track)  # a URI netdsl does not know: once, before any process starts
        if not args.plugin:  # (plugins load Keras: each process checks the spec after loading them)
            _checked(args, 0)  # spec errors and bad flags once, before any process starts
        joins = bool(args.coordinator) or args.num_processes is not None or args.process_id is not None
        return processes.launch_job(args.argv, args.processes, args.backend, joins)
    topology = processes.topology_of(args.backend, args.devices, args.coordinator, args.num_processes, args.process_id)
    if topology.multi_process:
        return _join_job(args, topology)
    if not args.plugin:  # the installed plugins, before the spec is checked (its layers may be theirs)
        load_plugins([], args.spec)
    # What netdsl.train runs: the spec and the flags checked before TensorFlow loads (after it, with --plugin).
    result = api.train(
        **_keywords(args, 0),
        backend=args.backend,
        devices=topology.devices or 1,
        plugins=args.plugin,
        on_start=_announce,
        track=args.track,
    )
    _print_summary(result, args.spec)
    return EXIT_STOPPED if result.status == "stopped" else 0


def _keywords(args: argparse.Namespace, process_id: int) -> dict[str, Any]:
    """The flags as netdsl.train's keywords (the data of this process: `{process}` in a path names its own)."""
    own = lambda path: processes.own_file(path, process_id)  # noqa: E731
    return dict(
        spec=args.spec,
        model=args.model,
        **data_keywords(args, own),
        epochs=args.epochs,
        batch_size=args.batch_size,
        seed=args.seed,
        out=args.out,
        resume=args.resume,
        progress=args.progress if process_id == 0 else "none",
        tensorboard=args.tensorboard,
        include=args.include,
        defines=api.parse_defines(args.defines, args.spec),
        init_from=args.init_from,
        max_memory=args.max_memory,
    )


def _join_job(args: argparse.Namespace, topology: Any) -> int:
    """This process as one of a job's (training/scale/job.py): checked before it joins, unless --plugin."""
    from netdsl.training.scale.job import run_in_job

    if args.track is not None:
        api.check_track(args.track)  # before this process joins the job
    try:
        config = None if args.plugin else _checked(args, topology.process_id)
    except DataError as exc:
        # Its own data (a shard), refused before joining: name this process, as errors after joining are.
        print(f"process {topology.process_id}: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    check = lambda: _checked(args, topology.process_id)  # noqa: E731
    own_files = processes.own_roles(args.data, {"train": args.train, "val": args.val, "test": args.test})
    summarize = lambda result: _print_summary(result, args.spec)  # noqa: E731
    track = None if args.track is None else lambda config: api.track_run(args.track, config)  # process 0's
    return run_in_job(config, topology, own_files, check, _announce, summarize, track)


def _checked(args: argparse.Namespace, process_id: int) -> Any:
    """Load the plugins (the installed ones, and --plugin once the backend is loaded), then check
    the spec and the flags: the spec may name the plugins' layers. The settings a job's process
    trains with (run_in_job needs them before the run), or that --processes checks first."""
    load_plugins(args.plugin, args.spec)
    return api.train_settings(**_keywords(args, process_id))


def _announce(folder: Path, first_epoch: int) -> None:
    resumed = f" (resuming after epoch {first_epoch})" if first_epoch else ""
    print(f"run folder: {printable(folder)}{resumed}", file=sys.stderr, flush=True)


def _print_summary(result: Any, spec: str) -> None:
    report = result.report
    seconds, speed = report.get("seconds") or 0.0, report.get("samples_per_second")
    rate = f", {speed:,.0f} samples/s" if speed else ""
    print(f"status: {report['status']} ({report['epochs_run']} of {report['epochs']} epochs, {seconds:.1f} s{rate})")
    for group, prefix in (("train", ""), ("val", "val_"), ("test", "test_")):
        values = report.get(group) or {}
        if values and group == "test":  # scored with the weights evaluate RUN uses; stderr, as every command's
            print(api.report_weights_line(report), file=sys.stderr, flush=True)
        if values:
            shown = (f"{prefix}{k} {api.shown_value(v, '.4f')}" for k, v in values.items())
            print(f"{group + ':':<6} " + "  ".join(shown))
    if result.dir is None:  # stopped before the data was checked: nothing was written
        print("run folder: none (nothing was written)")
        return
    if report["status"] == "stopped":
        print(f"resume with: netdsl train {printable(spec)} --resume {printable(result.dir)}")
    print(f"run folder: {printable(result.dir)}")
