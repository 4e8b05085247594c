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
  walking the steps in order (a tensor lives from its step to its last reader,
  the model's inputs through the call; a step's inner workspace while it runs);
- training peak: weights + their gradients + the optimizer's slots (the spec's
  optimizer; rmsprop, netdsl's default, when it names none) + the most bytes
  alive at once in the backward pass: at each step, what it and the steps
  before it keep for their gradients and its own gradient buffers.
  `cost/memory.py` has each layer kind's rules, modelled on what XLA keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from netdsl import registry
from netdsl.cost.expressions import declared_layer_counts, declared_layer_memory, tensor_op_counts, tensor_op_memory
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
from netdsl.cost.memory import Footprint, expression_footprint, footprint
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
    kept_bytes: int  # bytes the backward pass keeps of it (its output when a gradient reads it, its insides)
    transient_bytes: int  # the buffers its backward makes (its output's and inputs' gradients), one sample
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
    walked = _walk(graph, width)
    steps, peak = walked.steps, walked.peak
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
    train_memory = param_bytes + trainable * _VARIABLE_BYTES * (1 + slots) + walked.backward_peak * batch
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


@dataclass(frozen=True)
class _Walked:
    """A graph walked in order, one sample, in bytes: its steps; the most activation bytes alive at once in
    a prediction; and in a training step, the most alive at once in the backward pass (`backward_peak`:
    over the steps, what the steps up to it keep plus its own backward's buffers); whether the backward
    reads the graph's inputs (a nested model's: its caller keeps them)."""

    steps: list[StepCost]
    peak: int
    backward_peak: int
    reads_inputs: bool


def _walk(graph: Graph, width: int, inputs_need_gradient: bool = False, nested: bool = False) -> _Walked:
    """Every node's cost and the graph's peaks (`inputs_need_gradient`: a nested model's, when a weight
    before it needs its input's gradient; `nested`: its inputs are its caller's tensors, not arguments)."""
    holder = _holders(graph)
    last_read = {index: index for index in range(len(graph.nodes))}
    for index, node in enumerate(graph.nodes):
        for ref in node.inputs:
            last_read[holder[ref.node]] = max(last_read[holder[ref.node]], index)
        if node.op == "input" and not nested:
            last_read[index] = len(graph.nodes)  # an argument: the caller holds it through the call
    for _, ref in graph.outputs:
        last_read[holder[ref.node]] = len(graph.nodes)
    steps: list[StepCost] = []
    parts: list[_Part] = []
    seen_shared: set[str] = set()
    weighted_above: list[bool] = []  # whether a step's output depends on a weight (its gradient is needed)
    read_back = [node.op == "input" and not nested for node in graph.nodes]  # outputs the backward keeps
    live = peak = 0
    for index, node in enumerate(graph.nodes):
        needs_input_gradient = any(weighted_above[ref.node] for ref in node.inputs) or (
            inputs_need_gradient and node.op == "input"
        )
        step, part = _step(graph, node, width, seen_shared, needs_input_gradient)
        weighted_above.append((node.params or 0) > 0 or needs_input_gradient)
        steps.append(step)
        parts.append(part)
        live += step.output_bytes
        peak = max(peak, live + part.workspace)
        for read in {holder[ref.node] for ref in node.inputs} | {index}:
            if last_read[read] == index:
                live -= steps[read].output_bytes
        for kept_output in _read_by_backward(graph, holder, parts, index):
            read_back[kept_output] = True
    kept = [(step.output_bytes if read else 0) + part.kept_inside for step, part, read in zip(steps, parts, read_back)]
    steps = [replace(step, kept_bytes=k) for step, k in zip(steps, kept)]
    reads_inputs = any(read for node, read in zip(graph.nodes, read_back) if node.op == "input")
    return _Walked(steps, peak, _backward_peak(steps, parts, read_back), reads_inputs)


def _read_by_backward(graph: Graph, holder: list[int], parts: list[_Part], index: int) -> set[int]:
    """The steps whose outputs step `index`'s backward pass reads: its inputs', its own, or none."""
    part = parts[index]
    if not part.backward_runs:
        return set()
    read = {holder[index]} if part.reads_output else set()
    for ref in graph.nodes[index].inputs if part.reads_inputs else []:
        read |= _recomputed_from(graph, holder, parts, holder[ref.node]) if part.fused else {holder[ref.node]}
    return read


def _backward_peak(steps: list[StepCost], parts: list[_Part], read_back: list[bool]) -> int:
    """The most bytes a training step holds at once in its backward pass, walking it from the last step to
    the first: at each step, what it and the steps before it keep, and its own backward's buffers (a nested
    model's own backward peak, beside its output when that is kept)."""
    peak = before = 0
    for step, part, read in zip(steps, parts, read_back):
        if part.inner_backward is None:
            own = step.kept_bytes + step.transient_bytes
        else:
            own = part.inner_backward + (step.output_bytes if read else 0)
        peak = max(peak, before + own)
        before += step.kept_bytes
    return peak


def _recomputed_from(graph: Graph, holder: list[int], parts: list[_Part], index: int) -> set[int]:
    """The steps whose outputs a fused backward reading step `index`'s output keeps: through elementwise
    steps (a ReLU reading a batch norm's output, or a sum's), XLA fuses the recomputation of their output
    from their inputs into the backward, so the first outputs up the graph that no elementwise step made."""
    if not parts[index].elementwise or graph.nodes[index].op == "input" or not graph.nodes[index].inputs:
        return {index}
    found: set[int] = set()
    for ref in graph.nodes[index].inputs:
        found |= _recomputed_from(graph, holder, parts, holder[ref.node])
    return found


@dataclass(frozen=True)
class _Part:
    """What a step holds beside its output, one sample, in bytes (`memory.Footprint`, sized)."""

    workspace: int = 0  # made and dropped inside its forward pass
    backward_runs: bool = False  # whether a gradient flows through it (a weight of it or before it)
    reads_inputs: bool = False
    reads_output: bool = False
    kept_inside: int = 0
    inner_backward: int | None = None  # a nested model's own backward peak (its `_Walked.backward_peak`)
    fused: bool = False  # `memory.Footprint`'s
    elementwise: bool = False


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
) -> tuple[StepCost, _Part]:
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
    runs = (node.params or 0) > 0 or needs_input_gradient
    found = _footprint(node, ins, outs) if sized and unknown is None else Footprint(reads_inputs=True)
    # its output's gradient and, when a weight before it needs them, its inputs'
    own_buffers = 0 if found.fused else out_bytes + (in_bytes if needs_input_gradient else 0)
    backward = (own_buffers + found.backward_extra * width + found.backward_raw_bytes) if runs else 0
    step = StepCost(
        node.name,
        _kind(node),
        macs,
        flops,
        params,
        params * _VARIABLE_BYTES,
        out_bytes,
        0,  # what the backward keeps of it: `_walk` fills it in, knowing the steps that read it
        backward,
        unknown,
        padding_macs=padding,
        backward_flops=_backward(macs, flops, (node.params or 0) > 0, needs_input_gradient),
    )
    part = _Part(
        workspace=found.workspace * width,
        backward_runs=runs,
        reads_inputs=found.reads_inputs,
        reads_output=found.reads_output,
        kept_inside=found.kept_inside * width + found.kept_raw_bytes if runs else 0,
        fused=found.fused,
        elementwise=found.elementwise,
    )
    return step, part


def _footprint(node: Node, ins: list[Any], outs: list[Any]) -> Footprint:
    """`memory.footprint` of a costed step; a declared layer's or tensor expression's from its tree."""
    try:
        if node.op == "declared_layer":
            return expression_footprint(*declared_layer_memory(node.decl.config, ins))
        if node.op == "tensor_op":
            return expression_footprint(*tensor_op_memory(node.decl.expression, ins))
        return footprint(node.op, node.kind, _args(node) if node.op == "layer" else None, ins, outs)
    except (NoRule, TypeError, ValueError, KeyError, IndexError):  # a form no rule reads: its inputs, kept
        return Footprint(reads_inputs=True)


_NAMED_UNKNOWN = 3  # the unknown steps of a nested model named one by one


def _nested(node: Node, inner: Graph, width: int, params: int, needs_input_gradient: bool) -> tuple[StepCost, _Part]:
    """A nested model as one step: the sum of its own steps at the caller's shapes (`called_graph`: a
    backbone of any picture size costs what it does on this model's pictures; a shared one's weights
    counted once, its backward pass at each use); its inner peaks are this step's."""
    walked = _walk(inner, width, needs_input_gradient, nested=True)
    steps = walked.steps
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
        0,
        max((s.transient_bytes for s in steps), default=0),
        "; ".join(unknown) if unknown else None,
        backward_flops=sum(s.backward_flops for s in steps),
        padding_macs=sum(s.padding_macs for s in steps),
    )
    part = _Part(
        workspace=max(0, walked.peak - out_bytes),
        backward_runs=True,
        reads_inputs=walked.reads_inputs,
        kept_inside=sum(s.kept_bytes for s in steps),
        inner_backward=walked.backward_peak,
    )
    return step, part


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
