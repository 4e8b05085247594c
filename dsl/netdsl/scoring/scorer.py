"""A train section, scored: `Scorer` adds up each batch's loss and metrics as Keras' `evaluate` does;
`not_in_numpy` says what it does not score, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl.scoring.declared import DeclaredLoss, declared_metric, unscored_function
from netdsl.scoring.keras_math import Array, Metric
from netdsl.scoring.losses import Loss, loss_of
from netdsl.scoring.mean_metrics import in_numpy, make_metric

# Registry names Keras scores and NumPy here does not, with why: the one-line reason evaluate gives.
NOT_IN_NUMPY: dict[tuple[str, str], str] = {}


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
        if item.kind in ("declared_loss", "declared_metric"):
            function = unscored_function(item.decl.body)
            if function is None:
                continue
            kind = item.kind.removeprefix("declared_")
            return f"the {kind} '{item.name}' (declared in the spec, it calls '{function}', which NumPy does not here)"
        if item.kind == "metric" and item.name in (
            "precision",
            "recall",
            "true_positives",
            "false_positives",
            "true_negatives",
            "false_negatives",
        ):
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
    losses: dict[str, Loss | DeclaredLoss]
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
        losses: dict[str, Loss | DeclaredLoss] = {
            n: DeclaredLoss(r) if r.kind == "declared_loss" else loss_of(r)
            for n, r in _per_output(train.loss, names).items()
        }
        given = _per_output(train.loss_weights, names) if train.loss_weights is not None else {}
        weights: dict[str, float | None] = {
            n: (float(given.get(n, 1.0)) if train.loss_weights is not None else None) for n in losses
        }
        return cls(list(names), losses, weights, _metrics_per_output(train.metrics, names))

    def update(self, y_true: dict[str, Array], y_pred: dict[str, Array]) -> None:
        """One batch: {output: targets}, {output: the file's outputs}."""
        if self.metrics is None:  # `accuracy` is picked by the first batch's shapes, as Keras builds it
            self.metrics = {n: [_metric(r, y_true[n], y_pred[n]) for r in self.metric_specs[n]] for n in self.outputs}
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
            logs.update(
                {f"{name}_loss": self.output_totals.get(name, 0.0) / (self.batches or 1) for name in self.losses}
            )
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


def _metric(resolved: Any, y_true: Array, y_pred: Array) -> Metric:
    """A registry metric, or one declared in the spec."""
    return declared_metric(resolved) if resolved.kind == "declared_metric" else make_metric(resolved, y_true, y_pred)
