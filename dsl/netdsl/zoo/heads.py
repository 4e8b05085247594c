"""What keras.applications puts on top of each zoo family's features: the classifier
(`include_top=True`) and the pooling (`include_top=False, pooling="avg"|"max"`), with the layer
names Keras gives them (`applications/*.py` in Keras 3.15), so a zoo backbone called
`efficientnet_b0(pooling="avg")` is `EfficientNetB0(include_top=False, pooling="avg")` layer for
layer, and `include_top=true` takes the published `top` weights file in order.

Pure data, no backend: `check`, `summary` and `render` read it. A layer is a registry step with
its arguments as a spec would write them; `CLASSES` and `ACTIVATION` stand for the call's
`classes` and `classifier_activation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLASSES = "<classes>"  # the call's `classes` (1000: ImageNet's)
ACTIVATION = "<classifier_activation>"  # the call's `classifier_activation` (softmax)


@dataclass(frozen=True)
class TopLayer:
    """One layer Keras adds: its name there (None: Keras' own for a layer it leaves unnamed, the class's name
    numbered after the backbone's layers of that name: MobileNetV3's `activation_18`), the registry step, its
    arguments."""

    name: str | None
    layer: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Name:
    """A name a spec writes bare (`relu`, `softmax`): an activation, not a string."""

    text: str


@dataclass(frozen=True)
class Initializer:
    """An initializer argument, as `variance_scaling(scale=...)` is written in a spec."""

    name: str
    kwargs: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Top:
    """A family's top: its pooling layers' names (avg, max), its classifier's layers; None where
    netdsl does not build that part for the family yet (`not_yet` says why)."""

    pooling: tuple[str, str] | None
    classifier: tuple[TopLayer, ...] | None
    not_yet: str = ""


def _dense(name: str = "predictions", *extra: tuple[str, Any]) -> TopLayer:
    return TopLayer(name, "dense", (CLASSES,), (("activation", ACTIVATION), *extra))


# Keras names its pooling `avg_pool`/`max_pool` in most families; MobileNetV2, Xception, InceptionV3 and
# VGG16 leave it unnamed: Keras' own name for the class (the first such layer of a fresh session).
_NAMED_POOLS = ("avg_pool", "max_pool")
_CLASS_POOLS = ("global_average_pooling2d", "global_max_pooling2d")
_AVG = TopLayer("avg_pool", "global_average_pooling2d")

# ResNet (v1 and v2), DenseNet, Xception, InceptionV3: the features averaged, one dense layer.
_POOL_DENSE = (_AVG, _dense())

# EfficientNet (v1 and v2): the dense layer after a dropout, with its own kernel initializer.
_EFFICIENTNET_DENSE_INIT = Initializer(
    "variance_scaling", (("scale", 1.0 / 3.0), ("mode", "fan_out"), ("distribution", "uniform"))
)


def _efficientnet(rate: float) -> tuple[TopLayer, ...]:
    return (
        _AVG,
        TopLayer("top_dropout", "dropout", (rate,)),
        _dense("predictions", ("kernel_initializer", _EFFICIENTNET_DENSE_INIT)),
    )


_VGG16 = (
    TopLayer("flatten", "flatten"),
    TopLayer("fc1", "dense", (4096,), (("activation", Name("relu")),)),
    TopLayer("fc2", "dense", (4096,), (("activation", Name("relu")),)),
    _dense(),
)


def _mobilenet_v3(last_point: int) -> tuple[TopLayer, ...]:
    """MobileNetV3's classifier: the features averaged as a 1x1 map, a 1x1 convolution and Keras' unnamed
    hard-swish, dropout, the classes as a 1x1 convolution, flattened, then the activation as a layer."""
    return (
        TopLayer(None, "global_average_pooling2d", (), (("keepdims", True),)),
        TopLayer("conv_2", "conv2d", (last_point, 1), (("padding", "same"), ("use_bias", True))),
        TopLayer(None, "activation", (Name("hard_silu"),)),
        TopLayer(None, "dropout", (0.2,)),
        TopLayer("logits", "conv2d", (CLASSES, 1), (("padding", "same"),)),
        TopLayer(None, "flatten"),
        TopLayer("predictions", "activation", (ACTIVATION,)),
    )


_CONVNEXT = (
    "Keras pools its features before the backbone's last layer norm, and its classifier replaces that layer "
    "norm: netdsl does not build either yet"
)

TOPS: dict[str, Top] = {
    **{name: Top(_NAMED_POOLS, _POOL_DENSE) for name in ("resnet50", "resnet101", "resnet152")},
    **{name: Top(_NAMED_POOLS, _POOL_DENSE) for name in ("resnet50_v2", "resnet101_v2", "resnet152_v2")},
    "densenet121": Top(_NAMED_POOLS, _POOL_DENSE),
    "xception": Top(_CLASS_POOLS, _POOL_DENSE),
    "inception_v3": Top(_CLASS_POOLS, _POOL_DENSE),
    "mobilenet_v2": Top(_CLASS_POOLS, (TopLayer("global_average_pooling2d", "global_average_pooling2d"), _dense())),
    "mobilenet_v3_small": Top(_NAMED_POOLS, _mobilenet_v3(1024)),
    "mobilenet_v3_large": Top(_NAMED_POOLS, _mobilenet_v3(1280)),
    "efficientnet_b0": Top(_NAMED_POOLS, _efficientnet(0.2)),
    "efficientnet_b1": Top(_NAMED_POOLS, _efficientnet(0.2)),
    "efficientnet_b2": Top(_NAMED_POOLS, _efficientnet(0.3)),
    "efficientnet_b3": Top(_NAMED_POOLS, _efficientnet(0.3)),
    **{f"efficientnet_v2_b{i}": Top(_NAMED_POOLS, _efficientnet(0.2)) for i in range(4)},
    "vgg16": Top(_CLASS_POOLS, _VGG16),
    "convnext_tiny": Top(None, None, _CONVNEXT),
}
