"""Keras metrics netdsl compiles in place of Keras' own, where Keras' own cannot run in a compiled step.

Registered with Keras under the package "netdsl" (a saved model names it `"netdsl>AdjustedR2Score"`
and loads with `safe_mode=True` once `netdsl.custom` is imported).
"""

import keras
from keras import ops

_register = keras.saving.register_keras_serializable(package="netdsl")


@_register
class AdjustedR2Score(keras.metrics.R2Score):
    """`r2_score(num_regressors=p)`, p > 0: Keras' R2Score with its adjustment computed by `ops.where`.

    Keras' own `result` compares its sample count (a variable) with p in a Python `if`, which
    TensorFlow's graph and JAX's jit refuse in every train and evaluate step. The value is Keras':
    1 - (1 - r2) * (n - 1) / (n - p - 1) while p < n - 1, else the plain score (Keras falls back
    to it with a warning, which a compiled step cannot give).
    """

    def result(self):
        regressors = self.num_regressors
        self.num_regressors = 0  # Keras' own result, unadjusted (it reads the attribute)
        try:
            plain = super().result()
        finally:
            self.num_regressors = regressors
        n = ops.cast(self.num_samples, "float32")
        p = ops.cast(regressors, "float32")
        adjusted = 1.0 - (1.0 - plain) * (n - 1.0) / (n - p - 1.0)
        return ops.where(p < n - 1.0, adjusted, plain)
