"""What a model costs before it is built: FLOPs and memory from the checked graph, in pure Python.

`model_cost(graph, batch=, precision=)` (`cost/model.py`) over a graph that
`semantics` expanded and `semantics.estimates` completed; the per-layer rules
are in `cost/layers.py`, op expressions in `cost/expressions.py`. No backend is
imported (tests/cost/test_cost.py checks it); docs/cost.md states the conventions.
"""

from netdsl.cost.layers import ACTIVATION_FLOPS, LAYER_RULES
from netdsl.cost.model import OPTIMIZER_SLOTS, PRECISIONS, ModelCost, StepCost, model_cost

__all__ = ["ACTIVATION_FLOPS", "LAYER_RULES", "OPTIMIZER_SLOTS", "PRECISIONS", "ModelCost", "StepCost", "model_cost"]
