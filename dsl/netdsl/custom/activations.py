"""Custom activation functions shipped with netdsl.

Each one is a plain function registered with Keras under the package
"netdsl", so a model using e.g. `Dense(4, activation=sine)` saves as
`"netdsl>sine"` and loads with `safe_mode=True` once `netdsl.custom` is
imported. All are written with `keras.ops`, so they are backend-agnostic.
"""

import keras
from keras import ops

_register = keras.saving.register_keras_serializable(package="netdsl")


@_register
def sine(x):
    """`sin(x)`."""
    return ops.sin(x)


@_register
def square(x):
    """`x ** 2`."""
    return ops.square(x)


@_register
def sigmoid_tanh(x):
    """`sigmoid(x) * tanh(x)`."""
    return ops.sigmoid(x) * ops.tanh(x)


@_register
def smooth_relu(x):
    """`log(1 + exp(x))`, computed without overflow.

    Uses the identity `log(1 + e^x) = max(x, 0) + log1p(e^-|x|)`: the
    exponent is never positive, so x = +-1000 gives 1000 and 0 exactly.
    """
    return ops.relu(x) + ops.log1p(ops.exp(-ops.abs(x)))


ACTIVATIONS = {
    "sine": sine,
    "square": square,
    "sigmoid_tanh": sigmoid_tanh,
    "smooth_relu": smooth_relu,
}
