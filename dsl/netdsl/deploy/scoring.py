"""The loss and metrics of a spec's train section in NumPy, summed up over batches as Keras' `evaluate` does.

    if not_in_numpy(graph.train, graph.output_names) is None:   # else: Keras scores it
        scorer = Scorer.of(graph.train, graph.output_names)
        for y_true, y_pred in batches:                      # {output: array}, one batch each
            scorer.update(y_true, y_pred)
        scorer.result()   # {"loss": ..., "probs_loss": ..., "probs_sparse_categorical_accuracy": ...}

What an exported file is scored with, so that `netdsl evaluate model.onnx` imports no
Keras. Each function is Keras 3's own (`keras/src/losses/losses.py`,
`keras/src/backend/tensorflow/nn.py`, `keras/src/metrics/`), computed in float64 on
the runtime's float32 outputs, with Keras' float32 clipping bounds (so a saturated
probability is clipped where Keras clips it). The aggregation is Keras' too:

- `loss`: the batch's reduced loss (the sum of the outputs' losses times their
  `loss_weights`), tracked as a mean weighted by the batch's size;
- each `OUTPUT_loss` (several outputs): the mean of the batches' losses, unweighted
  (Keras weighs them by a batch size its TensorFlow graph does not know);
- a mean metric (accuracy, mae, ...): the sum of its per-sample values over every
  sample, over the number of samples (an ignore_class sample counts, as 0: Keras' metric
  does not read the loss function's mask);
- a counting metric (true_positives, precision, recall, AUC, the IoUs, F1, R2): its counts
  or sums over every sample, the value computed from them at the end.

The names are Keras': a metric is named by its `name=` argument, else the spelling the
spec wrote (`mae`), else its class's name; several outputs prefix it with the output's
name (`probs_accuracy`); the keys come sorted, as Keras hands them over.

Every loss and metric of the registry is here (a test keeps it so: one added to the
registry goes here or into `NOT_IN_NUMPY` with why). `not_in_numpy` names what is not:
a plugin's loss or metric, `auc(multi_label=true)` or `label_weights`, a counting metric
given several thresholds; evaluate then scores with Keras. A metric of one value per class
(f1_score or fbeta_score without `average`) gives a list, one value per class.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netdsl import registry

FLOAT32 = np.float32
EPSILON = float(FLOAT32(1e-7))  # keras.backend.epsilon(), as the float32 Keras computes with
ONE_MINUS_EPSILON = float(FLOAT32(1.0) - FLOAT32(1e-7))
NEG_INF = -1e10  # keras.src.metrics.metrics_utils.NEG_INF

# Registry names Keras scores and NumPy here does not, with why: the one-line reason evaluate gives.
NOT_IN_NUMPY: dict[tuple[str, str], str] = {}

Array = np.ndarray


class ScoringError(ValueError):
    """Targets a metric cannot be computed on (their shape); the message says which and why."""
Values = tuple[Array, "Array | None"]  # per-sample values and their mask (None: every value counts)


# ------------------------------------------------------------------ shared pieces (Keras' own helpers)


def same_rank(x1: Array, x2: Array, expand_rank_1: bool = True) -> tuple[Array, Array]:
    """keras.src.losses.loss.squeeze_or_expand_to_same_rank."""
    if x1.ndim == x2.ndim + 1 and x1.shape[-1] == 1:
        if x2.ndim == 1 and expand_rank_1:
            x2 = x2[..., None]
        else:
            x1 = x1[..., 0]
    elif x2.ndim == x1.ndim + 1 and x2.shape[-1] == 1:
        if x1.ndim == 1 and expand_rank_1:
            x1 = x1[..., None]
        else:
            x2 = x2[..., 0]
    return x1, x2


def _floats(y_true: Array, y_pred: Array) -> tuple[Array, Array]:
    return np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)


def _clip(p: Array) -> Array:
    return np.clip(p, EPSILON, ONE_MINUS_EPSILON)


def _softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x: Array, axis: int = -1) -> Array:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _bce(target: Array, output: Array, from_logits: bool) -> Array:
    """keras.backend binary_crossentropy, elementwise."""
    if from_logits:  # tf.nn.sigmoid_cross_entropy_with_logits
        return np.maximum(output, 0) - output * target + np.log1p(np.exp(-np.abs(output)))
    output = _clip(output)
    return -(target * np.log(output) + (1 - target) * np.log(1 - output))


def _cce(target: Array, output: Array, from_logits: bool, axis: int) -> Array:
    """keras.backend categorical_crossentropy."""
    if from_logits:
        return -(target * _log_softmax(output, axis)).sum(axis=axis)
    output = _clip(output / output.sum(axis=axis, keepdims=True))
    return -(target * np.log(output)).sum(axis=axis)


def _sparse_cce(labels: Array, output: Array, from_logits: bool) -> Array:
    """keras.backend sparse_categorical_crossentropy (the class axis last)."""
    logits = output if from_logits else np.log(_clip(output))
    logp = _log_softmax(logits)
    return -np.take_along_axis(logp, labels.astype(np.int64)[..., None], axis=-1)[..., 0]


def _smooth(y_true: Array, smoothing: float, classes: float) -> Array:
    return y_true * (1.0 - smoothing) + smoothing / classes if smoothing else y_true


def _hinge_labels(y_true: Array) -> Array:
    """Labels of 0 and 1 become -1 and 1 (Keras' convert_binary_labels_to_hinge)."""
    return 2.0 * y_true - 1.0 if np.all((y_true == 0) | (y_true == 1)) else y_true


def _normalize(x: Array, axis: int) -> Array:
    """keras.ops.normalize (l2): x / sqrt(max(sum(x^2), eps))."""
    return x / np.sqrt(np.maximum((x * x).sum(axis=axis, keepdims=True), 1e-12))


# ------------------------------------------------------------------ per-sample functions: (y_true, y_pred, **kw)


def mean_squared_error(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    return np.mean(np.square(t - p), axis=-1)


def mean_absolute_error(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    return np.mean(np.abs(t - p), axis=-1)


def mean_absolute_percentage_error(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    return 100.0 * np.mean(np.abs((t - p) / np.maximum(np.abs(t), EPSILON)), axis=-1)


def mean_squared_logarithmic_error(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    return np.mean(np.square(np.log(np.maximum(p, EPSILON) + 1.0) - np.log(np.maximum(t, EPSILON) + 1.0)), axis=-1)


def hinge(t: Array, p: Array) -> Array:
    return np.mean(np.maximum(1.0 - _hinge_labels(t) * p, 0.0), axis=-1)


def squared_hinge(t: Array, p: Array) -> Array:
    return np.mean(np.square(np.maximum(1.0 - _hinge_labels(t) * p, 0.0)), axis=-1)


def categorical_hinge(t: Array, p: Array) -> Array:
    pos = (t * p).sum(axis=-1)
    neg = ((1.0 - t) * p).max(axis=-1)
    return np.maximum(neg - pos + 1.0, 0.0)


def huber(t: Array, p: Array, delta: float = 1.0) -> Array:
    t, p = same_rank(t, p)
    error = p - t
    absolute = np.abs(error)
    return np.mean(np.where(absolute <= delta, 0.5 * np.square(error), delta * absolute - 0.5 * delta * delta), axis=-1)


def log_cosh(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    x = p - t
    return np.mean(x + np.logaddexp(0.0, -2.0 * x) - math.log(2.0), axis=-1)


def kl_divergence(t: Array, p: Array) -> Array:
    t, p = np.clip(t, EPSILON, 1), np.clip(p, EPSILON, 1)
    return (t * np.log(t / p)).sum(axis=-1)


def poisson(t: Array, p: Array) -> Array:
    return np.mean(p - t * np.log(p + EPSILON), axis=-1)


def cosine_similarity_loss(t: Array, p: Array, axis: int = -1) -> Array:
    t, p = same_rank(t, p)
    return -(_normalize(t, axis) * _normalize(p, axis)).sum(axis=axis)


def cosine_similarity_metric(t: Array, p: Array, axis: int = -1) -> Array:
    t, p = same_rank(t, p)
    return (_normalize(t, axis) * _normalize(p, axis)).sum(axis=axis)


def binary_crossentropy(t: Array, p: Array, from_logits: bool = False, label_smoothing: float = 0.0,
                        axis: int = -1) -> Array:
    t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing if label_smoothing else t
    return np.mean(_bce(t, p, from_logits), axis=axis)


def binary_focal_crossentropy(t: Array, p: Array, apply_class_balancing: bool = False, alpha: float = 0.25,
                              gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> Array:
    t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing if label_smoothing else t
    p = 1.0 / (1.0 + np.exp(-p)) if from_logits else p
    p_t = t * p + (1 - t) * (1 - p)
    focal = np.power(1.0 - p_t, gamma) * _bce(t, p, False)
    if apply_class_balancing:
        focal = (t * alpha + (1 - t) * (1 - alpha)) * focal
    return np.mean(focal, axis=axis)


def categorical_crossentropy(t: Array, p: Array, from_logits: bool = False, label_smoothing: float = 0.0,
                             axis: int = -1) -> Array:
    return _cce(_smooth(t, label_smoothing, t.shape[-1]), p, from_logits, axis)


def categorical_focal_crossentropy(t: Array, p: Array, alpha: float = 0.25, gamma: float = 2.0,
                                   from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1) -> Array:
    t = _smooth(t, label_smoothing, t.shape[-1])
    p = _softmax(p, axis) if from_logits else p
    output = _clip(p / p.sum(axis=axis, keepdims=True))
    return (alpha * np.power(1.0 - output, gamma) * -t * np.log(output)).sum(axis=axis)


def categorical_generalized_cross_entropy(t: Array, p: Array, q: float = 0.5) -> Array:
    picked = np.take_along_axis(p, t.astype(np.int64)[..., None], axis=-1)[..., 0]
    return (1 - np.power(picked, q)) / q


def sparse_categorical_crossentropy(t: Array, p: Array, from_logits: bool = False, ignore_class: int | None = None,
                                    axis: int = -1) -> Values:
    if t.ndim == p.ndim and t.shape[-1] == 1:
        t = t[..., 0]
    if ignore_class is None:
        return _sparse_cce(t, p, from_logits), None
    valid = t != ignore_class
    values = _sparse_cce(np.where(valid, t, 0), np.where(valid[..., None], p, 0.0), from_logits)
    return np.where(valid, values, 0.0), valid


def dice(t: Array, p: Array, axis: Any = None) -> Array:
    axis = _axes(axis)
    return 1 - 2.0 * (t * p).sum(axis=axis) / (t.sum(axis=axis) + p.sum(axis=axis) + EPSILON)


def tversky(t: Array, p: Array, alpha: float = 0.5, beta: float = 0.5, axis: Any = None) -> Array:
    axis = _axes(axis)
    intersection = (t * p).sum(axis=axis)
    fp = ((1 - p) * t).sum(axis=axis)
    fn = (p * (1 - t)).sum(axis=axis)
    return 1 - intersection / (intersection + fp * alpha + fn * beta + EPSILON)


def _logsumexp(x: Array, axis: int) -> Array:
    """log(sum(exp(x))) that is -inf where every term is -inf (keras.ops.logsumexp)."""
    top = x.max(axis=axis, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.exp(x - shift).sum(axis=axis, keepdims=True)) + shift).squeeze(axis)


def circle(t: Array, p: Array, gamma: float = 80.0, margin: float = 0.4, remove_diagonal: bool = True) -> Values:
    """keras.losses.circle, each sample against the batch's others; the mask is the loss > 0."""
    labels = t.astype(np.int64).reshape(-1, 1)
    distances = np.maximum(1 - p @ p.T, 0.0)
    positive = labels == labels.T
    negative = ~positive
    if remove_diagonal:
        positive &= ~np.eye(len(labels), dtype=bool)
    pos_weights = np.maximum((margin + distances) * positive, 0.0)
    neg_weights = np.maximum((1 + margin - distances) * negative, 0.0)
    pos = -gamma * pos_weights * (margin - distances)
    neg = gamma * neg_weights * (1 - margin - distances)
    p_loss = _logsumexp(np.where(positive, pos, -np.inf), axis=1)
    n_loss = _logsumexp(np.where(negative, neg, -np.inf), axis=1)
    loss = np.logaddexp(0.0, p_loss + n_loss)
    return loss, loss > 0


def ctc(t: Array, p: Array) -> Array:
    """keras.losses.ctc: tf.nn.ctc_loss on logits (N, T, classes), labels (N, L) padded with the blank, 0."""
    logp = _log_softmax(p)
    losses = []
    for labels, frames in zip(t.astype(np.int64), logp):
        labels = labels[:int(np.count_nonzero(labels))]  # Keras: label_length = the labels that are not 0
        extended = np.zeros(2 * len(labels) + 1, dtype=np.int64)
        extended[1::2] = labels
        skip = np.zeros(len(extended), dtype=bool)
        skip[2:] = (extended[2:] != 0) & (extended[2:] != extended[:-2])
        alpha = np.full(len(extended), -np.inf)
        alpha[0] = frames[0, 0]
        if len(extended) > 1:
            alpha[1] = frames[0, extended[1]]
        for frame in frames[1:]:
            step = alpha.copy()
            step[1:] = np.logaddexp(step[1:], alpha[:-1])
            step[2:] = np.where(skip[2:], np.logaddexp(step[2:], alpha[:-2]), step[2:])
            alpha = step + frame[extended]
        losses.append(-(np.logaddexp(alpha[-1], alpha[-2]) if len(extended) > 1 else alpha[-1]))
    return np.array(losses)


def _axes(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def binary_accuracy(t: Array, p: Array, threshold: float = 0.5) -> Array:
    t, p = same_rank(t, p)
    return (t == (p > FLOAT32(threshold)).astype(t.dtype)).astype(np.float64)


def categorical_accuracy(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    return (np.argmax(t, axis=-1) == np.argmax(p, axis=-1)).astype(np.float64)


def sparse_categorical_accuracy(t: Array, p: Array) -> Array:
    if t.ndim == p.ndim and t.shape[-1] == 1:
        t = t[..., 0]
    matches = (t == np.argmax(p, axis=-1)).astype(np.float64)
    return matches[..., 0] if matches.ndim > 1 and matches.shape[-1] == 1 else matches


def _in_top_k(labels: Array, p: Array, k: int) -> Array:
    """tf.math.in_top_k: the label's score is among the k highest (ties with the k-th count in)."""
    target = np.take_along_axis(p, labels.astype(np.int64)[..., None], axis=-1)
    return (p > target).sum(axis=-1) < k


def top_k_categorical_accuracy(t: Array, p: Array, k: int = 5) -> Array:
    labels = np.argmax(t, axis=-1)
    return _in_top_k(labels.reshape(-1), p.reshape(-1, p.shape[-1]), k).astype(np.float64).reshape(labels.shape)


def sparse_top_k_categorical_accuracy(t: Array, p: Array, k: int = 5, from_sorted_ids: bool = False) -> Array:
    shape = t.shape
    if from_sorted_ids:
        found = (p[..., :k] == t.reshape(*p.shape[:-1], 1)).any(axis=-1)
    else:
        found = _in_top_k(t.reshape(-1), p.reshape(-1, p.shape[-1]), k)
    found = found.astype(np.float64)
    if len(shape) > 1:
        found = found.reshape(shape)
        return found[..., 0] if found.shape[-1] == 1 else found
    return found


# ------------------------------------------------------------------ losses: reduced per batch


LOSS_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "binary_crossentropy": binary_crossentropy,
    "binary_focal_crossentropy": binary_focal_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "categorical_focal_crossentropy": categorical_focal_crossentropy,
    "categorical_generalized_cross_entropy": categorical_generalized_cross_entropy,
    "categorical_hinge": categorical_hinge,
    "circle": circle,
    "cosine_similarity": cosine_similarity_loss,
    "ctc": ctc,
    "dice": dice,
    "hinge": hinge,
    "huber": huber,
    "kl_divergence": kl_divergence,
    "log_cosh": log_cosh,
    "mean_absolute_error": mean_absolute_error,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mean_squared_error": mean_squared_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "poisson": poisson,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "squared_hinge": squared_hinge,
    "tversky": tversky,
}

_NOT_FUNCTION_ARGS = ("name", "dtype", "reduction")


@dataclass
class Loss:
    """One output's loss: Keras' `Loss.__call__` (the function, its mask, the reduction) in NumPy."""

    name: str
    kwargs: dict[str, Any]
    reduction: str = "sum_over_batch_size"

    def __call__(self, y_true: Array, y_pred: Array) -> float:
        t, p = _floats(y_true, y_pred)
        if self.name not in ("sparse_categorical_crossentropy", "categorical_generalized_cross_entropy"):
            t, p = same_rank(t, p)  # LossFunctionWrapper.call
        got = LOSS_FUNCTIONS[self.name](t, p, **self.kwargs)
        values, mask = got if isinstance(got, tuple) else (got, None)
        return reduce_loss(np.asarray(values, dtype=np.float64), mask, self.reduction)


def reduce_loss(values: Array, mask: Array | None, reduction: str) -> float:
    """keras.src.losses.loss.reduce_weighted_values with no sample weights, then the loss tracker's
    mean of what is left (a "none" reduction hands Keras' tracker the unreduced values)."""
    if mask is not None:
        valid = float(mask.sum())
        if reduction in ("mean", "sum_over_batch_size"):
            weight = values.size / valid if valid else 0.0
            values = np.where(mask, values * weight, 0.0)
        else:
            values = np.where(mask, values, 0.0)
    if reduction == "none" or values.ndim == 0 or values.shape == (0,):
        return float(values.mean()) if values.size else 0.0
    total = float(values.sum())
    if reduction == "sum":
        return total
    divisor = float(mask.sum()) if reduction == "mean_with_sample_weight" and mask is not None else values.size
    return total / divisor if divisor else 0.0


# ------------------------------------------------------------------ metrics: a state over batches


class Metric:
    """A metric's state over the batches (`update`), and its value (`result`)."""

    name: str

    def update(self, y_true: Array, y_pred: Array) -> None:
        raise NotImplementedError

    def result(self) -> float | list[float]:
        """One number; a list of them for a metric of one value per class (f1_score without `average`)."""
        raise NotImplementedError


@dataclass
class MeanMetric(Metric):
    """keras.metrics.MeanMetricWrapper: the per-sample values' sum over the samples' count."""

    name: str
    fn: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    root: bool = False  # RootMeanSquaredError: the square root of the mean
    total: float = 0.0
    count: float = 0.0

    def update(self, y_true: Array, y_pred: Array) -> None:
        t, p = _floats(y_true, y_pred)
        got = self.fn(t, p, **self.kwargs)
        # A mask the function sets (ignore_class) is not the metric's: Keras' wrapper reads y_pred's
        values = np.asarray(got[0] if isinstance(got, tuple) else got, dtype=np.float64)
        if values.ndim > 1:
            values = values.mean(axis=tuple(range(1, values.ndim)))
        self.total += float(values.sum())
        self.count += values.shape[0] if values.ndim >= 1 else 1

    def result(self) -> float:
        mean = self.total / self.count if self.count else 0.0
        return math.sqrt(mean) if self.root else mean


def _squared_error(t: Array, p: Array) -> Array:
    t, p = same_rank(t, p)
    return np.square(p - t)


@dataclass
class Counts(Metric):
    """keras.metrics TruePositives ... Precision, Recall: confusion counts at one threshold
    (keras.src.metrics.metrics_utils.update_confusion_matrix_variables)."""

    name: str
    value: str  # "true_positives", ..., "precision", "recall"
    threshold: float = 0.5
    top_k: int | None = None
    class_id: int | None = None
    tp: float = 0.0
    fp: float = 0.0
    tn: float = 0.0
    fn: float = 0.0

    def update(self, y_true: Array, y_pred: Array) -> None:
        p, t = same_rank(np.asarray(y_pred, dtype=np.float32), np.asarray(y_true, dtype=np.float32))
        if self.top_k is not None:
            order = np.argsort(-p, axis=-1, kind="stable")[..., :self.top_k]
            keep = np.zeros(p.shape, dtype=bool)
            np.put_along_axis(keep, order, True, axis=-1)
            p = np.where(keep, p, FLOAT32(NEG_INF))
        if self.class_id is not None:
            t, p = t[..., self.class_id], p[..., self.class_id]
        positive, label = p.reshape(-1) > FLOAT32(self.threshold), t.reshape(-1).astype(bool)
        self.tp += float(np.sum(positive & label))
        self.fp += float(np.sum(positive & ~label))
        self.tn += float(np.sum(~positive & ~label))
        self.fn += float(np.sum(~positive & label))

    def result(self) -> float:
        if self.value == "precision":
            return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        if self.value == "recall":
            return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        return {"true_positives": self.tp, "false_positives": self.fp, "true_negatives": self.tn,
                "false_negatives": self.fn}[self.value]


def pearson_correlation(t: Array, p: Array, axis: int = -1) -> Array:
    t, p = same_rank(t, p)
    t = t - t.mean(axis=axis, keepdims=True)
    p = p - p.mean(axis=axis, keepdims=True)
    t = t / t.std(axis=axis, keepdims=True)
    p = p / p.std(axis=axis, keepdims=True)
    return np.mean(t * p, axis=axis)


def concordance_correlation(t: Array, p: Array, axis: int = -1) -> Array:
    t, p = same_rank(t, p)
    t_mean, p_mean = t.mean(axis=axis, keepdims=True), p.mean(axis=axis, keepdims=True)
    t_var, p_var = (t - t_mean).var(axis=axis, keepdims=True), (p - p_mean).var(axis=axis, keepdims=True)
    covariance = (t - p_mean) * (p - p_mean)  # sic: Keras centres y_true on y_pred's mean
    return np.mean(2 * covariance / (t_var + p_var + np.square(t_mean - p_mean) + EPSILON), axis=axis)


def _even_thresholds(count: int) -> list[float]:
    """Keras' `count` thresholds spread evenly over [0, 1], the ends excluded."""
    return [(i + 1) * 1.0 / (count - 1) for i in range(count - 2)]


@dataclass
class Curve(Metric):
    """The confusion counts at many thresholds: AUC and the `X_at_Y` metrics (Keras' bucketed
    update for evenly spread thresholds, `update_confusion_matrix_variables_optimized`, in float32)."""

    name: str
    kind: str  # "auc", "precision_at_recall", ...
    thresholds: Array
    evenly: bool
    value: float = 0.0  # the constraint of an X_at_Y metric
    class_id: int | None = None
    from_logits: bool = False
    curve: str = "ROC"
    summation: str = "interpolation"
    tp: Array = field(default_factory=lambda: np.zeros(0))
    fp: Array = field(default_factory=lambda: np.zeros(0))
    tn: Array = field(default_factory=lambda: np.zeros(0))
    fn: Array = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        size = len(self.thresholds)
        self.tp, self.fp, self.tn, self.fn = (np.zeros(size) for _ in range(4))

    def update(self, y_true: Array, y_pred: Array) -> None:
        p = np.asarray(y_pred, dtype=np.float32)
        if self.from_logits:
            p = (1 / (1 + np.exp(-p.astype(np.float64)))).astype(np.float32)
        p, t = same_rank(p, np.asarray(y_true, dtype=np.float32))
        if self.class_id is not None:
            t, p = t[..., self.class_id], p[..., self.class_id]
        label, p = t.reshape(-1).astype(bool), p.reshape(-1)
        size = len(self.thresholds)
        if self.evenly:
            p = np.clip(p, FLOAT32(0), FLOAT32(1))
            buckets = np.ceil(p * FLOAT32(size - 1)) - 1
            if self.thresholds[0] < 0 or self.thresholds[-1] > 1:
                buckets = np.maximum(buckets, 0)
            buckets = buckets.astype(np.int64)
            kept = buckets >= 0  # TensorFlow's segment_sum drops a negative segment
            tp = np.bincount(buckets[kept], weights=label[kept], minlength=size)[::-1].cumsum()[::-1]
            fp = np.bincount(buckets[kept], weights=~label[kept], minlength=size)[::-1].cumsum()[::-1]
        else:
            above = p[None, :] > self.thresholds.astype(np.float32)[:, None]
            tp = (above & label).sum(axis=1).astype(np.float64)
            fp = (above & ~label).sum(axis=1).astype(np.float64)
        self.tp += tp
        self.fp += fp
        self.tn += float((~label).sum()) - fp
        self.fn += float(label.sum()) - tp

    def result(self) -> float:
        tp, fp, tn, fn = self.tp, self.fp, self.tn, self.fn
        recall, precision = _ratio(tp, tp + fn), _ratio(tp, tp + fp)
        if self.kind == "auc":
            return self._auc(recall, precision)
        specificity = _ratio(tn, tn + fp)
        constrained, dependent = {"sensitivity_at_specificity": (specificity, recall),
                                  "specificity_at_sensitivity": (recall, specificity),
                                  "precision_at_recall": (recall, precision),
                                  "recall_at_precision": (precision, recall)}[self.kind]
        return float(np.max(np.where(constrained >= FLOAT32(self.value), dependent, 0.0), initial=0.0))

    def _auc(self, recall: Array, precision: Array) -> float:
        if self.curve == "PR" and self.summation == "interpolation":
            return self._interpolated_pr_auc()
        if self.curve == "ROC":
            x, y = _ratio(self.fp, self.fp + self.tn), recall
        else:
            x, y = recall, precision
        if self.summation == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return float(((x[:-1] - x[1:]) * heights).sum())

    def _interpolated_pr_auc(self) -> float:
        """keras AUC.interpolate_pr_auc (Davis & Goadrich's interpolation)."""
        tp, p = self.tp, self.tp + self.fp
        dtp = tp[:-1] - tp[1:]
        dp = p[:-1] - p[1:]
        slope = _ratio(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _ratio(p[:-1], np.maximum(p[1:], 0)), 1.0)
        with np.errstate(divide="ignore"):
            logs = np.where(ratio > 0, np.log(np.where(ratio > 0, ratio, 1.0)), 0.0)
        increment = _ratio(slope * (dtp + intercept * logs), np.maximum(tp[1:] + self.fn[1:], 0))
        return float(increment.sum())


def _ratio(a: Array, b: Array) -> Array:
    """ops.divide_no_nan."""
    b = np.asarray(b, dtype=np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b != 0)


@dataclass
class ConfusionMatrix(Metric):
    """keras.metrics IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU: a class-by-class matrix."""

    name: str
    classes: int
    targets: list[int]
    ignore_class: int | None = None
    sparse_y_true: bool = True
    sparse_y_pred: bool = True
    axis: int = -1
    threshold: float | None = None  # BinaryIoU: a prediction >= threshold is class 1
    matrix: Array = field(default_factory=lambda: np.zeros((0, 0)))

    def __post_init__(self) -> None:
        self.matrix = np.zeros((self.classes, self.classes))

    def update(self, y_true: Array, y_pred: Array) -> None:
        t, p = np.asarray(y_true), np.asarray(y_pred)
        if self.threshold is not None:
            p = (p.astype(np.float32) >= FLOAT32(self.threshold)).astype(np.int64)
        if not self.sparse_y_true:
            t = np.argmax(t, axis=self.axis)
        if not self.sparse_y_pred:
            p = np.argmax(p, axis=self.axis)
        t, p = np.trunc(t).astype(np.int64).reshape(-1), np.trunc(p).astype(np.int64).reshape(-1)
        valid = (t >= 0) & (t < self.classes) & (p >= 0) & (p < self.classes)
        if self.ignore_class is not None:
            valid &= t != self.ignore_class
        np.add.at(self.matrix, (np.where(valid, t, 0), np.where(valid, p, 0)), valid.astype(np.float64))

    def result(self) -> float:
        tp = np.diag(self.matrix)
        denominator = (self.matrix.sum(axis=0) + self.matrix.sum(axis=1) - tp)[self.targets]
        tp = tp[self.targets]
        valid = denominator > 1e-9
        iou = np.where(valid, tp / (denominator + EPSILON), 0.0)
        return float(iou.sum() / (valid.sum() + EPSILON))


@dataclass
class FBeta(Metric):
    """keras.metrics FBetaScore and F1Score: averaged to one number (micro, macro or weighted), or one value
    per class (`average` None)."""

    name: str
    average: str | None
    beta: float = 1.0
    threshold: float | None = None
    tp: Any = 0.0
    fp: Any = 0.0
    fn: Any = 0.0
    weights: Any = 0.0

    def update(self, y_true: Array, y_pred: Array) -> None:
        t, p = np.asarray(y_true, dtype=np.float32), np.asarray(y_pred, dtype=np.float32)
        if t.shape != p.shape:  # Keras' F1Score refuses it too (NumPy would broadcast, or fail, on class labels)
            raise ScoringError(f"the metric '{self.name}' needs one-hot targets shaped as the predictions "
                               f"({_per_sample(p)} per sample); the data's are {_per_sample(t)}")
        if self.threshold is None:
            chosen = (p >= p.max(axis=-1, keepdims=True)) & (np.abs(p) > FLOAT32(1e-9))
        else:
            chosen = p > FLOAT32(self.threshold)
        chosen_f, t64 = chosen.astype(np.float64), t.astype(np.float64)
        axis = None if self.average == "micro" else 0
        self.tp = self.tp + (chosen_f * t64).sum(axis=axis)
        self.fp = self.fp + (chosen_f * (1 - t64)).sum(axis=axis)
        self.fn = self.fn + ((1 - chosen_f) * t64).sum(axis=axis)
        self.weights = self.weights + t64.sum(axis=axis)

    def result(self) -> float | list[float]:
        precision = self.tp / (self.tp + self.fp + EPSILON)
        recall = self.tp / (self.tp + self.fn + EPSILON)
        beta2 = self.beta ** 2
        score = precision * recall / (beta2 * precision + recall + EPSILON) * (1 + beta2)
        if self.average is None:
            return [float(v) for v in score]
        if self.average == "weighted":
            return float((score * self.weights / (np.sum(self.weights) + EPSILON)).sum())
        return float(np.mean(score))


def _per_sample(array: Array) -> str:
    return str(tuple(array.shape[1:])) if array.ndim > 1 else "one number"


@dataclass
class R2(Metric):
    """keras.metrics.R2Score: per-column sums over every sample."""

    name: str
    aggregation: str = "uniform_average"
    regressors: int = 0
    sums: Array | None = None  # rows: sum, squared sum, squared residual, count
    samples: int = 0

    def update(self, y_true: Array, y_pred: Array) -> None:
        t, p = same_rank(*_floats(y_true, y_pred))
        rows = np.stack([t.sum(axis=0), (t * t).sum(axis=0), ((t - p) ** 2).sum(axis=0),
                         np.full(t.shape[1], float(t.shape[0]))])
        self.sums = rows if self.sums is None else self.sums + rows
        self.samples += t.size

    def result(self) -> float:
        assert self.sums is not None
        total_sum, squared, residual, count = self.sums
        total = squared - total_sum * (total_sum / count)
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = 1 - residual / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        score = float(raw.mean()) if self.aggregation == "uniform_average" else float((total * raw).sum() / total.sum())
        n = self.samples
        if self.regressors and self.regressors < n - 1:  # netdsl's AdjustedR2Score, as Keras' R2Score computes it
            score = 1.0 - (1.0 - score) * (n - 1.0) / (n - self.regressors - 1.0)
        return score


MEAN_METRICS: dict[str, Callable[..., Any]] = {
    "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "hinge": hinge,
    "squared_hinge": squared_hinge,
    "categorical_hinge": categorical_hinge,
    "kl_divergence": kl_divergence,
    "poisson": poisson,
    "log_cosh_error": log_cosh,
    "cosine_similarity": cosine_similarity_metric,
    "mean_absolute_error": mean_absolute_error,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mean_squared_error": mean_squared_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "pearson_correlation": pearson_correlation,
    "concordance_correlation": concordance_correlation,
}
CURVE_METRICS = ("auc", "precision_at_recall", "recall_at_precision", "sensitivity_at_specificity",
                 "specificity_at_sensitivity")
IOU_METRICS = ("iou", "binary_iou", "mean_iou", "one_hot_iou", "one_hot_mean_iou")
COUNT_METRICS = ("true_positives", "false_positives", "true_negatives", "false_negatives", "precision", "recall")
OTHER_METRICS = ("accuracy", "root_mean_squared_error", "f1_score", "fbeta_score", "r2_score",
                 *CURVE_METRICS, *IOU_METRICS)


def in_numpy(kind: str, name: str) -> bool:
    """Whether this module scores the registry's loss or metric `name`."""
    if kind == "loss":
        return name in LOSS_FUNCTIONS
    return name in MEAN_METRICS or name in COUNT_METRICS or name in OTHER_METRICS


def keras_snake_case(name: str) -> str:
    """keras.src.utils.naming.to_snake_case: how Keras names a metric given no name (IoU -> io_u)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def metric_name(resolved: Any) -> str:
    """The name Keras gives the metric the spec wrote (see netdsl.custom.factory.make)."""
    entry = registry.lookup("metric", resolved.name)
    assert entry is not None  # a checked spec names registry metrics only
    kwargs = dict(resolved.kwargs)
    written = getattr(resolved, "written", None)
    alias = written if written and written != entry.name and written in entry.aliases and written.islower() else None
    if entry.keras_name == "accuracy":
        return alias if alias and not kwargs else "accuracy"
    if kwargs.get("name"):
        return str(kwargs["name"])
    if alias:
        return alias
    param = entry.param("name")
    default = param.default if param is not None else None
    return str(default) if default else keras_snake_case(entry.keras_name)


def make_metric(resolved: Any, y_true: Array, y_pred: Array) -> Metric:
    """The NumPy metric for a checked Resolved metric (`accuracy` picked as Keras picks it, by shape)."""
    name, kwargs = resolved.name, {k: v for k, v in resolved.kwargs if k not in _NOT_FUNCTION_ARGS}
    shown = metric_name(resolved)
    if name == "accuracy":
        name = _accuracy_kind(np.asarray(y_true), np.asarray(y_pred))
    if name == "root_mean_squared_error":
        return MeanMetric(shown, _squared_error, root=True)
    if name in COUNT_METRICS:
        threshold = kwargs.get("thresholds")
        threshold = 0.5 if threshold is None else threshold
        if name in ("precision", "recall") and kwargs.get("top_k") is not None and kwargs.get("thresholds") is None:
            threshold = NEG_INF  # Keras: top_k with no thresholds counts every kept prediction
        return Counts(shown, name, float(threshold), kwargs.get("top_k"), kwargs.get("class_id"))
    if name in CURVE_METRICS:
        return _curve(shown, name, kwargs)
    if name in IOU_METRICS:
        return _iou(shown, name, kwargs)
    if name in ("f1_score", "fbeta_score"):
        return FBeta(shown, kwargs.get("average"), float(kwargs.get("beta", 1.0)), kwargs.get("threshold"))
    if name == "r2_score":
        return R2(shown, kwargs.get("class_aggregation", "uniform_average"), kwargs.get("num_regressors", 0))
    return MeanMetric(shown, MEAN_METRICS[name], kwargs)


def _curve(shown: str, name: str, kwargs: dict[str, Any]) -> Curve:
    if name == "auc":
        given = kwargs.get("thresholds")
        count = kwargs.get("num_thresholds", 200)
        inner = sorted(given) if given is not None else _even_thresholds(count)
        ends = np.array([0.0] + inner + [1.0])
        evenly = given is None or bool(np.allclose(ends, np.linspace(0, 1, len(ends)), atol=EPSILON))
        thresholds = np.array([0.0 - EPSILON, *inner, 1.0 + EPSILON])
        return Curve(shown, name, thresholds, evenly, from_logits=kwargs.get("from_logits", False),
                     curve=kwargs.get("curve", "ROC"), summation=kwargs.get("summation_method", "interpolation"))
    count = kwargs.get("num_thresholds", 200)
    value = next(kwargs[k] for k in ("recall", "precision", "specificity", "sensitivity") if k in kwargs)
    if count == 1:
        return Curve(shown, name, np.array([0.5]), False, float(value), kwargs.get("class_id"))
    return Curve(shown, name, np.array([0.0, *_even_thresholds(count), 1.0]), True, float(value),
                 kwargs.get("class_id"))


def _iou(shown: str, name: str, kwargs: dict[str, Any]) -> ConfusionMatrix:
    if name == "binary_iou":
        return ConfusionMatrix(shown, 2, list(kwargs.get("target_class_ids", (0, 1))),
                               threshold=kwargs.get("threshold", 0.5))
    classes = kwargs["num_classes"]
    targets = list(kwargs["target_class_ids"]) if "target_class_ids" in kwargs else list(range(classes))
    one_hot = name.startswith("one_hot")
    return ConfusionMatrix(shown, classes, targets, kwargs.get("ignore_class"),
                           sparse_y_true=False if one_hot else kwargs.get("sparse_y_true", True),
                           sparse_y_pred=kwargs.get("sparse_y_pred", not one_hot), axis=kwargs.get("axis", -1))


def _accuracy_kind(y_true: Array, y_pred: Array) -> str:
    """keras.src.trainers.compile_utils.is_binary_or_sparse_categorical."""
    if y_pred.shape[-1] == 1:
        return "binary_accuracy"
    if y_true.ndim < y_pred.ndim or (y_true.shape[-1] == 1 and y_pred.shape[-1] > 1):
        return "sparse_categorical_accuracy"
    return "categorical_accuracy"


# ------------------------------------------------------------------ a train section, scored


def _per_output(value: Any, names: list[str]) -> dict[str, Any]:
    """One value per output name, as the compiler spreads it (a dict may leave an output out)."""
    if isinstance(value, dict):
        return {n: value[n] for n in names if n in value}
    if isinstance(value, list):
        return dict(zip(names, value))
    return dict.fromkeys(names, value)


def _metrics_per_output(value: Any, names: list[str]) -> dict[str, list[Any]]:
    """Each output's metrics (a list: the same metrics for every output), as the compiler spreads them."""
    if isinstance(value, dict):
        return {n: list(value.get(n, [])) for n in names}
    return {n: list(value or []) for n in names}


def not_in_numpy(train: Any, names: list[str]) -> str | None:
    """The first loss or metric of the train section NumPy cannot score, with why; None: all can."""
    resolved = [*_per_output(train.loss, names).values()]
    for metrics in _metrics_per_output(train.metrics, names).values():
        resolved.extend(metrics)
    for item in resolved:
        if item.kind == "metric" and item.name in ("precision", "recall", "true_positives", "false_positives",
                                                   "true_negatives", "false_negatives"):
            thresholds = dict(item.kwargs).get("thresholds")
            if isinstance(thresholds, (list, tuple)):
                return f"the metric '{item.describe()}' (several thresholds)"
        refused = _refused_arguments(item)
        if refused is not None:
            return refused
        if not in_numpy(item.kind, item.name):
            why = NOT_IN_NUMPY.get((item.kind, item.name), "a plugin's")
            return f"the {item.kind} '{item.name}' ({why})"
    return None


def _refused_arguments(item: Any) -> str | None:
    """A metric whose arguments NumPy does not follow here, with why."""
    kwargs = dict(item.kwargs)
    if item.kind != "metric":
        return None
    if item.name == "auc" and (kwargs.get("multi_label") or kwargs.get("label_weights") is not None):
        return f"the metric '{item.describe()}' (multi_label and label_weights)"
    return None


@dataclass
class Scorer:
    """The train section's loss (each output's and the weighted total) and metrics over batches."""

    outputs: list[str]
    losses: dict[str, Loss]
    weights: dict[str, float | None]
    metric_specs: dict[str, list[Any]]
    metrics: dict[str, list[Metric]] | None = None
    loss_total: float = 0.0
    output_totals: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    batches: int = 0

    @classmethod
    def of(cls, train: Any, names: list[str]) -> Scorer:
        """The train section's scorer (check `not_in_numpy` first)."""
        losses = {n: _loss(r) for n, r in _per_output(train.loss, names).items()}
        given = _per_output(train.loss_weights, names) if train.loss_weights is not None else {}
        weights: dict[str, float | None] = {
            n: (float(given.get(n, 1.0)) if train.loss_weights is not None else None) for n in losses}
        return cls(list(names), losses, weights, _metrics_per_output(train.metrics, names))

    def update(self, y_true: dict[str, Array], y_pred: dict[str, Array]) -> None:
        """One batch: {output: targets}, {output: the file's outputs}."""
        if self.metrics is None:  # `accuracy` is picked by the first batch's shapes, as Keras builds it
            self.metrics = {n: [make_metric(r, y_true[n], y_pred[n]) for r in self.metric_specs[n]]
                            for n in self.outputs}
        size = len(next(iter(y_pred.values())))
        total = 0.0
        for name, loss in self.losses.items():
            value = loss(y_true[name], y_pred[name])
            self.output_totals[name] = self.output_totals.get(name, 0.0) + value
            weight = self.weights[name]
            total += value * weight if weight is not None else value
        self.loss_total += total * size
        self.samples += size
        self.batches += 1
        for name, metrics in self.metrics.items():
            for metric in metrics:
                metric.update(y_true[name], y_pred[name])

    def result(self) -> dict[str, float | list[float]]:
        """The values by Keras' names, sorted as Keras hands them over."""
        n = self.samples or 1
        logs: dict[str, float | list[float]] = {"loss": self.loss_total / n}
        if len(self.outputs) > 1:
            # Keras weighs these by `y_pred.shape[0]`, unknown (None) inside TensorFlow's graph: a plain mean
            logs.update({f"{name}_loss": self.output_totals.get(name, 0.0) / (self.batches or 1)
                         for name in self.losses})
        taken: dict[str, int] = {}
        for output, metrics in (self.metrics or {}).items():
            for metric in metrics:
                key = f"{output}_{metric.name}" if len(self.outputs) > 1 else metric.name
                if key in taken:  # Keras: a second metric of the same name gets `_1`
                    taken[key] += 1
                    key = f"{key}_{taken[key] - 1}"
                else:
                    taken[key] = 1
                logs[key] = metric.result()
        return dict(sorted(logs.items()))


def _loss(resolved: Any) -> Loss:
    kwargs = dict(resolved.kwargs)
    reduction = kwargs.pop("reduction", "sum_over_batch_size")
    return Loss(resolved.name, {k: v for k, v in kwargs.items() if k not in _NOT_FUNCTION_ARGS}, reduction)
