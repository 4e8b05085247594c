"""Spec-declared activations and layers, checked and turned into expression trees.

`activation mish(x) = x * tanh(smooth_relu(x))` and `layer name(params) { ... }`
become plain-data trees (see `netdsl.custom.expr`) that a generic Keras layer
evaluates with a fixed table of functions. Nothing here imports Keras: the
table's signatures live in `OP_FUNCTIONS`, and a test keeps them equal to the
runtime's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from netdsl.errors import Fail, Span, did_you_mean
from netdsl.limits import MAX_EXPRESSION_DEPTH, MAX_INLINE_DEPTH
from netdsl.semantics import array_ops, slicing
from netdsl.semantics.consts import Consts, bind_plain, is_default
from netdsl.semantics.scope import FileScope, cycle_text
from netdsl.semantics.values import (
    UNKNOWN,
    Binding,
    Env,
    Resolved,
    Sym,
    SymCall,
    TensorValue,
    Value,
    binding_name,
    describe_value,
    is_unknown,
    type_name,
)
from netdsl.syntax import ir

# name: (min positional args, max positional args or None, allowed keywords,
#        indices of positional args that must be constants)
OP_FUNCTIONS: dict[str, tuple[int, int | None, frozenset[str], tuple[int, ...]]] = {}
for _n in (
    "sin cos tanh sigmoid exp log log1p sqrt abs relu softplus square erf sine smooth_relu "
    "sigmoid_tanh silu swish selu softsign linear hard_sigmoid relu6 mish"
).split():
    OP_FUNCTIONS[_n] = (1, 1, frozenset(), ())
OP_FUNCTIONS.update(
    {
        "minimum": (2, 2, frozenset(), ()),
        "maximum": (2, 2, frozenset(), ()),
        "clip": (3, 3, frozenset(), ()),
        "where": (3, 3, frozenset(), ()),
        "matmul": (2, 2, frozenset(), ()),
        "transpose": (1, 2, frozenset(), (1,)),
        "reshape": (2, 2, frozenset(), (1,)),
        "sum": (1, 1, frozenset({"axis", "keepdims"}), ()),
        "mean": (1, 1, frozenset({"axis", "keepdims"}), ()),
        "max": (1, 1, frozenset({"axis", "keepdims"}), ()),
        "min": (1, 1, frozenset({"axis", "keepdims"}), ()),
        "softmax": (1, 1, frozenset({"axis"}), ()),
        "concatenate": (1, None, frozenset({"axis"}), ()),
        "get_item": (2, 2, frozenset(), (1,)),
        "split": (2, 2, frozenset({"axis"}), (1,)),
        "unstack": (1, 1, frozenset({"axis"}), ()),
        "gelu": (1, 1, frozenset({"approximate"}), ()),
        "elu": (1, 1, frozenset({"alpha"}), ()),
        "leaky_relu": (1, 1, frozenset({"negative_slope"}), ()),
        "zeros_like": (1, 1, frozenset(), ()),
        "ones_like": (1, 1, frozenset(), ()),
        "logical_not": (1, 1, frozenset(), ()),
        "cast": (1, 1, frozenset({"dtype"}), ()),
        **{name: (2, 2, frozenset(), ()) for name in array_ops.COMPARISONS},
    }
)
# The spectral and index functions (`semantics.array_ops`): as their trees hold them, the tensors
# positional (a (real, imag) pair as two) and every constant by name.
_FRAMES = frozenset({"sequence_length", "sequence_stride", "fft_length", "window", "center"})
OP_FUNCTIONS.update(
    {
        "fft": (2, 2, frozenset(), ()),
        "fft2": (2, 2, frozenset(), ()),
        "ifft2": (2, 2, frozenset(), ()),
        "rfft": (1, 1, frozenset({"fft_length"}), ()),
        "irfft": (2, 2, frozenset({"fft_length"}), ()),
        "stft": (1, 1, _FRAMES, ()),
        "istft": (2, 2, _FRAMES | {"length"}, ()),
        "arange": (0, 0, frozenset({"start", "stop", "step", "dtype"}), ()),
        "one_hot": (1, 1, frozenset({"num_classes", "axis", "dtype"}), ()),
        "cumsum": (1, 1, frozenset({"axis"}), ()),
        "cumprod": (1, 1, frozenset({"axis"}), ()),
        "argmax": (1, 1, frozenset({"axis", "keepdims"}), ()),
        "argmin": (1, 1, frozenset({"axis", "keepdims"}), ()),
        "top_k": (1, 1, frozenset({"k", "sorted"}), ()),
    }
)
_BINARY = {"+", "-", "*", "/", "**", "@"}
# Functions of the table a declared layer's expressions cannot call: (message, hint).
_NOT_IN_LAYERS = {
    "get_item": ("unknown function 'get_item'", "slice with subscripts: x[:, :256]"),
    "split": (
        "'split' gives several tensors; a declared layer's output is one expression each",
        "slice instead: output x[..., :64], x[..., 64:]",
    ),
    "unstack": (
        "'unstack' gives several tensors; a declared layer's output is one expression each",
        "index instead: output x[:, 0], x[:, 1]",
    ),
}
_DIM_BINARY = {"+", "-", "*", "//"}


@dataclass
class CheckedActivation:
    name: str
    params: list[str]  # the first is the input tensor
    defaults: dict[str, Value]
    body: Any  # tree
    decl: ir.ActivationDecl
    scope: FileScope

    def bind_constants(self, args: list[Value], kwargs: dict[str, Value], span: Span) -> dict[str, Value]:
        """Values of the constant parameters (all but the first) for `activation=name(...)`."""
        params = self.decl.params[1:]
        bound = bind_plain(self.name, "activation", params, args, kwargs, span)
        return {k: self.defaults[k] if is_default(v) else _number(v, span, k) for k, v in bound.items()}

    def config(self, values: dict[str, Value]) -> dict[str, Any]:
        return {"name": self.name, "params": self.params, "values": dict(values), "body": self.body}


@dataclass
class CheckedObjective:
    """A declared loss or metric: `loss NAME(y_true, y_pred, p=v) = BODY`, its body a tree of the targets,
    the outputs and the constant parameters (the runtime's `netdsl.custom.declared_losses`)."""

    kind: str  # "loss" or "metric"
    name: str
    params: list[str]  # the first two are the targets and the outputs
    defaults: dict[str, Value]
    body: Any  # tree
    decl: ir.LossDecl | ir.MetricDecl

    def bind_constants(self, args: list[Value], kwargs: dict[str, Value], span: Span) -> dict[str, Value]:
        """Values of the constant parameters (all but the first two) for `loss = name(...)`."""
        bound = bind_plain(self.name, self.kind, self.decl.params[2:], args, kwargs, span)
        return {k: self.defaults[k] if is_default(v) else _number(v, span, k, self.kind) for k, v in bound.items()}

    def config(self, values: dict[str, Value]) -> dict[str, Any]:
        """What the Keras object is made of and saves: no source text, the checked tree."""
        return {"spec_name": self.name, "params": self.params, "values": dict(values), "body": self.body}


@dataclass
class Instance:
    """A declared layer or activation as one node of the graph."""

    kind: str  # declared_layer | declared_activation
    name: str
    n_inputs: int
    n_outputs: int
    arguments: dict[str, Value]
    config: dict[str, Any] = field(default_factory=dict)


class NamingStep(Protocol):
    """What `Declared.instantiate` reads of the step that names a declaration: a `state.Step`
    (state imports this module, so the class is named here by what it has)."""

    @property
    def name(self) -> str: ...

    @property
    def span(self) -> Span: ...

    @property
    def entry(self) -> object: ...  # a `state.StepEntry`

    @property
    def scope(self) -> FileScope: ...

    @property
    def args(self) -> list[tuple[Value, Span]]: ...

    @property
    def kwargs(self) -> list[tuple[str, Value, Span]]: ...

    @property
    def what(self) -> str: ...


class Declared:
    def __init__(self, consts: Consts):
        self.consts = consts
        self._activations: dict[int, CheckedActivation] = {}
        self._objectives: dict[int, CheckedObjective] = {}
        self.busy: list[str] = []

    # ------------------------------------------------------------ activations
    def activation(self, decl: ir.ActivationDecl, scope: FileScope) -> CheckedActivation:
        key = id(decl)
        if key not in self._activations:
            if decl.name in self.busy:
                raise Fail(decl.span, cycle_text("activation", decl.name, self.busy[self.busy.index(decl.name) :]))
            if not decl.params:
                raise Fail(
                    decl.span, f"activation '{decl.name}' needs an input parameter", f"activation {decl.name}(x) = ..."
                )
            self.busy.append(decl.name)
            try:
                env = Env(scope)
                defaults: dict[str, Value] = {}
                for p in decl.params[1:]:
                    if p.default is None:
                        defaults[p.name] = UNKNOWN
                    else:
                        defaults[p.name] = _number(self.consts.fold(p.default, env), p.default.span, p.name)
                converter = _Trees(
                    self, scope, tensors={decl.params[0].name}, variables={p.name for p in decl.params[1:]}, env=env
                )
                body = converter.tree(decl.body)
            finally:
                self.busy.pop()
            self._activations[key] = CheckedActivation(
                decl.name, [p.name for p in decl.params], defaults, body, decl, scope
            )
        return self._activations[key]

    # ------------------------------------------------------------ losses and metrics
    def objective(self, decl: ir.LossDecl | ir.MetricDecl, scope: FileScope) -> CheckedObjective:
        """A declared loss or metric, checked once: its first two parameters the targets and the outputs,
        the rest numbers; its body an op expression of them, as a declared activation's is."""
        key = id(decl)
        if key not in self._objectives:
            kind = decl.kind
            if len(decl.params) < 2 or any(p.default is not None for p in decl.params[:2]):
                raise Fail(
                    decl.span,
                    f"{kind} '{decl.name}' needs the targets and the outputs as its first parameters",
                    f"{kind} {decl.name}(y_true, y_pred) = ...",
                )
            env = Env(scope)
            defaults: dict[str, Value] = {}
            for p in decl.params[2:]:
                if p.default is None:
                    defaults[p.name] = UNKNOWN
                else:
                    defaults[p.name] = _number(self.consts.fold(p.default, env), p.default.span, p.name, kind)
            tensors = {p.name for p in decl.params[:2]}
            converter = _Trees(
                self, scope, tensors=tensors, variables={p.name for p in decl.params[2:]}, env=env, inputs=tensors
            )
            body = converter.tree(decl.body)
            self._objectives[key] = CheckedObjective(
                kind, decl.name, [p.name for p in decl.params], defaults, body, decl
            )
        return self._objectives[key]

    # ------------------------------------------------------------ instances
    def instantiate(self, step: NamingStep, inputs: Sequence[TensorValue]) -> Instance:
        """A step naming a declared layer or activation, its arguments bound: one node's worth."""
        entry = step.entry
        args = [v for v, _ in step.args]
        kwargs = {k: v for k, v, _ in step.kwargs}
        if isinstance(entry, ir.ActivationDecl):
            act = self.activation(entry, step.scope)
            values = act.bind_constants(args, kwargs, step.span)
            return Instance("declared_activation", act.name, 1, 1, values, act.config(values))
        if not isinstance(entry, ir.LayerDecl):
            raise Fail(step.span, f"internal: '{step.name}' is {step.what}, not a declared layer or activation")
        return self._layer(entry, step.scope, args, kwargs, step.span, inputs)

    def _layer(
        self,
        decl: ir.LayerDecl,
        scope: FileScope,
        args: list[Value],
        kwargs: dict[str, Value],
        span: Span,
        inputs: Sequence[TensorValue],
    ) -> Instance:
        """`decl` called with `args` and `kwargs` at `span` on `inputs` (none: their shapes unknown)."""
        bound = bind_plain(decl.name, "layer", decl.params, args, kwargs, span)
        env = Env(scope)
        values: dict[str, Value] = {}
        for p in decl.params:
            value = bound[p.name]
            if is_default(value):
                value = self.consts.fold(p.default, env)
            values[p.name] = value
            env.vars[p.name] = value
        input_names = [item.name for stmt in decl.body if isinstance(stmt, ir.Input) for item in stmt.items]
        if not input_names:
            raise Fail(decl.span, f"layer '{decl.name}' has no input", "layer name(...) { input x ... }")
        shapes = {name: t.shape for name, t in zip(input_names, inputs)}
        for name in input_names:
            env.vars[name] = _ShapeOnly(shapes.get(name, UNKNOWN))
        weights, outputs = [], []
        tensors = set(input_names)
        for stmt in decl.body:
            if isinstance(stmt, ir.Input):
                continue
            if isinstance(stmt, ir.Let):
                env.vars[stmt.name] = self.consts.fold(stmt.value, env)
            elif isinstance(stmt, ir.Weight):
                weights.append(self._weight(stmt, env, values, input_names, tensors))
                tensors.add(stmt.name)
            elif isinstance(stmt, ir.Output):
                converter = _Trees(
                    self, scope, tensors=tensors, variables=set(values), env=env, inputs=set(input_names)
                )
                for item in stmt.items:
                    expr = item.value
                    if expr is None:
                        expr = ir.Name.model_construct(span=item.span, id=item.name)
                    if item.value is not None and item.name is not None:
                        raise Fail(
                            item.span,
                            "a declared layer's output is an expression, not a binding",
                            "output x @ kernel + bias",
                        )
                    outputs.append(converter.tree(expr))
            else:
                raise Fail(stmt.span, "a declared layer holds only 'input', 'weight', 'let' and 'output'")
        if not outputs:
            raise Fail(decl.span, f"layer '{decl.name}' has no output")
        config = {
            "spec_name": decl.name,
            "inputs": input_names,
            "params": _json_params(values),
            "weights": weights,
            "outputs": outputs,
        }
        return Instance("declared_layer", decl.name, len(input_names), len(outputs), values, config)

    def _weight(
        self, stmt: ir.Weight, env: Env, values: dict[str, Value], inputs: list[str], tensors: set[str]
    ) -> dict[str, Any]:
        if stmt.name in tensors or stmt.name in values:
            raise Fail(stmt.span, f"'{stmt.name}' is already defined in this layer")
        if not isinstance(stmt.shape, ir.Tuple):
            raise Fail(stmt.shape.span, "a weight shape is a tuple", f"weight {stmt.name}: (units,)")
        dims = [_dim_tree(d, env, set(values), set(inputs), self.consts) for d in stmt.shape.items]
        concrete = [self.consts.fold(d, env) for d in stmt.shape.items]
        if not is_unknown(concrete):
            if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in concrete):
                raise Fail(
                    stmt.shape.span,
                    f"weight '{stmt.name}' needs a shape of positive integers, "
                    f"received {describe_value(tuple(concrete))}",
                )
        options = {"init": "glorot_uniform", "trainable": True}
        for opt in stmt.options:
            if opt.name not in options:
                raise Fail(opt.span, f"unknown weight option '{opt.name}'", "options: init=..., trainable=...")
            value = self.consts.fold(opt.value, env)
            if opt.name == "trainable":
                if not isinstance(value, bool):
                    raise Fail(opt.value.span, f"trainable expects true or false, received {type_name(value)}")
                options["trainable"] = value
            else:
                options["init"] = _initializer(value, opt.value.span)
        return {"name": stmt.name, "shape": dims, "init": options["init"], "trainable": options["trainable"]}

    def check_layer(self, decl: ir.LayerDecl, scope: FileScope) -> None:
        """Check a declared layer on its own (parameters unknown)."""
        self._layer(decl, scope, [], {p.name: UNKNOWN for p in decl.params}, decl.span, [])


class _ShapeOnly(TensorValue):
    """An input of a declared layer while its weights are checked: only `.shape` is known."""

    def __init__(self, shape: Value):
        self.shape = shape


class _Trees:
    """IR op expressions to runtime trees, checking names, functions and arity."""

    def __init__(
        self,
        declared: Declared,
        scope: FileScope,
        tensors: set[str],
        variables: set[str],
        env: Env,
        inputs: set[str] | None = None,
        depth: int = 0,
    ):
        self.declared = declared
        self.scope = scope
        self.tensors = tensors
        self.variables = variables
        self.env = env
        self.inputs = inputs or set()
        self.depth = depth
        self.level = 0  # nesting of the expression being converted

    def tree(self, e: Any) -> Any:
        if self.level >= MAX_EXPRESSION_DEPTH:
            raise Fail(e.span, f"expression nested more than {MAX_EXPRESSION_DEPTH} deep")
        self.level += 1
        try:
            return self._tree(e)
        finally:
            self.level -= 1

    def _tree(self, e: Any) -> Any:
        if isinstance(e, ir.Number):
            return ["num", e.value]
        if isinstance(e, ir.Name):
            return self._name(e)
        if isinstance(e, ir.UnaryOp):
            if e.op == "-":
                return ["neg", self.tree(e.operand)]
            if e.op == "+":
                return self.tree(e.operand)
        if isinstance(e, ir.BinOp) and e.op in _BINARY:
            return ["bin", e.op, self.tree(e.left), self.tree(e.right)]
        if isinstance(e, ir.Call):
            return self._call(e)
        if isinstance(e, ir.Index) and _is_shape_attr(e.value):
            return self._dim(e)
        if isinstance(e, ir.Index) and self._mentions_tensor(e.value):
            return self._slice(e)
        if self._is_constant(e):
            return ["const", _jsonable(self.declared.consts.fold(e, self.env), e.span)]
        raise Fail(
            e.span,
            "not allowed in an op expression",
            "op expressions use + - * / ** @, numbers, names and functions such as tanh(x)",
        )

    def _name(self, e: ir.Name) -> Any:
        if e.id in self.tensors or e.id in self.variables:
            return ["var", e.id]
        value = self.declared.consts.lookup(e.id, self.env, e.span)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return ["num", value]
        if isinstance(value, Sym):
            pool = list(self.tensors) + list(self.variables) + list(OP_FUNCTIONS)
            raise Fail(e.span, f"unknown name '{e.id}'", did_you_mean(e.id, pool))
        return ["const", _jsonable(value, e.span)]

    def _slice(self, e: ir.Index) -> Any:
        """`x[:, :256]`: NumPy's subscripts, the batch axis first and whole for a tensor that has one
        (an expression of the inputs; a weight has no batch axis)."""
        items = list(e.index.items) if isinstance(e.index, ir.Tuple) else [e.index]
        key = [self._subscript(item) for item in items]
        try:
            slicing.check_items(key, batch=self._mentions_input(e.value))
        except slicing.SliceError as exc:
            raise slicing.slice_failure(exc, e, items) from None
        if slicing.has_unknown(key):  # a layer checked on its own: its parameters are unknown
            key = [[None, None, None] if item is UNKNOWN or isinstance(item, list) else item for item in key]
        return ["call", "get_item", [self.tree(e.value), ["const", key]], {}]

    def _subscript(self, item: Any) -> Any:
        if isinstance(item, ir.EllipsisLit):
            return slicing.ELLIPSIS
        parts = [item.start, item.stop, item.step] if isinstance(item, ir.Slice) else [item]
        values: list[Any] = []
        for part in parts:
            if part is None:
                values.append(None)
                continue
            if self._mentions_tensor(part):
                raise Fail(part.span, "a tensor's subscripts are constants, not tensors")
            value = self.declared.consts.fold(part, self.env)
            if not (value is None or value is UNKNOWN or (isinstance(value, int) and not isinstance(value, bool))):
                raise Fail(
                    part.span,
                    f"a tensor's subscript is an integer, a slice (1:5), none or ..., received {type_name(value)}",
                )
            values.append(value)
        return values if isinstance(item, ir.Slice) else values[0]

    def _mentions_input(self, e: Any) -> bool:
        if isinstance(e, ir.Name):
            return e.id in self.inputs
        return any(self._mentions_input(child) for child in _children(e))

    def _dim(self, e: ir.Index) -> Any:
        name = _shape_input(e.value)
        if name not in self.inputs:
            raise Fail(e.value.span, f"'{name}' is not an input of this layer; only inputs have a shape")
        index = self.declared.consts.fold(e.index, self.env)
        if not isinstance(index, int) or isinstance(index, bool):
            raise Fail(e.index.span, f"a shape index must be an integer, received {type_name(index)}")
        return ["dim", name, index]

    def _call(self, e: ir.Call) -> Any:
        if not isinstance(e.func, ir.Name):
            raise Fail(
                e.func.span,
                "only functions from netdsl's fixed list can be called here",
                "e.g. tanh(x), softmax(x, axis=-1), transpose(x, (0, 2, 1))",
            )
        name = e.func.id
        found = self.scope.find(name)
        if found is not None and isinstance(found[0], ir.ActivationDecl):
            return self._inline(found[0], found[1], e)
        if name not in OP_FUNCTIONS:
            raise Fail(
                e.func.span,
                f"unknown function '{name}'",
                did_you_mean(name, list(OP_FUNCTIONS))
                or "op expressions call only netdsl's fixed functions (docs/language.md, section 7)",
            )
        if name in _NOT_IN_LAYERS:
            raise Fail(e.func.span, *_NOT_IN_LAYERS[name])
        if name in array_ops.SIGNATURES:
            return self._array_call(name, e)
        if name == "cast":
            return self._cast(e)
        lo, hi, keywords, constant_args = OP_FUNCTIONS[name]
        if len(e.args) < lo or (hi is not None and len(e.args) > hi):
            wanted = f"{lo}" if lo == hi else (f"{lo} or more" if hi is None else f"{lo} to {hi}")
            raise Fail(e.span, f"'{name}' takes {wanted} argument{'s' if hi != 1 else ''}, received {len(e.args)}")
        args = []
        for i, arg in enumerate(e.args):
            args.append(self._constant_tree(arg, name) if i in constant_args else self.tree(arg))
        if name == "transpose":
            if len(e.args) != 2:
                raise Fail(e.span, "'transpose' takes a tensor and a perm: transpose(x, (0, 2, 1))")
            if self._mentions_input(e.args[0]):  # a weight's perm has no batch axis to keep
                slicing.check_perm(args[1][1], None, e.args[1].span)
        if name == "reshape" and self._mentions_input(e.args[0]):
            shape = args[1][1]
            if isinstance(shape, list) and shape and shape[0] != -1 and None not in shape:
                raise Fail(
                    e.args[1].span,
                    "the shape of 'reshape' starts with the batch axis, -1, as keras.ops.reshape's does",
                    f"write reshape(x, {describe_value((-1, *shape))})",
                )
        kwargs = {}
        for kw in e.kwargs:
            if kw.name not in keywords:
                raise Fail(
                    kw.span,
                    f"'{name}' has no parameter '{kw.name}'",
                    ("its parameters: " + ", ".join(sorted(keywords))) if keywords else f"'{name}' takes none",
                )
            kwargs[kw.name] = self._constant_tree(kw.value, name)
        return ["call", name, args, kwargs]

    def _array_call(self, name: str, e: ir.Call) -> Any:
        """`irfft((re, im))`, `one_hot(x, 10)`, `arange(8)`: the tensors positional, every constant by name.
        A function that gives several tensors belongs in a model or block body, where they are destructured."""
        signature = array_ops.SIGNATURES[name]
        if signature.outputs > 1:
            raise Fail(
                e.func.span,
                f"'{name}' gives {signature.outputs} tensors; a declared layer's output is one expression each",
                f"call it in a model or block body: {_destructured(name, signature.usage)}",
            )
        operands, written = array_ops.split_arguments(name, e)
        constants = {key: self._constant_tree(value, name)[1] for key, value in written.items()}
        bound = array_ops.bind(name, constants)
        try:
            array_ops.dtype(bound, name)
        except array_ops.ArrayOpError as exc:
            raise Fail(written[exc.param].span if exc.param in written else e.span, str(exc), exc.hint) from None
        kwargs = {key: ["const", value] for key, value in bound.items()}  # none too: window=none is no window
        return ["call", name, [self.tree(operand) for operand in operands], kwargs]

    def _cast(self, e: ir.Call) -> Any:
        """`cast(x, "float32")` or `cast(x, dtype="float32")`, as keras.ops.cast takes it."""
        written = {kw.name: kw for kw in e.kwargs}
        if len(e.args) + len(written) != 2 or len(e.args) < 1 or set(written) - {"dtype"}:
            raise Fail(e.span, "'cast' takes a tensor and a dtype: cast(x, \"float32\")")
        value = e.args[1] if len(e.args) == 2 else written["dtype"].value
        dtype = self._constant_tree(value, "cast")
        try:
            array_ops.dtype({"dtype": dtype[1]}, "cast")
        except array_ops.ArrayOpError as exc:
            raise Fail(value.span, str(exc), exc.hint) from None
        if dtype[1] is None:
            raise Fail(value.span, "'cast' needs a dtype: cast(x, \"float32\")")
        return ["call", "cast", [self.tree(e.args[0])], {"dtype": dtype}]

    def _constant_tree(self, e: Any, owner: str) -> Any:
        if self._mentions_tensor(e):
            raise Fail(e.span, f"this argument of '{owner}' must be a constant, not a tensor")
        value = self.declared.consts.fold(e, self.env)
        return ["const", _jsonable(value, e.span)]

    def _inline(self, decl: ir.ActivationDecl, scope: FileScope, e: ir.Call) -> Any:
        busy = self.declared.busy
        if decl.name in busy:
            raise Fail(e.func.span, cycle_text("activation", decl.name, busy[busy.index(decl.name) :]))
        act = self.declared.activation(decl, scope)
        if len(e.args) < 1:
            raise Fail(e.span, f"activation '{decl.name}' needs its input: {decl.name}(x)")
        if self.depth > MAX_INLINE_DEPTH:
            raise Fail(e.span, "activations nested too deeply")
        x = self.tree(e.args[0])
        consts = [self.declared.consts.fold(a, self.env) for a in e.args[1:]]
        kw = {k.name: self.declared.consts.fold(k.value, self.env) for k in e.kwargs}
        values = act.bind_constants(consts, kw, e.span)
        substitution = {act.params[0]: x}
        substitution.update({k: ["num", v] for k, v in values.items()})
        inlined = _substitute(act.body, substitution)
        if _tree_depth(inlined) + self.level > MAX_EXPRESSION_DEPTH:
            raise Fail(e.span, f"expression nested more than {MAX_EXPRESSION_DEPTH} deep once '{decl.name}' is inlined")
        return inlined

    def _is_constant(self, e: Any) -> bool:
        return isinstance(e, (ir.Tuple, ir.List, ir.String, ir.Bool, ir.NoneLit)) and not self._mentions_tensor(e)

    def _mentions_tensor(self, e: Any) -> bool:
        if isinstance(e, ir.Name):
            return e.id in self.tensors
        return any(self._mentions_tensor(child) for child in _children(e))


def _destructured(name: str, usage: str) -> str:
    """The usage of a function that gives several tensors, with names on the left."""
    return usage if "=" in usage.split("(")[0] else f"re, im = {usage}"


def _children(e: Any) -> list[Any]:
    out = []
    for value in e.__dict__.values():
        if isinstance(value, ir.Node):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ir.Node))
    return out


def _substitute(tree: Any, mapping: dict[str, Any]) -> Any:
    if isinstance(tree, list):
        if len(tree) == 2 and tree[0] == "var" and tree[1] in mapping:
            return mapping[tree[1]]
        return [_substitute(t, mapping) for t in tree]
    if isinstance(tree, dict):
        return {k: _substitute(v, mapping) for k, v in tree.items()}
    return tree


def _tree_depth(tree: Any) -> int:
    """How deep a tree's lists nest (without recursion: it may be deep)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, dict):
            stack.extend((child, depth) for child in node.values())
    return deepest


def _is_shape_attr(e: Any) -> bool:
    return isinstance(e, ir.Attr) and e.attr == "shape" and isinstance(e.value, ir.Name)


def _shape_input(e: Any) -> str:
    """`x` of `x.shape`, an expression `_is_shape_attr` accepted."""
    return str(e.value.id)


def _dim_tree(e: Any, env: Env, params: set[str], inputs: set[str], consts: Consts) -> Any:
    if isinstance(e, ir.Number):
        return ["num", e.value]
    if isinstance(e, ir.Name) and e.id in params:
        return ["var", e.id]
    if isinstance(e, ir.Index) and _is_shape_attr(e.value):
        if _shape_input(e.value) not in inputs:
            raise Fail(e.value.span, f"'{_shape_input(e.value)}' is not an input of this layer")
        index = consts.fold(e.index, env)
        if not isinstance(index, int) or isinstance(index, bool):
            raise Fail(e.index.span, "a shape index must be an integer")
        return ["dim", _shape_input(e.value), index]
    if isinstance(e, ir.BinOp) and e.op in _DIM_BINARY:
        return [
            "bin",
            e.op,
            _dim_tree(e.left, env, params, inputs, consts),
            _dim_tree(e.right, env, params, inputs, consts),
        ]
    if isinstance(e, ir.UnaryOp) and e.op == "-":
        return ["neg", _dim_tree(e.operand, env, params, inputs, consts)]
    if isinstance(e, ir.Call) and isinstance(e.func, ir.Name) and e.func.id in ("max", "min") and len(e.args) == 2:
        return ["call", e.func.id, [_dim_tree(a, env, params, inputs, consts) for a in e.args], {}]
    value = consts.fold(e, env)
    if isinstance(value, int) and not isinstance(value, bool):
        return ["num", value]
    if value is UNKNOWN:
        raise Fail(
            e.span,
            "a weight dimension must be built from numbers, parameters and input shapes",
            "e.g. (x.shape[-1], units)",
        )
    raise Fail(e.span, f"a weight dimension must be an integer, received {type_name(value)}")


def _number(value: Value, span: Span, name: str, kind: str = "activation") -> Value:
    if value is UNKNOWN or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise Fail(span, f"{kind} parameter '{name}' must be a number, received {type_name(value)}")


def _initializer(value: Value, span: Span) -> Any:
    """A weight's `init=`: an initializer name (`zeros`), or a call with constant
    arguments (`random_uniform(minval=-0.05, maxval=0.05)`) checked against
    the registry; the runtime config form of `netdsl.custom.declared_layers`."""
    from netdsl.semantics.args import Arguments

    if not isinstance(value, (Sym, SymCall, str)):
        raise Fail(span, f"init expects an initializer such as glorot_uniform or zeros, received {type_name(value)}")
    resolved = Arguments(lambda sym: None).resolve(value, ("initializer",), span)
    args = {k: v for k, v in resolved.kwargs}
    for key, arg in args.items():
        if not (arg is None or isinstance(arg, (bool, int, float, str))):
            raise Fail(span, f"initializer argument '{key}' must be a number, string or boolean here")
    return {"name": resolved.name, "args": args} if args else resolved.name


def _jsonable(value: Binding, span: Span) -> Any:
    if value is UNKNOWN or value is None or isinstance(value, (bool, int, float, str)):
        return None if value is UNKNOWN else value
    if isinstance(value, (tuple, list)):
        return [_jsonable(v, span) for v in value]
    if isinstance(value, (Sym, SymCall, Resolved)):
        raise Fail(span, f"unknown name '{describe_value(value)}'")
    raise Fail(span, f"{binding_name(value)} cannot stand in an op expression")


def _json_params(values: dict[str, Value]) -> dict[str, Any]:
    return {
        k: (None if v is UNKNOWN else v)
        for k, v in values.items()
        if v is UNKNOWN or isinstance(v, (bool, int, float, str, type(None), list, tuple))
    }
