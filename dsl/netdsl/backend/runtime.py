"""Keras' runtime set-up: the backend chosen (TensorFlow, JAX or PyTorch) and imported quietly, and
the dtype policy of one build."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from netdsl.backend import profiles
from netdsl.errors import BackendError

__all__ = [
    "init_backend",
    "require_tensorflow_data",
    "quiet_tensorflow",
    "current_backend",
    "muted_stderr",
    "dtype_policy",
]


def init_backend(name: str | None = None, mute_stderr: bool = True) -> str:
    """Import Keras on the backend `name` ('tensorflow', 'jax' or 'torch') without start-up chatter.

    Keras reads `KERAS_BACKEND` once, when it is first imported, so this must
    run before anything imports Keras; `None` keeps what the environment says
    (TensorFlow when it says nothing). Returns the backend's name. Raises
    `BackendError` (one line) when the backend is unknown or not installed, or
    when Keras is already loaded with another backend in this process.

    `TF_CPP_MIN_LOG_LEVEL` is set (unless the user did) before the import;
    with `mute_stderr` (the CLI) file descriptor 2 is also pointed at
    /dev/null while the runtime loads and runs its first op, since its C++
    side prints a few lines (oneDNN, absl, XLA) whatever the log level.
    """
    if name is None and _keras_loaded():
        name = current_backend()  # loaded already, as the user chose: keep it
    name = profiles.chosen(name, os.environ)
    profile = profiles.get(name)
    if profile is None:
        raise BackendError(
            f"unknown backend '{name}': netdsl runs on {', '.join(profiles.NAMES[:-1])} or {profiles.NAMES[-1]}"
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if _keras_loaded():
        loaded = current_backend()
        if loaded != name:
            raise BackendError(
                f"Keras is already loaded with the '{loaded}' backend in this process and picks its "
                f"backend once, at import: run with KERAS_BACKEND={name} set before Keras is "
                f"imported, or in a new process"
            )
        return name
    if importlib.util.find_spec(profile.module) is None:
        raise BackendError(
            f"the '{name}' backend needs the '{profile.module}' package, which is not installed: {profile.install_hint}"
        )
    os.environ["KERAS_BACKEND"] = name
    with muted_stderr(mute_stderr):
        import keras

        keras.ops.add(keras.ops.zeros((1,)), 1.0)  # the runtime's first op prints its notices
        try:
            import absl.logging

            absl.logging.set_verbosity(absl.logging.ERROR)
        except ImportError:
            pass
    return name


def require_tensorflow_data(command: str) -> None:
    """`BackendError` (one line) when TensorFlow, which reads every run's data (tf.data), is not installed."""
    if importlib.util.find_spec(profiles.DATA_READER.module) is None:
        raise BackendError(
            f"netdsl {command} reads its data with TensorFlow's tf.data, on every backend, and "
            f"TensorFlow is not installed: {profiles.DATA_READER.install_hint}"
        )


def quiet_tensorflow(mute_stderr: bool = True) -> None:
    """Import Keras on the environment's backend (TensorFlow unless KERAS_BACKEND says otherwise)."""
    init_backend(None, mute_stderr)


def _keras_loaded() -> bool:
    return sys.modules.get("keras") is not None  # (None: an import of it was blocked)


def current_backend() -> str:
    """The backend the loaded Keras runs on (Keras must be imported)."""
    return sys.modules["keras"].backend.backend()


@contextmanager
def muted_stderr(mute: bool = True) -> Iterator[None]:
    """File descriptor 2 pointed at /dev/null inside the block (C++ libraries write there
    directly); the log level set for TensorFlow in case the block imports it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    saved = None
    if mute:
        try:
            sys.stderr.flush()
            saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
        except OSError:
            saved = None
    try:
        yield
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


@contextmanager
def dtype_policy(name: str | None) -> Iterator[None]:
    """Keras' global dtype policy set to `name` inside the block (None: unchanged)."""
    if name is None:
        yield
        return
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
