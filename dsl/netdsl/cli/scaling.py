"""The flags that say where a command runs (backend, devices, processes) and the job around a run.

    --backend tensorflow|jax   --devices N   --processes N
    --coordinator HOST:PORT --num-processes N --process-id I   (or SLURM / Open MPI variables)

`train` takes all of them; `evaluate` and `predict` run in one process on
one device (Keras' `predict` does not run across processes) and take
`--backend`. Nothing here imports Keras: the flags are checked first, then
`distribute.set_up` loads the backend the way the topology needs it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from netdsl.cli.common import add_backend
from netdsl.training.errors import UsageError
from netdsl.training.topology import PROCESS_FIELD, Topology, multi_process_refusal, resolve_topology

__all__ = [
    "add_device_flags", "add_job_flags", "topology_of", "launch_job", "own_file", "own_roles", "is_launcher",
    "set_up_one_process",
]


def add_device_flags(parser: argparse.ArgumentParser) -> None:
    add_backend(parser)
    parser.add_argument("--devices", type=int, metavar="N",
                        help="train on N devices of this process (GPUs, or the CPU split in N)")


def add_job_flags(parser: argparse.ArgumentParser) -> None:
    job = parser.add_argument_group("several processes (JAX)")
    job.add_argument("--processes", type=int, metavar="N", help="start N processes of one job on this machine")
    job.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's address and a free port")
    job.add_argument("--num-processes", type=int, metavar="N", help="the number of processes of the job")
    job.add_argument("--process-id", type=int, metavar="I", help="this process's number, 0 to N-1")


def is_launcher(args: argparse.Namespace) -> bool:
    return getattr(args, "processes", None) is not None


def topology_of(args: argparse.Namespace) -> Topology:
    """The checked topology of this process (flags first, then SLURM / Open MPI variables)."""
    return resolve_topology(args.backend, args.devices, getattr(args, "coordinator", None),
                            getattr(args, "num_processes", None), getattr(args, "process_id", None), os.environ)


def set_up_one_process(args: argparse.Namespace) -> Any:
    """`evaluate` / `predict`: the backend of this one process; the scope to load and run in."""
    import contextlib

    from netdsl.training.distribute import set_up

    distribution = set_up(resolve_topology(args.backend, None, None, None, None, {}))
    return distribution.scope if distribution is not None else contextlib.nullcontext


def own_roles(args: argparse.Namespace) -> frozenset:
    """The data parts each process reads from its own file (`{process}` in their path)."""
    if isinstance(args.data, str) and PROCESS_FIELD in args.data:
        return frozenset({"train", "val", "test"})
    return frozenset(role for role in ("train", "val", "test")
                     if isinstance(getattr(args, role), str) and PROCESS_FIELD in getattr(args, role))


def own_file(path: Any, process_id: int) -> Any:
    """A data path with `{process}` in it names each process's own file."""
    return path.replace(PROCESS_FIELD, str(process_id)) if isinstance(path, str) else path


def launch_job(args: argparse.Namespace, argv: list[str]) -> int:
    """`--processes N`: check the flags, then run the same command as N local processes."""
    from netdsl.training.launch import launch

    if args.processes < 1:
        raise UsageError(f"--processes takes a number of at least 1; received {args.processes}")
    if args.coordinator or args.num_processes is not None or args.process_id is not None:
        raise UsageError("--processes starts the processes itself: leave out --coordinator, --num-processes "
                         "and --process-id")
    backend = args.backend or os.environ.get("KERAS_BACKEND") or "tensorflow"
    if args.processes > 1 and backend != "jax":
        raise UsageError(multi_process_refusal(backend))
    command = _without_processes(argv)
    if args.backend is None:
        command += ["--backend", backend]
    sys.stdout.flush()
    return launch(command, args.processes)


def _without_processes(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--processes":
            skip = True
        elif not arg.startswith("--processes="):
            out.append(arg)
    return out
