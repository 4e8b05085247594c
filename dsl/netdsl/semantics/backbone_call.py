"""A zoo backbone's call arguments: `image -> efficientnet_b0(pooling="avg")`.

A zoo backbone takes keras.applications' arguments for what goes on top of its features, by keyword:
`include_top` (false: the features; true: the ImageNet classifier, `classes` and
`classifier_activation` as Keras takes them) and `pooling` (none, "avg" or "max": the feature map
pooled to a vector, for `include_top=false`). The layers they add, with Keras' names, are
`zoo/heads.py`'s; the expander puts them after the backbone's output, inside its nested model.
Its input size is the caller's: the tensor it is called on.

Unlike Keras, `include_top` is false by default: a bare `efficientnet_b0` is the backbone (the zoo's
meaning of the step since it has one), and an argument that would do nothing in Keras (`pooling`
beside the classifier, `classes` without it) is an error rather than ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netdsl.errors import Fail, Span, did_you_mean
from netdsl.limits import MAX_DIM
from netdsl.semantics.state import Step
from netdsl.semantics.values import Sym, SymCall, describe_value
from netdsl.zoo.catalog import BY_NAME as FAMILIES
from netdsl.zoo.heads import ACTIVATION, CLASSES, TOPS, Initializer, Name, TopLayer

PARAMETERS = ("include_top", "weights", "pooling", "classes", "classifier_activation", "input_shape")
POOLINGS = ("avg", "max")
IMAGENET_CLASSES = 1000
TRAINED_SIZE = {name: family.input_size for name, family in FAMILIES.items()}


@dataclass(frozen=True)
class BackboneTop:
    """What a backbone call puts on its features: its layers (Keras' names, arguments filled in) and
    the span of the call that asked for them."""

    family: str
    include_top: bool
    pooling: str | None
    layers: tuple[TopLayer, ...]
    input_shape: tuple[Any, ...] | None  # the backbone's input, where the call fixes it (the classifier's)
    span: Span
    imagenet: bool = False  # `weights="imagenet"`: the published file loaded, as `init` would
    classes: int | None = None  # the classifier's, as the call gave them
    classifier_activation: Any = None

    @property
    def weights_path(self) -> str:
        """The `init` value that loads the family's published file for this top."""
        return f"zoo:{self.family}" + ("/top" if self.include_top else "")

    @property
    def key(self) -> str:
        """The call's arguments as text: one nested model per distinct top (`efficientnet_b0(pooling="avg")`)."""
        shape = f", input_shape={describe_value(self.input_shape)}" if self.input_shape else ""
        if self.include_top:
            activation = _shown(self.classifier_activation)
            return f"(include_top=true, classes={self.classes}, classifier_activation={activation}{shape})"
        return f'(pooling="{self.pooling}"{shape})' if self.pooling else f"({shape[2:]})"


def backbone_top(family: str, step: Step) -> BackboneTop | None:
    """The top a zoo backbone's call asks for (None: the bare backbone), its arguments checked; raises
    `Fail` at the argument at fault."""
    given = _keywords(family, step)
    include_top = _include_top(given, step.span)
    imagenet = _imagenet(given)
    pooling = _pooling(given, step.span)
    if include_top:
        return _classifier(family, given, step.span, imagenet)
    for name in ("classes", "classifier_activation"):
        if name in given:
            raise Fail(given[name][1], f"{name} is for include_top=true: the ImageNet classifier's")
    shape = _input_shape(given, None, step.span)
    if pooling is None:
        return BackboneTop(family, False, None, (), shape, step.span, imagenet) if shape or imagenet else None
    top = TOPS[family]
    if top.pooling is None:
        raise Fail(given["pooling"][1], f'pooling="{pooling}" for {family}: {top.not_yet}', _HEAD_AS_STEPS)
    average, maximum = top.pooling
    layer = (
        TopLayer(average, "global_average_pooling2d") if pooling == "avg" else TopLayer(maximum, "global_max_pooling2d")
    )
    return BackboneTop(family, False, pooling, (layer,), shape, step.span, imagenet)


def _keywords(family: str, step: Step) -> dict[str, tuple[Any, Span]]:
    """The call's arguments by name, with where each is written: keywords only, each a parameter, once."""
    if step.args:
        raise Fail(
            step.args[0][1],
            f"model '{family}' takes its arguments by keyword",
            f"its parameters: {', '.join(PARAMETERS)}, as keras.applications names them",
        )
    given: dict[str, tuple[Any, Span]] = {}
    for name, value, span in step.kwargs:
        if name not in PARAMETERS:
            raise Fail(
                span,
                f"model '{family}' has no parameter '{name}'",
                did_you_mean(name, PARAMETERS) or f"its parameters: {', '.join(PARAMETERS)}",
            )
        if name in given:
            raise Fail(span, f"parameter '{name}' of model '{family}' is given twice")
        given[name] = (value, span)
    return given


def _classifier(family: str, given: dict[str, tuple[Any, Span]], call: Span, imagenet: bool) -> BackboneTop:
    """`include_top=true`: the family's ImageNet classifier with the call's classes and activation, on pictures
    of the size it was trained at unless `input_shape` says another (Keras' default)."""
    if "pooling" in given and given["pooling"][0] is not None:
        raise Fail(
            given["pooling"][1],
            "pooling is for include_top=false: the classifier pools the features itself",
            "leave pooling out, or the classifier out (include_top=false)",
        )
    top = TOPS[family]
    if top.classifier is None:
        raise Fail(given["include_top"][1], f"include_top=true for {family}: {top.not_yet}", _HEAD_AS_STEPS)
    layers = tuple(_filled(layer, given, call) for layer in top.classifier)
    if imagenet:
        _imagenet_classifier(given)
    size = TRAINED_SIZE[family]
    shape = _input_shape(given, (size, size, 3), call)
    activation = given.get("classifier_activation", (Name("softmax"), None))[0]
    return BackboneTop(family, True, None, layers, shape, call, imagenet, _classes(given, call), activation)


_HEAD_AS_STEPS = "write it as steps after the backbone: -> global_average_pooling2d -> dense(...)"


def _imagenet(given: dict[str, tuple[Any, Span]]) -> bool:
    if "weights" not in given:
        return False
    value, span = given["weights"]
    if value is not None and value != "imagenet":
        raise Fail(
            span,
            f'weights is none or "imagenet", received {describe_value(value)}',
            'weights of your own: init = {"PART": "FILE"} in the train section',
        )
    return bool(value == "imagenet")


def _imagenet_classifier(given: dict[str, tuple[Any, Span]]) -> None:
    """ImageNet's classifier is 1000 classes, its activation softmax or none (keras.applications' rule)."""
    if "classes" in given and given["classes"][0] != IMAGENET_CLASSES:
        raise Fail(
            given["classes"][1],
            f'weights="imagenet" with include_top=true is ImageNet\'s {IMAGENET_CLASSES} classes, '
            f"received classes={describe_value(given['classes'][0])}",
            "a classifier of your own: include_top=false, then -> dense(classes) after the backbone",
        )
    if "classifier_activation" not in given:
        return
    activation, span = given["classifier_activation"]
    if activation is not None and not (isinstance(activation, Sym) and activation.name == "softmax"):
        raise Fail(
            span,
            f'weights="imagenet" with include_top=true takes classifier_activation softmax or none, '
            f"received {describe_value(activation)}",
        )


def _include_top(given: dict[str, tuple[Any, Span]], call: Span) -> bool:
    value, span = given.get("include_top", (False, call))
    if not isinstance(value, bool):
        raise Fail(span, f"include_top is true or false, received {describe_value(value)}")
    return value


def _input_shape(
    given: dict[str, tuple[Any, Span]], default: tuple[int, ...] | None, call: Span
) -> tuple[Any, ...] | None:
    value, span = given.get("input_shape", (default, call))
    if value is None:
        return None
    if not (
        isinstance(value, tuple)
        and len(value) == 3
        and all(d is None or (isinstance(d, int) and not isinstance(d, bool) and 0 < d <= MAX_DIM) for d in value)
    ):
        raise Fail(
            span,
            f"input_shape is a picture's (height, width, channels), received {describe_value(value)}",
            "the batch axis is left out: input_shape=(224, 224, 3)",
        )
    return value


def _pooling(given: dict[str, tuple[Any, Span]], call: Span) -> str | None:
    value, span = given.get("pooling", (None, call))
    if value is None:
        return None
    if value not in POOLINGS:
        raise Fail(span, f'pooling is none, "avg" or "max", received {describe_value(value)}')
    return str(value)


def _classes(given: dict[str, tuple[Any, Span]], call: Span) -> int:
    value, span = given.get("classes", (IMAGENET_CLASSES, call))
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_DIM:
        raise Fail(span, f"classes is a whole number from 1 to {MAX_DIM:,}, received {describe_value(value)}")
    return value


def _filled(layer: TopLayer, given: dict[str, tuple[Any, Span]], call: Span) -> TopLayer:
    """A classifier layer with the call's `classes` and `classifier_activation` in place."""
    classes = _classes(given, call)
    activation = given.get("classifier_activation", (Name("softmax"), None))[0]
    filled = {CLASSES: classes, ACTIVATION: activation}

    def fill(value: Any) -> Any:
        return filled[value] if isinstance(value, str) and value in filled else value

    args = tuple(fill(a) for a in layer.args)
    kwargs = tuple((k, fill(v)) for k, v in layer.kwargs)
    return TopLayer(layer.name, layer.layer, args, kwargs)


def _shown(value: Any) -> str:
    return value.text if isinstance(value, Name) else describe_value(value)


def step_arguments(layer: TopLayer, span: Span) -> tuple[list[tuple[Any, Span]], list[tuple[str, Any, Span]]]:
    """A top layer's arguments as a step's evaluated ones (`Step.args`, `Step.kwargs`), each at `span`:
    names as symbols (`relu`), initializers as calls (`variance_scaling(scale=...)`)."""
    return [(_value(a, span), span) for a in layer.args], [(k, _value(v, span), span) for k, v in layer.kwargs]


def _value(value: Any, span: Span) -> Any:
    if isinstance(value, Name):
        return Sym(value.text, span)
    if isinstance(value, Initializer):
        return SymCall(Sym(value.name, span), (), value.kwargs, span)
    return value
