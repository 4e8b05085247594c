"""The expression-tree language of activations and layers DECLARED in a spec.

A spec never ships Python: a declared body is an expression TREE made of
plain JSON data, evaluated with a fixed table of `keras.ops` functions. The
tree is what the saved model's config holds, and it is re-validated on
load, so a tampered `.keras` file cannot reach any other function.

Expression nodes (lists; tuples are accepted and stored as lists):

    ["num", 1.5]                     a number (int or float, not bool)
    ["const", value]                 any JSON constant; lists evaluate to
                                     tuples (perms, shapes, axes)
    ["var", "x"]                     a name bound at evaluation time
    ["neg", A]                       unary minus
    ["bin", OP, A, B]                OP in + - * / ** @  (@ = matmul)
    ["call", FNAME, [ARGS], {KW: A}] FNAME from FUNCTIONS; the kwargs dict
                                     may be omitted
    ["dim", NAME, INDEX]             static size of input NAME's axis INDEX,
                                     batch axis excluded (declared layers
                                     only; falls back to the dynamic size)

Weight-shape (dimension) trees use a smaller set evaluated to Python ints:
`["num", n]`, `["const", n]`, `["var", PARAM]`, `["dim", INPUT, INDEX]`,
`["neg", A]`, `["bin", OP, A, B]` with OP in + - * //, and
`["call", "max"|"min", [A, B], {}]`.

Python numbers are folded in Python (`sqrt(d_model)` stays a weakly typed
float), so constants never upcast float16 tensors.

The Keras objects that hold and evaluate these trees (DeclaredActivation,
ActivationLayer, DeclaredLayer) live in `netdsl.custom.declared_layers`.
"""

import math
from collections import namedtuple

import keras
from keras import ops

from netdsl.custom import activations as _acts
from netdsl.limits import MAX_SAVED_EXPR_DEPTH
from netdsl.semantics.values import is_number

MAX_DEPTH = MAX_SAVED_EXPR_DEPTH  # deeper trees are refused rather than risking recursion

# --------------------------------------------------------------------------
# The function table.

FunctionSpec = namedtuple("FunctionSpec", ["fn", "min_args", "max_args", "kwargs"])
FunctionSpec.__doc__ = (
    "(callable, min positional args, max positional args or None for variadic, allowed keyword names)"
)

_REDUCE_KW = frozenset({"axis", "keepdims"})
_NO_KW: frozenset[str] = frozenset()


def _reduction(op):
    def reduce(x, axis=None, keepdims=False):
        return op(x, axis=axis, keepdims=keepdims)

    reduce.__name__ = op.__name__
    return reduce


def _softmax(x, axis=-1):
    return ops.softmax(x, axis=axis)


def _transpose(x, perm=None):
    return ops.transpose(x, axes=perm)


def _reshape(x, shape):
    return ops.reshape(x, shape)


def _concatenate(*tensors, axis=0):
    return ops.concatenate(list(tensors), axis=axis)


def _key_item(item):
    """One stored subscript (see `netdsl.semantics.slicing`) as Python's: a slice, Ellipsis, None or an int."""
    if item == "...":
        return Ellipsis
    if isinstance(item, tuple):
        if len(item) != 3 or not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in item):
            raise ValueError(f"Expected a slice as [start, stop, step] of integers or null, received: {item!r}")
        if item[2] == 0:
            raise ValueError("Expected a slice step other than 0, received: 0")
        return slice(*item)
    if item is None or (isinstance(item, int) and not isinstance(item, bool)):
        return item
    raise ValueError(f"Expected a subscript (an integer, a slice, null or '...'), received: {item!r}")


def _get_item(x, key):
    """`x[key]` (keras.ops.get_item), the key as stored: a list of subscripts, the batch axis first.

    A backwards slice (`x[:, ::-1]`) is taken forwards, then flipped: torch tensors refuse a
    negative step, so every backend does it the same way (the axis's size must be static)."""
    if not isinstance(key, tuple):
        raise ValueError(f"Expected a list of subscripts, received: {key!r}")
    items = [_key_item(item) for item in key]
    if len(items) > 1 and items[-1] is Ellipsis:  # implied there anyway; tf2onnx misreads a written one
        items.pop()
    if not any(isinstance(i, slice) and i.step is not None and i.step < 0 for i in items):
        return ops.get_item(x, tuple(items))
    forward, flipped = _forwards(items, tuple(x.shape))
    out = ops.get_item(x, tuple(forward))
    return ops.flip(out, axis=flipped) if flipped else out


def _forwards(items, shape):
    """The key with each backwards slice made the forward slice of the same positions, and the axes of
    the result to flip."""
    if items.count(Ellipsis) > 1:
        raise ValueError("Expected one '...' in a slice")
    named = sum(1 for i in items if i is not Ellipsis and i is not None)
    forward, flipped = [], []
    axis, out_axis = 0, 0  # the input's axis a subscript reads, the result's axis it makes
    for item in items:
        if item is Ellipsis:
            spread = len(shape) - named
            forward.append(Ellipsis)
            axis, out_axis = axis + spread, out_axis + spread
        elif item is None:
            forward.append(None)
            out_axis += 1
        elif isinstance(item, int):
            forward.append(item)
            axis += 1
        else:
            if item.step is not None and item.step < 0:
                size = shape[axis]
                if size is None:
                    raise ValueError(f"Expected a static size for axis {axis} to slice it backwards")
                taken = range(size)[item]
                item = slice(taken[-1], taken[0] + 1, -item.step) if taken else slice(0, 0)
                flipped.append(out_axis)
            forward.append(item)
            axis, out_axis = axis + 1, out_axis + 1
    return forward, tuple(flipped)


def _split(x, parts, axis=None):
    """keras.ops.split: `parts` equal sections, or the indices the axis is cut at."""
    return ops.split(x, list(parts) if isinstance(parts, tuple) else parts, axis=axis)


def _unstack(x, axis=None):
    return ops.unstack(x, axis=axis)


def _unary(fn):
    return FunctionSpec(fn, 1, 1, _NO_KW)


# -- spectral functions: a complex signal is two real tensors, its real and imaginary parts.
# keras.ops' transforms take float32 (not float16): they run in float32 and give the inputs'
# float dtype back, as keras_hub's FNetEncoder does around `ops.fft2`.


def _in_float32(transform):
    """`transform` of float32 tensors, its outputs cast back to the first input's float dtype."""

    def run(*tensors, **kwargs):
        dtype = tensors[0].dtype
        out = transform(*(ops.cast(t, "float32") for t in tensors), **kwargs)
        back = dtype if "float" in str(dtype) and str(dtype) != "float32" else None
        if back is None:
            return out
        return tuple(ops.cast(o, back) for o in out) if isinstance(out, tuple) else ops.cast(out, back)

    run.__name__ = transform.__name__
    return run


@_in_float32
def _fft(real, imag):
    return tuple(ops.fft((real, imag)))


@_in_float32
def _fft2(real, imag):
    return tuple(ops.fft2((real, imag)))


@_in_float32
def _ifft2(real, imag):
    return tuple(ops.ifft2((real, imag)))


@_in_float32
def _rfft(x, fft_length=None):
    return tuple(ops.rfft(x, fft_length=fft_length))


@_in_float32
def _irfft(real, imag, fft_length=None):
    return ops.irfft((real, imag), fft_length=fft_length)


@_in_float32
def _stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    return tuple(ops.stft(x, sequence_length, sequence_stride, fft_length, window=window, center=center))


@_in_float32
def _istft(real, imag, sequence_length, sequence_stride, fft_length, length=None, window="hann", center=True):
    return ops.istft(
        (real, imag), sequence_length, sequence_stride, fft_length, length=length, window=window, center=center
    )


# -- index functions


def _arange(start, stop=None, step=1, dtype=None):
    return ops.arange(start, stop, step, dtype=dtype)


def _per_sample(value, like):
    """`value` (no batch axis, `arange(n)` in a model body) repeated for every sample of `like`'s batch."""
    value = ops.convert_to_tensor(value)
    return ops.broadcast_to(value, (ops.shape(like)[0], *value.shape))


def _one_hot(x, num_classes, axis=-1, dtype=None):
    return ops.one_hot(x, num_classes, axis=axis, dtype=dtype)


def _cumsum(x, axis=None):
    return ops.cumsum(x, axis=axis)


def _cumprod(x, axis=None):
    return ops.cumprod(x, axis=axis)


def _argmax(x, axis=None, keepdims=False):
    return ops.argmax(x, axis=axis, keepdims=keepdims)


def _argmin(x, axis=None, keepdims=False):
    return ops.argmin(x, axis=axis, keepdims=keepdims)


def _top_k(x, k, sorted=True):
    return tuple(ops.top_k(x, k, sorted=sorted))


def _cast(x, dtype):
    return ops.cast(x, dtype)


_FRAMES_KW = frozenset({"sequence_length", "sequence_stride", "fft_length", "window", "center"})


FUNCTIONS = {
    # elementwise math
    "sin": _unary(ops.sin),
    "cos": _unary(ops.cos),
    "tanh": _unary(ops.tanh),
    "sigmoid": _unary(ops.sigmoid),
    "exp": _unary(ops.exp),
    "log": _unary(ops.log),
    "log1p": _unary(ops.log1p),
    "sqrt": _unary(ops.sqrt),
    "abs": _unary(ops.abs),
    "relu": _unary(ops.relu),
    "softplus": _unary(ops.softplus),
    "square": _unary(ops.square),
    "erf": _unary(ops.erf),
    "minimum": FunctionSpec(ops.minimum, 2, 2, _NO_KW),
    "maximum": FunctionSpec(ops.maximum, 2, 2, _NO_KW),
    "clip": FunctionSpec(ops.clip, 3, 3, _NO_KW),
    "where": FunctionSpec(ops.where, 3, 3, _NO_KW),
    # comparisons and logic: booleans, for `where` (two operands broadcast as `+`'s do)
    "greater": FunctionSpec(ops.greater, 2, 2, _NO_KW),
    "greater_equal": FunctionSpec(ops.greater_equal, 2, 2, _NO_KW),
    "less": FunctionSpec(ops.less, 2, 2, _NO_KW),
    "less_equal": FunctionSpec(ops.less_equal, 2, 2, _NO_KW),
    "equal": FunctionSpec(ops.equal, 2, 2, _NO_KW),
    "not_equal": FunctionSpec(ops.not_equal, 2, 2, _NO_KW),
    "logical_and": FunctionSpec(ops.logical_and, 2, 2, _NO_KW),
    "logical_or": FunctionSpec(ops.logical_or, 2, 2, _NO_KW),
    "logical_not": _unary(ops.logical_not),
    "cast": FunctionSpec(_cast, 1, 1, frozenset({"dtype"})),
    # tensor ops
    "matmul": FunctionSpec(ops.matmul, 2, 2, _NO_KW),
    "transpose": FunctionSpec(_transpose, 1, 2, _NO_KW),
    "reshape": FunctionSpec(_reshape, 2, 2, _NO_KW),
    "sum": FunctionSpec(_reduction(ops.sum), 1, 1, _REDUCE_KW),
    "mean": FunctionSpec(_reduction(ops.mean), 1, 1, _REDUCE_KW),
    "max": FunctionSpec(_reduction(ops.max), 1, 1, _REDUCE_KW),
    "min": FunctionSpec(_reduction(ops.min), 1, 1, _REDUCE_KW),
    "softmax": FunctionSpec(_softmax, 1, 1, frozenset({"axis"})),
    "concatenate": FunctionSpec(_concatenate, 1, None, frozenset({"axis"})),
    "get_item": FunctionSpec(_get_item, 2, 2, _NO_KW),
    "split": FunctionSpec(_split, 2, 2, frozenset({"axis"})),
    "unstack": FunctionSpec(_unstack, 1, 1, frozenset({"axis"})),
    "zeros_like": _unary(ops.zeros_like),
    "ones_like": _unary(ops.ones_like),
    # spectral: (real, imag) pairs in and out
    "fft": FunctionSpec(_fft, 2, 2, _NO_KW),
    "fft2": FunctionSpec(_fft2, 2, 2, _NO_KW),
    "ifft2": FunctionSpec(_ifft2, 2, 2, _NO_KW),
    "rfft": FunctionSpec(_rfft, 1, 1, frozenset({"fft_length"})),
    "irfft": FunctionSpec(_irfft, 2, 2, frozenset({"fft_length"})),
    "stft": FunctionSpec(_stft, 1, 1, _FRAMES_KW),
    "istft": FunctionSpec(_istft, 2, 2, _FRAMES_KW | {"length"}),
    # index functions
    "arange": FunctionSpec(_arange, 0, 0, frozenset({"start", "stop", "step", "dtype"})),
    "per_sample": FunctionSpec(_per_sample, 2, 2, _NO_KW),
    "one_hot": FunctionSpec(_one_hot, 1, 1, frozenset({"num_classes", "axis", "dtype"})),
    "cumsum": FunctionSpec(_cumsum, 1, 1, frozenset({"axis"})),
    "cumprod": FunctionSpec(_cumprod, 1, 1, frozenset({"axis"})),
    "argmax": FunctionSpec(_argmax, 1, 1, _REDUCE_KW),
    "argmin": FunctionSpec(_argmin, 1, 1, _REDUCE_KW),
    "top_k": FunctionSpec(_top_k, 1, 1, frozenset({"k", "sorted"})),
    # activations
    "sine": _unary(_acts.sine),
    "smooth_relu": _unary(_acts.smooth_relu),
    "sigmoid_tanh": _unary(_acts.sigmoid_tanh),
    "gelu": FunctionSpec(keras.activations.gelu, 1, 1, frozenset({"approximate"})),
    "silu": _unary(keras.activations.silu),
    "swish": _unary(keras.activations.silu),
    "elu": FunctionSpec(keras.activations.elu, 1, 1, frozenset({"alpha"})),
    "selu": _unary(keras.activations.selu),
    "softsign": _unary(keras.activations.softsign),
    "linear": _unary(keras.activations.linear),
    "hard_sigmoid": _unary(keras.activations.hard_sigmoid),
    "leaky_relu": FunctionSpec(keras.activations.leaky_relu, 1, 1, frozenset({"negative_slope"})),
    "relu6": _unary(keras.activations.relu6),
    "mish": _unary(keras.activations.mish),
}

# Arguments that must evaluate to Python constants (never tensors).
_STATIC_POSITIONS = {"transpose": 1, "reshape": 1, "get_item": 1, "split": 1}
_STATIC_KWARGS = frozenset(
    {"axis", "keepdims", "approximate", "fft_length", "length", "num_classes", "k", "sorted", "dtype"} | _FRAMES_KW
)

# Python equivalents used to fold functions of constants.
_FOLD = {
    "sin": math.sin,
    "cos": math.cos,
    "tanh": math.tanh,
    "exp": math.exp,
    "log": math.log,
    "log1p": math.log1p,
    "sqrt": math.sqrt,
    "abs": abs,
    "square": lambda v: v * v,
    "erf": math.erf,
    "minimum": min,
    "maximum": max,
}

_OPS = {
    "+": ops.add,
    "-": ops.subtract,
    "*": ops.multiply,
    "/": ops.divide,
    "**": ops.power,
    "@": ops.matmul,
}
_PY_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
}
_DIM_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
}
_DIM_FUNCTIONS = {"max": max, "min": min}

_KINDS = ("num", "const", "var", "neg", "bin", "call", "dim")


# --------------------------------------------------------------------------
# Tree normalisation and validation.


def to_json_tree(tree):
    """Return `tree` with tuples turned into lists (the stored form)."""
    if isinstance(tree, (list, tuple)):
        return [to_json_tree(item) for item in tree]
    if isinstance(tree, dict):
        return {key: to_json_tree(value) for key, value in tree.items()}
    return tree


def check_json_constant(value, depth=0):
    if depth > MAX_DEPTH:
        raise ValueError(f"Expected a constant nested at most {MAX_DEPTH} deep, received a deeper one")
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            check_json_constant(item, depth + 1)
        return
    raise ValueError(f"Expected a JSON constant (number, bool, string, null or list), received: {value!r}")


def _node_kind(node, allowed_kinds):
    if not isinstance(node, (list, tuple)) or not node:
        raise ValueError(f"Expected an expression node (a non-empty list), received: {node!r}")
    kind = node[0]
    if kind not in allowed_kinds:
        raise ValueError(f"Expected an expression node of kind {', '.join(allowed_kinds)}, received: {kind!r}")
    return kind


def _check_length(node, *lengths):
    if len(node) not in lengths:
        expected = " or ".join(str(n) for n in lengths)
        raise ValueError(f"Expected a {node[0]!r} node of {expected} items, received: {list(node)!r}")


def _check_name(name, names, what="a name bound in this expression"):
    if not isinstance(name, str) or name not in names:
        known = ", ".join(sorted(names)) or "none"
        raise ValueError(f"Expected {what} ({known}), received: {name!r}")


def _call_parts(node):
    """Return `(fname, args, kwargs)` of a call node, checking its form."""
    _check_length(node, 3, 4)
    fname, args = node[1], node[2]
    kwargs = node[3] if len(node) == 4 else {}
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"Expected a list of arguments for {fname!r}, received: {args!r}")
    if not isinstance(kwargs, dict):
        raise ValueError(f"Expected a dict of keyword arguments for {fname!r}, received: {kwargs!r}")
    return fname, args, kwargs


def _lookup_function(fname):
    if not isinstance(fname, str) or fname not in FUNCTIONS:
        raise ValueError(f"Expected a function from netdsl's allowed table, received: {fname!r}")
    return FUNCTIONS[fname]


def _check_arity(fname, spec, args, kwargs):
    count = len(args)
    too_many = spec.max_args is not None and count > spec.max_args
    if count < spec.min_args or too_many:
        if spec.max_args is None:
            expected = f"at least {spec.min_args}"
        elif spec.min_args == spec.max_args:
            expected = str(spec.min_args)
        else:
            expected = f"{spec.min_args} to {spec.max_args}"
        raise ValueError(f"Expected {expected} positional argument(s) for {fname!r}, received: {count}")
    for key in kwargs:
        if key not in spec.kwargs:
            allowed = ", ".join(sorted(spec.kwargs)) or "none"
            raise ValueError(f"Expected keyword arguments of {fname!r} among ({allowed}), received: {key!r}")


def validate_tree(tree, names, dim_names=()):
    """Check an expression tree; raise `ValueError` on anything unknown.

    Args:
        tree: the expression tree.
        names: names a `var` node may use.
        dim_names: names a `dim` node may use (declared-layer inputs);
            `dim` nodes are refused when empty.
    """
    _validate(tree, frozenset(names), frozenset(dim_names), 0)


def _validate(node, names, dim_names, depth):
    if depth > MAX_DEPTH:
        raise ValueError(f"Expected an expression nested at most {MAX_DEPTH} deep, received a deeper one")
    kinds = _KINDS if dim_names else _KINDS[:-1]
    kind = _node_kind(node, kinds)
    if kind == "num":
        _check_length(node, 2)
        if not is_number(node[1]):
            raise ValueError(f"Expected a number, received: {node[1]!r}")
    elif kind == "const":
        _check_length(node, 2)
        check_json_constant(node[1])
    elif kind == "var":
        _check_length(node, 2)
        _check_name(node[1], names)
    elif kind == "dim":
        _validate_dim_node(node, dim_names)
    elif kind == "neg":
        _check_length(node, 2)
        _validate(node[1], names, dim_names, depth + 1)
    elif kind == "bin":
        _check_length(node, 4)
        if node[1] not in _OPS:
            raise ValueError(f"Expected an operator among {' '.join(_OPS)}, received: {node[1]!r}")
        _validate(node[2], names, dim_names, depth + 1)
        _validate(node[3], names, dim_names, depth + 1)
    else:  # call
        fname, args, kwargs = _call_parts(node)
        spec = _lookup_function(fname)
        _check_arity(fname, spec, args, kwargs)
        for arg in list(args) + list(kwargs.values()):
            _validate(arg, names, dim_names, depth + 1)


def _validate_dim_node(node, dim_names):
    _check_length(node, 3)
    _check_name(node[1], dim_names, "an input name")
    if isinstance(node[2], bool) or not isinstance(node[2], int):
        raise ValueError(f"Expected an integer axis index, received: {node[2]!r}")


# --------------------------------------------------------------------------
# Evaluation.


def _is_constant(value):
    return value is None or isinstance(value, (bool, int, float, str, tuple))


def _static(value, what):
    """Normalise a static argument: lists -> tuples, 2.0 -> 2."""
    if isinstance(value, (list, tuple)):
        return tuple(_static(item, what) for item in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not _is_constant(value):
        raise ValueError(f"Expected a constant for {what}, received a tensor")
    return value


def freeze(value):
    """JSON constant -> evaluation value (lists become tuples)."""
    if isinstance(value, list):
        return tuple(freeze(item) for item in value)
    return value


def evaluate(tree, env):
    """Evaluate an expression tree with `env` binding its names.

    Tensors flow through `keras.ops`; Python numbers are folded in Python.
    Works on concrete and symbolic (KerasTensor) inputs alike.
    """
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "const":
        return freeze(tree[1])
    if kind == "var":
        if tree[1] not in env:
            raise ValueError(f"Expected a value bound to {tree[1]!r}, received none")
        return env[tree[1]]
    if kind == "dim":
        return _runtime_dim(env[tree[1]], tree[2])
    if kind == "neg":
        value = evaluate(tree[1], env)
        return -value if is_number(value) else ops.negative(value)
    if kind == "bin":
        return _apply_operator(tree[1], evaluate(tree[2], env), evaluate(tree[3], env))
    if kind == "call":
        return _apply_call(tree, env)
    raise ValueError(f"Expected an expression node, received: {tree!r}")


def _apply_operator(op, left, right):
    if is_number(left) and is_number(right) and op in _PY_OPS:
        return _PY_OPS[op](left, right)
    return _OPS[op](left, right)


def _apply_call(node, env):
    fname, arg_trees, kwarg_trees = _call_parts(node)
    spec = _lookup_function(fname)  # re-checked: trees may bypass validation
    args = [evaluate(arg, env) for arg in arg_trees]
    kwargs = {key: evaluate(value, env) for key, value in kwarg_trees.items()}
    position = _STATIC_POSITIONS.get(fname)
    if position is not None and len(args) > position:
        args[position] = _static(args[position], f"argument of {fname!r}")
    for key in kwargs:
        if key in _STATIC_KWARGS:
            kwargs[key] = _static(kwargs[key], f"{key!r} of {fname!r}")
    if fname in _FOLD and not kwargs and all(map(is_number, args)):
        return _FOLD[fname](*args)
    return spec.fn(*args, **kwargs)


def _runtime_dim(tensor, index):
    """Size of axis `index` (batch excluded): static when known."""
    rank = len(tensor.shape) - 1
    axis = index if index < 0 else index + 1
    if not -rank <= index < rank:
        raise ValueError(f"Expected an axis index in [{-rank}, {rank}), received: {index}")
    size = tensor.shape[axis]
    return size if size is not None else ops.shape(tensor)[axis]


# --------------------------------------------------------------------------
# Dimension trees (weight shapes).


def validate_dim_tree(tree, params, inputs, depth=0):
    """Check a weight-shape dimension tree; raise `ValueError` if invalid."""
    if depth > MAX_DEPTH:
        raise ValueError(f"Expected a dimension nested at most {MAX_DEPTH} deep, received a deeper one")
    kind = _node_kind(tree, ("num", "const", "var", "dim", "neg", "bin", "call"))
    if kind in ("num", "const"):
        _check_length(tree, 2)
        if isinstance(tree[1], bool) or not isinstance(tree[1], int):
            raise ValueError(f"Expected an integer dimension, received: {tree[1]!r}")
    elif kind == "var":
        _check_length(tree, 2)
        _check_name(tree[1], params, "a layer parameter")
    elif kind == "dim":
        _validate_dim_node(tree, frozenset(inputs))
    elif kind == "neg":
        _check_length(tree, 2)
        validate_dim_tree(tree[1], params, inputs, depth + 1)
    elif kind == "bin":
        _check_length(tree, 4)
        if tree[1] not in _DIM_OPS:
            raise ValueError(f"Expected a dimension operator among + - * //, received: {tree[1]!r}")
        validate_dim_tree(tree[2], params, inputs, depth + 1)
        validate_dim_tree(tree[3], params, inputs, depth + 1)
    else:
        fname, args, kwargs = _call_parts(tree)
        if fname not in _DIM_FUNCTIONS or len(args) != 2 or kwargs:
            raise ValueError(
                f"Expected max(a, b) or min(a, b) in a weight shape, received: {fname!r} with {len(args)} argument(s)"
            )
        for arg in args:
            validate_dim_tree(arg, params, inputs, depth + 1)


def evaluate_dim(tree, params, input_shapes):
    """Evaluate a dimension tree to a Python int (or None if unknown).

    Args:
        params: parameter name -> value.
        input_shapes: input name -> shape with the batch axis excluded.
    """
    kind = tree[0]
    if kind in ("num", "const"):
        return tree[1]
    if kind == "var":
        return _as_int(params[tree[1]], tree[1])
    if kind == "dim":
        shape = input_shapes[tree[1]]
        if not -len(shape) <= tree[2] < len(shape):
            raise ValueError(
                f"Expected an axis index of input {tree[1]!r} in [{-len(shape)}, {len(shape)}), received: {tree[2]}"
            )
        return shape[tree[2]]
    values = [
        evaluate_dim(arg, params, input_shapes)
        for arg in (tree[1:2] if kind == "neg" else tree[2:4] if kind == "bin" else tree[2])
    ]
    if any(value is None for value in values):
        return None
    if kind == "neg":
        return -values[0]
    if kind == "bin":
        return _DIM_OPS[tree[1]](*values)
    return _DIM_FUNCTIONS[tree[1]](*values)


def _as_int(value, name):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"Expected parameter {name!r} to be an integer in a weight shape, received: {value!r}")
    return value
