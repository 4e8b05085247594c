"""Keras' runtime set-up: a quiet TensorFlow import and the dtype policy of one build."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

__all__ = ["quiet_tensorflow", "muted_stderr", "dtype_policy"]


def quiet_tensorflow(mute_stderr: bool = True) -> None:
    """Import Keras (TensorFlow backend) without TensorFlow's start-up chatter.

    Sets `TF_CPP_MIN_LOG_LEVEL` (unless the user did) before the import; with
    `mute_stderr` (the CLI) file descriptor 2 is also pointed at /dev/null
    while TensorFlow loads and runs its first op, since its C++ runtime prints
    a few lines (oneDNN, absl) whatever the log level.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    if "keras" in sys.modules and "tensorflow" in sys.modules:
        return
    with muted_stderr(mute_stderr):
        import keras

        keras.ops.add(keras.ops.zeros((1,)), 1.0)  # the runtime's first op prints its notices
        try:
            import absl.logging

            absl.logging.set_verbosity(absl.logging.ERROR)
        except ImportError:
            pass


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
