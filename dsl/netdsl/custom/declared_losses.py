"""Keras objects for the losses and metrics DECLARED in a spec.

`loss contrastive(y_true, y_pred, margin=1) = BODY` becomes a `DeclaredLoss`, a Keras
`Loss` whose `call` evaluates BODY's expression tree (`netdsl.custom.expr`) on the targets
and the outputs; Keras' `Loss` base class applies its reduction (`"sum_over_batch_size"`)
to what the body gives, per sample or already reduced, as it does for a loss function
handed to `compile`. `metric NAME(...) = BODY` becomes a `DeclaredMetric`, Keras'
`MeanMetricWrapper` of that evaluation: the mean over the samples of its values.

Both hold the tree as data, never source text, save it in the model's compile config and
re-validate it on load, so a `.keras` file with them compiles back under
`safe_mode=True` once `netdsl.custom` is imported (registered as `netdsl>DeclaredLoss`,
`netdsl>DeclaredMetric`).
"""

import keras
from keras import ops

from netdsl.custom.expr import check_json_constant, evaluate, freeze, is_number, to_json_tree, validate_tree

_register = keras.saving.register_keras_serializable(package="netdsl")


def _checked(spec_name, params, values, body):
    """The parts of a declared loss or metric, validated as a loaded file's config must be."""
    if not isinstance(spec_name, str) or not spec_name.isidentifier():
        raise ValueError(f"Expected the declared name to be an identifier, received: {spec_name!r}")
    if not isinstance(params, (list, tuple)) or len(params) < 2:
        raise ValueError(f"Expected the targets' and the outputs' names first in params, received: {params!r}")
    if not all(isinstance(p, str) and p.isidentifier() for p in params) or len(set(params)) != len(params):
        raise ValueError(f"Expected distinct identifiers as parameter names, received: {params!r}")
    values = dict(values or {})
    if set(values) != set(params[2:]):
        raise ValueError(
            f"Expected a value for each parameter of {spec_name!r} after the targets and outputs "
            f"({', '.join(params[2:]) or 'none'}), received: {sorted(values)}"
        )
    for value in values.values():
        check_json_constant(value)
    body = to_json_tree(body)
    validate_tree(body, params)
    return list(params), values, body


class _DeclaredBody:
    """The evaluation both classes share: the body on (targets, outputs) with the parameters' values bound."""

    def _init_body(self, spec_name, params, values, body):
        self.spec_name = spec_name
        self.params, self.values, self.body = _checked(spec_name, params, values, body)

    def per_sample(self, y_true, y_pred):
        env = {name: freeze(value) for name, value in self.values.items()}
        env[self.params[0]], env[self.params[1]] = y_true, y_pred
        result = evaluate(self.body, env)
        return ops.convert_to_tensor(result, dtype=y_pred.dtype) if is_number(result) else result

    def body_config(self):
        return {
            "spec_name": self.spec_name,
            "params": list(self.params),
            "values": dict(self.values),
            "body": self.body,
        }


@_register
class DeclaredLoss(_DeclaredBody, keras.losses.Loss):
    """A loss declared in a spec: `loss NAME(y_true, y_pred, p=v) = BODY`.

    As Keras wraps a loss function (`LossFunctionWrapper`, not exported): the targets and
    outputs brought to the same rank, the body evaluated, the base class's reduction applied.

    Args:
        spec_name: the loss's name in the spec (also the Keras name unless `name` is given).
        params: parameter names: the targets, the outputs, then the constants.
        values: each constant parameter's value.
        body: the expression tree.
    """

    def __init__(
        self, spec_name, params, values=None, body=None, reduction="sum_over_batch_size", name=None, dtype=None
    ):
        self._init_body(spec_name, params, values, body)
        super().__init__(reduction=reduction, name=name or spec_name, dtype=dtype)

    def call(self, y_true, y_pred):
        # Keras' own step for a loss function: (batch,) targets against (batch, 1) outputs and the like
        from keras.src.losses.loss import squeeze_or_expand_to_same_rank

        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.per_sample(y_true, y_pred)

    def get_config(self):
        return {**super().get_config(), **self.body_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<DeclaredLoss {self.spec_name}>"


@_register
class DeclaredMetric(_DeclaredBody, keras.metrics.MeanMetricWrapper):
    """A metric declared in a spec, `metric NAME(y_true, y_pred, p=v) = BODY` (or a declared loss listed in
    `metrics`): Keras' `MeanMetricWrapper` of the body, the mean of its values over every sample.

    Args: as `DeclaredLoss`'s; `name` is the name Keras logs it under (default: `spec_name`).
    """

    def __init__(self, spec_name, params, values=None, body=None, name=None, dtype=None):
        self._init_body(spec_name, params, values, body)
        super().__init__(self.per_sample, name=name or spec_name, dtype=dtype)

    def get_config(self):
        return {**keras.metrics.Metric.get_config(self), **self.body_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
