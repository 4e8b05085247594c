"""Output shapes of spec-declared layers, inferred from their expression trees.

`check` has no Keras to run a declared layer, so it evaluates the layer's
output trees over shapes instead of tensors: elementwise functions keep the
shape, binary operators broadcast, `@` is a matmul, and `transpose`,
`reshape`, reductions, `softmax` and `concatenate` do what they do to
shapes. Shapes here include the batch axis (op expressions act on whole
tensors); anything not understood gives `UNKNOWN`, never an error.
"""

from __future__ import annotations

import math
from typing import Any

from netdsl.errors import BuildError
from netdsl.semantics import array_ops, slicing
from netdsl.semantics.values import UNKNOWN, describe_value

_SAME_SHAPE = {
    "softmax",
    "relu",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "log1p",
    "sqrt",
    "abs",
    "softplus",
    "square",
    "erf",
    "sin",
    "cos",
    "sine",
    "smooth_relu",
    "sigmoid_tanh",
    "gelu",
    "silu",
    "swish",
    "elu",
    "selu",
    "softsign",
    "linear",
    "hard_sigmoid",
    "leaky_relu",
    "relu6",
    "mish",
    "zeros_like",
    "ones_like",
    "logical_not",
    "cast",
}
_BROADCAST = {"minimum", "maximum", "where", "clip", *array_ops.COMPARISONS}
_REDUCE = {"sum", "mean", "max", "min"}
# Functions whose result is not their input's shape (a declared activation calling one is a step of its own shape).
_RESHAPING = {"get_item", "matmul", "transpose", "reshape", "concatenate"} | _REDUCE
_RESHAPING |= set(array_ops.SIGNATURES) - {"cumsum", "cumprod"}


def declared_output_shapes(config: dict[str, Any], input_shapes: list[tuple[Any, ...]]) -> list[Any]:
    """The output shapes (batch axis excluded) of a DeclaredLayer config."""
    inputs = dict(zip(config["inputs"], input_shapes))
    env: dict[str, tuple[Any, ...]] = {name: (None,) + tuple(shape) for name, shape in inputs.items()}
    try:
        for weight in config["weights"]:
            env[weight["name"]] = tuple(_dim(d, config["params"], inputs) for d in weight["shape"])
    except ValueError:
        return [UNKNOWN] * len(config["outputs"])
    out = []
    for tree in config["outputs"]:
        try:
            shape = _shape(tree, env)
            out.append(tuple(shape[1:]) if len(shape) >= 1 else UNKNOWN)
        except (TypeError, ValueError, IndexError, KeyError):
            out.append(UNKNOWN)
        except BuildError as exc:  # what the Keras build would refuse: said at the step that uses the layer
            raise BuildError(f"in layer '{config['spec_name']}': {exc}") from None
    return out


def declared_activation_shape(config: dict[str, Any], input_shape: Any) -> Any:
    """The output shape (batch axis excluded) of a DeclaredActivation config: its input's, unless
    its body slices (`x[..., :4] * sigmoid(x[..., 4:])`); UNKNOWN when the rules cannot tell."""
    if not takes_slices(config["body"]):
        return input_shape
    if input_shape is UNKNOWN:
        return UNKNOWN
    env = {config["params"][0]: (None, *input_shape)}
    try:
        shape = _shape(config["body"], env)
    except (TypeError, ValueError, IndexError, KeyError):
        return UNKNOWN
    except BuildError as exc:
        raise BuildError(f"in activation '{config['name']}': {exc}") from None
    return tuple(shape[1:]) if shape else UNKNOWN


def declared_objective_shape(config: dict[str, Any], output_shape: tuple[Any, ...]) -> Any:
    """The shape (batch axis included) of a declared loss's or metric's value on an output of `output_shape`
    (batch axis excluded), the targets taken of the same shape; UNKNOWN when the rules cannot tell.
    BuildError: what Keras would refuse (a reduction over an axis the tensors lack)."""
    tensor = (None, *output_shape)
    try:
        return _shape(config["body"], {config["params"][0]: tensor, config["params"][1]: tensor})
    except (TypeError, ValueError, IndexError, KeyError):
        return UNKNOWN


def takes_slices(tree: Any) -> bool:
    """Whether an expression tree slices (`get_item`) or calls a function of another shape (`argmax`,
    `one_hot`, `irfft`, ...): its shape is not its input's."""
    return reshaping_call(tree) is not None


def reshaping_call(tree: Any) -> str | None:
    """The first function of an expression tree whose result has another shape than its input (`get_item`
    of a slice, `argmax`, `one_hot`, ...), or None."""
    if isinstance(tree, (list, tuple)):
        if len(tree) > 1 and tree[0] == "call" and tree[1] in _RESHAPING:
            return str(tree[1])
        if len(tree) > 1 and tree[0] == "bin" and tree[1] == "@":
            return "matmul"
        return next((found for t in tree if (found := reshaping_call(t)) is not None), None)
    if isinstance(tree, dict):
        return next((found for t in tree.values() if (found := reshaping_call(t)) is not None), None)
    return None


def declared_param_count(config: dict[str, Any], input_shapes: list[tuple[Any, ...]]) -> int | None:
    """The parameter count of a DeclaredLayer config (its weights' sizes); None when a size is unknown."""
    sizes = _weight_sizes(config, input_shapes)
    return None if sizes is None else sum(sizes)


def declared_non_trainable_count(config: dict[str, Any], input_shapes: list[tuple[Any, ...]]) -> int | None:
    """The size of a DeclaredLayer config's `trainable=false` weights; None when a size is unknown."""
    sizes = _weight_sizes(config, input_shapes)
    if sizes is None:
        return None
    return sum(n for n, weight in zip(sizes, config["weights"]) if weight.get("trainable", True) is False)


def _weight_sizes(config: dict[str, Any], input_shapes: list[tuple[Any, ...]]) -> list[int] | None:
    inputs = dict(zip(config["inputs"], input_shapes))
    try:
        dims = [[_dim(d, config["params"], inputs) for d in weight["shape"]] for weight in config["weights"]]
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    if any(not isinstance(d, int) or d <= 0 for shape in dims for d in shape):
        return None  # Keras refuses such a weight; let the build say so
    return [math.prod(shape) for shape in dims]


def _dim(tree: list[Any], params: dict[str, Any], inputs: dict[str, Any]) -> int:
    kind = tree[0]
    if kind in ("num", "const") and isinstance(value := tree[1], int):
        return value
    if kind == "var" and isinstance(value := params.get(tree[1]), int):
        return value
    if kind == "dim":
        value = inputs[tree[1]][tree[2]]
        if not isinstance(value, int):
            raise ValueError("not understood")
        return value
    if kind == "neg":
        return -_dim(tree[1], params, inputs)
    if kind == "bin":
        a, b = _dim(tree[2], params, inputs), _dim(tree[3], params, inputs)
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0}[tree[1]]
    if kind == "call" and tree[1] in ("max", "min"):
        values = [_dim(a, params, inputs) for a in tree[2]]
        return max(values) if tree[1] == "max" else min(values)
    raise ValueError("not understood")


def _shape(tree: list[Any], env: dict[str, Any]) -> tuple[Any, ...]:
    kind = tree[0]
    if kind in ("num", "dim"):
        return ()
    if kind == "var":
        scalar: tuple[Any, ...] = env.get(tree[1], ())  # a parameter is a scalar
        return scalar
    if kind == "neg":
        return _shape(tree[1], env)
    if kind == "bin":
        a, b = _shape(tree[2], env), _shape(tree[3], env)
        return _matmul(a, b) if tree[1] == "@" else _broadcast(a, b)
    if kind == "call":
        return _call(tree[1], tree[2], tree[3] if len(tree) > 3 else {}, env)
    raise ValueError("not understood")


def _call(name: str, args: list[Any], kwargs: dict[str, Any], env: dict[str, Any]) -> tuple[Any, ...]:
    if name in _SAME_SHAPE:
        return _shape(args[0], env)
    if name in _BROADCAST:
        shape: tuple[Any, ...] = ()
        for arg in args:
            shape = _broadcast(shape, _shape(arg, env))
        return shape
    if name in array_ops.SIGNATURES:
        return _array_call(name, [_shape(a, env) for a in args], {k: _const(v) for k, v in kwargs.items()})
    if name == "matmul":
        return _matmul(_shape(args[0], env), _shape(args[1], env))
    if name == "transpose":
        shape = _shape(args[0], env)
        perm = _const(args[1]) if len(args) > 1 else list(reversed(range(len(shape))))
        if len(perm) != len(shape):  # Keras refuses it: so does check
            raise BuildError(
                f"the perm {describe_value(tuple(perm))} of 'transpose' names {len(perm)} axes "
                f"of a tensor of {len(shape)} (the batch axis and {len(shape) - 1} more)"
            )
        return tuple(shape[p] for p in perm)
    if name == "get_item":
        return slicing.sliced_shape(_shape(args[0], env), _const(args[1]), batch=False)  # checked where written
    if name == "reshape":
        return _reshape(_shape(args[0], env), tuple(_const(args[1])))
    if name in _REDUCE:
        return _reduce(
            name,
            _shape(args[0], env),
            _const(kwargs.get("axis", ["const", None])),
            bool(_const(kwargs.get("keepdims", ["const", False]))),
        )
    if name == "concatenate":
        shapes = [_shape(a, env) for a in args]
        axis = _const(kwargs.get("axis", ["const", 0]))
        axis = axis % len(shapes[0])
        sizes = [s[axis] for s in shapes]
        out = list(shapes[0])
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)
    raise ValueError("not understood")


def _array_call(name: str, shapes: list[tuple[Any, ...]], params: dict[str, Any]) -> tuple[Any, ...]:
    """A spectral or index function (`semantics.array_ops`) of the layer's inputs; `arange` is keras.ops'
    (no batch axis: it broadcasts as a weight does). Of a weight, which has no batch axis, not understood."""
    bound = array_ops.bind(name, params)
    if name == "arange":
        return (array_ops.arange_length(bound),)
    if any(not shape or shape[0] is not None for shape in shapes):
        raise ValueError("not understood")
    return array_ops.output_shapes(name, shapes, bound)[0]


def _const(tree: list[Any]) -> Any:
    if tree[0] in ("const", "num"):
        return tree[1]
    raise ValueError("not understood")


def _broadcast(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for x, y in zip(((1,) * (len(b) - len(a)) + a), ((1,) * (len(a) - len(b)) + b)):
        if x == 1:
            out.append(y)
        elif y == 1 or y == x or y is None:
            out.append(x)
        elif x is None:
            out.append(y)
        else:
            raise ValueError(f"cannot broadcast {x} with {y}")
    return tuple(out)


def _matmul(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(a) < 2 or len(b) < 2:
        raise ValueError("not understood")
    if a[-1] is not None and b[-2] is not None and a[-1] != b[-2]:
        raise ValueError("inner dimensions differ")
    return _broadcast(a[:-2], b[:-2]) + (a[-2], b[-1])


def _reshape(shape: tuple[Any, ...], target: tuple[Any, ...]) -> tuple[Any, ...]:
    if -1 in target and None not in shape[1:] and shape[0] is None and target[0] == -1:
        return (None,) + tuple(target[1:])
    if -1 in target and None not in shape:
        known = math.prod(d for d in target if d != -1)
        return tuple(math.prod(shape) // known if d == -1 else d for d in target)
    if -1 not in target:
        return tuple(target)
    raise ValueError("not understood")


def _reduce(name: str, shape: tuple[Any, ...], axis: Any, keepdims: bool) -> tuple[Any, ...]:
    given = [] if axis is None else axis if isinstance(axis, list) else [axis]
    for a in given:
        if isinstance(a, int) and not -len(shape) <= a < len(shape):  # Keras refuses it: so does check
            batch = f" (the batch axis and {len(shape) - 1} more)" if shape and shape[0] is None else ""
            raise BuildError(f"axis {a} of '{name}' is out of range for a tensor of {len(shape)} axes{batch}")
    axes = range(len(shape)) if axis is None else [a % len(shape) for a in given]
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
