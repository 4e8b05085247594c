"""Where a command runs (backend, devices, processes) and the job around a run, from what the flags said.

    --backend tensorflow|jax   --devices N   --processes N
    --coordinator HOST:PORT --num-processes N --process-id I   (or SLURM / Open MPI variables)

`train` takes all of them; `evaluate` and `predict` run in one process on
one device (Keras' `predict` does not run across processes) and take
`--backend`. The CLI parses the flags (`cli/common.py`); this module decides
what they mean. Nothing here imports Keras: the flags are checked first, then
`distribute.set_up` loads the backend the way the topology needs it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from netdsl.backend import profiles
from netdsl.errors import UsageError
from netdsl.training.scale.topology import PROCESS_FIELD, Topology, resolve_topology

__all__ = ["topology_of", "launch_job", "own_file", "own_roles", "set_up_one_process"]


def topology_of(
    backend: str | None, devices: int | None, coordinator: str | None, num_processes: int | None, process_id: int | None
) -> Topology:
    """The checked topology of this process (flags first, then SLURM / Open MPI variables)."""
    return resolve_topology(backend, devices, coordinator, num_processes, process_id, os.environ)


def set_up_one_process(backend: str | None) -> Any:
    """`evaluate` / `predict`: the backend of this one process; the scope to load and run in."""
    import contextlib

    from netdsl.training.scale.distribute import set_up

    distribution = set_up(resolve_topology(backend, None, None, None, None, {}))
    return distribution.scope if distribution is not None else contextlib.nullcontext


def own_roles(data: Any, parts: dict[str, Any]) -> frozenset:
    """The data parts each process reads from its own file (`{process}` in their path): `data` is
    --data, `parts` --train, --val and --test by role."""
    if isinstance(data, str) and PROCESS_FIELD in data:
        return frozenset({"train", "val", "test"})
    return frozenset(role for role, path in parts.items() if isinstance(path, str) and PROCESS_FIELD in path)


def own_file(path: Any, process_id: int) -> Any:
    """A data path with `{process}` in it names each process's own file."""
    return path.replace(PROCESS_FIELD, str(process_id)) if isinstance(path, str) else path


def launch_job(argv: list[str], processes: int, backend: str | None, joins_a_job: bool) -> int:
    """`--processes N`: check the flags, then run the same command (`argv`) as N local processes.
    `joins_a_job`: --coordinator, --num-processes or --process-id was given too."""
    from netdsl.training.scale.launch import launch

    if processes < 1:
        raise UsageError(f"--processes takes a number of at least 1; received {processes}")
    if joins_a_job:
        raise UsageError(
            "--processes starts the processes itself: leave out --coordinator, --num-processes and --process-id"
        )
    chosen = profiles.chosen(backend, os.environ)
    refusal = profiles.multi_process_refusal(chosen)
    if processes > 1 and refusal is not None:
        raise UsageError(refusal)
    command = _without_processes(argv)
    if backend is None:
        command += ["--backend", chosen]
    sys.stdout.flush()
    return launch(command, processes)


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
