"""How many steps one execution runs and whether it is XLA-compiled: the spec's choice, else the backend's default.

    chosen = execution_settings(graph.train, "jax")
    chosen.steps_per_execution, chosen.jit_compile, chosen.sources   # 32, "auto", {...: "default for jax"}

The defaults were measured with bench/bench_backends.py (docs/training.md,
"Speed"): on TensorFlow and JAX, 32 steps per execution cut an epoch of the
bench's CNN to a third (TensorFlow) and less (JAX) on CPU, since Keras then
returns to Python once every 32 batches; Keras on torch runs one step per
execution. `jit_compile = "auto"` is kept everywhere: it is already XLA on
TensorFlow and JAX, and torch.compile's start-up cost outweighs a short run.
A value the spec's train section sets always wins.

A model built for a job of several processes, or for TensorFlow's MirroredStrategy, defaults
to one step per execution: its placement says so (`one_step_per_execution=True`, passed down
from `compiler.build` to here), so that nothing but the arguments of a build decides its settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netdsl.backend import profiles

if TYPE_CHECKING:
    from netdsl.semantics.train_checks import TrainSpec

__all__ = ["backend_defaults", "Execution", "execution_settings", "several_devices_problem"]


def backend_defaults(backend: str) -> dict[str, Any]:
    """The settings the profile of `backend` gives a model whose spec says nothing (an unprofiled backend,
    Keras loaded on it by the user: one step per execution)."""
    profile = profiles.get(backend)
    if profile is None:
        return {"steps_per_execution": profiles.UNMEASURED_STEPS, "jit_compile": "auto"}
    return {"steps_per_execution": profile.steps_per_execution, "jit_compile": profile.jit_compile}


@dataclass(frozen=True)
class Execution:
    """The settings a model is compiled with and where each came from ("spec" or "default for <backend>")."""

    steps_per_execution: int
    jit_compile: Any
    sources: dict[str, str] = field(default_factory=dict)


def execution_settings(train: TrainSpec, backend: str, *, one_step_per_execution: bool = False) -> Execution:
    """`train` (a `TrainSpec`): its own values where it sets them, the backend's defaults elsewhere.

    `one_step_per_execution`: the model trains in a job of several processes or under a
    MirroredStrategy, where the default is one step: a job's watchdog (training/scale/faults.py)
    marks progress after every step and times out a step that takes too long, and Keras on
    TensorFlow cannot feed a MirroredStrategy several steps at once."""
    defaults = backend_defaults(backend)
    if one_step_per_execution:
        defaults["steps_per_execution"] = 1
    chosen, sources = {}, {}
    for key, default in defaults.items():
        given = getattr(train, key)
        chosen[key] = default if given is None else given
        distributed = one_step_per_execution and key == "steps_per_execution"
        where = f"default for {backend}" + (" in a distributed job" if distributed else "")
        sources[key] = where if given is None else "spec"
    return Execution(chosen["steps_per_execution"], chosen["jit_compile"], sources)


def several_devices_problem(train: TrainSpec, backend: str) -> str | None:
    """Why the train section `train` cannot run on the several TensorFlow devices of the strategy in
    scope (`--devices N`: a MirroredStrategy); None when it can.

    Keras compiles such a model and fails inside `fit` with TensorFlow's "2 root error(s) found",
    which netdsl could only blame on the data: it does not feed a MirroredStrategy's replicas
    several steps at once. JAX's DataParallel does (tests/training/test_distribute.py)."""
    steps = train.steps_per_execution or 1
    profile = profiles.get(backend)
    if profile is None or not profile.mirrored_one_step or steps <= 1:
        return None
    import tensorflow as tf

    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if replicas <= 1:
        return None
    import keras

    return (
        f"steps_per_execution = {steps}: Keras {keras.__version__} feeds TensorFlow's MirroredStrategy one "
        f"step per execution; set steps_per_execution = 1, or train with --backend jax --devices {replicas}"
    )
