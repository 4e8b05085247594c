"""Keras objects for activations and layers DECLARED in a spec file.

`DeclaredActivation` (a plain callable), `ActivationLayer` (a declared
activation as a step) and `DeclaredLayer` (one generic layer for every
`layer NAME(...) { ... }`) hold expression trees as data and evaluate them
with `netdsl.custom.expr`; every config is re-validated on load.

Each class is registered with Keras as `netdsl>ClassName`. Keras 3 resolves a
saved object by that registered name before it looks at the recorded
`"module"`, so files saved when these classes lived in `netdsl.custom.expr`
still load with `safe_mode=True` once `netdsl.custom` is imported.
"""

import keras
from keras import ops

from netdsl.custom.expr import (
    check_json_constant,
    evaluate,
    evaluate_dim,
    freeze,
    is_number,
    to_json_tree,
    validate_dim_tree,
    validate_tree,
)
from netdsl.semantics.shapes_declared import takes_slices

_register = keras.saving.register_keras_serializable(package="netdsl")


# --------------------------------------------------------------------------
# Declared activations.


def _check_identifier(value, what):
    if not isinstance(value, str) or not value.isidentifier():
        raise ValueError(f"Expected {what} to be an identifier, received: {value!r}")


@_register
class DeclaredActivation:
    """An activation declared in a spec: `activation NAME(x, p=v) = BODY`.

    A plain callable (not a layer), usable wherever Keras takes an
    activation, e.g. `Dense(8, activation=DeclaredActivation(...))`.

    Args:
        name: the activation's name in the spec.
        params: parameter names; the first is the input tensor.
        values: values of the other parameters (every one needs a value).
        body: the expression tree.

    Serialization: Keras serializes any object with `get_config`, so inside
    a layer config it appears as
    `{"module": "netdsl.custom.declared_layers",
    "class_name": "DeclaredActivation",
    "config": {"name", "params", "values", "body"},
    "registered_name": "netdsl>DeclaredActivation"}`; loading resolves the
    registered name and calls `from_config`, which re-validates the tree.
    """

    def __init__(self, name, params, values=None, body=None):
        values = dict(values or {})
        _check_identifier(name, "the activation name")
        if not isinstance(params, (list, tuple)) or not params:
            raise ValueError(f"Expected at least one parameter (the input), received: {params!r}")
        for param in params:
            _check_identifier(param, "a parameter name")
        if len(set(params)) != len(params):
            raise ValueError(f"Expected distinct parameter names, received: {params!r}")
        _check_values(name, list(params), values)
        body = to_json_tree(body)
        validate_tree(body, params)
        self.name = name
        self.__name__ = name  # Keras and summaries print activations by name
        self.params = list(params)
        self.values = values
        self.body = body

    def __call__(self, x):
        env = dict(self.values)
        env[self.params[0]] = x
        result = evaluate(self.body, env)
        if is_number(result):  # a constant body still maps x elementwise
            result = ops.full_like(x, result)
        return result

    def __repr__(self):
        return f"<DeclaredActivation {self.name}>"

    def get_config(self):
        return {
            "name": self.name,
            "params": list(self.params),
            "values": dict(self.values),
            "body": self.body,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _check_values(name, params, values):
    for key, value in values.items():
        if key not in params[1:]:
            raise ValueError(
                f"Expected values only for the parameters of {name!r} after "
                f"the input ({', '.join(params[1:]) or 'none'}), received: "
                f"{key!r}"
            )
        check_json_constant(value)
    missing = [param for param in params[1:] if param not in values]
    if missing:
        raise ValueError(
            f"Expected a value for every parameter of {name!r} after the input, received none for: {', '.join(missing)}"
        )


def _as_declared_activation(activation):
    if isinstance(activation, DeclaredActivation):
        return activation
    if isinstance(activation, dict):
        if "class_name" in activation:  # a full Keras-serialized object
            activation = keras.saving.deserialize_keras_object(activation)
            if isinstance(activation, DeclaredActivation):
                return activation
        else:
            return DeclaredActivation.from_config(activation)
    raise ValueError(f"Expected a DeclaredActivation or its config, received: {activation!r}")


@_register
class ActivationLayer(keras.layers.Layer):
    """A layer applying a declared activation as a step (`-> mish`)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = _as_declared_activation(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        if not takes_slices(self.activation.body):
            return tuple(input_shape)
        # `x[..., :4] * sigmoid(x[..., 4:])` (a gated unit), `argmax(x, axis=-1)` have a shape of their own
        # (`check`'s rule, shapes_declared.takes_slices): evaluated on a symbolic tensor.
        return tuple(self.activation(keras.KerasTensor(tuple(input_shape), dtype=self.compute_dtype)).shape)

    def get_config(self):
        return {
            **super().get_config(),
            "activation": self.activation.get_config(),
        }


# --------------------------------------------------------------------------
# Declared layers.


def _unique_layer_name(spec_name):
    # Same scheme as Keras' auto names: first "name", then "name_1", ...
    uid = keras.backend.get_uid(f"netdsl_declared_{spec_name}")
    return spec_name if uid == 1 else f"{spec_name}_{uid - 1}"


def _initializer(init, weight_name):
    """A weight's initializer from its config: an allow-listed initializer
    name, or `{"name": NAME, "args": {KEY: constant}}` (`random_uniform(minval=
    -0.05, maxval=0.05)` in a spec). Looked up in netdsl's registry only."""
    from netdsl import registry
    from netdsl.custom import factory

    name, args = (init, {}) if isinstance(init, str) else (None, None)
    if isinstance(init, dict) and set(init) <= {"name", "args"} and isinstance(init.get("name"), str):
        name, args = init["name"], init.get("args", {})
    entry = registry.lookup("initializer", name) if name is not None else None
    if entry is None or not isinstance(args, dict):
        raise ValueError(
            f"Expected the init of weight {weight_name!r} to be an initializer "
            f"from netdsl's allow-list, received: {init!r}"
        )
    allowed = {p.name for p in entry.params}
    for key, value in args.items():
        if key not in allowed or not (value is None or isinstance(value, (bool, int, float, str))):
            raise ValueError(
                f"Expected arguments of initializer {name!r} among "
                f"{sorted(allowed)} with constant values, received: {key}={value!r}"
            )
    return factory.make(entry, args)


def _normalize_weight(weight, params, inputs):
    if not isinstance(weight, dict):
        raise ValueError(f"Expected a weight as a dict, received: {weight!r}")
    unknown = set(weight) - {"name", "shape", "init", "trainable"}
    if unknown:
        raise ValueError(f"Expected weight keys among name, shape, init, trainable, received: {sorted(unknown)}")
    name = weight.get("name")
    _check_identifier(name, "a weight name")
    shape = to_json_tree(weight.get("shape"))
    if not isinstance(shape, list):
        raise ValueError(f"Expected weight {name!r} to have a list of dimensions as shape, received: {shape!r}")
    for dim in shape:
        validate_dim_tree(dim, params, inputs)
    init = weight.get("init", "glorot_uniform")
    _initializer(init, name)  # raises on anything outside the allow-list
    trainable = weight.get("trainable", True)
    if not isinstance(trainable, bool):
        raise ValueError(f"Expected `trainable` of weight {name!r} to be a boolean, received: {trainable!r}")
    return {"name": name, "shape": shape, "init": init, "trainable": trainable}


@_register
class DeclaredLayer(keras.layers.Layer):
    """One generic Keras layer for every `layer NAME(...) { ... }` spec.

    Args:
        spec_name: the layer's name in the spec.
        inputs: input names; `call` takes one tensor for one input, else a
            list in this order.
        params: parameter name -> constant value.
        weights: list of `{"name", "shape": [DIM_TREE...], "init",
            "trainable"}`; `init` is a Keras initializer name (default
            "glorot_uniform"), `trainable` defaults to true.
        outputs: expression trees; one output returns a tensor, several a
            list.

    The config holds the trees (data), never source text, and `from_config`
    re-validates them.
    """

    def __init__(self, spec_name, inputs, params=None, weights=None, outputs=None, **kwargs):
        _check_identifier(spec_name, "the layer spec name")
        if kwargs.get("name") is None:
            kwargs["name"] = _unique_layer_name(spec_name)
        super().__init__(**kwargs)
        self.spec_name = spec_name
        self.input_names = self._check_inputs(inputs)
        self.params = self._check_params(params or {})
        self.weight_specs = [_normalize_weight(w, self.params, self.input_names) for w in (weights or [])]
        self.output_trees = self._check_outputs(outputs)
        self._declared = {}

    # -- validation --------------------------------------------------------

    def _check_inputs(self, inputs):
        if not isinstance(inputs, (list, tuple)) or not inputs:
            raise ValueError(f"Expected at least one input name for {self.spec_name!r}, received: {inputs!r}")
        for name in inputs:
            _check_identifier(name, "an input name")
        if len(set(inputs)) != len(inputs):
            raise ValueError(f"Expected distinct input names, received: {list(inputs)}")
        return list(inputs)

    def _check_params(self, params):
        if not isinstance(params, dict):
            raise ValueError(f"Expected params as a dict, received: {params!r}")
        for name, value in params.items():
            _check_identifier(name, "a parameter name")
            check_json_constant(value)
        return dict(params)

    def _check_outputs(self, outputs):
        if not isinstance(outputs, (list, tuple)) or not outputs:
            raise ValueError(f"Expected at least one output for {self.spec_name!r}, received: {outputs!r}")
        names = self._bound_names()
        outputs = to_json_tree(list(outputs))
        for tree in outputs:
            validate_tree(tree, names, dim_names=self.input_names)
        return outputs

    def _bound_names(self):
        groups = [self.input_names, list(self.params), [w["name"] for w in self.weight_specs]]
        names = [name for group in groups for name in group]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(
                "Expected distinct names for inputs, parameters and weights, "
                f"received duplicates: {', '.join(duplicates)}"
            )
        return names

    # -- shapes ------------------------------------------------------------

    def _shapes_by_name(self, input_shape):
        """Map input names to their shapes with the batch axis excluded."""
        if len(self.input_names) == 1:
            if _is_shape_list(input_shape) and len(input_shape) == 1:
                input_shape = input_shape[0]
            shapes = [input_shape]
        else:
            shapes = list(input_shape) if _is_shape_list(input_shape) else []
            if len(shapes) != len(self.input_names):
                raise ValueError(
                    f"Expected {len(self.input_names)} inputs "
                    f"({', '.join(self.input_names)}) for "
                    f"{self.spec_name!r}, received: {input_shape}"
                )
        return {name: tuple(shape)[1:] for name, shape in zip(self.input_names, shapes)}

    def _weight_shape(self, weight, input_dims):
        shape = tuple(evaluate_dim(dim, self.params, input_dims) for dim in weight["shape"])
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise ValueError(
                f"Expected weight {weight['name']!r} to have a shape of positive integers, received: {shape}"
            )
        return shape

    def build(self, input_shape):
        input_dims = self._shapes_by_name(input_shape)
        for weight in self.weight_specs:
            self._declared[weight["name"]] = self.add_weight(
                name=weight["name"],
                shape=self._weight_shape(weight, input_dims),
                initializer=_initializer(weight["init"], weight["name"]),
                trainable=weight["trainable"],
            )

    # -- computation -------------------------------------------------------

    def _bind_inputs(self, inputs):
        if len(self.input_names) == 1:
            if isinstance(inputs, (list, tuple)) and len(inputs) == 1:
                inputs = inputs[0]
            return {self.input_names[0]: inputs}
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(self.input_names):
            raise ValueError(
                f"Expected {len(self.input_names)} inputs "
                f"({', '.join(self.input_names)}) for {self.spec_name!r}, "
                f"received: {inputs!r}"
            )
        return dict(zip(self.input_names, inputs))

    def _evaluate_outputs(self, inputs, weights):
        env = {name: freeze(value) for name, value in self.params.items()}
        env.update(weights)
        env.update(self._bind_inputs(inputs))
        results = [evaluate(tree, env) for tree in self.output_trees]
        return results[0] if len(results) == 1 else results

    def call(self, inputs):
        return self._evaluate_outputs(inputs, self._declared)

    def compute_output_spec(self, inputs):
        # Evaluate the trees on symbolic tensors: keras.ops infers every
        # shape and dtype, with no backend tracing and no weights needed.
        input_dims = self._shapes_by_name(keras.tree.map_structure(lambda t: tuple(t.shape), inputs))
        weights = {
            w["name"]: keras.KerasTensor(self._weight_shape(w, input_dims), dtype=self.compute_dtype)
            for w in self.weight_specs
        }
        return self._evaluate_outputs(inputs, weights)

    def compute_output_shape(self, input_shape):
        specs = self._symbolic_inputs(input_shape)
        outputs = self.compute_output_spec(specs)
        if isinstance(outputs, list):
            return [tuple(out.shape) for out in outputs]
        return tuple(outputs.shape)

    def _symbolic_inputs(self, input_shape):
        if _is_shape_list(input_shape):
            return [keras.KerasTensor(tuple(s), dtype=self.compute_dtype) for s in input_shape]
        return keras.KerasTensor(tuple(input_shape), dtype=self.compute_dtype)

    def get_config(self):
        return {
            **super().get_config(),
            "spec_name": self.spec_name,
            "inputs": list(self.input_names),
            "params": dict(self.params),
            "weights": [dict(w) for w in self.weight_specs],
            "outputs": self.output_trees,
        }


def _is_shape_list(input_shape):
    """True when `input_shape` is a list of shapes rather than one shape."""
    return isinstance(input_shape, (list, tuple)) and len(input_shape) > 0 and isinstance(input_shape[0], (list, tuple))
