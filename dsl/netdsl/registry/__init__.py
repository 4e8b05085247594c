"""The registry: one explicit allow-list per kind of name a spec may use.

Layers, activations, initializers, regularizers, constraints, optimizers,
losses, metrics, schedules and callbacks, each with its parameters (names,
types, defaults, positional order), read from `data.json` without importing
Keras. `table` holds the entries and lookups, `layers/` each layer's anatomy
(output shapes, parameter count, output count; one module per family),
`plugins` the names a person running netdsl adds.
"""

from netdsl.registry.layers import estimate_params, output_count, output_shapes
from netdsl.registry.layers.anatomy import shape_text
from netdsl.registry.table import (
    KINDS,
    REQUIRED,
    TYPES,
    CallTensor,
    Entry,
    Param,
    all_keys,
    camel_case,
    lookup,
    names,
    plugin_object,
    register_plugin,
    reset_plugins,
    snake_case,
    split_kwargs,
    suggest,
    type_of_default,
)

__all__ = [
    "KINDS",
    "TYPES",
    "REQUIRED",
    "Param",
    "CallTensor",
    "Entry",
    "lookup",
    "names",
    "all_keys",
    "suggest",
    "output_count",
    "estimate_params",
    "output_shapes",
    "shape_text",
    "register_plugin",
    "plugin_object",
    "reset_plugins",
    "snake_case",
    "camel_case",
    "split_kwargs",
    "type_of_default",
]
