"""A Keras model's config as a graph of layer calls (data only, no Keras).

Keras 3 serialises a functional model as its layers, in creation order, each
with the calls made on it in the model (`inbound_nodes`): the call's arguments,
where every tensor is `{"class_name": "__keras_tensor__", "config": {"shape",
"dtype", "keras_history": [layer, node, index]}}` — output `index` of the
`node`-th call of `layer` (see keras/src/models/functional.py, `serialize_node`).
`input_layers` and `output_layers` name tensors the same way, except that a nested
functional model's calls are counted from 1 there (its own built-in node is 0).

A Sequential model is a list of layers, each called on the previous output; it
becomes the same graph. Nested models (a layer that is itself a Functional or
Sequential model) are read recursively.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl.decompiler.problems import Problems, origin
from netdsl.limits import MAX_CALL_OUTPUTS, MAX_LAYERS, MAX_NESTED_MODELS
from netdsl.registry import snake_case
from netdsl.registry.layers.preprocessing import IMAGE_PREPROCESSING
from netdsl.semantics import array_ops

MODEL_CLASSES = ("Functional", "Sequential")
_IGNORED_CALL_KWARGS = ("mask", "training")  # None/False: what the model's call passes anyway


@dataclass(frozen=True)
class Ref:
    """A tensor: output `index` of call `call` (the position of the call in its model's `calls`)."""

    call: int
    index: int


@dataclass
class Layer:
    name: str
    class_name: str
    module: str
    registered_name: str | None
    config: dict
    calls: list[int] = field(default_factory=list)  # positions in KModel.calls
    model: KModel | None = None  # a nested model
    nodes: list = field(default_factory=list, repr=False)  # the serialised calls, until read


@dataclass
class Call:
    layer: Layer
    inputs: list[Ref]
    input_shapes: list[tuple | None]
    style: str  # "single" (one tensor), "list" (a list of tensors) or "args" (tensors as arguments)
    kwargs: dict  # constant call keywords (e.g. use_causal_mask)
    n_outputs: int = 1
    arguments: list = field(default_factory=list)  # an operation's arguments: None for each tensor, else the number
    # Tensors given by keyword (`initial_state=[h, c]`): the last of `inputs`, (name, count, as a list) each.
    keywords: list[tuple[str, int, bool]] = field(default_factory=list)


@dataclass
class Input:
    name: str
    shape: tuple  # without the batch axis; None for an unknown size
    dtype: str
    ref: Ref


@dataclass
class KModel:
    name: str
    layers: list[Layer]
    calls: list[Call]  # topological order (inputs first)
    inputs: list[Input]
    outputs: list[Ref]
    output_names: list[str]


def read_model(config: dict, problems: Problems, depth: int = 0) -> KModel | None:
    """The graph of a serialised model (`{"class_name": ..., "config": ...}`), or None
    when it cannot be read (the reasons are added to `problems`)."""
    class_name = config.get("class_name")
    inner = config.get("config")
    if class_name not in MODEL_CLASSES or not isinstance(inner, dict):
        where = origin(config.get("module"), config.get("registered_name"))
        problems.add(
            f"the model is a subclassed keras.Model (class {class_name}, {where}); "
            "only functional and Sequential models have a structure to decompile",
            "build it with the functional API (keras.Model(inputs, outputs)) and save that",
        )
        return None
    if depth > MAX_NESTED_MODELS:
        problems.add(f"models are nested more than {MAX_NESTED_MODELS} deep")
        return None
    if class_name == "Sequential":
        return _Reader(problems, depth).sequential(inner)
    return _Reader(problems, depth).functional(inner)


class _Reader:
    def __init__(self, problems: Problems, depth: int):
        self.problems = problems
        self.depth = depth

    # ------------------------------------------------------------ functional

    def functional(self, config: dict) -> KModel | None:
        name = str(config.get("name") or "model")
        if not self.few_enough(name, config):
            return None
        read = [self.layer(d) for d in _list(config.get("layers"))]
        layers = [layer for layer in read if layer is not None]
        by_name = {layer.name: layer for layer in layers}
        if len(by_name) != len(layers):
            self.problems.add(f"model '{name}' has two layers of the same name")
            return None
        model = KModel(name, layers, [], [], [], [])
        pending = []  # (layer, node index, node data)
        for layer in layers:
            if layer.class_name == "InputLayer":
                self.input_layer(model, layer)
                continue
            for i, node in enumerate(layer.nodes):
                pending.append((layer, i, node))
        self.order_calls(model, pending, by_name)
        order = []
        for ref_data in _leaves(config.get("input_layers")):
            if not self.known_input(model, ref_data, by_name):
                return None
            order.append(ref_data[0])
        # The model's inputs in its call's order (`input_layers`), whatever the order of its layers.
        model.inputs.sort(key=lambda item: order.index(item.name) if item.name in order else len(order))
        for ref_data in _leaves(config.get("output_layers")):
            ref = self.ref(ref_data, by_name, outputs=True)
            if ref is None:
                self.problems.add(f"model '{name}' names an output it does not compute: {ref_data!r}")
                return None
            model.outputs.append(ref)
            model.output_names.append(str(ref_data[0]))
        self.count_outputs(model)
        return model

    def few_enough(self, name: str, config: dict) -> bool:
        count = len(_list(config.get("layers")))
        if count > MAX_LAYERS:
            self.problems.add(f"model '{name}' has {count:,} layers; a spec may have at most {MAX_LAYERS:,}")
            return False
        return True

    def layer(self, data) -> Layer | None:
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            self.problems.add("a layer in config.json is not a layer config")
            return None
        config = data["config"]
        name = str(data.get("name") or config.get("name") or "")
        layer = Layer(
            name,
            str(data.get("class_name")),
            str(data.get("module") or ""),
            data.get("registered_name"),
            config,
            nodes=_list(data.get("inbound_nodes")),
        )
        if layer.class_name in MODEL_CLASSES:
            layer.model = read_model(data, self.problems, self.depth + 1)
        return layer

    def input_layer(self, model: KModel, layer: Layer) -> None:
        shape = layer.config.get("batch_shape") or layer.config.get("batch_input_shape")
        dims = tuple(shape[1:]) if isinstance(shape, list) and shape else None
        if dims is None:
            self.problems.add(f"input '{layer.name}' has no shape")
            dims = ()
        position = len(model.calls)
        layer.calls.append(position)
        model.calls.append(Call(layer, [], [], "single", {}))
        model.inputs.append(Input(layer.name, dims, str(layer.config.get("dtype") or "float32"), Ref(position, 0)))

    def known_input(self, model: KModel, ref_data, by_name: dict) -> bool:
        layer = by_name.get(ref_data[0]) if isinstance(ref_data, list) and ref_data else None
        if layer is None or layer.class_name != "InputLayer":
            self.problems.add(f"model '{model.name}' takes an input that is not an InputLayer: {ref_data!r}")
            return False
        return True

    def order_calls(self, model: KModel, pending: list, by_name: dict) -> None:
        """Calls in an order where every input exists first (as Keras rebuilds them).

        The order is the one repeated passes over `pending` would give (a call is placed in the
        first pass where its inputs exist when the pass reaches it; pass, then position), found in
        linear time by Kahn's algorithm: each call counts the (layer, node) pairs it waits for, and
        placing a pair releases the calls indexed under it. (The passes themselves took quadratic
        time on a config listing its layers in reverse: security review 2026-12, finding 2.)"""
        waiters: dict[tuple[str, int], list[int]] = {}
        missing = [0] * len(pending)
        for k, (layer, i, node) in enumerate(pending):
            histories = _histories(node)
            needs = {(h[0], h[1]) for h in histories if isinstance(h[0], str)}
            if any(not isinstance(h[0], str) for h in histories):
                missing[k] += 1  # a reference that names no layer: never ready
            if i > 0:
                needs.add((layer.name, i - 1))  # a layer's calls are placed in their own order
            for name, index in needs:
                if not (name in by_name and len(by_name[name].calls) > index):  # inputs exist from the start
                    waiters.setdefault((name, index), []).append(k)
                    missing[k] += 1
        rank = [0] * len(pending)  # the pass that places each call
        ready = [k for k in range(len(pending)) if missing[k] == 0]
        released = list(ready)
        while ready:
            k = ready.pop()
            layer, i, _ = pending[k]
            for w in waiters.pop((layer.name, i), ()):
                rank[w] = max(rank[w], rank[k] + (k > w))  # placed later in a pass: the next pass
                missing[w] -= 1
                if missing[w] == 0:
                    ready.append(w)
                    released.append(w)
        for k in sorted(released, key=lambda k: (rank[k], k)):
            layer, _, node = pending[k]
            call = self.call(layer, node, by_name)
            if call is None:
                return
            layer.calls.append(len(model.calls))
            model.calls.append(call)
        if len(released) != len(pending):
            placed = set(released)
            names = ", ".join(sorted({pending[k][0].name for k in range(len(pending)) if k not in placed})[:5])
            self.problems.add(f"model '{model.name}' has calls whose inputs never exist (layers {names})")

    def call(self, layer: Layer, node, by_name: dict) -> Call | None:
        if not isinstance(node, dict):
            self.problems.layer(layer, "has a call in an old format (Keras 2) that decompile does not read")
            return None
        args = node.get("args") or []
        kwargs = dict(node.get("kwargs") or {})
        tensors: list = []
        style = "args"
        if len(args) == 1 and isinstance(args[0], list):
            style, items = "list", args[0]
        elif len(args) == 1:
            style, items = "single", args
        else:
            items = args
        arguments: list[Any] = []  # a number, a slice's key, or None for the next tensor
        for item in items:
            if not _is_tensor(item):
                if _is_operation(layer) and isinstance(item, (int, float)) and not isinstance(item, bool):
                    arguments.append(item)  # `x + 3.0`: a tensor expression writes the number
                    continue
                subscripts = _slice_key(item, layer.class_name) if _is_operation(layer) else None
                if subscripts is not None:
                    arguments.append(SliceKey(subscripts))  # `x[:, :256]`
                    continue
                self.problems.layer(
                    layer, f"is called with a constant argument ({_short(item)}), which a spec cannot pass"
                )
                return None
            arguments.append(None)
            tensors.append(item)
        if not tensors:  # a call node without its "args" (found by the .keras fuzz campaign, seed 22)
            self.problems.layer(layer, "is called on no tensor")
            return None
        for key in _IGNORED_CALL_KWARGS:
            if kwargs.get(key) in (None, False):
                kwargs.pop(key, None)
        if kwargs.get("training") is True and snake_case(layer.class_name) in IMAGE_PREPROCESSING:
            # their call's default, which the functional model records (a spec's `random_flip` is so called)
            # and the model's own `training` overrides when it is called
            kwargs.pop("training")
        keywords: list[tuple[str, int, bool]] = []
        by_keyword: list = []  # the tensors given by keyword, after those given by position
        for key, value in list(kwargs.items()):
            listed = isinstance(value, list)
            items = value if listed else [value]
            if not any(_is_tensor(v) for v in items):
                continue
            if not all(_is_tensor(v) for v in items) or _is_operation(layer) or layer.model is not None:
                self.problems.layer(layer, f"is called with the tensor argument {key}=..., which a spec cannot pass")
                return None
            keywords.append((key, len(items), listed))
            by_keyword.extend(items)
            del kwargs[key]
        refs = []
        for item in tensors + by_keyword:
            ref = self.ref(item["config"]["keras_history"], by_name)
            if ref is None:
                self.problems.layer(layer, "is called on a tensor the model does not compute")
                return None
            refs.append(ref)
        shapes = [_shape(item["config"].get("shape")) for item in tensors]
        return Call(layer, refs, shapes, style, kwargs, arguments=arguments, keywords=keywords)

    def ref(self, history, by_name: dict, outputs: bool = False) -> Ref | None:
        if not (
            isinstance(history, list)
            and len(history) == 3
            and isinstance(history[0], str)
            and isinstance(history[1], int)
            and isinstance(history[2], int)
        ):
            return None
        layer = by_name.get(history[0])
        if layer is None:
            return None
        node = history[1]
        if outputs and layer.class_name == "Functional":
            node -= 1  # output_layers count a nested functional model's calls from 1
        if not 0 <= node < len(layer.calls) or not 0 <= history[2] < MAX_CALL_OUTPUTS:
            return None
        return Ref(layer.calls[node], history[2])

    def count_outputs(self, model: KModel) -> None:
        """How many outputs each call has, as far as the model uses them."""
        for call in model.calls:
            for ref in call.inputs:
                producer = model.calls[ref.call]
                producer.n_outputs = max(producer.n_outputs, ref.index + 1)
        for ref in model.outputs:
            producer = model.calls[ref.call]
            producer.n_outputs = max(producer.n_outputs, ref.index + 1)
        for call in model.calls:  # `re, _ = fft2(...)`: a spec names every tensor the function gives
            call.n_outputs = max(call.n_outputs, _function_outputs(call.layer))

    # ------------------------------------------------------------ sequential

    def sequential(self, config: dict) -> KModel | None:
        name = str(config.get("name") or "sequential")
        if not self.few_enough(name, config):
            return None
        datas = _list(config.get("layers"))
        model = KModel(name, [], [], [], [], [])
        shape = config.get("build_input_shape")
        input_name, dtype = "input", "float32"
        if datas and isinstance(datas[0], dict) and datas[0].get("class_name") == "InputLayer":
            first = datas.pop(0).get("config") or {}
            shape = first.get("batch_shape") or first.get("batch_input_shape") or shape
            input_name, dtype = str(first.get("name") or input_name), str(first.get("dtype") or dtype)
        if not isinstance(shape, list) or not shape:
            self.problems.add(
                f"Sequential model '{name}' has no input shape", "build it (or give it a keras.Input) before saving"
            )
            return None
        source = Layer(input_name, "InputLayer", "keras.layers", None, {"batch_shape": shape, "dtype": dtype})
        self.input_layer(model, source)
        model.layers.append(source)
        current = Ref(0, 0)
        current_shape: tuple[Any, ...] | None = tuple(shape[1:])  # known for the input only
        for data in datas:
            layer = self.layer(data)
            if layer is None:
                return None
            model.layers.append(layer)
            layer.calls.append(len(model.calls))
            model.calls.append(Call(layer, [current], [current_shape], "single", {}))
            current, current_shape = Ref(len(model.calls) - 1, 0), None
        model.outputs.append(current)
        model.output_names.append(model.calls[current.call].layer.name)
        return model


# ---------------------------------------------------------------- helpers


@dataclass(frozen=True)
class SliceKey:
    """The key of a `GetItem` call (`x[:, :256]`), in `netdsl.semantics.slicing`'s form, as tuples."""

    items: tuple


def _slice_key(value: Any, operation: str) -> tuple | None:
    """A serialised GetItem key as subscripts (`[start, stop, step]` as a tuple, `"..."`, an int, None),
    a `Slice`'s start indices as they are (its sizes are in its config); None when it holds anything else."""
    if operation == "Slice":
        ok = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        return tuple(value) if ok else None
    if operation != "GetItem":
        return None
    items = value if isinstance(value, list) else [value]
    out: list[Any] = []
    for item in items:
        if item is None or (isinstance(item, int) and not isinstance(item, bool)):
            out.append(item)
        elif isinstance(item, dict) and item.get("class_name") == "__ellipsis__":
            out.append("...")
        elif isinstance(item, dict) and item.get("class_name") == "__slice__" and isinstance(item.get("config"), dict):
            bounds = tuple(item["config"].get(k) for k in ("start", "stop", "step"))
            if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds):
                return None
            out.append(bounds)
        else:
            return None
    return tuple(out)


def _list(value) -> list:
    return list(value) if isinstance(value, list) else []


def _is_operation(layer: Layer) -> bool:
    """A Keras operation node (`x + 3.0`, `keras.ops.sigmoid(x)` on symbolic tensors)."""
    return layer.module.startswith("keras.src.ops")


def _is_tensor(value) -> bool:
    return (
        isinstance(value, dict)
        and value.get("class_name") == "__keras_tensor__"
        and isinstance(value.get("config"), dict)
        and "keras_history" in value["config"]
    )


def _histories(node) -> list:
    """The keras_history of every tensor in a call's arguments."""
    found = []
    stack = [node]
    while stack:
        item = stack.pop()
        if _is_tensor(item):
            found.append(item["config"]["keras_history"])
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return [h for h in found if isinstance(h, list) and len(h) == 3 and isinstance(h[1], int)]


def _leaves(value) -> list:
    """The tensor references of input_layers/output_layers: one [name, node, index] or a nest of them."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        return [value]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return []


def _shape(value) -> tuple | None:
    if isinstance(value, list) and value:
        return tuple(value[1:])
    return None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _function_outputs(layer: Layer) -> int:
    """How many tensors netdsl's TensorOp of a spectral or index function gives (`semantics.array_ops`);
    1 for any other layer (its count is the uses the model makes of it)."""
    expression = layer.config.get("expression") if layer.class_name == "TensorOp" else None
    if not isinstance(expression, list) or len(expression) < 2 or expression[0] != "call":
        return 1
    signature = array_ops.SIGNATURES.get(expression[1]) if isinstance(expression[1], str) else None
    return signature.outputs if signature is not None else 1
