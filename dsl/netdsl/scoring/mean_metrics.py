"""The metrics: Keras' mean metrics (a per-sample function summed over every sample, over the count),
the names Keras gives them, and `make_metric`, a spec's metric as its NumPy state
(the counting ones are in `counting.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netdsl import registry
from netdsl.scoring.counting import R2, Counts, FBeta, curve_metric, iou_metric
from netdsl.scoring.keras_math import EPSILON, FLOAT32, NEG_INF, Array, Metric, floats, same_rank
from netdsl.scoring.losses import (
    LOSS_FUNCTIONS,
    NOT_FUNCTION_ARGS,
    binary_crossentropy,
    categorical_crossentropy,
    categorical_hinge,
    cosine_similarity_metric,
    hinge,
    kl_divergence,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)


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
        t, p = floats(y_true, y_pred)
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
CURVE_METRICS = (
    "auc",
    "precision_at_recall",
    "recall_at_precision",
    "sensitivity_at_specificity",
    "specificity_at_sensitivity",
)
IOU_METRICS = ("iou", "binary_iou", "mean_iou", "one_hot_iou", "one_hot_mean_iou")
COUNT_METRICS = ("true_positives", "false_positives", "true_negatives", "false_negatives", "precision", "recall")
OTHER_METRICS = (
    "accuracy",
    "root_mean_squared_error",
    "f1_score",
    "fbeta_score",
    "r2_score",
    *CURVE_METRICS,
    *IOU_METRICS,
)


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
    name, kwargs = resolved.name, {k: v for k, v in resolved.kwargs if k not in NOT_FUNCTION_ARGS}
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
        return curve_metric(shown, name, kwargs)
    if name in IOU_METRICS:
        return iou_metric(shown, name, kwargs)
    if name in ("f1_score", "fbeta_score"):
        return FBeta(shown, kwargs.get("average"), float(kwargs.get("beta", 1.0)), kwargs.get("threshold"))
    if name == "r2_score":
        return R2(shown, kwargs.get("class_aggregation", "uniform_average"), kwargs.get("num_regressors", 0))
    return MeanMetric(shown, MEAN_METRICS[name], kwargs)


def _accuracy_kind(y_true: Array, y_pred: Array) -> str:
    """keras.src.trainers.compile_utils.is_binary_or_sparse_categorical."""
    if y_pred.shape[-1] == 1:
        return "binary_accuracy"
    if y_true.ndim < y_pred.ndim or (y_true.shape[-1] == 1 and y_pred.shape[-1] > 1):
        return "sparse_categorical_accuracy"
    return "categorical_accuracy"
