"""Initial weights drawn with NumPy instead of JAX, for test processes whose weights are never used.

On JAX each weight shape's first draw compiles a program of its own (0.1 s each on this machine):
building the four large specs drew 292 of them, 27 of the 57 s a check of their outputs took. A
process that overwrites every weight it builds (the backend probe's `check`) or measures only what
the compiler does with the shapes (the XLA cost counter) draws them with NumPy instead. Keras
itself is untouched; only this process's JAX random module is.
"""

from __future__ import annotations

from typing import Any


def draw_initial_weights_with_numpy(seed: int = 0) -> None:
    """Make Keras' JAX `uniform`, `normal` and `truncated_normal` draw with NumPy (no-op elsewhere)."""
    import keras
    import numpy as np

    if keras.backend.backend() != "jax":
        return
    import jax.numpy as jnp
    from keras.src.backend.jax import random

    rng = np.random.default_rng(seed)

    def uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
        return jnp.asarray(rng.uniform(minval, maxval, shape), dtype or keras.config.floatx())

    def normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
        return jnp.asarray(rng.normal(mean, stddev, shape), dtype or keras.config.floatx())

    random.uniform, random.normal, random.truncated_normal = uniform, normal, normal
