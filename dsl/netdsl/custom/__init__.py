"""Keras runtime for netdsl's custom layers, activations, losses and metrics.

Importing this package registers every class and function with Keras (package
"netdsl"), which is what lets a saved model load with `safe_mode=True`:

    import netdsl.custom
    model = keras.saving.load_model("model.keras", safe_mode=True)
"""

from netdsl.custom import (
    activations,
    configured,
    declared_layers,
    declared_losses,
    expr,
    layers,
    metrics,
    tensor_ops,
)
from netdsl.custom.activations import ACTIVATIONS
from netdsl.custom.configured import ConfiguredActivation
from netdsl.custom.declared_layers import (
    ActivationLayer,
    DeclaredActivation,
    DeclaredLayer,
)
from netdsl.custom.declared_losses import DeclaredLoss, DeclaredMetric
from netdsl.custom.expr import FUNCTIONS, evaluate, validate_tree
from netdsl.custom.layers import LAYERS
from netdsl.custom.tensor_ops import TensorOp

__all__ = [
    "ACTIVATIONS",
    "FUNCTIONS",
    "LAYERS",
    "TensorOp",
    "ActivationLayer",
    "ConfiguredActivation",
    "DeclaredActivation",
    "DeclaredLayer",
    "DeclaredLoss",
    "DeclaredMetric",
    "activations",
    "configured",
    "declared_layers",
    "declared_losses",
    "evaluate",
    "expr",
    "layers",
    "metrics",
    "tensor_ops",
    "validate_tree",
]
