"""The compiler's backend for the expander: every graph node becomes a Keras layer call.

The expander (`netdsl.semantics.expand`) walks a model and calls

    input(node, shape, dtype) -> KerasTensor
    apply(node, inputs)       -> [KerasTensor, ...]
    shape(handle)             -> static shape without the batch axis
    finish(graph)             -> keras.Model

as soon as each node is known, so `x.shape` inside a block is the real static
shape. Layers are named by the graph (`node.name`: deterministic, unique,
derived from the source), so the same spec always gives the same model
config. Nodes with the same `node.shared` key reuse one layer object.

Everything a layer is given comes from the registry's allow-list
(`netdsl.custom.factory`) or from netdsl's own runtime (`netdsl.custom`); a
Keras exception while constructing or calling a layer becomes a one-line
`expand.BuildError` naming the input shapes, which the expander reports at
the step's line and column.
"""

from __future__ import annotations

import re
from typing import Any

import keras

from netdsl import registry
from netdsl.backend.profiles import PROFILES
from netdsl.custom import factory
from netdsl.custom.configured import ConfiguredActivation
from netdsl.custom.declared_layers import ActivationLayer, DeclaredActivation, DeclaredLayer
from netdsl.custom.tensor_ops import TensorOp
from netdsl.errors import BuildError, Fail
from netdsl.semantics.graph import Graph, Node
from netdsl.semantics.values import UNKNOWN, Resolved, describe_value, is_number

__all__ = ["KerasBackend", "keras_value", "FLOAT32_SUFFIX"]

FLOAT32_SUFFIX = ".float32"  # the cast layer kept after each output under a mixed policy

# Merge layers: how an error of theirs reads ("cannot add tensors of shapes ...").
_MERGE_VERBS = {
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "average": "average",
    "maximum": "take the maximum of",
    "minimum": "take the minimum of",
    "concatenate": "concatenate",
    "dot": "take the dot product of",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class KerasBackend:
    """Builds Keras layers and calls them on symbolic tensors.

    Args:
        float32_outputs: under a mixed-precision policy, the names of the
            model's outputs. A model-level layer named like an output (the
            usual `output probs = ... -> dense(10)`) is built with
            `dtype="float32"` unless the spec gives a dtype (the Keras recipe
            for a numerically stable loss); any other output that is not
            float32 ends with a float32 `linear` Activation.

    `model.output_names` are the spec's output names (losses, metrics and
    `fit(y={...})` use them). Keras derives them from the output layers'
    names, which are the output names in the usual `output NAME = FLOW`;
    an output taken from a multi-output step (`a, b = ...; output b`) comes
    from a layer of another name, so it passes through a weightless
    `Identity` layer named after it: a model loaded from a file (with Keras
    alone) then reports the same names.
    """

    def __init__(self, float32_outputs: set[str] | frozenset[str] | None = None):
        self.float32_outputs = frozenset(float32_outputs) if float32_outputs is not None else None
        self._shared: dict[str, Any] = {}  # node.shared key -> layer
        self._outputs: dict[int, tuple[Node, list]] = {}  # id(node) -> (node, output tensors)

    # ------------------------------------------------------------ protocol
    def input(self, node: Node, shape: tuple, dtype: str) -> Any:
        dims = tuple(None if d is UNKNOWN else d for d in shape)
        if dtype == "string" and not PROFILES[keras.backend.backend()].string_tensors:
            raise BuildError(
                f"input '{node.name}' holds strings, and only the TensorFlow backend has string "
                f"tensors ({keras.backend.backend()} holds numbers); use --backend tensorflow"
            )
        try:
            tensor = keras.Input(shape=dims, dtype=dtype, name=node.name)
        except Exception as exc:
            raise BuildError(f"cannot make input '{node.name}' of shape {_shape(dims)}: {reason(exc)}") from None
        node.params = 0
        self._outputs[id(node)] = (node, [tensor])
        return tensor

    def apply(self, node: Node, inputs: list[Any]) -> list[Any]:
        layer = self._shared.get(node.shared) if node.shared is not None else None
        if layer is None:
            try:
                layer = self._make(node)
            except BuildError:
                raise
            except Exception as exc:
                raise BuildError(_construct_message(node, exc)) from None
            if node.shared is not None:
                self._shared[node.shared] = layer
        try:
            result = self._call(node, layer, inputs)
        except BuildError:
            raise
        except Exception as exc:
            raise BuildError(_call_message(node, [self.shape(t) for t in inputs], exc)) from None
        outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        node.params = _count_params(layer)
        self._outputs[id(node)] = (node, outputs)
        return outputs

    def shape(self, handle: Any) -> Any:
        return tuple(handle.shape[1:])

    def finish(self, graph: Graph) -> Any:
        inputs = [self._tensor(graph.nodes[i], 0) for i in graph.inputs]
        outputs = [self._tensor(graph.node_of(ref), ref.index) for _, ref in graph.outputs]
        outputs = self._renamed_outputs(graph, self._named_outputs(graph, outputs))
        try:
            model = keras.Model(
                inputs[0] if len(inputs) == 1 else inputs, outputs[0] if len(outputs) == 1 else outputs, name=graph.name
            )
        except Exception as exc:
            raise Fail(graph.span, f"cannot assemble model '{graph.name}': {reason(exc)}") from None
        names = graph.output_names
        if len(set(names)) == len(names) == len(model.outputs):
            model.output_names = names  # losses, metrics and `fit(y={...})` by the spec's output names
        for node in graph.nodes:
            self._outputs.pop(id(node), None)
        return model

    # ------------------------------------------------------------ layers
    def _make(self, node: Node) -> Any:
        op = node.op
        if op == "layer":
            entry = _entry("layer", node.kind)
            ctor, _ = registry.split_kwargs(entry, node.args) if entry.call_params else (node.args, None)
            kwargs = {
                k: v if v is None or isinstance(v, (bool, str)) else keras_value(v, entry.param(k), f"{node.name}.{k}")
                for k, v in ctor.items()
            }
            kwargs.setdefault("name", _layer_name(node))
            kwargs.update(self._output_dtype(node, kwargs))
            return factory.keras_object(entry)(**kwargs)
        if op == "activation":
            entry = _entry("activation", node.kind)
            return keras.layers.Activation(
                _activation(entry, node.args), name=node.name, **self._output_dtype(node, {})
            )
        if op == "declared_layer":
            return DeclaredLayer(**node.decl.config, name=_layer_name(node), **self._output_dtype(node, {}))
        if op == "declared_activation":
            return ActivationLayer(
                DeclaredActivation(**node.decl.config), name=node.name, **self._output_dtype(node, {})
            )
        if op == "tensor_op":
            return _tensor_op(node, self._output_dtype(node, {}))
        if op == "model":
            sub: Graph = node.decl
            if sub.built is None:  # a model expanded at the top level first, used here as a step
                sub.built = self.finish(sub)
            return sub.built
        raise BuildError(f"internal: unknown node op {op!r}")

    def _output_dtype(self, node: Node, kwargs: dict) -> dict:
        if (
            self.float32_outputs is not None
            and node.name in self.float32_outputs
            and not node.cluster
            and kwargs.get("dtype") is None
        ):
            return {"dtype": "float32"}
        return {}

    def _call(self, node: Node, layer: Any, inputs: list[Any]) -> Any:
        if node.op == "layer":
            entry = _entry("layer", node.kind)
            _, call = registry.split_kwargs(entry, node.args) if entry.call_params else (None, {})
            inputs, tensors = node.call_inputs(inputs)
            call = {**call, **tensors}  # `initial_state=[h, c]`: recorded in the model's config, saved and reloaded
            if entry.call_style == "args":
                return layer(*inputs, **call)
            if entry.call_style == "list" and (len(inputs) > 1 or entry.inputs[0] > 1):
                return layer(list(inputs), **call)
            return layer(inputs[0], **call)
        return layer(inputs[0] if len(inputs) == 1 else list(inputs))

    def _tensor(self, node: Node, index: int) -> Any:
        return self._outputs[id(node)][1][index]

    def _renamed_outputs(self, graph: Graph, outputs: list[Any]) -> list[Any]:
        """An output whose layer has another name (one of a multi-output step's) through an
        `Identity` of its name, so that saved and loaded models keep the spec's names."""
        used = {n.name for n in graph.nodes} | {t._keras_history[0].name for t in outputs}
        kept = []
        for (name, ref), tensor in zip(graph.outputs, outputs):
            several = graph.node_of(ref).n_outputs > 1
            if several and tensor._keras_history[0].name != name and name not in used:
                used.add(name)
                tensor = keras.layers.Identity(name=name)(tensor)
            kept.append(tensor)
        return kept

    def _named_outputs(self, graph: Graph, outputs: list[Any]) -> list[Any]:
        """Under a mixed policy, every output that is not float32 cast to float32."""
        if self.float32_outputs is None:
            return outputs
        used = {n.name for n in graph.nodes}
        kept = []
        for (name, _), tensor in zip(graph.outputs, outputs):
            if _is_float(tensor.dtype) and tensor.dtype != "float32":
                layer = tensor._keras_history[0]
                layer_name = _unique(name if layer.name != name else f"{name}{FLOAT32_SUFFIX}", used)
                tensor = keras.layers.Activation("linear", dtype="float32", name=layer_name)(tensor)
            kept.append(tensor)
        return kept


# ---------------------------------------------------------------- values


def keras_value(value: Any, param: registry.Param | None = None, owner: str = "") -> Any:
    """A checked argument value as Keras takes it (Resolved names become objects)."""
    if isinstance(value, Resolved):
        return _resolved(value, owner)
    if param is not None and param.type == "initializer" and is_number(value):
        return keras.initializers.Constant(value)
    if isinstance(value, list):
        return [keras_value(v, None, owner) for v in value]
    if isinstance(value, tuple):
        return tuple(keras_value(v, None, owner) for v in value)
    if isinstance(value, dict):
        return {k: keras_value(v, None, owner) for k, v in value.items()}
    return value


def _resolved(r: Resolved, owner: str) -> Any:
    if r.kind == "declared_activation":
        return DeclaredActivation(**r.decl.config(dict(r.kwargs)))
    entry = _entry(r.kind, r.name)
    if r.kind == "activation":
        return _activation(entry, dict(r.kwargs))
    kwargs = {k: keras_value(v, entry.param(k), f"{owner}.{k}") for k, v in r.kwargs}
    if r.kind == "layer":  # a nested layer: bidirectional(lstm(64)), time_distributed(dense(8))
        kwargs.setdefault("name", f"{owner}.{entry.name}" if owner else entry.name)  # "h.layer.lstm"
        return factory.keras_object(entry)(**kwargs)
    return factory.make(entry, kwargs, as_written=getattr(r, "written", None))


def _tensor_op(node: Node, dtype: dict) -> Any:
    """An operator of a tensor expression: netdsl's TensorOp (Keras code has an operation node)."""
    return TensorOp(expression=node.decl.expression, inputs=node.decl.inputs, name=node.name, **dtype)


def _activation(entry: registry.Entry, kwargs: dict) -> Any:
    if kwargs:
        return ConfiguredActivation(entry.name, dict(kwargs))
    return factory.make(entry, {})


def _entry(kind: str, name: str) -> registry.Entry:
    entry = registry.lookup(kind, name)
    if entry is None:
        raise BuildError(f"unknown {kind} '{name}'")
    return entry


# ---------------------------------------------------------------- messages


def reason(exc: BaseException) -> str:
    """The gist of a Keras exception, on one line."""
    text = _ANSI.sub("", str(exc))
    if "Error encountered:" in text:  # Keras' wrapper around a failed output-shape inference
        text = text.split("Error encountered:", 1)[1]
    lines = [line.strip() for line in text.splitlines()]
    noise = ("Arguments received by", "•", "Exception encountered")
    lines = [line for line in lines if line and not line.startswith(noise)]
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > 240:
        text = text[:237].rstrip() + "..."
    return text


def _construct_message(node: Node, exc: BaseException) -> str:
    return f"'{node.kind}' rejected its arguments: {reason(exc)}"


def _call_message(node: Node, shapes: list, exc: BaseException) -> str:
    shown = [_shape(s) for s in shapes]
    verb = _MERGE_VERBS.get(node.kind) if node.op == "layer" else None
    if verb is not None and len(shown) > 1:
        listed = ", ".join(shown[:-1]) + " and " + shown[-1]
        extra = ""
        if node.kind == "concatenate":
            extra = f" on axis {node.args.get('axis', -1)}"
        return f"cannot {verb} tensors of shapes {listed}{extra}"
    what = f"model '{node.kind}'" if node.op == "model" else f"'{node.kind}'"
    if len(shown) == 1:
        received = f"an input of shape {shown[0]}"
    else:
        received = "inputs of shapes " + ", ".join(shown)
    return f"{what} cannot take {received}: {_why(node, shapes, exc)}"


_RANK = re.compile(r"expected (min_ndim|max_ndim|ndim)=(\d+), found ndim=(\d+)")
_RANK_WORDS = {"min_ndim": "at least ", "max_ndim": "at most ", "ndim": ""}


def _why(node: Node, shapes: list, exc: BaseException) -> str:
    """Keras' reason, restated in the spec's terms where we recognise it."""
    text = reason(exc)
    match = _RANK.search(text)
    if match:  # InputSpec's wording counts the batch axis; a spec's shapes do not
        bound, wanted, found = match.group(1), int(match.group(2)), int(match.group(3))
        return (
            f"it needs inputs with {_RANK_WORDS[bound]}{wanted - 1} dimension{'s' if wanted != 2 else ''} "
            f"besides the batch axis, received {found - 1}"
        )  # ndim counts the batch axis
    if isinstance(exc, IndexError) and "axis" in node.args and shapes and isinstance(shapes[0], tuple):
        rank = len(shapes[0])
        return (
            f"axis {node.args['axis']} is out of range for an input with {rank} dimension"
            f"{'s' if rank != 1 else ''} besides the batch axis (axes count the batch axis as 0)"
        )
    return text


def _shape(shape: Any) -> str:
    if isinstance(shape, tuple):
        return describe_value(shape)
    return "?"


# ---------------------------------------------------------------- helpers


def _layer_name(node: Node) -> str:
    """A shared instance's layer is named by the instance (`shared proj = dense(16)`: "proj")."""
    if node.shared is not None and node.shared.startswith("shared:"):
        return node.shared[len("shared:") :]
    return node.name


def _count_params(layer: Any) -> int | None:
    try:
        return int(layer.count_params())
    except Exception:  # an unbuilt layer has no count yet
        return None


def _is_float(dtype: Any) -> bool:
    return str(dtype) in ("float16", "bfloat16", "float32", "float64")


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{name}_{n}"
    used.add(candidate)
    return candidate


# ---------------------------------------------------------------- replay


class _Diverged(Exception):
    """Keras disagrees with the checked graph (or rejects a layer): build the slow, exact way."""


def replay(graph: Graph, backend: KerasBackend) -> bool:
    """Build a graph that `check` already expanded, in one tight loop.

    Expanding a model while Keras builds it interleaves two very different
    workloads; expanding it first in pure Python and then creating and
    calling its layers back to back is measurably faster. That is only
    valid when the check was certain (`Graph.uncertain` false) and every
    shape it inferred is the one Keras computes — both are verified here.
    Returns False, leaving nothing half-done that matters, when the caller
    should build with the interleaved expansion instead.
    """
    try:
        _replay(graph, backend)
    except _Diverged:
        return False
    return True


def _replay(graph: Graph, backend: KerasBackend) -> None:
    if graph.uncertain:
        raise _Diverged
    handles: dict[tuple[int, int], Any] = {}
    for node in graph.nodes:
        try:
            if node.op == "input":
                outputs = [backend.input(node, node.args["shape"], node.dtype or "float32")]
            else:
                if node.op == "model" and node.decl.built is None:
                    _replay(node.decl, backend)
                outputs = backend.apply(node, [handles[(ref.node, ref.index)] for ref in node.inputs])
        except BuildError:
            raise _Diverged from None
        shapes = [backend.shape(h) for h in outputs]
        if len(outputs) != node.n_outputs or any(
            known is not UNKNOWN and known != actual for known, actual in zip(node.output_shapes, shapes)
        ):
            raise _Diverged
        node.output_shapes = shapes
        for index, handle in enumerate(outputs):
            handles[(node.id, index)] = handle
    try:
        graph.built = backend.finish(graph)
    except Fail:
        raise _Diverged from None
