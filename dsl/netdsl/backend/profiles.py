"""One profile per Keras backend netdsl runs on: what it needs, how it trains by default, what it cannot do.

    profile = profiles.get("jax")          # None for a name netdsl does not know
    profile.install_hint                    # "install it with `pip install 'netdsl[jax]'`"
    profile.steps_per_execution, profile.feed, profile.several_processes

Every other module asks this table instead of comparing backend names, so a
fourth backend is one entry here (plus, for `--devices N`, its strategy in
training/scale/distribute.py). Pure Python with no imports: the CLI's parser,
`--version` and the topology check read it before anything heavy loads.

Execution defaults, measured with `bench/bench_backends.py --threads 1`
(`default/1` is the epoch time with this default over the time with one step
per execution; below 1: the default is faster):

- issue 29 (the same bench, an earlier day): JAX with 32 steps 1.63 s/epoch against 1.09 with one step;
  TensorFlow's 32 steps 1.5–2 times faster than one.
- 7 December 2026, `--defaults-only --backends tensorflow,jax --networks small_cnn --runs 3`, on the
  2-core machine at a load of 12 to 22 (so slow that the bench's 30-minute limit ended it in its third
  run, JAX's two sides untimed there): TensorFlow one step 7.12, 6.19, 4.87 s/epoch, 32 steps 8.42,
  2.86, 3.33 (medians 6.19 and 3.33: default/1 0.54); JAX one step 6.80, 2.96, 32 steps 6.75, 5.56
  (means 4.88 and 6.15: default/1 1.26).

Both days say JAX's 32 steps are no faster than one on a CPU; it is kept until a quiet machine and an
accelerator are measured (a GPU is where several steps per execution save a host round trip).

Threads: netdsl sizes no thread pool; each backend keeps its own (the bench's
`--threads 1` pins them so that a loaded machine times alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BackendProfile",
    "PROFILES",
    "NAMES",
    "DEFAULT",
    "DATA_READER",
    "UNMEASURED_STEPS",
    "get",
    "chosen",
    "TF_MULTI_PROCESS",
    "TORCH_DISTRIBUTED",
    "multi_process_refusal",
]

TF_MULTI_PROCESS = (
    "several processes need --backend jax: Keras 3's fit does not run under TensorFlow's "
    "MultiWorkerMirroredStrategy (keras-team/keras#20585); --devices N trains on N devices "
    "of one process with TensorFlow"
)

# Keras' torch trainer runs on one device of one process (no keras.distribution on torch); Lightning has the engine.
TORCH_DISTRIBUTED = (
    "Keras' torch backend trains on one device of one process: train with --backend jax for "
    "several devices or processes, or in PyTorch Lightning (netdsl.lightning.SpecModule with "
    "strategy='ddp'; docs/lightning.md)"
)


@dataclass(frozen=True)
class BackendProfile:
    """One backend: its packages, its defaults, how it is fed, and what it refuses (each with its reason)."""

    name: str  # Keras' name for it (KERAS_BACKEND, --backend)
    packages: tuple[str, ...]  # the distributions that install it; `--version` shows the first one found
    module: str  # the module whose presence says it is installed
    extra: str  # netdsl's pyproject extra that installs it (Keras installs no backend)
    steps_per_execution: int  # the default when the spec's train section says nothing (measured: see above)
    feed: Literal["tf.data", "py_dataset"]  # tf.data datasets, or keras.utils.PyDataset batches (data/feed.py)
    several_devices: str | None = None  # why `--devices N` cannot train on it; None: it can
    several_processes: str | None = None  # why a job of several processes cannot; None: it can
    strategy: Literal["mirrored", "data_parallel"] | None = None  # its engine for several devices (distribute.py)
    mirrored_one_step: bool = False  # fed one step per execution on several devices (execution.py)
    train_limits: bool = False  # some train sections it cannot run, refused at build (backend/torch_limits.py)
    global_dropout_seed: bool = False  # dropout draws from a global generator, reseeded each epoch (run/keeper.py)
    tf_data_first: bool = False  # TensorFlow (tf.data) imported first, its notices muted (scale/distribute.py)
    reports_version: bool = False  # its version recorded in report.json (TensorFlow's always is: it reads data)
    string_tensors: bool = False  # it has string tensors: a string input builds (builder.py, text input on main)
    jit_compile: str = "auto"  # Keras' default, kept: see backend/execution.py

    @property
    def install_hint(self) -> str:
        return f"install it with `pip install 'netdsl[{self.extra}]'`"


PROFILES: dict[str, BackendProfile] = {
    p.name: p
    for p in (
        # issue 29: 32 steps 1.5–2 times faster than one step; 7 December: default/1 0.54 (above)
        BackendProfile(
            "tensorflow",
            ("tensorflow", "tensorflow-cpu"),
            "tensorflow",
            "tensorflow",
            32,
            "tf.data",
            several_processes=TF_MULTI_PROCESS,
            strategy="mirrored",
            mirrored_one_step=True,
            string_tensors=True,
        ),
        # issue 29: 32 steps 1.63 s/epoch, one step 1.09 (default/1 1.50); 7 December: default/1 1.26 (above)
        BackendProfile(
            "jax",
            ("jax",),
            "jax",
            "jax",
            32,
            "py_dataset",
            strategy="data_parallel",
            tf_data_first=True,
            reports_version=True,
        ),
        # Keras on torch runs one step per execution (backend/torch_limits.py refuses more)
        BackendProfile(
            "torch",
            ("torch",),
            "torch",
            "torch",
            1,
            "py_dataset",
            several_devices=TORCH_DISTRIBUTED,
            several_processes=TORCH_DISTRIBUTED,
            train_limits=True,
            global_dropout_seed=True,
        ),
    )
}
NAMES = tuple(PROFILES)
DEFAULT = "tensorflow"  # what Keras picks when KERAS_BACKEND says nothing
DATA_READER = PROFILES["tensorflow"]  # tf.data reads every run's data, on every backend
UNMEASURED_STEPS = 1  # steps per execution on a backend with no profile (Keras loaded by the user on another)


def get(name: str) -> BackendProfile | None:
    """The profile of the backend `name`; None when netdsl does not run on it."""
    return PROFILES.get(name)


def chosen(name: str | None, environ: Mapping[str, str]) -> str:
    """The backend a command runs on: `name` (--backend), else KERAS_BACKEND, else the default."""
    return name or environ.get("KERAS_BACKEND") or DEFAULT


def multi_process_refusal(name: str) -> str | None:
    """Why the backend `name` cannot train as several processes (None: it can); a name netdsl does not
    know is refused as TensorFlow is (starting it names it unknown)."""
    return PROFILES.get(name, PROFILES[DEFAULT]).several_processes
