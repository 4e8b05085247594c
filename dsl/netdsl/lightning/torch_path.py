"""A spec's network run straight on torch, images channels first, for `SpecModule`'s steps.

Keras' torch backend keeps images channels last between layers but convolves and pools them
channels first: each such layer transposes its input and its output (copies of the image, and
ReLU's gradient then walks strided memory), and `Layer.__call__` adds Python work per layer.
A CNN epoch took 1.35-1.5x the time of the same network written in torch. For a model made only
of the common layers below (float32, no masks, no activity regularizers), `TorchPath` runs the
same layers on the same weights (the Keras variables' own torch parameters, so gradients,
optimizers and checkpoints are unchanged) with torch's functions, keeping images channels first
from the first convolution to the flatten, which puts them back in Keras' order (the dense
weights after it mean what they mean in Keras). `TorchPath.of` returns None for any other model:
it then runs through Keras as before. Dropout draws from torch's generator
(`L.seed_everything` seeds it), not from the layer's Keras seed generator.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras
import torch
import torch.nn.functional as F

__all__ = ["TorchPath"]

# A value between layers: the tensor, and whether its channels are on axis 1 (torch's layout)
# rather than the last axis (Keras'); only images (three or more axes) are ever channels first.
Value = tuple[torch.Tensor, bool]
Run = Callable[[list[Value], bool], Value]


@dataclass(frozen=True)
class _Step:
    run: Run
    inputs: tuple[int, ...]  # ids of the Keras tensors it reads
    output: int


class TorchPath:
    """The model's layers as torch calls, in the order Keras' functional model runs them."""

    def __init__(
        self, inputs: list[int], shapes: list[tuple[int | None, ...]], steps: list[_Step], outputs: list[int]
    ) -> None:
        self._inputs = inputs
        self._shapes = shapes
        self._steps = steps
        self._outputs = outputs

    @classmethod
    def of(cls, net: Any) -> TorchPath | None:
        """The path for a functional Keras model, or None when a layer or setting is not one it runs."""
        if not hasattr(net, "_nodes_by_depth") or any(tensor.dtype != "float32" for tensor in net.inputs):
            return None
        steps = []
        for depth in sorted(net._nodes_by_depth, reverse=True):
            for node in net._nodes_by_depth[depth]:
                if node.is_input or not node.operation:
                    continue
                run = _runner(node)
                if run is None or len(node.outputs) != 1:
                    return None
                steps.append(_Step(run, tuple(id(tensor) for tensor in node.input_tensors), id(node.outputs[0])))
        return cls(
            [id(tensor) for tensor in net.inputs],
            [tuple(tensor.shape) for tensor in net.inputs],
            steps,
            [id(tensor) for tensor in net.outputs],
        )

    def fits(self, inputs: list[Any], channels_first: list[bool]) -> bool:
        """Whether these batches are tensors of the model's input shapes (others go through Keras,
        which converts them or says what is wrong)."""
        for tensor, shape, first in zip(inputs, self._shapes, channels_first):
            if not isinstance(tensor, torch.Tensor) or tensor.ndim != len(shape) or not tensor.is_floating_point():
                return False
            given = tuple(tensor.shape[2:]) + tuple(tensor.shape[1:2]) if first else tuple(tensor.shape[1:])
            if any(want is not None and want != size for want, size in zip(shape[1:], given)):
                return False
        return True

    def __call__(self, inputs: list[torch.Tensor], channels_first: list[bool], training: bool) -> list[torch.Tensor]:
        """The outputs (channels last, as Keras gives them) for inputs that `fits` accepted."""
        values: dict[int, Value] = {
            key: (tensor if tensor.dtype == torch.float32 else tensor.float(), first)
            for key, tensor, first in zip(self._inputs, inputs, channels_first)
        }
        for step in self._steps:
            values[step.output] = step.run([values[key] for key in step.inputs], training)
        return [_last(values[key]) for key in self._outputs]


def _last(value: Value) -> torch.Tensor:
    tensor, first = value
    return tensor.movedim(1, -1) if first else tensor


def _first(value: Value) -> torch.Tensor:
    tensor, first = value
    return tensor if first else tensor.movedim(-1, 1)


def _runner(node: Any) -> Run | None:
    """How to run the node's layer on torch, or None when this path does not run it as Keras does."""
    layer = node.operation
    arguments = node.arguments
    if (
        getattr(layer, "dtype_policy", None) is None
        or layer.dtype_policy.name != "float32"
        or getattr(layer, "activity_regularizer", None) is not None
        or getattr(layer, "lora_enabled", False)
        or set(arguments.kwargs) - {"training"}
        or len(arguments.args) != 1
    ):
        return None  # (Keras records `training` with a symbolic call; the call's own replaces it)
    if type(layer) is keras.layers.Add:
        shapes = {tuple(tensor.shape) for tensor in node.input_tensors}
        return _add if len(shapes) == 1 and len(node.input_tensors) > 1 else None
    if not isinstance(arguments.args[0], keras.KerasTensor):
        return None
    make = _MAKERS.get(type(layer))
    return make(layer) if make is not None else None


def _activation(function: Any) -> Callable[[Value], Value]:
    """A layer's activation: ReLU and identity in either layout; any other Keras' own, channels last
    (softmax's axis is the last, and Keras' sigmoid and softmax keep their logits for the loss)."""
    if function is keras.activations.relu:
        return lambda value: (torch.relu(value[0]), value[1])
    if function is None or function is keras.activations.linear:
        return lambda value: value
    return lambda value: (function(_last(value)), False)


def _same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """Keras' "same" padding of one axis (the extra pixel, if any, at the end)."""
    span = (kernel - 1) * dilation + 1
    total = span - 1 if stride == 1 else max(0, (math.ceil(size / stride) - 1) * stride + span - size)
    return total // 2, total - total // 2


def _padded(
    tensor: torch.Tensor, kernel: tuple[int, ...], strides: tuple[int, ...], dilation: tuple[int, ...], mode: str
) -> tuple[torch.Tensor, list[int] | int]:
    """The input and torch's padding argument for Keras' "same": symmetric as an argument, else padded."""
    pads = [_same_padding(size, k, s, d) for size, k, s, d in zip(tensor.shape[2:], kernel, strides, dilation)]
    if all(left == right for left, right in pads):
        return tensor, [left for left, _ in pads]
    return F.pad(tensor, [side for pad in reversed(pads) for side in pad], mode=mode), 0


def _conv2d(layer: Any) -> Run | None:
    if layer.data_format != "channels_last" or layer.padding not in ("valid", "same"):
        return None
    activation = _activation(layer.activation)
    strides, dilation, groups = tuple(layer.strides), tuple(layer.dilation_rate), layer.groups
    kernel_size, weights, bias = tuple(layer.kernel_size), layer.kernel, layer.bias if layer.use_bias else None

    def run(values: list[Value], training: bool) -> Value:
        x = _first(values[0])
        padding: list[int] | int = 0
        if layer.padding == "same":
            x, padding = _padded(x, kernel_size, strides, dilation, "constant")
        # Keras' (h, w, in, out) as torch's (out, in, h, w), copied: a strided kernel sends torch's CPU
        # convolution down a slower path (the first layer's forward and backward took 1.5-4x as long)
        kernel = weights.value.permute(3, 2, 0, 1).contiguous()
        shift = bias.value if bias is not None else None
        return activation((F.conv2d(x, kernel, shift, strides, padding, dilation, groups), True))

    return run


def _pool2d(layer: Any) -> Run | None:
    average = type(layer) is keras.layers.AveragePooling2D
    if (
        layer.data_format != "channels_last"
        or layer.padding not in ("valid", "same")
        or (average and layer.padding == "same")
    ):  # (Keras averages over the window's real pixels)
        return None
    size, strides = tuple(layer.pool_size), tuple(layer.strides)
    pool = F.avg_pool2d if average else F.max_pool2d

    def run(values: list[Value], training: bool) -> Value:
        x = _first(values[0])
        padding: list[int] | int = 0
        if layer.padding == "same":  # (max pooling only: Keras pads by repeating the edge)
            x, padding = _padded(x, size, strides, (1, 1), "replicate")
        return pool(x, size, strides, padding), True

    return run


def _global_pool2d(layer: Any) -> Run | None:
    if layer.data_format != "channels_last" or layer.keepdims:
        return None
    average = type(layer) is keras.layers.GlobalAveragePooling2D

    def run(values: list[Value], training: bool) -> Value:
        tensor, first = values[0]
        axes = (2, 3) if first else (1, 2)
        return (tensor.mean(dim=axes) if average else tensor.amax(dim=axes)), False

    return run


def _flatten(layer: Any) -> Run | None:
    if layer.data_format != "channels_last":
        return None
    return lambda values, training: (_last(values[0]).reshape(values[0][0].shape[0], -1), False)


def _dense(layer: Any) -> Run | None:
    activation = _activation(layer.activation)
    weights, bias = layer.kernel, layer.bias

    def run(values: list[Value], training: bool) -> Value:
        x = _last(values[0])
        if bias is None:
            return activation((torch.matmul(x, weights.value), False))
        if x.ndim == 2:
            return activation((torch.addmm(bias.value, x, weights.value), False))
        return activation((torch.matmul(x, weights.value) + bias.value, False))

    return run


def _dropout(layer: Any) -> Run | None:
    if layer.noise_shape is not None:
        return None
    rate = float(layer.rate)

    def run(values: list[Value], training: bool) -> Value:
        tensor, first = values[0]
        if not training or rate == 0.0:
            return values[0]
        return F.dropout(tensor, rate, training=True), first

    return run


def _activation_layer(layer: Any) -> Run | None:
    activation = _activation(layer.activation)
    return lambda values, training: activation(values[0])


def _relu(layer: Any) -> Run | None:
    if layer.max_value is not None or layer.negative_slope != 0.0 or layer.threshold != 0.0:
        return None
    return lambda values, training: (torch.relu(values[0][0]), values[0][1])


def _rescaling(layer: Any) -> Run | None:
    if not isinstance(layer.scale, numbers.Real) or not isinstance(layer.offset, numbers.Real):
        return None  # (a scale per channel broadcasts on the last axis)
    scale, offset = float(layer.scale), float(layer.offset)
    return lambda values, training: (values[0][0] * scale + offset, values[0][1])


def _add(values: list[Value], training: bool) -> Value:
    first = values[0][1]
    total = values[0][0]
    for value in values[1:]:
        total = total + (value[0] if value[1] == first else _first(value) if first else _last(value))
    return total, first


_MAKERS: dict[type, Callable[[Any], Run | None]] = {
    keras.layers.Conv2D: _conv2d,
    keras.layers.MaxPooling2D: _pool2d,
    keras.layers.AveragePooling2D: _pool2d,
    keras.layers.GlobalAveragePooling2D: _global_pool2d,
    keras.layers.GlobalMaxPooling2D: _global_pool2d,
    keras.layers.Flatten: _flatten,
    keras.layers.Dense: _dense,
    keras.layers.Dropout: _dropout,
    keras.layers.Activation: _activation_layer,
    keras.layers.ReLU: _relu,
    keras.layers.Rescaling: _rescaling,
}
