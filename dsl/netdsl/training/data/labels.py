"""Labels and losses agree before anything trains: the one check, at the spec's `loss = ...`.

    check_request_labels(graph, request, sources)   # train: the data's headers (and an .npz's labels), no TensorFlow
    check_source_labels(graph, source, sources)     # evaluate, and a CSV's labels once read: the targets in memory

The classic beginner mistakes train into a Keras traceback (integer labels with
`categorical_crossentropy`: "Arguments `target` and `output` must have the same
rank"), a TensorFlow error mid-run (a label outside the output's classes), or
silently into nonsense (a binary loss on a softmax, `from_logits=true` on
probabilities). Each is said here as one line at the loss, with the fix. What is
compared: the model's outputs as the checker inferred them (shape, the activation
they end in) and their losses (`output_losses`), against what the data holds per
output (`Labels`: the per-sample shape, and the smallest and largest label when
the values are at hand). A fact that is unknown is never a reason to refuse.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from netdsl.errors import Diagnostic, Sources, Span, SpecError
from netdsl.semantics.values import Resolved
from netdsl.training.data.data_check import (
    _head,
    as_mapping,
    check_zip,
    find_key,
    npz_headers,
    signature_of_graph,
)
from netdsl.training.data.signature import Signature, shape_text
from netdsl.training.errors import DataError

ONE_HOT = ("categorical_crossentropy", "categorical_focal_crossentropy")
SPARSE = ("sparse_categorical_crossentropy",)
BINARY = ("binary_crossentropy", "binary_focal_crossentropy")
PROBABILITIES = ("softmax", "sigmoid")  # what an output is after these: not logits
INTEGER_KINDS = "biu"


@dataclass(frozen=True)
class OutputLoss:
    """One output of the spec's model and the loss it trains with."""

    output: str
    shape: tuple  # per sample, as the checker inferred it (None: a size it could not know)
    activation: str | None  # the activation the output ends in (softmax, sigmoid, ...); None when unknown
    loss: str  # the loss's registry name
    from_logits: bool
    span: Span | None  # where the spec writes the loss: the caret of every error here

    @property
    def classes(self) -> int | None:
        """The output's last size when it is known and above 1: the number of classes it scores."""
        last = self.shape[-1] if self.shape else None
        return last if isinstance(last, int) and not isinstance(last, bool) and last > 1 else None


@dataclass(frozen=True)
class Labels:
    """What the data holds for one output: where, under which name, each sample's shape, and the
    range of the values when they were read (None: only the header was)."""

    origin: str  # the file or folder ("<arrays>" for arrays in memory)
    key: str  # the array or column
    shape: tuple  # per sample
    low: float | None = None
    high: float | None = None
    whole: bool | None = None  # every value a whole number

    def where(self) -> str:
        if not self.key:
            return f"the image folder {self.origin}"  # the class folders label the images
        return f"'{self.key}' in {self.origin}" if self.origin != "<arrays>" else f"the array '{self.key}'"


# ------------------------------------------------------------------ the spec's side


def output_losses(graph: Any) -> list[OutputLoss]:
    """Each output of the checked graph with its loss (none for an output the train section gives no loss)."""
    train = getattr(graph, "train", None)
    if train is None or train.loss is None:
        return []
    names = graph.output_names
    loss = train.loss
    if isinstance(loss, dict):
        per_output = {name: loss.get(name) for name in names}
    elif isinstance(loss, list):
        per_output = dict(zip(names, loss))
    else:
        per_output = dict.fromkeys(names, loss)  # one loss: Keras applies it to every output
    found = []
    for name, ref in graph.outputs:
        resolved = per_output.get(name)
        if not isinstance(resolved, Resolved) or resolved.kind != "loss":  # a declared loss has no label rules
            continue
        node = graph.nodes[ref.node]
        shapes = node.output_shapes
        shape = shapes[ref.index] if ref.index < len(shapes) and isinstance(shapes[ref.index], tuple) else ()
        found.append(
            OutputLoss(
                name,
                shape,
                _activation(node),
                resolved.name,
                dict(resolved.kwargs).get("from_logits") is True,
                resolved.span,
            )
        )
    return found


def _activation(node: Any) -> str | None:
    """The activation a node's output has been through: `-> softmax`, `dense(3, activation=softmax)`,
    `softmax()` or `activation(sigmoid)`; None when the node says nothing certain."""
    if node.op == "activation":
        return str(node.kind)
    if node.op != "layer":
        return None
    if node.kind == "softmax":
        return "softmax"
    activation = node.args.get("activation")
    if isinstance(activation, Resolved) and activation.kind == "activation":
        return activation.name
    if isinstance(activation, str):
        return activation
    return None


# ------------------------------------------------------------------ the check


def check_labels(
    losses: list[OutputLoss], labels: dict[str, Labels], sources: Sources | None, model_file: str | None = None
) -> None:
    """SpecError at the first output's loss that does not fit its output or its labels (`labels`: by
    output name, for the outputs whose data is known); a loss no spec writes (a `.keras` file's own
    compile): a DataError naming `model_file`."""
    for loss in losses:
        problem = _problem(loss, labels.get(loss.output))
        if problem is None:
            continue
        message, hint = problem
        if loss.span is None:
            raise DataError(message, file=model_file, hint=hint)
        raise SpecError(Diagnostic.at(loss.span, message, hint), sources)


def _problem(loss: OutputLoss, labels: Labels | None) -> tuple[str, str] | None:
    """(what is wrong, the fix), or None."""
    name, out, classes = loss.loss, f"output '{loss.output}'", loss.classes
    if loss.from_logits and loss.activation in PROBABILITIES and name in (*ONE_HOT, *SPARSE, *BINARY):
        return (
            f"{name}(from_logits=true) takes raw scores (logits), but {out} ends in {loss.activation}, "
            f"which gives probabilities",
            f"drop from_logits=true, or drop the {loss.activation} from the output (the loss applies it)",
        )
    if name in BINARY and loss.activation == "softmax" and classes is not None:
        return (
            f"{name} scores each of the {classes} units of {out} as a yes/no of its own, but a softmax "
            f"makes them one choice among {classes} classes",
            "use sparse_categorical_crossentropy for integer labels (categorical_crossentropy for one-hot "
            "labels), or sigmoid units for several yes/no labels",
        )
    if labels is None:
        return None
    found = f"{labels.where()} holds {_shape_words(labels)}"
    if name in ONE_HOT and classes is not None and labels.shape in (loss.shape[:-1], (*loss.shape[:-1], 1)):
        return (
            f"{name} takes one-hot targets, shape {_shape(loss.shape)}, for {out}; {found}",
            "use sparse_categorical_crossentropy for integer labels, or one-hot the labels",
        )
    if name in SPARSE and classes is not None and labels.shape == loss.shape:
        return (
            f"{name} takes one class label per sample, shape {_shape(loss.shape[:-1])}, for {out}; "
            f"{labels.where()} holds one-hot rows of {classes} values, shape {_shape(labels.shape)}",
            "use categorical_crossentropy for one-hot labels, or give the class indices (each row's argmax)",
        )
    if name in SPARSE and classes is not None and labels.low is not None and labels.high is not None:
        if labels.whole is False:
            return (
                f"{name} takes class labels 0 to {classes - 1} for {out}; {labels.where()} holds values "
                f"that are not whole numbers",
                "give each sample its class index, or use a regression loss such as mean_squared_error",
            )
        if labels.low < 0 or labels.high > classes - 1:
            return (
                f"{name} takes class labels 0 to {classes - 1} for the {classes} units of {out}; "
                f"{labels.where()} holds labels from {_number(labels.low)} to {_number(labels.high)}",
                f"number the classes from 0, or give the output {int(labels.high) + 1} units"
                if labels.low >= 0
                else "number the classes from 0",
            )
    if name in BINARY and labels.low is not None and labels.high is not None and (labels.low < 0 or labels.high > 1):
        return (
            f"{name} takes targets from 0 to 1 for {out}; {labels.where()} holds values from "
            f"{_number(labels.low)} to {_number(labels.high)}",
            "for several classes: a softmax output of one unit per class with sparse_categorical_crossentropy",
        )
    return None


def _shape(shape: tuple) -> str:
    return shape_text(("N", *shape))


def _shape_words(labels: Labels) -> str:
    if labels.shape in ((), (1,)):
        return f"one class label per sample, shape {_shape(labels.shape)}"
    return f"shape {_shape(labels.shape)}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# ------------------------------------------------------------------ the data's side


def _labels_of(origin: str, key: str, array: np.ndarray) -> Labels:
    """The Labels of a target array in memory, its values read."""
    if array.ndim == 0 or array.size == 0 or array.dtype.kind not in "biuf":
        return Labels(origin, key, tuple(array.shape[1:]))
    low, high = float(np.min(array)), float(np.max(array))
    if not (np.isfinite(low) and np.isfinite(high)):
        return Labels(origin, key, tuple(array.shape[1:]))  # NaN or inf: the loss will say so, not this check
    whole = array.dtype.kind in INTEGER_KINDS or bool(np.all(np.mod(array, 1) == 0))
    return Labels(origin, key, tuple(array.shape[1:]), low, high, whole)


def labels_before_reading(src: Any, signature: Signature, targets: dict[str, str]) -> dict[str, Labels]:
    """{output: Labels} of one source as far as it tells without TensorFlow: an .npz's and arrays' target
    arrays (read: labels are small beside the inputs), a CSV's target columns (one value per sample; the
    values are read with the file), an image folder's class index per image. Nothing for other formats,
    and nothing for what the data checks (`source.check_source`, run first) would refuse."""
    if not isinstance(src, (str, os.PathLike)):
        mapping = as_mapping(src)
        return {
            spec.name: _labels_of("<arrays>", key, mapping[key])
            for spec in signature.outputs
            if (key := find_key(spec, "y", sorted(mapping), signature))
        }
    path = str(src)
    if os.path.isdir(path):
        if len(signature.outputs) != 1:
            return {}
        return {signature.outputs[0].name: Labels(path, "", ())}
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npz":
        return _npz_labels(path, signature)
    if suffix == ".csv":
        head = _head(path)
        header = head[0] if head is not None else None
        return {
            spec.name: Labels(path, column, ())
            for spec in signature.outputs
            if header and (column := targets.get(spec.name, spec.name)) in header
        }
    return {}


def _npz_labels(path: str, signature: Signature) -> dict[str, Labels]:
    keys = sorted(npz_headers(path))  # checked members only (a declared size larger than the bytes is refused)
    wanted = {spec.name: key for spec in signature.outputs if (key := find_key(spec, "y", keys, signature))}
    if not wanted:
        return {}
    check_zip(path)
    with np.load(path, allow_pickle=False) as archive:  # never unpickles
        return {name: _labels_of(path, key, archive[key]) for name, key in wanted.items()}


def check_request_labels(graph: Any, request: Any, sources: Sources | None) -> None:
    """Every source of a `request.DataRequest` against the model's losses, before TensorFlow loads."""
    losses = output_losses(graph)
    check_labels(losses, {}, sources)  # what the spec alone says (a binary loss on a softmax)
    signature = signature_of_graph(graph)
    for key in ("data", "train", "val", "test"):
        src = getattr(request, key)
        if src is not None:
            check_labels(losses, labels_before_reading(src, signature, dict(request.targets or {})), sources)


def check_source_labels(
    losses: list[OutputLoss],
    source: Any,
    columns: dict[str, str],
    sources: Sources | None,
    model_file: str | None = None,
) -> None:
    """An opened source's targets in memory (a CSV's labels once read; the data `evaluate` scores on)
    against the model's losses (`columns`: --targets, the column an output's labels were read from);
    a source that streams its targets (images, TFRecord): the spec's side only."""
    targets = getattr(source, "targets_in_memory", None)
    found = callable(targets) and targets() or {}
    check_labels(
        losses,
        {name: _labels_of(source.origin, columns.get(name, name), np.asarray(array)) for name, array in found.items()},
        sources,
        model_file,
    )
