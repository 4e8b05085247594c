"""The losses: each Keras loss function per sample (`keras/src/losses/losses.py`), and `Loss`, one
output's loss reduced per batch as Keras' `Loss.__call__` reduces it.

A function takes (y_true, y_pred, **the spec's arguments) in float64 and returns the
per-sample values, or (values, mask) when it leaves samples out (`ignore_class`).
The metrics reuse those Keras also offers as metrics (crossentropies, hinge, mae, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from netdsl.scoring.keras_math import (
    EPSILON,
    Array,
    Values,
    bce,
    cce,
    clip,
    floats,
    hinge_labels,
    log_softmax,
    normalize,
    same_rank,
    smooth,
    softmax,
    sparse_cce,
)


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
    return np.mean(np.maximum(1.0 - hinge_labels(t) * p, 0.0), axis=-1)


def squared_hinge(t: Array, p: Array) -> Array:
    return np.mean(np.square(np.maximum(1.0 - hinge_labels(t) * p, 0.0)), axis=-1)


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
    return -(normalize(t, axis) * normalize(p, axis)).sum(axis=axis)


def cosine_similarity_metric(t: Array, p: Array, axis: int = -1) -> Array:
    t, p = same_rank(t, p)
    return (normalize(t, axis) * normalize(p, axis)).sum(axis=axis)


def binary_crossentropy(
    t: Array, p: Array, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1
) -> Array:
    t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing if label_smoothing else t
    return np.mean(bce(t, p, from_logits), axis=axis)


def binary_focal_crossentropy(
    t: Array,
    p: Array,
    apply_class_balancing: bool = False,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Array:
    t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing if label_smoothing else t
    p = 1.0 / (1.0 + np.exp(-p)) if from_logits else p
    p_t = t * p + (1 - t) * (1 - p)
    focal = np.power(1.0 - p_t, gamma) * bce(t, p, False)
    if apply_class_balancing:
        focal = (t * alpha + (1 - t) * (1 - alpha)) * focal
    return np.mean(focal, axis=axis)


def categorical_crossentropy(
    t: Array, p: Array, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1
) -> Array:
    return cce(smooth(t, label_smoothing, t.shape[-1]), p, from_logits, axis)


def categorical_focal_crossentropy(
    t: Array,
    p: Array,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Array:
    t = smooth(t, label_smoothing, t.shape[-1])
    p = softmax(p, axis) if from_logits else p
    output = clip(p / p.sum(axis=axis, keepdims=True))
    return (alpha * np.power(1.0 - output, gamma) * -t * np.log(output)).sum(axis=axis)


def categorical_generalized_cross_entropy(t: Array, p: Array, q: float = 0.5) -> Array:
    picked = np.take_along_axis(p, t.astype(np.int64)[..., None], axis=-1)[..., 0]
    return (1 - np.power(picked, q)) / q


def sparse_categorical_crossentropy(
    t: Array, p: Array, from_logits: bool = False, ignore_class: int | None = None, axis: int = -1
) -> Values:
    if t.ndim == p.ndim and t.shape[-1] == 1:
        t = t[..., 0]
    if ignore_class is None:
        return sparse_cce(t, p, from_logits), None
    valid = t != ignore_class
    values = sparse_cce(np.where(valid, t, 0), np.where(valid[..., None], p, 0.0), from_logits)
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
    logp = log_softmax(p)
    losses = []
    for labels, frames in zip(t.astype(np.int64), logp):
        labels = labels[: int(np.count_nonzero(labels))]  # Keras: label_length = the labels that are not 0
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

NOT_FUNCTION_ARGS = ("name", "dtype", "reduction")


@dataclass
class Loss:
    """One output's loss: Keras' `Loss.__call__` (the function, its mask, the reduction) in NumPy."""

    name: str
    kwargs: dict[str, Any]
    reduction: str = "sum_over_batch_size"

    def __call__(self, y_true: Array, y_pred: Array) -> float:
        t, p = floats(y_true, y_pred)
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


def loss_of(resolved: Any) -> Loss:
    kwargs = dict(resolved.kwargs)
    reduction = kwargs.pop("reduction", "sum_over_batch_size")
    return Loss(resolved.name, {k: v for k, v in kwargs.items() if k not in NOT_FUNCTION_ARGS}, reduction)
