"""Losses and metrics declared in a spec (`loss contrastive(y_true, y_pred, margin=1) = ...`), in NumPy.

Their bodies are the expression trees `netdsl.custom.declared_losses` evaluates with keras.ops; here
the same trees are evaluated with NumPy's functions of the same meaning, for the elementwise
functions, the four reductions and the operators below. A body calling any other function
(`softmax`, `fft`, a slice, ...) is left to Keras: `unscored_function` names it, `not_in_numpy` says so.
As Keras: the targets and outputs brought to one rank, then a loss reduced with `sum_over_batch_size`
and a metric the mean over every sample of its values (`MeanMetric`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from netdsl.scoring.keras_math import Array, floats, same_rank
from netdsl.scoring.losses import reduce_loss
from netdsl.scoring.mean_metrics import MeanMetric

_UNARY: dict[str, Callable[[Array], Array]] = {
    "square": np.square,
    "abs": np.abs,
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0.0),
}
_SEVERAL: dict[str, Callable[..., Array]] = {
    "minimum": np.minimum,
    "maximum": np.maximum,
    "clip": np.clip,
    "where": np.where,
}
_REDUCE: dict[str, Callable[..., Array]] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
    "**": np.power,
}


def unscored_function(tree: Any) -> str | None:
    """The first function or operator of a body NumPy does not evaluate here; None: it evaluates all."""
    stack = [tree]
    while stack:
        node = stack.pop()
        kind = node[0]
        if kind == "bin":
            if node[1] not in _OPERATORS:
                return node[1]
            stack.extend(node[2:])
        elif kind == "neg":
            stack.append(node[1])
        elif kind == "call":
            name = node[1]
            if name not in _UNARY and name not in _SEVERAL and name not in _REDUCE:
                return str(name)
            stack.extend(node[2])
            stack.extend(node[3].values() if len(node) > 3 else [])
        elif kind not in ("num", "const", "var"):
            return str(kind)
    return None


def _evaluate(tree: Any, env: dict[str, Any]) -> Any:
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "const":
        return tuple(tree[1]) if isinstance(tree[1], list) else tree[1]
    if kind == "var":
        return env[tree[1]]
    if kind == "neg":
        return np.negative(_evaluate(tree[1], env))
    if kind == "bin":
        return _OPERATORS[tree[1]](_evaluate(tree[2], env), _evaluate(tree[3], env))
    name, args = tree[1], [_evaluate(arg, env) for arg in tree[2]]
    kwargs = {key: _evaluate(value, env) for key, value in (tree[3] if len(tree) > 3 else {}).items()}
    if name in _REDUCE:
        return _REDUCE[name](args[0], axis=kwargs.get("axis"), keepdims=bool(kwargs.get("keepdims", False)))
    if name in _UNARY:
        return _UNARY[name](args[0])
    return _SEVERAL[name](*args)


def _per_sample(resolved: Any) -> Callable[[Array, Array], Array]:
    """The body as a function of (targets, outputs), the declared parameters bound to the spec's values."""
    config = resolved.decl.config(dict(resolved.kwargs))
    targets, outputs = config["params"][:2]

    def values(y_true: Array, y_pred: Array) -> Array:
        env = {**config["values"], targets: y_true, outputs: y_pred}
        return np.asarray(_evaluate(config["body"], env), dtype=np.float64)

    return values


class DeclaredLoss:
    """One output's declared loss, as `netdsl.custom.declared_losses.DeclaredLoss` computes it."""

    def __init__(self, resolved: Any):
        self.name = resolved.name
        self.values = _per_sample(resolved)

    def __call__(self, y_true: Array, y_pred: Array) -> float:
        t, p = same_rank(*floats(y_true, y_pred))
        return reduce_loss(self.values(t, p), None, "sum_over_batch_size")


def declared_metric(resolved: Any) -> MeanMetric:
    """A declared metric (or a declared loss listed as one): the mean of its values over every sample."""
    return MeanMetric(resolved.name, _per_sample(resolved))
