"""What a checked model costs: per step and per model, FLOPs and memory, from the graph alone.

`model_cost(graph, batch=, precision=)` walks a graph `semantics` expanded and
`semantics.estimates.fill_estimates` completed (shapes and parameter counts:
what `netdsl summary` shows) and answers a `ModelCost`. Nothing here imports a
backend. A step without a rule, or with a size that is not known, is an
`unknown` naming the step and why; the model's totals are then lower bounds.

Memory, in bytes (docs/cost.md has the conventions):

- variables are float32 under all three precisions (Keras' mixed policies keep
  them so); activations are 4 bytes per element under float32, 2 under the
  mixed policies (an input keeps its own dtype);
- inference peak: the weights plus the most activation bytes alive at once
  walking the steps in order (a tensor lives from its step to its last reader);
- training peak: weights + their gradients + the optimizer's slots (the spec's
  optimizer; rmsprop, netdsl's default, when it names none) + every activation
  kept for the backward pass (every step's output) + the largest transient
  (one step's output gradient and input gradients at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl import registry
from netdsl.cost.expressions import declared_layer_counts, tensor_op_counts
from netdsl.cost.layers import (
    ACTIVATION_FLOPS,
    LAYER_RULES,
    PADDED,
    Counts,
    NoRule,
    elements,
    layer_counts,
    padding_macs,
    tree_flops_per_element,
)
from netdsl.registry.layers.anatomy import Args
from netdsl.semantics.graph import Graph, Node
from netdsl.semantics.shapes import called_graph
from netdsl.semantics.trainable import split_params

__all__ = ["PRECISIONS", "OPTIMIZER_SLOTS", "StepCost", "ModelCost", "model_cost"]

# precision -> bytes of an activation element (variables stay float32: 4 bytes)
PRECISIONS: dict[str, int] = {"float32": 4, "mixed_float16": 2, "mixed_bfloat16": 2}
_VARIABLE_BYTES = 4
_DTYPE_BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}

# optimizer -> (slots per trainable weight, FLOPs per trainable weight of one update)
OPTIMIZER_SLOTS: dict[str, tuple[int, int]] = {
    "sgd": (0, 2),
    "adam": (2, 12),
    "adamw": (2, 14),
    "nadam": (2, 16),
    "adamax": (2, 10),
    "lamb": (2, 18),
    "rmsprop": (1, 7),
    "adagrad": (1, 6),
    "adadelta": (2, 12),
    "ftrl": (2, 14),
    "lion": (1, 8),
    "adafactor": (1, 12),
    "schedule_free_adamw": (2, 16),
    "muon": (1, 12),
}
VIEWS = frozenset({"flatten", "reshape", "identity"})  # layers whose output is their input in another shape
DEFAULT_OPTIMIZER = "rmsprop"  # what netdsl compiles a train section without an optimizer with


@dataclass(frozen=True)
class StepCost:
    """One step, for one sample: what it computes and the bytes it holds."""

    name: str
    kind: str
    macs: int
    flops: int
    params: int  # 0 for a use of a shared layer after its first
    param_bytes: int
    output_bytes: int  # its outputs, one sample
    kept_bytes: int  # bytes the backward pass keeps of it, one sample
    transient_bytes: int  # its output's and inputs' gradients at once, one sample
    unknown: str | None = None  # why the step could not be costed (then macs and flops are 0)
    backward_flops: int = 0  # its backward pass, one sample (see `_backward`)
    padding_macs: int = 0  # of `macs`, those on a convolution's padding zeros (XLA leaves them out)


@dataclass(frozen=True)
class ModelCost:
    """One model's cost for a batch of `batch` under `precision`."""

    name: str
    batch: int
    precision: str
    optimizer: str
    steps: list[StepCost]
    params: int
    trainable_params: int
    macs: int  # one sample's forward pass
    flops: int  # one sample's forward pass
    forward_flops: int  # the batch's forward pass
    train_flops: int  # one training step on the batch: forward, backward, optimizer update
    param_bytes: int
    activation_bytes: int  # kept for the backward pass, the batch
    inference_memory_bytes: int
    train_memory_bytes: int
    unknown: list[str] = field(default_factory=list)  # "step: why", one per step not costed
    padding_macs: int = 0  # of `macs`, those on convolutions' padding zeros, one sample

    @property
    def lower_bound(self) -> bool:
        """Whether a step could not be costed: every total is then at least what it says."""
        return bool(self.unknown)


def model_cost(graph: Graph, *, batch: int = 1, precision: str = "float32", trainable: int | None = None) -> ModelCost:
    """The cost of `graph` (shapes and parameter counts filled in) for `batch` samples under `precision`
    (`trainable`: its trainable parameters, when the caller has counted them: `summary` has)."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: one of {', '.join(PRECISIONS)}")
    if batch < 1:
        raise ValueError(f"Expected a batch of 1 or more, received: {batch}")
    width = PRECISIONS[precision]
    steps, peak = _walk(graph, width)
    params = sum(s.params for s in steps)
    if trainable is None:
        split = split_params(graph, [p.text for p in graph.train.freeze] if graph.train is not None else [])
        trainable = split.trainable if split is not None else params
    optimizer = _optimizer(graph)
    slots, update_flops = OPTIMIZER_SLOTS.get(optimizer, (2, 12))
    slots += _optional_slots(graph)
    macs, flops = sum(s.macs for s in steps), sum(s.flops for s in steps)
    backward = sum(s.backward_flops for s in steps)
    param_bytes = params * _VARIABLE_BYTES
    kept = sum(s.kept_bytes for s in steps) * batch
    transient = max((s.transient_bytes for s in steps), default=0) * batch
    train_memory = param_bytes + trainable * _VARIABLE_BYTES * (1 + slots) + kept + transient
    return ModelCost(
        name=graph.name,
        batch=batch,
        precision=precision,
        optimizer=optimizer,
        steps=steps,
        params=params,
        trainable_params=trainable,
        macs=macs,
        flops=flops,
        forward_flops=flops * batch,
        train_flops=(flops + backward) * batch + update_flops * trainable,
        param_bytes=param_bytes,
        activation_bytes=kept,
        inference_memory_bytes=param_bytes + peak * batch,
        train_memory_bytes=train_memory,
        unknown=[f"{s.name}: {s.unknown}" for s in steps if s.unknown is not None],
        padding_macs=sum(s.padding_macs for s in steps),
    )


def _optimizer(graph: Graph) -> str:
    optimizer = graph.train.optimizer if graph.train is not None else None
    return DEFAULT_OPTIMIZER if optimizer is None else str(optimizer.name)


def _optional_slots(graph: Graph) -> int:
    """The slots an optimizer's arguments add: SGD's and RMSprop's momentum, RMSprop's centred mean,
    Adam's and AdamW's AMSGrad maximum (each one more value per trainable weight, as Keras keeps them)."""
    optimizer = graph.train.optimizer if graph.train is not None else None
    kwargs = dict(getattr(optimizer, "kwargs", None) or {})
    flags = (kwargs.get("momentum") not in (None, 0, 0.0), bool(kwargs.get("centered")), bool(kwargs.get("amsgrad")))
    return sum(flags)


def _walk(graph: Graph, width: int, inputs_need_gradient: bool = False) -> tuple[list[StepCost], int]:
    """Every node's cost, and the most activation bytes (one sample) alive at once walking them in order
    (`inputs_need_gradient`: a nested model's, when a weight before it needs its input's gradient)."""
    holder = _holders(graph)
    last_read = {index: index for index in range(len(graph.nodes))}
    for index, node in enumerate(graph.nodes):
        for ref in node.inputs:
            last_read[holder[ref.node]] = max(last_read[holder[ref.node]], index)
    for _, ref in graph.outputs:
        last_read[holder[ref.node]] = len(graph.nodes)
    steps: list[StepCost] = []
    seen_shared: set[str] = set()
    weighted_above: list[bool] = []  # whether a step's output depends on a weight (its gradient is needed)
    live = peak = 0
    for index, node in enumerate(graph.nodes):
        needs_input_gradient = any(weighted_above[ref.node] for ref in node.inputs) or (
            inputs_need_gradient and node.op == "input"
        )
        step, inner_peak = _step(graph, node, width, seen_shared, needs_input_gradient)
        has_weights = (node.params or 0) > 0
        weighted_above.append(has_weights or needs_input_gradient)
        steps.append(step)
        live += step.output_bytes
        peak = max(peak, live + max(0, inner_peak - step.output_bytes))
        for read in {holder[ref.node] for ref in node.inputs} | {index}:
            if last_read[read] == index:
                live -= steps[read].output_bytes
    return steps, peak


def _holders(graph: Graph) -> list[int]:
    """Each step's output is held by: itself, or for a view (flatten, reshape) the step whose bytes it shows,
    which lives as long as the view is read."""
    holder = list(range(len(graph.nodes)))
    for index, node in enumerate(graph.nodes):
        if node.op == "layer" and node.kind in VIEWS and len(node.inputs) == 1:
            holder[index] = holder[node.inputs[0].node]
    return holder


def _backward(macs: int, flops: int, has_weights: bool, needs_input_gradient: bool) -> int:
    """A step's backward FLOPs: its weights' gradient (as many multiply-adds as its forward pass) when it
    has weights, its input's gradient (the multiply-adds again and each elementwise operation once) when
    a weight above it needs one. A step fed only by the model's inputs computes no input gradient."""
    products = 2 * macs
    return (products if has_weights else 0) + (flops if needs_input_gradient else 0)


def _step(
    graph: Graph, node: Node, width: int, seen_shared: set[str], needs_input_gradient: bool = False
) -> tuple[StepCost, int]:
    ins = [_shape_of(graph, ref) for ref in node.positional(node.inputs)]  # keyword tensors are read as is
    outs = list(node.output_shapes)
    element = _DTYPE_BYTES.get(node.dtype or "float32", 4) if node.op == "input" else width
    params = node.params or 0
    if node.shared is not None:
        if node.shared in seen_shared:
            params = 0
        seen_shared.add(node.shared)
    if node.op == "model" and isinstance(node.decl, Graph):
        return _nested(node, called_graph(node.decl, ins), width, params, needs_input_gradient)
    unknown = None
    sized = _all_sized(ins) and _all_sized(outs)  # then the bytes are known, also for a step without a rule
    out_bytes = sum(map(elements, outs)) * element if sized else 0
    if node.op == "layer" and node.kind in VIEWS:
        out_bytes = 0  # the input's bytes, seen in another shape: nothing new is held
    in_bytes = sum(map(elements, ins)) * width if sized else 0
    padding = 0
    try:
        macs, flops = _counts(node, ins, outs, sized)
        if node.op == "layer" and node.kind in PADDED:
            padding = padding_macs(_args(node), ins, outs, macs)  # type: ignore[arg-type]  # _counts: all sized
    except NoRule as exc:
        macs, flops, unknown = 0, 0, str(exc)
    except (TypeError, ValueError, KeyError, IndexError):  # a tree or an argument of a form no rule reads
        macs, flops, unknown = 0, 0, f"'{node.kind}' cannot be costed"
    if node.params is None and unknown is None:
        unknown = "its parameter count is not known"
    step = StepCost(
        node.name,
        _kind(node),
        macs,
        flops,
        params,
        params * _VARIABLE_BYTES,
        out_bytes,
        out_bytes,
        out_bytes + in_bytes,
        unknown,
        padding_macs=padding,
        backward_flops=_backward(macs, flops, (node.params or 0) > 0, needs_input_gradient),
    )
    return step, out_bytes


_NAMED_UNKNOWN = 3  # the unknown steps of a nested model named one by one


def _nested(node: Node, inner: Graph, width: int, params: int, needs_input_gradient: bool) -> tuple[StepCost, int]:
    """A nested model as one step: the sum of its own steps at the caller's shapes (`called_graph`: a
    backbone of any picture size costs what it does on this model's pictures; a shared one's weights
    counted once, its backward pass at each use); its inner peak is a transient of this one."""
    steps, peak = _walk(inner, width, needs_input_gradient)
    unknown = [f"{s.name}: {s.unknown}" for s in steps if s.unknown is not None]
    if len(unknown) > _NAMED_UNKNOWN:  # the first says why; a backbone's hundred steps would bury it
        unknown[_NAMED_UNKNOWN:] = [f"and {len(unknown) - _NAMED_UNKNOWN} more of its steps"]
    out_bytes = sum(elements(s) for s in node.output_shapes if _sized(s)) * width
    step = StepCost(
        node.name,
        f"model {inner.name}",
        sum(s.macs for s in steps),
        sum(s.flops for s in steps),
        params,
        params * _VARIABLE_BYTES,
        out_bytes,
        sum(s.kept_bytes for s in steps),
        max((s.transient_bytes for s in steps), default=0),
        "; ".join(unknown) if unknown else None,
        backward_flops=sum(s.backward_flops for s in steps),
        padding_macs=sum(s.padding_macs for s in steps),
    )
    return step, peak


def _shape_of(graph: Graph, ref: Any) -> Any:
    """The shape of the tensor `ref` names (None where its step has fewer shapes than outputs)."""
    shapes = graph.nodes[ref.node].output_shapes
    return shapes[ref.index] if ref.index < len(shapes) else None


def _all_sized(shapes: list[Any]) -> bool:
    """Whether every shape is `_sized` (a loop: this runs for every step of a 10,000-layer model)."""
    for shape in shapes:
        if not isinstance(shape, tuple):
            return False
        for dim in shape:
            if not isinstance(dim, int):
                return False
    return True


def _sized(shape: Any) -> bool:
    return isinstance(shape, tuple) and all(isinstance(d, int) for d in shape)


def _counts(node: Node, ins: list[Any], outs: list[Any], sized: bool) -> Counts:
    """(MACs, FLOPs) of one sample through a step (`sized`: every shape of `ins` and `outs` is known)."""
    if node.op == "layer" and node.kind not in LAYER_RULES:
        raise NoRule(f"'{node.kind}' has no cost rule")
    if not sized and not all(_sized(s) for s in ins):
        raise NoRule("the size of its input is not known")
    if not outs or not (sized or all(_sized(s) for s in outs)):
        raise NoRule("the size of its output is not known" if node.op != "input" else "the input's size varies")
    if node.op == "input":
        return 0, 0
    if node.op == "layer":
        return layer_counts(_args(node), ins, outs)
    if node.op == "activation":
        if node.kind not in ACTIVATION_FLOPS:
            raise NoRule(f"the activation '{node.kind}' has no cost rule")
        return 0, ACTIVATION_FLOPS[node.kind] * elements(outs[0])
    if node.op == "declared_activation":
        return 0, tree_flops_per_element(node.decl.config["body"]) * elements(outs[0])
    if node.op == "declared_layer":
        return declared_layer_counts(node.decl.config, ins)
    if node.op == "tensor_op":
        return tensor_op_counts(node.decl.expression, ins)
    raise NoRule(f"a {node.op} step has no cost rule")


def _args(node: Node) -> Args:
    entry = registry.lookup("layer", node.kind)
    if entry is None:
        raise NoRule(f"'{node.kind}' has no cost rule")
    return Args(entry, node.args)


def _kind(node: Node) -> str:
    if node.op in ("declared_layer", "declared_activation"):
        return f"{node.kind} (declared)"
    return node.kind
