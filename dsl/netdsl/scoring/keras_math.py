"""What the losses and metrics share: Keras' float32 bounds, its own small helpers (the backend's
crossentropies, clipping, l2 normalising), and the `Metric` every metric's state is.

Each is Keras 3's own function in NumPy, computed in float64 with Keras' float32 clipping
bounds (so a saturated probability is clipped where Keras clips it).
"""

from __future__ import annotations

import numpy as np

from netdsl.errors import ReportedError

FLOAT32 = np.float32
EPSILON = float(FLOAT32(1e-7))  # keras.backend.epsilon(), as the float32 Keras computes with
ONE_MINUS_EPSILON = float(FLOAT32(1.0) - FLOAT32(1e-7))
NEG_INF = -1e10  # keras.src.metrics.metrics_utils.NEG_INF

Array = np.ndarray


class ScoringError(ReportedError, ValueError):
    """Targets a metric cannot be computed on (their shape); `.message` says which and why."""


Values = tuple[Array, "Array | None"]  # per-sample values and their mask (None: every value counts)


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


def floats(y_true: Array, y_pred: Array) -> tuple[Array, Array]:
    return np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)


def clip(p: Array) -> Array:
    return np.clip(p, EPSILON, ONE_MINUS_EPSILON)


def softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: Array, axis: int = -1) -> Array:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def bce(target: Array, output: Array, from_logits: bool) -> Array:
    """keras.backend binary_crossentropy, elementwise."""
    if from_logits:  # tf.nn.sigmoid_cross_entropy_with_logits
        return np.maximum(output, 0) - output * target + np.log1p(np.exp(-np.abs(output)))
    output = clip(output)
    return -(target * np.log(output) + (1 - target) * np.log(1 - output))


def cce(target: Array, output: Array, from_logits: bool, axis: int) -> Array:
    """keras.backend categorical_crossentropy."""
    if from_logits:
        return -(target * log_softmax(output, axis)).sum(axis=axis)
    output = clip(output / output.sum(axis=axis, keepdims=True))
    return -(target * np.log(output)).sum(axis=axis)


def sparse_cce(labels: Array, output: Array, from_logits: bool) -> Array:
    """keras.backend sparse_categorical_crossentropy (the class axis last)."""
    logits = output if from_logits else np.log(clip(output))
    logp = log_softmax(logits)
    return -np.take_along_axis(logp, labels.astype(np.int64)[..., None], axis=-1)[..., 0]


def smooth(y_true: Array, smoothing: float, classes: float) -> Array:
    return y_true * (1.0 - smoothing) + smoothing / classes if smoothing else y_true


def hinge_labels(y_true: Array) -> Array:
    """Labels of 0 and 1 become -1 and 1 (Keras' convert_binary_labels_to_hinge)."""
    return 2.0 * y_true - 1.0 if np.all((y_true == 0) | (y_true == 1)) else y_true


def normalize(x: Array, axis: int) -> Array:
    """keras.ops.normalize (l2): x / sqrt(max(sum(x^2), eps))."""
    return x / np.sqrt(np.maximum((x * x).sum(axis=axis, keepdims=True), 1e-12))


def divide_no_nan(a: Array, b: Array) -> Array:
    """ops.divide_no_nan."""
    b = np.asarray(b, dtype=np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b != 0)


class Metric:
    """A metric's state over the batches (`update`), and its value (`result`)."""

    name: str

    def update(self, y_true: Array, y_pred: Array) -> None:
        raise NotImplementedError

    def result(self) -> float | list[float]:
        """One number; a list of them for a metric of one value per class (f1_score without `average`)."""
        raise NotImplementedError
