"""Backbones for the zoo's tests: keras.applications models whose weights carry a picture's signal."""

from __future__ import annotations

import keras
import numpy as np

# What a spec's operators on tensors build (`x + 3`: TensorOp; `x + y`: Add): an operation of the functional graph in
# keras.applications (MobileNetV3's `x + 3`, ConvNeXt's `inputs + x`), not a layer of model.layers
OPERATOR_LAYERS = {"TensorOp", "Add", "Subtract", "Multiply"}


def varied_batch_norms(model: keras.Model, size: int) -> None:
    """Batch norms away from their initial values, so a statistic loaded into the wrong layer shows: scales (layer
    norms' and ConvNeXt's layer scales' too) and offsets drawn, and the moving statistics those of a batch of
    pictures (one call in training mode with momentum 0). Drawn statistics lose a picture's signal in the deep families (MobileNetV2's two outputs for
    two pictures differed by 6e-8): every picture then gives the same output, a comparison that could not fail."""
    rng = np.random.default_rng(3)
    scales = {id(w) for layer in model._flatten_layers() if type(layer).__name__ == "LayerScale" for w in layer.weights}
    for weight in model.weights:
        kind = weight.path.rsplit("/", 1)[-1]
        if kind == "gamma" or id(weight) in scales:  # ConvNeXt's LayerScale: 1e-6 would hide its blocks' branches
            weight.assign(rng.uniform(0.8, 1.2, weight.shape).astype("float32"))
        elif kind == "beta":
            weight.assign(rng.normal(0.0, 0.05, weight.shape).astype("float32"))
    norms = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.BatchNormalization)]
    momenta = [layer.momentum for layer in norms]
    for layer in norms:
        layer.momentum = 0.0
    model(rng.uniform(0, 255, (8, size, size, 3)).astype("float32"), training=True)
    for layer, momentum in zip(norms, momenta):
        layer.momentum = momentum
