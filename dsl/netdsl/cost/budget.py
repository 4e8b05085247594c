"""Will it fit: a training step's estimated peak memory against a budget (`train --max-memory`, `max_memory`).

A training step's peak (`cost/model.py`) is the weights, their gradients and
optimizer slots, which do not depend on the batch, plus the activations kept and
the largest transient, which grow with it linearly; so the largest batch that
fits follows from the cost of a batch of one and of two, without a search.
"""

from __future__ import annotations

from dataclasses import dataclass

from netdsl.cost.model import model_cost
from netdsl.cost.readout import bytes_text
from netdsl.errors import Diagnostic
from netdsl.semantics.estimates import fill_estimates
from netdsl.semantics.graph import Graph

__all__ = ["Overrun", "overrun", "largest_batch", "budget_warnings"]


@dataclass(frozen=True)
class Overrun:
    """A batch whose estimated training peak is over the budget."""

    batch: int
    peak: int  # bytes, the estimate (a lower bound when `lower_bound`)
    limit: int
    fits: int  # the largest batch that fits; 0 when even the weights and their optimizer state do not
    lower_bound: bool

    def text(self, batch_name: str, limit_name: str) -> str:
        """One line: "batch_size 512 needs an estimated 14.2 GiB to train, over max_memory 12.0 GiB; ..."."""
        at_least = "at least " if self.lower_bound else ""
        fits = f"the largest batch that fits is {self.fits}" if self.fits else "not even a batch of 1 fits"
        return (
            f"{batch_name} {self.batch} needs {at_least}{bytes_text(self.peak)} to train (estimated), over "
            f"{limit_name} {bytes_text(self.limit)}; {fits}"
        )


def largest_batch(graph: Graph, limit: int, precision: str) -> int:
    """The largest batch whose estimated training peak is at most `limit` bytes; 0 when none is."""
    one, two = (model_cost(graph, batch=b, precision=precision).train_memory_bytes for b in (1, 2))
    per_sample = two - one
    fixed = one - per_sample
    if limit < one:
        return 0
    return (limit - fixed) // per_sample if per_sample > 0 else 2**63 - 1


def overrun(graph: Graph, batch: int, limit: int, precision: str) -> Overrun | None:
    """The overrun of `batch` under `limit` bytes, or None when its estimated training peak fits.

    A model with a step the cost model cannot count has a peak that is a lower bound: it is
    refused only when even that is over the budget."""
    fill_estimates(graph)  # the parameter counts summary shows (a no-op where they are filled in)
    cost = model_cost(graph, batch=batch, precision=precision)
    if cost.train_memory_bytes <= limit:
        return None
    return Overrun(batch, cost.train_memory_bytes, limit, largest_batch(graph, limit, precision), cost.lower_bound)


def budget_warnings(graphs: dict[str, Graph]) -> list[Diagnostic]:
    """`check`'s warning for each model whose train section's `max_memory` its own batch size exceeds,
    at the batch_size setting (at max_memory when the batch is Keras' default of 32)."""
    from netdsl.cost.readout import default_batch, default_precision

    found = []
    for graph in graphs.values():
        train = graph.train
        if train is None or train.max_memory is None:
            continue
        over = overrun(graph, default_batch(graph), train.max_memory, default_precision(graph))
        if over is not None:
            span = train.spans.get("batch_size") or train.spans["max_memory"]
            found.append(
                Diagnostic.at(
                    span,
                    over.text("batch_size", "max_memory"),
                    "docs/cost.md says what the estimate counts",
                    severity="warning",
                )
            )
    return found
