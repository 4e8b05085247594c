"""The counting metrics: counts or sums over every sample, the value computed from them at the end.

`Counts` (true_positives ... precision, recall at one threshold), `Curve` (AUC and the
`X_at_Y` metrics over many thresholds), `ConfusionMatrix` (the IoUs), `FBeta` (F1, F-beta),
`R2`: each Keras' `keras/src/metrics/` class with its state as NumPy arrays.
`curve_metric` and `iou_metric` build the first two kinds from the spec's arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netdsl.scoring.keras_math import (
    EPSILON,
    FLOAT32,
    NEG_INF,
    Array,
    Metric,
    ScoringError,
    divide_no_nan,
    floats,
    same_rank,
)


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
            order = np.argsort(-p, axis=-1, kind="stable")[..., : self.top_k]
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
        return {
            "true_positives": self.tp,
            "false_positives": self.fp,
            "true_negatives": self.tn,
            "false_negatives": self.fn,
        }[self.value]


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
        recall, precision = divide_no_nan(tp, tp + fn), divide_no_nan(tp, tp + fp)
        if self.kind == "auc":
            return self._auc(recall, precision)
        specificity = divide_no_nan(tn, tn + fp)
        constrained, dependent = {
            "sensitivity_at_specificity": (specificity, recall),
            "specificity_at_sensitivity": (recall, specificity),
            "precision_at_recall": (recall, precision),
            "recall_at_precision": (precision, recall),
        }[self.kind]
        return float(np.max(np.where(constrained >= FLOAT32(self.value), dependent, 0.0), initial=0.0))

    def _auc(self, recall: Array, precision: Array) -> float:
        if self.curve == "PR" and self.summation == "interpolation":
            return self._interpolated_pr_auc()
        if self.curve == "ROC":
            x, y = divide_no_nan(self.fp, self.fp + self.tn), recall
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
        slope = divide_no_nan(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, divide_no_nan(p[:-1], np.maximum(p[1:], 0)), 1.0)
        with np.errstate(divide="ignore"):
            logs = np.where(ratio > 0, np.log(np.where(ratio > 0, ratio, 1.0)), 0.0)
        increment = divide_no_nan(slope * (dtp + intercept * logs), np.maximum(tp[1:] + self.fn[1:], 0))
        return float(increment.sum())


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
            raise ScoringError(
                f"the metric '{self.name}' needs one-hot targets shaped as the predictions "
                f"({_per_sample(p)} per sample); the data's are {_per_sample(t)}"
            )
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
        beta2 = self.beta**2
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
    aggregation: str | None = "uniform_average"  # None: one score per output column
    regressors: int = 0
    sums: Array | None = None  # rows: sum, squared sum, squared residual, count
    samples: int = 0

    def update(self, y_true: Array, y_pred: Array) -> None:
        t, p = same_rank(*floats(y_true, y_pred))
        rows = np.stack(
            [t.sum(axis=0), (t * t).sum(axis=0), ((t - p) ** 2).sum(axis=0), np.full(t.shape[1], float(t.shape[0]))]
        )
        self.sums = rows if self.sums is None else self.sums + rows
        self.samples += t.size

    def result(self) -> float | list[float]:
        assert self.sums is not None
        total_sum, squared, residual, count = self.sums
        total = squared - total_sum * (total_sum / count)
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = 1 - residual / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        if self.aggregation is None:  # one score per output column
            score = raw
        elif self.aggregation == "uniform_average":
            score = raw.mean()
        else:
            score = (total * raw).sum() / total.sum()
        n = self.samples
        if self.regressors and self.regressors < n - 1:  # netdsl's AdjustedR2Score, as Keras' R2Score computes it
            score = 1.0 - (1.0 - score) * (n - 1.0) / (n - self.regressors - 1.0)
        return [float(v) for v in score] if self.aggregation is None else float(score)


def curve_metric(shown: str, name: str, kwargs: dict[str, Any]) -> Curve:
    if name == "auc":
        given = kwargs.get("thresholds")
        count = kwargs.get("num_thresholds", 200)
        inner = sorted(given) if given is not None else _even_thresholds(count)
        ends = np.array([0.0] + inner + [1.0])
        evenly = given is None or bool(np.allclose(ends, np.linspace(0, 1, len(ends)), atol=EPSILON))
        thresholds = np.array([0.0 - EPSILON, *inner, 1.0 + EPSILON])
        return Curve(
            shown,
            name,
            thresholds,
            evenly,
            from_logits=kwargs.get("from_logits", False),
            curve=kwargs.get("curve", "ROC"),
            summation=kwargs.get("summation_method", "interpolation"),
        )
    count = kwargs.get("num_thresholds", 200)
    value = next(kwargs[k] for k in ("recall", "precision", "specificity", "sensitivity") if k in kwargs)
    if count == 1:
        return Curve(shown, name, np.array([0.5]), False, float(value), kwargs.get("class_id"))
    return Curve(
        shown, name, np.array([0.0, *_even_thresholds(count), 1.0]), True, float(value), kwargs.get("class_id")
    )


def iou_metric(shown: str, name: str, kwargs: dict[str, Any]) -> ConfusionMatrix:
    if name == "binary_iou":
        return ConfusionMatrix(
            shown, 2, list(kwargs.get("target_class_ids", (0, 1))), threshold=kwargs.get("threshold", 0.5)
        )
    classes = kwargs["num_classes"]
    targets = list(kwargs["target_class_ids"]) if "target_class_ids" in kwargs else list(range(classes))
    one_hot = name.startswith("one_hot")
    return ConfusionMatrix(
        shown,
        classes,
        targets,
        kwargs.get("ignore_class"),
        sparse_y_true=False if one_hot else kwargs.get("sparse_y_true", True),
        sparse_y_pred=kwargs.get("sparse_y_pred", not one_hot),
        axis=kwargs.get("axis", -1),
    )
