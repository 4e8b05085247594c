"""Keras operations on tensors (`x + 3.0`, `ops.sigmoid(x)`) as a spec's tensor expressions.

A functional model built with arithmetic or `keras.ops` on symbolic tensors
holds *operation nodes* (module `keras.src.ops.*`, class `Add`, `TrueDivide`,
`Sigmoid`, ...) whose calls may pass constants (`add(x, 3.0)`); a model netdsl
built holds its `TensorOp` layers. Each becomes a `Step` of kind `"op"` whose
`kwargs` hold ONE expression template over the call's tensors, in the tree
language of `netdsl.custom.expr` (as tuples): `("bin", "+", ("var", "x0"),
("num", 3.0))`. `op_expr` writes it as IR with the tensors filled in: `h + 3.0`,
`sigmoid(h)`, `mean(h, axis=1)`. Steps with equal templates are equal, so
repeated structures with them become blocks like any other.
"""

from __future__ import annotations

from typing import Any

from netdsl.decompiler import spec_ir as S
from netdsl.decompiler.graph import Call, Layer, SliceKey
from netdsl.decompiler.layer_steps import Step
from netdsl.decompiler.problems import Problems
from netdsl.semantics import array_ops, slicing
from netdsl.semantics.declared import OP_FUNCTIONS
from netdsl.semantics.tensor_ops import PER_SAMPLE
from netdsl.syntax import ir

_BINARY = {"Add": "+", "Subtract": "-", "Multiply": "*", "TrueDivide": "/", "Divide": "/", "Power": "**", "Matmul": "@"}
_UNARY_NAMES = {
    "Relu6": "relu6",
    "HardSigmoid": "hard_sigmoid",
    "LeakyRelu": "leaky_relu",
    "Log1p": "log1p",
    "Silu": "silu",
    "Swish": "silu",
}
_REDUCTIONS = {"Mean": "mean", "Sum": "sum", "Max": "max", "Min": "min"}
_KERAS_ARRAY_OPS = {
    "Cumsum": "cumsum",
    "Cumprod": "cumprod",
    "Argmax": "argmax",
    "Argmin": "argmin",
    "OneHot": "one_hot",
}
_KEYWORDS = {"gelu": ("approximate",), "elu": ("alpha",), "leaky_relu": ("negative_slope",), "softmax": ("axis",)}
_OPERATOR_KINDS = {"+": "+", "-": "-", "*": "*", "/": "/", "**": "**", "@": "@"}


def is_operation(layer: Layer) -> bool:
    """A Keras operation node, or netdsl's TensorOp: calls that may pass constants."""
    return layer.module.startswith("keras.src.ops") or (
        layer.class_name == "TensorOp" and layer.module.startswith("netdsl.")
    )


def op_step(layer: Layer, call: Call, problems: Problems) -> Step | None:
    """The op step of an operation node's call, or None (the reason in `problems`)."""
    template = _template(layer, call)
    if template is None:
        problems.layer(
            layer,
            f"is the Keras operation {layer.class_name} (module {layer.module}) with arguments "
            "a spec's tensor expressions do not write",
            "in the Keras code, use a layer for it, or +, -, *, /, @ and the functions of docs/language.md",
        )
        return None
    return Step("op", _label(template), (("expression", template),))


def _template(layer: Layer, call: Call) -> tuple | None:
    if layer.class_name == "TensorOp":
        expression = layer.config.get("expression")
        return _frozen(expression) if isinstance(expression, list) else None
    operands = _operands(call)
    name, config = layer.class_name, layer.config
    if name == "Slice":  # keras.ops.slice(x, starts, sizes): a slice of each axis
        return _cut("GetItem", config, _slice_operands(operands, config.get("shape")))
    if name in ("GetItem", "Split", "Unstack"):
        return _cut(name, config, operands)
    if name in _BINARY and len(operands) == 2:
        if name == "Matmul" and any(o[0] != "var" for o in operands):
            return None
        return ("bin", _BINARY[name], operands[0], operands[1])
    if name == "Negative" and len(operands) == 1:
        return ("neg", operands[0])
    if len(operands) != 1 or operands[0][0] != "var":
        return _pairwise(name, operands)
    if name in _REDUCTIONS:
        axis = config.get("axis")
        if axis is None or axis == 0 or (isinstance(axis, list) and (0 in axis or not axis)):
            return None  # over the batch axis: not a spec's
        axis_value = tuple(axis) if isinstance(axis, list) else axis
        keyword: tuple[tuple[str, Any], ...] = (("axis", ("const", axis_value)),)
        if config.get("keepdims"):
            keyword += (("keepdims", ("const", True)),)
        return ("call", _REDUCTIONS[name], (operands[0],), keyword)
    if name == "Transpose":
        axes = config.get("axes")
        if not isinstance(axes, list) or not axes or axes[0] != 0:
            return None
        return ("call", "transpose", (operands[0], ("const", tuple(axes))), ())
    if name in _KERAS_ARRAY_OPS:
        return _keras_array_op(_KERAS_ARRAY_OPS[name], config, operands[0])
    function = _UNARY_NAMES.get(name, _snake(name))
    if function not in OP_FUNCTIONS or OP_FUNCTIONS[function][0] != 1 or function in ("transpose", "reshape"):
        return None
    if function in array_ops.SIGNATURES or (function in ("zeros_like", "ones_like") and config.get("dtype")):
        return None  # `top_k` and the transforms of Keras code: not read from their operation nodes
    keywords = tuple((k, ("const", config[k])) for k in _KEYWORDS.get(function, ()) if k in config)
    if any(not isinstance(v[1], (int, float, bool)) for _, v in keywords):
        return None
    return ("call", function, (operands[0],), keywords)


def _keras_array_op(function: str, config: dict, operand: tuple) -> tuple | None:
    """`ops.cumsum(x, axis=1)`, `ops.argmax(x, axis=-1)`, `ops.one_hot(ids, 10)` of Keras code: their
    operation's config as the function's constants, when a spec can write them (an axis of the sample)."""
    signature = array_ops.SIGNATURES[function]
    axis = config.get("axis")
    if not isinstance(axis, int) or isinstance(axis, bool) or axis == 0:
        return None
    if config.get("sparse") or (function != "one_hot" and config.get("dtype") is not None):
        return None
    params = {key: config[key] for key in signature.params if key in config}
    if function == "one_hot" and params.get("dtype") == "float32":  # keras.ops' default, as the spec's
        params["dtype"] = None
    keywords = tuple((key, ("const", value)) for key, value in sorted(params.items()))
    return ("call", function, (operand,), keywords)


def _cut(name: str, config: dict, operands: list) -> tuple | None:
    """`x[:, :256]`, `split(x, 2, axis=-1)`, `unstack(x, axis=1)` when a spec can write them: the batch
    axis whole, steps positive, a split or unstack along an axis of the sample."""
    if not operands or operands[0] != ("var", "x0"):
        return None
    if name == "GetItem":
        if len(operands) != 2 or operands[1][0] != "key":
            return None
        key = [list(item) if isinstance(item, tuple) else item for item in operands[1][1]]
        try:
            slicing.check_items(key)
        except slicing.SliceError:
            return None
        return ("call", "get_item", (operands[0], ("const", operands[1][1])), ())
    axis = config.get("axis")
    if len(operands) != 1 or not isinstance(axis, int) or isinstance(axis, bool) or axis == 0:
        return None
    keyword = (("axis", ("const", axis)),)
    if name == "Unstack":
        return ("call", "unstack", (operands[0],), keyword)
    parts = config.get("indices_or_sections")
    parts = tuple(parts) if isinstance(parts, list) else parts
    if not (isinstance(parts, int) or (isinstance(parts, tuple) and all(isinstance(p, int) for p in parts))):
        return None
    return ("call", "split", (operands[0], ("const", parts)), keyword)


def _slice_operands(operands: list, sizes: Any) -> list:
    """`ops.slice(x, (0, 2, 0), (-1, 3, 512))` as `x[:, 2:5, 0:512]` (a size of -1: to the end); the batch
    axis must be whole (start 0, size -1), or the operands are left as they are (refused)."""
    if len(operands) != 2 or operands[1][0] != "key" or not isinstance(sizes, list):
        return operands
    starts = operands[1][1]
    if len(starts) != len(sizes) or not starts or (starts[0], sizes[0]) != (0, -1):
        return operands
    items: list[Any] = [(None, None, None)]
    for start, size in zip(starts[1:], sizes[1:]):
        if not isinstance(size, int) or isinstance(size, bool) or size < -1 or size == 0:
            return operands
        items.append((start, None if size == -1 else start + size, None))
    return [operands[0], ("key", tuple(items))]


def _pairwise(name: str, operands: list) -> tuple | None:
    """`minimum(x, 0.0)` and `maximum(a, b)`: two operands, one at least a tensor."""
    function = {"Minimum": "minimum", "Maximum": "maximum"}.get(name)
    if function is None or len(operands) != 2 or not any(o[0] == "var" for o in operands):
        return None
    return ("call", function, tuple(operands), ())


def _operands(call: Call) -> list[tuple]:
    """The call's arguments as template leaves: its tensors x0, x1, ... and its numbers."""
    found: list[tuple[Any, ...]] = []
    tensor = 0
    for item in call.arguments:
        if item is None:
            found.append(("var", f"x{tensor}"))
            tensor += 1
        elif isinstance(item, SliceKey):
            found.append(("key", item.items))
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            found.append(("num", item))
        else:
            found.append(("bad",))
    return found


def _frozen(tree: Any) -> Any:
    """A JSON tree as tuples (hashable), dicts as sorted pairs."""
    if isinstance(tree, list):
        return tuple(_frozen(t) for t in tree)
    if isinstance(tree, dict):
        return tuple((k, _frozen(v)) for k, v in sorted(tree.items()))
    return tree


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _label(template: tuple) -> str:
    """A canonical text of the template: equal templates, equal steps (and motifs)."""
    return "op" + repr(template)


# ---------------------------------------------------------------- writing


def template_of(step: Step) -> tuple:
    return dict(step.kwargs)["expression"]


def op_expr(step: Step, sources: list) -> Any:
    """The step's expression with its tensors `x0, x1, ...` replaced by `sources` (IR)."""
    return _expr(template_of(step), sources)


def _expr(tree: Any, sources: list) -> Any:
    kind = tree[0]
    if kind == "var":
        return sources[int(tree[1][1:])]
    if kind in ("num", "const"):
        return S.value(tree[1])
    if kind == "neg":
        return S.node(ir.UnaryOp, kind="unaryop", op="-", operand=_expr(tree[1], sources))
    if kind == "bin":
        return S.binop(tree[1], _expr(tree[2], sources), _expr(tree[3], sources))
    name, args = tree[1], tree[2]
    if name == "get_item":
        return _subscripted(_expr(args[0], sources), args[1][1])
    keywords = tree[3] if len(tree) > 3 else ()
    keywords = keywords.items() if isinstance(keywords, dict) else keywords
    if name == PER_SAMPLE:  # `arange(n)` in a model body: its anchor, the first input, is implied
        return _expr(args[0], sources)
    if name in array_ops.SIGNATURES:
        return _array_call(name, [_expr(a, sources) for a in args], {k: v[1] for k, v in keywords})
    kwargs = [
        S.node(ir.Kwarg, kind="kwarg", name=k, value=_expr(v, sources))
        for k, v in keywords
        if not (name in ("mean", "sum", "max", "min") and k == "keepdims" and v[1] is False)
    ]
    return S.node(ir.Call, kind="call", func=S.name(name), args=[_expr(a, sources) for a in args], kwargs=kwargs)


def _array_call(name: str, tensors: list[Any], params: dict[str, Any]) -> Any:
    """A spectral or index function as a spec writes it: a complex signal as one (real, imag) pair, the
    constants without an axis positional in keras.ops' order, the others by name unless at their default."""
    signature = array_ops.SIGNATURES[name]
    args = [S.node(ir.Tuple, kind="tuple", items=tensors)] if signature.pair else list(tensors)
    kwargs = []
    if name == "arange":  # arange(stop), arange(start, stop) or arange(start, stop, step), as numpy writes it
        start, stop, step = params["start"], params["stop"], params["step"]
        bounds = [stop] if start == 0 and step == 1 else [start, stop] if step == 1 else [start, stop, step]
        args += [S.value(b) for b in bounds]
        params = {"dtype": params.get("dtype")}
    for key in signature.params:  # keras.ops' order (the template holds them sorted)
        if key not in params:
            continue
        value = params[key]
        if key in signature.required and key != "axis":
            args.append(S.value(value))
        elif key in signature.required or value != signature.defaults.get(key):
            kwargs.append(S.node(ir.Kwarg, kind="kwarg", name=key, value=S.value(value)))
    return S.node(ir.Call, kind="call", func=S.name(name), args=args, kwargs=kwargs)


def _subscripted(value: Any, key: Any) -> Any:
    """`value[:, :256]`: a stored key (`netdsl.semantics.slicing`'s items) as the subscripts a spec writes."""
    items = []
    for item in key:
        if item == slicing.ELLIPSIS:
            items.append(S.node(ir.EllipsisLit, kind="ellipsis"))
        elif isinstance(item, (list, tuple)):
            start, stop, step = (None if b is None else S.value(b) for b in item)
            items.append(S.node(ir.Slice, kind="slice", start=start, stop=stop, step=step))
        else:
            items.append(S.value(item))  # an index, or none: a new axis
    index = (
        items[0] if len(items) == 1 and isinstance(items[0], ir.Slice) else S.node(ir.Tuple, kind="tuple", items=items)
    )
    return S.node(ir.Index, kind="index", value=value, index=index)
