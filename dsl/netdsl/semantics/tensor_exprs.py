"""Tensor expressions in model and block bodies: `x + 0.17 * branch`, `a * sigmoid(b)`, `q @ k`.

The expander's collaborator (see `state.py`) that turns an expression of
tensors, numbers, operators (`+ - * / **`, unary `-`, `@`) and calls of the
fixed function table (`sigmoid(x)`, `mean(x, axis=1)`, ...) into graph nodes,
one per operator, with the usual precedence (the parser's):

- a sum whose terms are all tensors, `a + b + c`, stays what it always was:
  one `add` layer of all its terms;
- every other operator is a `tensor_op` node (`semantics.tensor_ops.OpSpec`,
  built as netdsl's weightless `TensorOp`, as Keras code's `a * b` is an
  operation node): `a * b`, `x + 3`, `/`, `**`, `@` and the functions;
- functions of tensors take keras.ops' arguments, the batch axis written as
  axis 0: `transpose(x, (0, 2, 1))` (every axis, the batch first and staying),
  `reshape(x, (-1, 16, 8))` (the batch axis first, as -1), `mean(x, axis=1)`;
- `x[:, :256]`, `x[..., 1:]` are NumPy's slices, the batch axis first and whole
  (`semantics.slicing`); `a, b = split(x, 2, axis=-1)` and `unstack(x, axis=1)`
  are one node of several outputs;
- `reshape(x, shape)` and `concat(a, b, axis=-1)` are the Keras layers
  `reshape` (its target shape: the shape without its leading -1) and `concatenate`;
- a declared activation called on a tensor, `hswish(x)`, is `x -> hswish`.

Nodes are named like the layers of a flow: the statement's binding names the
last one (`h = a * sigmoid(b)`: `h.sigmoid`, then `h`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, cast

from netdsl import registry
from netdsl.errors import Fail, Span
from netdsl.semantics import array_ops, slicing
from netdsl.semantics.declared import OP_FUNCTIONS
from netdsl.semantics.graph_writer import GraphWriter
from netdsl.semantics.state import POISON, ExpansionState, Tensor
from netdsl.semantics.steps import StepResolver
from netdsl.semantics.tensor_ops import MULTI_OUTPUT, OPERATORS, PER_SAMPLE, REDUCTIONS, OpSpec
from netdsl.semantics.values import (
    UNKNOWN,
    Env,
    Sym,
    Unknown,
    Value,
    describe_value,
    is_number,
    is_unknown,
    type_name,
)
from netdsl.syntax import ir

# Functions that are Keras layers in tensor position: name -> registry layer.
LAYER_FUNCTIONS = {"reshape": "reshape", "concat": "concatenate", "concatenate": "concatenate"}
_TENSOR_OPERATORS = frozenset(OPERATORS)
# Functions of the table folded on numbers (`/ sqrt(8.0)`), as the runtime folds them.
_MATH: dict[str, Callable[[float], float]] = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log1p": math.log1p,
    "tanh": math.tanh,
    "sin": math.sin,
    "cos": math.cos,
    "erf": math.erf,
    "square": lambda v: v * v,
}
# A number operand of a tensor expression: UNKNOWN while `check` runs a block on its own.
Number = int | float | Unknown
_KEYWORD_POSITIONS = {name: ("axis", "keepdims") for name in REDUCTIONS} | {"softmax": ("axis",), "cast": ("dtype",)}


class TensorSource(Protocol):
    """What tensor expressions need of the flow expander: the tensors an operand stands for."""

    def tensors(self, expr: ir.Expr, env: Env, final: str | None) -> list[Tensor]: ...


class TensorExpressions:
    """Operators and functions on tensors (state: the shared `ExpansionState`)."""

    def __init__(self, state: ExpansionState, writer: GraphWriter, steps: StepResolver, flows: TensorSource):
        self.state = state
        self.writer = writer
        self.steps = steps
        self.flows = flows

    # ------------------------------------------------------------ what is a tensor
    def mentions_tensor(self, expr: ir.Expr, env: Env) -> bool:
        """Whether an expression stands for a tensor (names one, or a flow) rather than a constant."""
        if isinstance(expr, ir.Name):
            if env.has(expr.id):
                return isinstance(env.get(expr.id), Tensor)
            return env.scope.find(expr.id) is None  # undefined: `_tensor_named` says so, with suggestions
        if isinstance(expr, ir.Flow):
            return True
        if isinstance(expr, ir.Tuple):
            return any(self.mentions_tensor(item, env) for item in expr.items)
        if isinstance(expr, ir.BinOp):
            return expr.op in _TENSOR_OPERATORS and (
                self.mentions_tensor(expr.left, env) or self.mentions_tensor(expr.right, env)
            )
        if isinstance(expr, ir.UnaryOp):
            return expr.op in ("-", "+") and self.mentions_tensor(expr.operand, env)
        if isinstance(expr, ir.Call):
            return any(self.mentions_tensor(a, env) for a in expr.args) or self._is_arange(expr, env)
        if isinstance(expr, ir.Index):
            return self.mentions_tensor(expr.value, env)
        if isinstance(expr, ir.IfExp):
            return self.mentions_tensor(expr.then, env) or self.mentions_tensor(expr.orelse, env)
        if isinstance(expr, ir.Attr):
            return self.is_tap(expr, env)
        return False

    def is_tap(self, expr: ir.Attr, env: Env) -> bool:
        """`MODEL.LAYER`: a layer's output inside a nested model (`semantics/taps.py`), not `x.shape`."""
        if not isinstance(expr.value, ir.Name) or expr.attr == "shape" or env.has(expr.value.id):
            return False
        declared = env.scope.find(expr.value.id)
        return declared is not None and isinstance(declared[0], ir.ModelDecl)

    @staticmethod
    def _is_arange(expr: ir.Call, env: Env) -> bool:
        """`arange(maxlen)`: a tensor of no tensor, unless a name of the spec hides the function."""
        func = expr.func
        return (
            isinstance(func, ir.Name)
            and func.id == "arange"
            and not env.has(func.id)
            and env.scope.find(func.id) is None
        )

    def is_tensor_expression(self, expr: ir.Expr, env: Env) -> bool:
        """An operator or call that `tensor_expression` makes nodes of."""
        if isinstance(expr, ir.BinOp) and expr.op in _TENSOR_OPERATORS:
            return self.mentions_tensor(expr, env)
        if isinstance(expr, ir.UnaryOp) and expr.op in ("-", "+"):
            return self.mentions_tensor(expr.operand, env)
        if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name):
            return self.mentions_tensor(expr, env)
        if isinstance(expr, ir.Index):
            return self.mentions_tensor(expr.value, env)
        return False

    # ------------------------------------------------------------ expressions
    def tensor_expression(self, expr: ir.Expr, env: Env, final: str | None) -> list[Tensor]:
        if isinstance(expr, ir.UnaryOp):
            operand = self._tensor_operand(expr.operand, env, expr.op)
            if expr.op == "+":
                return [operand]
            return self._op_node(["neg", ["var", "x0"]], [operand], "negative", "\u2212x", expr.span, final)
        if isinstance(expr, ir.Call):
            return self._function(expr, env, final)
        if isinstance(expr, ir.Index):
            return self._slice(expr, env, final)
        return self._binary(cast(ir.BinOp, expr), env, final)  # is_tensor_expression: the rest are operators

    def _binary(self, expr: ir.BinOp, env: Env, final: str | None) -> list[Tensor]:
        left = self._operand(expr.left, env, expr.op)
        right = self._operand(expr.right, env, expr.op)
        at = operator_span(expr)
        kind, _, symbol = OPERATORS[expr.op]
        tensors = [v for v in (left, right) if isinstance(v, Tensor)]
        if expr.op == "@" and len(tensors) != 2:
            raise Fail(at, "'@' multiplies two tensors, not a tensor and a number", "scale with '*'")
        if len(tensors) == 2:
            return self._op_node(["bin", expr.op, ["var", "x0"], ["var", "x1"]], tensors, kind, symbol, at, final)
        tree, label = [], ""
        for value in (left, right):
            tree.append(["var", "x0"] if isinstance(value, Tensor) else ["num", value])
        constant = cast(Number, right if isinstance(left, Tensor) else left)  # one side is the tensor
        shown = "?" if constant is UNKNOWN else describe_value(constant)
        label = f"{symbol} {shown}" if isinstance(left, Tensor) else f"{shown} {symbol}"
        return self._op_node(["bin", expr.op, *tree], tensors, kind, label, at, final)

    def _operand(self, expr: ir.Expr, env: Env, op: str) -> Tensor | Number:
        """A tensor, or a number (UNKNOWN while `check` runs a block alone)."""
        if self.mentions_tensor(expr, env):
            return self._tensor_operand(expr, env, op)
        return self._number(expr, env, op)

    def _number(self, expr: ir.Expr, env: Env, op: str) -> Number:
        """An operand that names no tensor: a number, or UNKNOWN while `check` runs a block alone."""
        folded = self._math(expr, env)
        value = self.state.consts.fold(expr, env) if folded is None else folded
        if value is UNKNOWN or is_number(value):
            return value
        raise Fail(
            expr.span,
            f"'{op}' combines tensors and numbers, received {type_name(value)}",
            "a tensor is a name bound to one, a flow or a tensor expression",
        )

    def _math(self, expr: ir.Expr, env: Env) -> Number | None:
        """`sqrt(8.0)`: a function of the table on numbers, folded (None: not such a call)."""
        if not (
            isinstance(expr, ir.Call)
            and isinstance(expr.func, ir.Name)
            and expr.func.id in _MATH
            and not expr.kwargs
            and len(expr.args) == 1
            and not env.has(expr.func.id)
            and env.scope.find(expr.func.id) is None
        ):
            return None
        value = self._number(expr.args[0], env, expr.func.id)  # the call names no tensor: nor does its argument
        if value is UNKNOWN:
            return UNKNOWN
        try:
            return float(_MATH[expr.func.id](value))
        except (ValueError, OverflowError):
            raise Fail(expr.span, f"'{expr.func.id}' cannot take {describe_value(value)}") from None

    def _tensor_operand(self, expr: ir.Expr, env: Env, op: str) -> Tensor:
        got = self.flows.tensors(expr, env, final=None)
        if len(got) != 1:
            raise Fail(expr.span, f"'{op}' takes single tensors; this one is {len(got)} tensors")
        return got[0]

    # ------------------------------------------------------------ functions
    def _function(self, expr: ir.Call, env: Env, final: str | None) -> list[Tensor]:
        name = _called(expr).id
        found = env.scope.find(name)
        if env.has(name) or found is not None:
            if found is not None and isinstance(found[0], ir.ActivationDecl) and not env.has(name):
                return self._declared_activation_call(expr, env, final)
            raise Fail(
                expr.func.span, f"'{name}' is not a function of tensors", "a step applies with an arrow: x -> " + name
            )
        if name == "get_item":
            raise Fail(expr.func.span, "unknown function 'get_item'", "slice with subscripts: x[:, :256]")
        if name in LAYER_FUNCTIONS:
            return self._layer_function(expr, env, final)
        if name == "transpose":
            return self._transpose(expr, env, final)
        if name in MULTI_OUTPUT:
            return self._split(expr, env, final)
        if name in array_ops.SIGNATURES:
            return self._array_function(expr, env, final)
        if name not in OP_FUNCTIONS and (registry.lookup("layer", name) or registry.lookup("activation", name)):
            raise Fail(
                expr.func.span, f"'{name}' is a step, not a function of tensors", f"apply it with an arrow: x -> {name}"
            )
        if name not in OP_FUNCTIONS:
            raise Fail(
                expr.func.span,
                f"unknown function '{name}'",
                _near_function(name) or "tensor expressions call the functions of docs/language.md",
            )
        lo, hi, keywords, _ = OP_FUNCTIONS[name]
        positional = list(expr.args)
        kwargs: dict[str, ir.Kwarg | ir.Expr] = {k.name: k for k in expr.kwargs}  # or a positional keyword
        for key in _KEYWORD_POSITIONS.get(name, ()):  # mean(x, 1) is mean(x, axis=1)
            if len(positional) > 1 and key not in kwargs:
                kwargs[key] = positional.pop(1)
        if len(positional) < lo or (hi is not None and len(positional) > hi):
            wanted = f"{lo}" if lo == hi else (f"{lo} or more" if hi is None else f"{lo} to {hi}")
            raise Fail(
                expr.span, f"'{name}' takes {wanted} argument{'s' if hi != 1 else ''}, received {len(expr.args)}"
            )
        tensors: list[Tensor] = []
        args: list[list[Any]] = []  # expression trees (netdsl.custom.expr)
        for arg in positional:
            value = self._operand(arg, env, name)
            if isinstance(value, Tensor):
                tensors.append(value)
                args.append(["var", f"x{len(tensors) - 1}"])
            else:
                args.append(["num", value])
        if not tensors:
            raise Fail(expr.span, f"'{name}' needs a tensor argument")
        tree_kwargs = {key: ["const", self._keyword(name, key, kw, keywords, env)] for key, kw in kwargs.items()}
        if name == "cast" and "dtype" not in tree_kwargs:
            raise Fail(expr.span, "'cast' needs a dtype: cast(x, \"float32\")")
        if name in REDUCTIONS:
            tree_kwargs.setdefault("keepdims", ["const", False])
            if "axis" not in tree_kwargs:
                raise Fail(
                    expr.span,
                    f"'{name}' of a tensor needs an axis: {name}(x, axis=-1)",
                    "axes count the batch axis as 0; a model cannot reduce over it",
                )
        label = name + "".join(
            f" {k}={describe_value(v[1])}" for k, v in tree_kwargs.items() if not (k == "keepdims" and v[1] is False)
        )
        return self._op_node(["call", name, args, tree_kwargs], tensors, name, label, expr.span, final)

    def _keyword(self, name: str, key: str, kw: ir.Kwarg | ir.Expr, keywords: frozenset[str], env: Env) -> Value:
        if key not in keywords:
            span = kw.span if isinstance(kw, ir.Kwarg) else kw.span
            raise Fail(
                span,
                f"'{name}' has no parameter '{key}'",
                ("its parameters: " + ", ".join(sorted(keywords))) if keywords else f"'{name}' takes none",
            )
        value_expr = kw.value if isinstance(kw, ir.Kwarg) else kw
        if self.mentions_tensor(value_expr, env):
            raise Fail(value_expr.span, f"'{key}' of '{name}' must be a constant, not a tensor")
        value = self.state.consts.fold(value_expr, env)
        if key == "axis" and _names_batch_axis(value):
            raise Fail(
                value_expr.span,
                "a tensor expression cannot reduce over the batch axis (axis 0)",
                "axes count the batch axis as 0: the first axis of a sample is 1 (or -1 for the last)",
            )
        if key == "dtype":  # cast(x, "float32"): a dtype of `input ... as DTYPE`'s
            value = _plain(value)
            try:
                array_ops.dtype({"dtype": value}, name)
            except array_ops.ArrayOpError as exc:
                raise Fail(value_expr.span, str(exc), exc.hint) from None
        if isinstance(value, list):
            value = tuple(value)
        return value

    def _transpose(self, expr: ir.Call, env: Env, final: str | None) -> list[Tensor]:
        """`transpose(x, (0, 2, 1))`: keras.ops.transpose's perm, every axis named, the batch axis first."""
        if len(expr.args) != 2 or expr.kwargs:
            raise Fail(expr.span, "'transpose' takes a tensor and a perm: transpose(x, (0, 2, 1))")
        tensor = self._tensor_operand(expr.args[0], env, "transpose")
        perm = self.state.consts.fold(expr.args[1], env)
        if perm is UNKNOWN:
            raise Fail(expr.args[1].span, "the perm of 'transpose' must be known when the model is checked")
        rank = len(tensor.shape) + 1 if isinstance(tensor.shape, tuple) else None
        slicing.check_perm(perm, rank, expr.args[1].span)
        axes = list(cast("tuple[int, ...]", perm))  # check_perm: a tuple or list of ints
        tree = ["call", "transpose", [["var", "x0"], ["const", axes]], {}]
        label = "transpose " + describe_value(tuple(axes))
        return self._op_node(tree, [tensor], "transpose", label, expr.span, final)

    def _layer_function(self, expr: ir.Call, env: Env, final: str | None) -> list[Tensor]:
        """`reshape(x, (4, 8))`, `concat(a, b, axis=-1)`: Keras layers."""
        name = _called(expr).id
        layer = LAYER_FUNCTIONS[name]
        entry = registry.lookup("layer", layer)
        if entry is None:  # LAYER_FUNCTIONS names layers of the table
            raise Fail(expr.span, f"internal: no layer '{layer}' in the registry")
        args: list[tuple[Value, Span]] = []
        kwargs: list[tuple[str, Value, Span]] = []
        if layer == "concatenate":
            inputs = [self._tensor_operand(a, env, name) for a in expr.args]
            if len(inputs) < 2:
                raise Fail(expr.span, f"'{name}' joins two or more tensors")
            kwargs = [(k.name, self.steps.argument(k.value, env), k.span) for k in expr.kwargs]
        else:
            if len(expr.args) != 2 or expr.kwargs:
                raise Fail(expr.span, f"'{name}' takes a tensor and a shape: reshape(x, (-1, 4, 8))")
            inputs = [self._tensor_operand(expr.args[0], env, name)]
            target = self._reshape_target(expr.args[1], env)
            args = [(target, expr.args[1].span)]
        checked = self.state.arguments.bind(entry, args, kwargs, expr.func.span)
        return self.steps.emit_registry(entry, layer, checked, inputs, expr.span, final)

    def _reshape_target(self, expr: ir.Expr, env: Env) -> Value:
        """The Reshape layer's target shape of `reshape(x, (-1, 16, 8))`: keras.ops.reshape's shape, whose
        first item is the batch axis (-1), without it. A shape without the batch axis is refused: its
        first size would be read as the batch's (Keras code's `-1` is the batch axis)."""
        shape = self.steps.argument(expr, env)
        if shape is UNKNOWN or not isinstance(shape, tuple) or is_unknown(shape):
            return shape[1:] if isinstance(shape, tuple) and shape and shape[0] == -1 else shape
        if shape and shape[0] == -1:
            return shape[1:]
        raise Fail(
            expr.span,
            "the shape of 'reshape' starts with the batch axis, -1, as keras.ops.reshape's does",
            f"write reshape(x, {describe_value((-1, *shape))}); the step -> reshape(...) takes the shape "
            "without the batch axis",
        )

    def _split(self, expr: ir.Call, env: Env, final: str | None) -> list[Tensor]:
        """`a, b = split(x, 2, axis=-1)`, `split(x, [64], axis=-1)`, `unstack(x, axis=1)`: one node,
        several outputs (keras.ops.split's and keras.ops.unstack's)."""
        name = _called(expr).id
        usage = "split(x, 2, axis=-1)" if name == "split" else "unstack(x, axis=1)"
        wanted = 2 if name == "split" else 1
        positional = list(expr.args)
        keywords: dict[str, ir.Expr] = {}
        for kw in expr.kwargs:
            if kw.name != "axis":
                raise Fail(kw.span, f"'{name}' has no parameter '{kw.name}'", f"its parameter: axis ({usage})")
            keywords["axis"] = kw.value
        if len(positional) == wanted + 1 and "axis" not in keywords:
            keywords["axis"] = positional.pop()  # split(x, 2, -1), as keras.ops.split takes it
        if len(positional) != wanted:
            raise Fail(
                expr.span, f"'{name}' takes {wanted + 1 if name == 'split' else 1} arguments and an axis: {usage}"
            )
        if "axis" not in keywords:
            raise Fail(
                expr.span,
                f"'{name}' of a tensor needs an axis: {usage}",
                "axes count the batch axis as 0; a model cannot cut it",
            )
        tensor = self._tensor_operand(positional[0], env, name)
        axis = self._constant(keywords["axis"], env, name, "axis")
        args: list[Any] = [["var", "x0"]]
        count: int | None = None
        parts: Value = None
        if name == "split":
            parts = self._constant(positional[1], env, name, "parts")
            parts = list(parts) if isinstance(parts, (tuple, list)) else parts
            args.append(["const", parts])
        tree = ["call", name, args, {"axis": ["const", axis]}]
        try:
            if name == "split" and parts is not UNKNOWN:
                count = slicing.split_count(parts)
                if count is not None:
                    slicing.check_count(name, count)
            if isinstance(tensor.shape, tuple) and not is_unknown(tree):
                whole = (None, *tensor.shape)
                shapes = (
                    slicing.split_shapes(whole, parts, axis) if name == "split" else slicing.unstack_shapes(whole, axis)
                )
                count = len(shapes)
        except slicing.SliceError as exc:
            raise Fail(expr.span, str(exc), exc.hint) from None
        label = f"{name} axis={describe_value(axis)}"
        spec = OpSpec(tree, 1, label, count or 1)
        outputs = self.writer.emit("tensor_op", name, {}, [tensor], count or 1, expr.span, name, final, decl=spec)
        if count is None and len(outputs) == 1 and not outputs[0].poisoned:
            self.state.uncertain = True
            outputs[0].variadic = True  # check's guess; the Keras build gives the real outputs
        return outputs

    def _array_function(self, expr: ir.Call, env: Env, final: str | None) -> list[Tensor]:
        """`re, im = fft2((x, zeros_like(x)))`, `stft(x, 64, 32, 64)`, `one_hot(ids, 10)`, `top_k(x, 5)`,
        `arange(maxlen)`: a keras.ops function of `semantics.array_ops`, one node of its outputs."""
        name = _called(expr).id
        signature = array_ops.SIGNATURES[name]
        operands, written = array_ops.split_arguments(name, expr)
        tensors = [self._tensor_operand(operand, env, name) for operand in operands]
        params = {key: _plain(self._constant(value, env, name, key)) for key, value in written.items()}
        bound = array_ops.bind(name, params)
        try:
            shapes = [(None, *t.shape) for t in tensors if isinstance(t.shape, tuple)]
            if len(shapes) == len(tensors) and not is_unknown(bound):
                array_ops.output_shapes(name, shapes, bound)
        except array_ops.ArrayOpError as exc:
            at = written[exc.param].span if exc.param in written else expr.span
            raise Fail(at, str(exc), exc.hint) from None
        # every constant, none too (window=none is no window, not the default Hann window)
        kwargs = {key: ["num", v] if is_number(v) else ["const", v] for key, v in bound.items()}
        tree: list[Any] = ["call", name, [["var", f"x{i}"] for i in range(len(tensors))], kwargs]
        if name == "arange":  # no tensor of its own: the model's first input lends it a batch axis
            anchor = self.state.build.first_input
            if anchor is None:  # the input failed, or there is none: that error is said already
                return [POISON]
            tensors, tree = [anchor], ["call", PER_SAMPLE, [tree, ["var", "x0"]], {}]
        label = name + "".join(f" {k}={describe_value(v)}" for k, v in params.items())
        spec = OpSpec(tree, len(tensors), label, signature.outputs)
        return self.writer.emit("tensor_op", name, {}, tensors, signature.outputs, expr.span, name, final, decl=spec)

    def _constant(self, expr: ir.Expr, env: Env, owner: str, what: str) -> Value:
        if self.mentions_tensor(expr, env):
            raise Fail(expr.span, f"the {what} of '{owner}' must be a constant, not a tensor")
        return self.state.consts.fold(expr, env)

    # ------------------------------------------------------------ slices
    def _slice(self, expr: ir.Index, env: Env, final: str | None) -> list[Tensor]:
        """`x[:, :256]`, `x[..., 1:]`, `x[:, 3]`: NumPy's subscripts on a tensor, the batch axis first."""
        tensor = self._tensor_operand(expr.value, env, "[...]")
        items = list(expr.index.items) if isinstance(expr.index, ir.Tuple) else [expr.index]
        key = [self._subscript(item, env) for item in items]
        try:
            slicing.check_items(key)
            if isinstance(tensor.shape, tuple) and not slicing.has_unknown(key):
                slicing.sliced_shape((None, *tensor.shape), key)
        except slicing.SliceError as exc:
            raise slicing.slice_failure(exc, expr, items) from None
        tree = ["call", "get_item", [["var", "x0"], ["const", key]], {}]
        label = "[" + slicing.key_text(key) + "]" if not slicing.has_unknown(key) else "[?]"
        return self._op_node(tree, [tensor], "slice", label, expr.span, final)

    def _subscript(self, item: ir.Expr, env: Env) -> Any:
        """One subscript as a key item (`semantics.slicing`): an int, [start, stop, step], None or '...'."""
        if isinstance(item, ir.EllipsisLit):
            return slicing.ELLIPSIS
        if isinstance(item, ir.Slice):
            return [self._bound(b, env) for b in (item.start, item.stop, item.step)]
        if self.mentions_tensor(item, env):
            raise Fail(item.span, "a tensor's subscripts are constants, not tensors")
        value = self.state.consts.fold(item, env)
        if value is None or value is UNKNOWN or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise Fail(
            item.span,
            f"a tensor's subscript is an integer, a slice (1:5), none or ..., received {type_name(value)}",
        )

    def _bound(self, bound: ir.Expr | None, env: Env) -> Any:
        if bound is None:
            return None
        if self.mentions_tensor(bound, env):
            raise Fail(bound.span, "a slice's bounds are constants, not tensors")
        value = self.state.consts.fold(bound, env)
        if value is None or value is UNKNOWN or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise Fail(bound.span, f"a slice bound must be an integer, received {type_name(value)}")

    def _declared_activation_call(self, expr: ir.Call, env: Env, final: str | None) -> list[Tensor]:
        """`hswish(x)`: the declared activation applied to a tensor (`x -> hswish`)."""
        name = _called(expr).id
        if not expr.args:
            raise Fail(expr.span, f"'{name}' needs its input tensor: {name}(x)")
        tensor = self._tensor_operand(expr.args[0], env, name)
        step = self.steps.step_target(expr.func, env)
        step.args = [(self.steps.argument(a, env), a.span) for a in expr.args[1:]]
        step.kwargs = [(k.name, self.steps.argument(k.value, env), k.span) for k in expr.kwargs]
        return self.steps.apply_step(step, [tensor], final)

    # ------------------------------------------------------------ nodes
    def _op_node(
        self, tree: list[Any], inputs: list[Tensor], kind: str, label: str, span: Span, final: str | None
    ) -> list[Tensor]:
        spec = OpSpec(tree, len(inputs), label)
        return self.writer.emit("tensor_op", kind, {}, inputs, 1, span, kind, final, decl=spec)


def operator_span(expr: ir.BinOp) -> Span:
    """Where a binary operator stands: between its operands (the source text is not at hand here)."""
    left, right = expr.left.span, expr.right.span
    if left.end_line != right.line or left.end_col >= right.col:
        return expr.span
    gap = right.col - left.end_col
    if gap == len(expr.op) + 2:  # `a * b`: one space either side
        return Span.at(expr.span.file, right.line, left.end_col + 1, len(expr.op))
    if gap == len(expr.op):  # `a*b`
        return Span.at(expr.span.file, right.line, left.end_col, len(expr.op))
    return Span.at(expr.span.file, right.line, left.end_col, gap)  # parentheses or more spaces between


def _plain(value: Value) -> Value:
    """A constant as a tree holds it: `int32` (a bare name) as "int32", lists as tuples' items."""
    if isinstance(value, Sym) and value.namespace is None:
        return value.name
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _names_batch_axis(value: Any) -> bool:
    axes = value if isinstance(value, (tuple, list)) else (value,)
    return any(a == 0 and isinstance(a, int) and not isinstance(a, bool) for a in axes) or value is None


def _called(expr: ir.Call) -> ir.Name:
    """The function a tensor call names (`is_tensor_expression` takes calls of a plain name only)."""
    assert isinstance(expr.func, ir.Name), "a tensor expression calls something other than a name"
    return expr.func


def _near_function(name: str) -> str | None:
    from netdsl.errors import did_you_mean

    return did_you_mean(name, list(OP_FUNCTIONS) + list(LAYER_FUNCTIONS))
