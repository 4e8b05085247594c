"""A model's cost as users read it: `netdsl summary --cost`'s lines and JSON fields, human-sized numbers."""

from __future__ import annotations

from typing import Any, TypedDict

from netdsl.cost.model import PRECISIONS, ModelCost, StepCost, model_cost
from netdsl.errors import UsageError
from netdsl.semantics.graph import Graph

__all__ = [
    "CostSummary",
    "costed",
    "summary_cost",
    "default_batch",
    "default_precision",
    "cost_json",
    "cost_lines",
    "flops_text",
    "bytes_text",
]

DEFAULT_BATCH = 32  # Keras' fit default, when the train section sets no batch_size


class CostSummary(TypedDict):
    """One model's cost (`netdsl summary --cost --json`'s "cost"): FLOPs per sample unless named per batch."""

    batch: int
    precision: str
    optimizer: str
    macs: int
    padding_macs: int  # of macs, those on convolutions' padding zeros (XLA's count leaves them out)
    flops: int
    forward_flops: int  # the batch
    train_flops: int  # one training step on the batch
    param_bytes: int
    activation_bytes: int  # kept for the backward pass, the batch
    inference_memory_bytes: int
    train_memory_bytes: int
    lower_bound: bool  # true when `unknown` names a step: every total is then at least its figure
    unknown: list[str]
    layers: list[dict[str, Any]]


def default_batch(graph: Graph) -> int:
    """The train section's batch_size, else Keras' default of 32."""
    size = graph.train.fit.get("batch_size") if graph.train is not None else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else DEFAULT_BATCH


def default_precision(graph: Graph) -> str:
    """The train section's mixed_precision when it is one the cost model knows, else float32."""
    policy = graph.train.mixed_precision if graph.train is not None else None
    return policy if policy in PRECISIONS else "float32"


def costed(
    graph: Graph, *, batch: int | None = None, precision: str | None = None, trainable: int | None = None
) -> ModelCost:
    """The cost of `graph` for `batch` under `precision`, each defaulting to the train section's;
    UsageError for a batch below 1 or a precision the cost model does not know. `trainable`: as
    `model_cost`'s."""
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise UsageError(f"the batch must be a whole number of 1 or more, received {batch!r}")
    if precision is not None and precision not in PRECISIONS:
        raise UsageError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    return model_cost(
        graph,
        batch=batch or default_batch(graph),
        precision=precision or default_precision(graph),
        trainable=trainable,
    )


def summary_cost(graph: Graph, *, batch: int | None = None, precision: str | None = None) -> CostSummary:
    """`costed`, as `netdsl.summary(cost=True)` returns it."""
    return cost_json(costed(graph, batch=batch, precision=precision))


def _step_json(step: StepCost, batch: int) -> dict[str, Any]:
    return {
        "name": step.name,
        "kind": step.kind,
        "macs": step.macs,
        "padding_macs": step.padding_macs,
        "flops": step.flops,
        "param_bytes": step.param_bytes,
        "activation_bytes": step.output_bytes * batch,
        "kept_bytes": step.kept_bytes * batch,
        "unknown": step.unknown,
    }


def cost_json(cost: ModelCost) -> CostSummary:
    """The fields of `--json`: the model's totals and one entry per step (FLOPs per sample, bytes per batch)."""
    return {
        "batch": cost.batch,
        "precision": cost.precision,
        "optimizer": cost.optimizer,
        "macs": cost.macs,
        "padding_macs": cost.padding_macs,
        "flops": cost.flops,
        "forward_flops": cost.forward_flops,
        "train_flops": cost.train_flops,
        "param_bytes": cost.param_bytes,
        "activation_bytes": cost.activation_bytes,
        "inference_memory_bytes": cost.inference_memory_bytes,
        "train_memory_bytes": cost.train_memory_bytes,
        "lower_bound": cost.lower_bound,
        "unknown": list(cost.unknown),
        "layers": [_step_json(step, cost.batch) for step in cost.steps],
    }


def flops_text(count: int) -> str:
    """FLOPs as a person reads them: 560 FLOPs, 204 KFLOPs, 7.76 GFLOPs."""
    for scale, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if count >= scale:
            return f"{count / scale:.3g} {unit}FLOPs"
    return f"{count} FLOPs"


def bytes_text(count: int) -> str:
    """Bytes in binary units: 97.8 MiB."""
    for scale, unit in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def cost_lines(cost: ModelCost) -> list[str]:
    """The lines under `summary --cost`'s table: FLOPs and memory, and what could not be costed."""
    at_least = "at least " if cost.lower_bound else ""
    lines = [
        f"cost: batch {cost.batch}, {cost.precision}, optimizer {cost.optimizer}"
        f"{' (lower bounds)' if cost.lower_bound else ''}",
        f"  forward: {at_least}{flops_text(cost.flops)} a sample ({cost.macs:,} MACs), "
        f"{flops_text(cost.forward_flops)} a batch",
        f"  training step: {at_least}{flops_text(cost.train_flops)}",
        f"  memory: weights {bytes_text(cost.param_bytes)}, inference peak {at_least}"
        f"{bytes_text(cost.inference_memory_bytes)}, training peak {at_least}"
        f"{bytes_text(cost.train_memory_bytes)}",
    ]
    lines += [f"  unknown: {item}" for item in cost.unknown]
    return lines
