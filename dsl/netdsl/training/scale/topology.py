"""Where a run trains: the backend, the devices of this process, the processes of the job.

    topology = resolve_topology(backend="jax", devices=None, coordinator=None, num_processes=None,
                                process_id=None, environ=os.environ)

Pure Python (no Keras, no JAX): a command checks its flags before anything
heavy loads. The processes of a job come, in this order, from the flags
(`--coordinator HOST:PORT --num-processes N --process-id I`), from SLURM
(`srun`: SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST / SLURM_JOB_NODELIST,
SLURM_JOB_ID) or from Open MPI (`mpirun`: OMPI_COMM_WORLD_RANK,
OMPI_COMM_WORLD_SIZE, OMPI_MCA_orte_hnp_uri). The coordinator's port under
SLURM and Open MPI is derived from the job id as JAX derives it, unless
`--coordinator` gives it. Several processes need the JAX backend: Keras'
`fit` does not run under TensorFlow's MultiWorkerMirroredStrategy
(keras-team/keras#20585).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from netdsl.backend import profiles
from netdsl.backend.profiles import TF_MULTI_PROCESS, TORCH_DISTRIBUTED
from netdsl.errors import UsageError

__all__ = ["Topology", "resolve_topology", "TF_MULTI_PROCESS", "TORCH_DISTRIBUTED", "PROCESS_FIELD"]

PROCESS_FIELD = "{process}"  # in a data path: each process reads its own file


@dataclass(frozen=True)
class Topology:
    backend: str = profiles.DEFAULT
    devices: int | None = None  # devices of this process to train on (None: the default device)
    num_processes: int = 1
    process_id: int = 0
    coordinator: str | None = None  # HOST:PORT of process 0's coordination service
    source: str = "flags"  # where the processes came from: flags, SLURM, Open MPI

    @property
    def multi_process(self) -> bool:
        return self.num_processes > 1

    @property
    def distributed(self) -> bool:
        return self.multi_process or (self.devices or 1) > 1

    @property
    def writes(self) -> bool:
        """Only process 0 writes the run folder."""
        return self.process_id == 0

    @property
    def loopback(self) -> bool:
        host = (self.coordinator or "").rsplit(":", 1)[0].strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def describe(self) -> dict:
        return {
            "backend": self.backend,
            "devices": self.devices,
            "processes": self.num_processes,
            "coordinator": self.coordinator,
            "from": self.source,
        }


def resolve_topology(
    backend: str | None,
    devices: int | None,
    coordinator: str | None,
    num_processes: int | None,
    process_id: int | None,
    environ: Mapping[str, str],
) -> Topology:
    """The checked topology; `UsageError` (one line) for flags that do not fit together."""
    backend = profiles.chosen(backend, environ)
    profile = profiles.get(backend)
    if devices is not None and devices < 1:
        raise UsageError(f"--devices takes a number of devices of at least 1; received {devices}")
    source, found = _from_environment(environ) if coordinator is None and num_processes is None else ("flags", {})
    coordinator = coordinator or found.get("coordinator")
    num_processes = num_processes if num_processes is not None else found.get("num_processes", 1)
    process_id = process_id if process_id is not None else found.get("process_id", 0)
    if num_processes < 1:
        raise UsageError(f"--num-processes takes a number of at least 1; received {num_processes}")
    if not 0 <= process_id < num_processes:
        raise UsageError(
            f"--process-id must be from 0 to {num_processes - 1} for {num_processes} processes; received {process_id}"
        )
    if profile is not None and profile.several_devices is not None and (devices or 1) > 1:
        raise UsageError(profile.several_devices)
    if num_processes > 1:
        refusal = profiles.multi_process_refusal(backend)
        if refusal is not None:
            raise UsageError(refusal)
        if coordinator is None:
            raise UsageError("several processes need --coordinator HOST:PORT (process 0's address and a free port)")
        _check_address(coordinator)
    return Topology(
        backend,
        devices,
        num_processes,
        process_id,
        coordinator if num_processes > 1 else None,
        source if num_processes > 1 else "flags",
    )


def _check_address(address: str) -> None:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--coordinator takes HOST:PORT, like 127.0.0.1:29500; received {address!r}")


# ------------------------------------------------------------------ cluster environments


def _from_environment(environ: Mapping[str, str]) -> tuple[str, dict]:
    if "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ and int(environ["SLURM_NTASKS"]) > 1:
        return "SLURM", _slurm(environ)
    if "OMPI_COMM_WORLD_RANK" in environ and "OMPI_COMM_WORLD_SIZE" in environ:
        return "Open MPI", _open_mpi(environ)
    return "flags", {}


def _slurm(environ: Mapping[str, str]) -> dict:
    nodes = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or ""
    found: dict[str, int | str] = {
        "num_processes": int(environ["SLURM_NTASKS"]),
        "process_id": int(environ["SLURM_PROCID"]),
    }
    if nodes and "SLURM_JOB_ID" in environ:
        found["coordinator"] = f"{first_host(nodes)}:{_job_port(int(environ['SLURM_JOB_ID']))}"
    return found


def _open_mpi(environ: Mapping[str, str]) -> dict:
    found: dict[str, int | str] = {
        "num_processes": int(environ["OMPI_COMM_WORLD_SIZE"]),
        "process_id": int(environ["OMPI_COMM_WORLD_RANK"]),
    }
    uri = environ.get("OMPI_MCA_orte_hnp_uri", "")
    match = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
    if match:
        host = next(g for g in match.groups() if g is not None)
        found["coordinator"] = f"{host}:{_job_port(int(uri.split('.', 1)[0]) // 2**12)}"
    return found


def _job_port(job_id: int) -> int:
    """A port in [61440, 65535] from the job id: every process of a job computes the same one."""
    return job_id % 2**12 + (65535 - 2**12 + 1)


def first_host(node_list: str) -> str:
    """The first host of a SLURM node list: 'gpu[03-05,9],cpu1' -> 'gpu03'."""
    match = re.match(r"([^,\[]+)(?:\[([^\],\-]+))?", node_list)
    if match is None:
        raise UsageError(f"cannot read the SLURM node list {node_list!r}; give --coordinator HOST:PORT")
    return match.group(1) + (match.group(2) or "")
