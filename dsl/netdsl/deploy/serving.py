"""The function every format is converted from: the model's forward pass, by name, any batch size.

Inputs are `tf.TensorSpec`s named like the model's inputs with an open batch axis;
the result is a dict {output name: tensor}, so SavedModel and LiteRT signatures keep
the spec's names (ONNX gets them from `onnx_format.name_outputs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netdsl.training.data.signature import Signature

if TYPE_CHECKING:
    import keras
    import tensorflow as tf


def input_specs(model: keras.Model) -> list[tf.TensorSpec]:
    import tensorflow as tf

    return [tf.TensorSpec((None, *spec.shape), spec.dtype, name=spec.name) for spec in Signature.of(model).inputs]


def forward(model: keras.Model) -> Any:
    """A plain callable: the named inputs (positionally, in the model's order) -> {output name: tensor}."""
    signature = Signature.of(model)
    names, outputs = signature.input_names, signature.output_names

    def serve(*tensors: Any) -> dict[str, Any]:
        inputs = tensors[0] if len(tensors) == 1 else dict(zip(names, tensors))
        result = model(inputs, training=False)
        if isinstance(result, dict):
            return {name: result[name] for name in outputs}
        if not isinstance(result, (list, tuple)):
            result = [result]
        return dict(zip(outputs, result))

    return serve


def serving_function(model: keras.Model) -> Any:
    """`forward` as a `tf.function` with the model's input signature (open batch axis)."""
    import tensorflow as tf

    return tf.function(forward(model), input_signature=input_specs(model), autograph=False)
