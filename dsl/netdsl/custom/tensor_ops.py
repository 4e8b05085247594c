"""`TensorOp`: one operator of a tensor expression in a model or block body.

`h = x * relu6(x + 3) / 6` in a spec becomes a node per operator; the ones
that are not a Keras merge layer (`x + 3`, `relu6(...)`, `... / 6`, `a @ b`,
`mean(x, axis=1)`) are a `TensorOp`: a weightless layer that holds ONE
expression tree over its inputs `x0, x1, ...` as plain JSON data and
evaluates it with netdsl's fixed function table (`netdsl.custom.expr`). The
tree is re-validated when a saved model loads, so a `.keras` file can name
nothing outside that table; it loads with `safe_mode=True`.

Elementwise operators between tensors of different ranks align them as
Keras' merge layers do: the batch axes line up and the lower-rank tensor
gets size-1 axes after its batch axis (`(B, C)` against `(B, H, W, C)`
broadcasts as `(B, 1, 1, C)`).
"""

import keras
from keras import ops

from netdsl.custom.expr import evaluate, to_json_tree, validate_tree

_register = keras.saving.register_keras_serializable(package="netdsl")

ELEMENTWISE = frozenset({"+", "-", "*", "/", "**"})
# Functions of several tensors that broadcast as the operators do.
BROADCASTING_FUNCTIONS = frozenset(
    {"minimum", "maximum", "where", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal"}
    | {"logical_and", "logical_or"}
)


def input_names(count):
    """The names a TensorOp's tree uses for its inputs: x0, x1, ..."""
    return [f"x{i}" for i in range(count)]


@_register
class TensorOp(keras.layers.Layer):
    """A weightless layer evaluating one expression tree over its inputs.

    Args:
        expression: the tree (see `netdsl.custom.expr`), its inputs named
            `x0`, `x1`, ... in the order the layer is called with them.
        inputs: how many input tensors the layer takes (at least 1).
    """

    def __init__(self, expression, inputs=1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(inputs, bool) or not isinstance(inputs, int) or inputs < 1:
            raise ValueError(f"Expected `inputs` to be a positive integer, received: {inputs!r}")
        expression = to_json_tree(expression)
        validate_tree(expression, input_names(inputs))
        self.expression = expression
        self.inputs = inputs

    def call(self, inputs):
        tensors = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(tensors) != self.inputs:
            raise ValueError(f"Expected {self.inputs} input tensor(s), received: {len(tensors)}")
        if self._aligns_ranks():
            tensors = _align_ranks(tensors)
        return evaluate(self.expression, dict(zip(input_names(self.inputs), tensors)))

    def _aligns_ranks(self):
        tree = self.expression
        return self.inputs > 1 and (
            (tree[0] == "bin" and tree[1] in ELEMENTWISE) or (tree[0] == "call" and tree[1] in BROADCASTING_FUNCTIONS)
        )

    def get_config(self):
        return {**super().get_config(), "expression": self.expression, "inputs": self.inputs}


def _align_ranks(tensors):
    """Size-1 axes after the batch axis until every tensor has the same rank (as keras.layers.Add)."""
    rank = max(len(t.shape) for t in tensors)
    aligned = []
    for tensor in tensors:
        for _ in range(rank - len(tensor.shape)):
            tensor = ops.expand_dims(tensor, axis=1)
        aligned.append(tensor)
    return aligned
