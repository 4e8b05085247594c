"""Training on several devices, or as one process of several: Keras' own engines, set up for a run.

    distribution = set_up(topology)          # before anything imports Keras
    run_training(config, distribution)       # a `Placement`: scope, who writes, each process's data

- One process, N devices: `tf.distribute.MirroredStrategy` on TensorFlow,
  `keras.distribution.DataParallel` on JAX. On a machine without N GPUs the
  CPU is split into N logical devices (TensorFlow's logical device
  configuration, XLA's `--xla_force_host_platform_device_count`), which is
  how the tests check that N devices train exactly as one.
- N processes (JAX only): `jax.distributed.initialize` with short timeouts
  (Keras' `keras.distribution.initialize` is a thin wrapper over it that
  cannot pass them), then `DataParallel` over the devices of every process.
  The spec's batch size is the global batch: each process feeds its equal
  share of every batch (the rows `i*B/N .. (i+1)*B/N` of a batch read from
  one source, or whole batches of B/N from its own file when a path holds
  `{process}`). Every process must run the same number of steps or all of
  them wait forever, so the lengths are compared before training and the
  data is trimmed (never by more than the number of replicas minus one
  sample) so that every batch splits evenly.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netdsl.backend import profiles
from netdsl.backend.runtime import init_backend, muted_stderr, require_tensorflow_data
from netdsl.errors import UsageError
from netdsl.training.errors import DataError
from netdsl.training.scale import faults
from netdsl.training.scale.topology import Topology

if TYPE_CHECKING:
    from netdsl.training.data.plan import DataPlan, Part

__all__ = ["Distribution", "set_up"]


@dataclass
class Distribution:
    """A `engine.Placement` for several devices or processes (the same methods; this module
    stays importable before Keras is, so it does not import the engine)."""

    scope: Any = contextlib.nullcontext
    writes: bool = True
    one_step_per_execution: bool = False  # see _tensorflow and _jax
    topology: Topology = field(default_factory=Topology)
    replicas: int = 1  # model copies training in step (devices of every process)
    local_replicas: int = 1  # those of this process
    own_files: frozenset = frozenset()  # roles (train, val, test) read from this process's own file
    strategy: Any = None
    even_batches: bool = False  # every batch must split evenly over the replicas (see _jax)

    def prepare(self, plan: DataPlan, batch_size: int) -> None:
        if self.even_batches:
            _check_batch(batch_size, self.replicas, self.topology)
            for part in _parts(plan):
                self._trim(part, batch_size)
        if self.topology.multi_process:
            _check_equal_lengths(plan, self.topology)

    def dataset(self, part: Part, batch_size: int, order: Any = None) -> Any:
        processes = self.topology.num_processes
        if processes == 1:
            return part.dataset(batch_size, order)
        if part.role in self.own_files:
            return part.dataset(batch_size // processes, order)
        return _share(part.dataset(batch_size, order), self.topology.process_id, processes)

    def callbacks(self) -> list:
        return [faults.step_clock()] if self.topology.multi_process else []

    @contextlib.contextmanager
    def saving(self) -> Any:
        """Process 0 saves alone: Keras' saving makes a throwaway optimizer whose variables, under a
        multi-process distribution, would be created by a collective the other processes never join."""
        if not self.topology.multi_process:  # (only JAX trains as several processes: topology.py)
            yield
            return
        import keras

        current = keras.distribution.distribution()
        keras.distribution.set_distribution(None)
        try:
            yield
        finally:
            keras.distribution.set_distribution(current)

    def describe(self) -> dict:
        return {**self.topology.describe(), "replicas": self.replicas}

    def agree_seed(self, seed: int) -> int:
        """Process 0's seed, so that every process builds the same weights and splits the data alike."""
        if not self.topology.multi_process:
            return seed
        import numpy as np
        from jax.experimental import multihost_utils

        # Sent as two 16-bit halves: without x64 JAX turns an int64 into an int32, and a seed of
        # 2**31 or more came back negative ("Seed must be between 0 and 2**32 - 1"), half the time.
        halves = np.asarray([seed >> 16, seed & 0xFFFF], dtype=np.int32)
        high, low = (int(half) for half in multihost_utils.broadcast_one_to_all(halves))
        return (high << 16) | low

    def _trim(self, part: Part, batch_size: int) -> None:
        """Leave out the last few samples when the last batch would not split evenly over the replicas."""
        own = part.role in self.own_files
        batch = batch_size // self.topology.num_processes if own else batch_size
        split = self.local_replicas if own else self.replicas
        extra = (part.n % batch) % split
        if extra:
            part.rows = part.rows[: part.n - extra]
            if self.topology.writes:
                print(
                    f"netdsl: the last {extra} {part.role} samples are left out: the last batch must split "
                    f"evenly over {split} replicas",
                    file=sys.stderr,
                )


def set_up(topology: Topology) -> Distribution | None:
    """Load the backend for `topology` and its devices and processes; None for one process on one device.

    Must run before anything imports Keras (the backend and the device count
    are read once, at import). Raises `UsageError` for devices that are not there.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    require_tensorflow_data("train, evaluate and predict")
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = topology.backend  # importing TensorFlow may import Keras
    profile = profiles.get(topology.backend)
    if profile is not None and profile.tf_data_first and "keras" not in sys.modules:
        with muted_stderr():  # the data pipeline is tf.data: TensorFlow's start-up notices, muted
            import tensorflow  # noqa: F401
    if profile is None or profile.strategy is None or not topology.distributed:
        init_backend(topology.backend)  # (an unknown backend: its one-line error)
        return None
    return _STRATEGIES[profile.strategy](topology)


# ------------------------------------------------------------------ TensorFlow: MirroredStrategy


def _tensorflow(topology: Topology) -> Distribution:
    with muted_stderr():
        import tensorflow as tf

        wanted = topology.devices or 1
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            if len(gpus) < wanted:
                raise UsageError(f"--devices {wanted}: this machine has {len(gpus)} GPU(s)")
            names = [f"/gpu:{i}" for i in range(wanted)]
        else:  # no GPU: the CPU as N logical devices, before the runtime starts
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * wanted)
            names = [f"/cpu:{i}" for i in range(wanted)]
    init_backend("tensorflow")
    with muted_stderr():
        strategy = tf.distribute.MirroredStrategy(names)
    # One step per execution: Keras on TensorFlow fails to feed a MirroredStrategy's
    # replicas several steps at once ("2 root error(s) found" from the data).
    return Distribution(
        scope=strategy.scope,
        writes=True,
        one_step_per_execution=True,
        topology=topology,
        replicas=wanted,
        local_replicas=wanted,
        strategy=strategy,
    )


# ------------------------------------------------------------------ JAX: DataParallel, jax.distributed


def _jax(topology: Topology) -> Distribution:
    wanted = topology.devices or 1
    if wanted > 1 and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        # Only the CPU platform reads this: on a GPU machine the GPUs are used.
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={wanted}"
        ).strip()
    if topology.multi_process:
        _join(topology)
    init_backend("jax")
    import jax
    import keras

    local = jax.local_devices()
    if len(local) < wanted:
        raise UsageError(f"--devices {wanted}: this process sees {len(local)} device(s) ({local[0].platform})")
    devices = sorted(
        (d for d in jax.devices() if _rank_in_process(d, jax.devices()) < wanted), key=lambda d: (d.process_index, d.id)
    )
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False))
    # A job of several processes steps once per execution: its watchdog marks progress after every step.
    return Distribution(
        writes=topology.writes,
        one_step_per_execution=topology.multi_process,
        topology=topology,
        replicas=len(devices),
        local_replicas=wanted,
        even_batches=True,
    )


# Each profile's engine for several devices (`BackendProfile.strategy`).
_STRATEGIES = {"mirrored": _tensorflow, "data_parallel": _jax}


def _join(topology: Topology) -> None:
    """Join the job: process 0 starts the coordination service, every process connects to it."""
    with muted_stderr():
        import jax

    assert topology.coordinator is not None  # resolve_topology refuses several processes without one
    host, port = topology.coordinator.rsplit(":", 1)
    bind = f"{host}:{port}" if topology.loopback else None  # a loopback job listens on loopback only
    try:
        jax.distributed.initialize(
            coordinator_address=topology.coordinator,
            num_processes=topology.num_processes,
            process_id=topology.process_id,
            initialization_timeout=faults.INIT_TIMEOUT_S,
            heartbeat_timeout_seconds=faults.HEARTBEAT_S,
            shutdown_timeout_seconds=faults.SHUTDOWN_S,
            coordinator_bind_address=bind,
        )
    except Exception as exc:  # the coordinator unreachable, a port taken, a process that never came
        raise UsageError(
            f"process {topology.process_id} could not join the job at {topology.coordinator} "
            f"within {faults.INIT_TIMEOUT_S} s: {faults.one_line(exc)}"
        ) from None
    faults.watch(topology)


def _rank_in_process(device: Any, devices: list) -> int:
    """The device's position among the devices of its own process."""
    return sorted(d.id for d in devices if d.process_index == device.process_index).index(device.id)


# ------------------------------------------------------------------ data


def _parts(plan: DataPlan) -> list[Part]:
    return [p for p in (plan.train, plan.val, plan.test) if p is not None]


def _check_batch(batch_size: int, replicas: int, topology: Topology) -> None:
    if batch_size % replicas:
        how = (
            f"{topology.num_processes} processes x {replicas // topology.num_processes} devices"
            if topology.multi_process
            else f"{replicas} devices"
        )
        raise UsageError(
            f"the batch size {batch_size} does not split evenly over {replicas} replicas ({how}): "
            f"choose a batch_size divisible by {replicas}"
        )


def _check_equal_lengths(plan: DataPlan, topology: Topology) -> None:
    """Every process must run as many steps as the others, or all of them wait forever."""
    import numpy as np
    from jax.experimental import multihost_utils

    roles = ("train", "val", "test")
    mine = np.asarray([getattr(plan, r).n if getattr(plan, r) is not None else -1 for r in roles], dtype=np.int64)
    every = np.asarray(multihost_utils.process_allgather(mine)).reshape(topology.num_processes, len(roles))
    for column, role in enumerate(roles):
        counts = every[:, column]
        if (counts != counts[0]).any():
            described = ", ".join(f"process {i}: {int(c) if c >= 0 else 'none'}" for i, c in enumerate(counts))
            raise DataError(
                f"the processes' {role} data differ in length ({described}): every process runs "
                f"the same number of steps, so each needs a share of equal length"
            )


def _share(dataset: Any, index: int, count: int) -> Any:
    """This process's rows of every batch: rows index*b .. (index+1)*b, b = batch length // count."""
    import tensorflow as tf

    def cut(tensor: Any) -> Any:
        share = tf.shape(tensor)[0] // count
        return tensor[index * share : (index + 1) * share]

    def shard(*element: Any) -> Any:
        return tf.nest.map_structure(cut, element[0] if len(element) == 1 else element)

    return dataset.map(shard)
