"""The compile-side half of the registry: allow-listed entries -> Keras objects.

Only the compiler imports this module (it imports Keras). An object is reached
from an `Entry` that `netdsl.registry` itself holds, through the Keras module
of the entry's kind and the attribute name written in the committed
allow-list (`Entry.keras_name`); text from a spec never reaches `getattr`.
netdsl's own layers and activations come from `netdsl.custom`, plugins from
the object they were registered with.
"""

from __future__ import annotations

import functools

from netdsl import registry
from netdsl.registry import Entry

__all__ = ["keras_object", "make"]

# Metric entries with no single Keras object: Keras resolves the string in
# `compile()` (binary / categorical / sparse categorical accuracy, chosen from
# the loss and the output shape).
_STRING_METRICS = frozenset({"accuracy"})


def _module(kind: str):
    import keras

    return {
        "layer": keras.layers,
        "activation": keras.activations,
        "initializer": keras.initializers,
        "regularizer": keras.regularizers,
        "constraint": keras.constraints,
        "optimizer": keras.optimizers,
        "loss": keras.losses,
        "metric": keras.metrics,
        "schedule": keras.optimizers.schedules,
        "callback": keras.callbacks,
    }[kind]


def _string_metric(identifier: str):
    def factory(**kwargs):
        if kwargs:
            raise TypeError(f"metric {identifier!r} takes no arguments, received: {sorted(kwargs)}")
        return identifier

    factory.__name__ = factory.__qualname__ = identifier
    return factory


def _checked(entry: Entry) -> Entry:
    if not isinstance(entry, Entry):
        raise TypeError(f"Expected a registry Entry, received: {entry!r}")
    if registry.lookup(entry.kind, entry.name) != entry:
        raise ValueError(f"{entry.kind} {entry.name!r} is not in the allow-list")
    return entry


def keras_object(entry: Entry):
    """The class or function an allow-listed entry stands for.

    Keras layers, initializers, regularizers, constraints, optimizers, losses,
    metrics, schedules and callbacks are classes (call with the kwargs);
    activations are functions. The `accuracy` metric, which Keras resolves
    from a string, maps to a factory returning that string.
    """
    entry = _checked(entry)
    if entry.source == "plugin":
        return registry.plugin_object(entry)
    if entry.source == "netdsl":
        if entry.kind == "layer":
            from netdsl.custom.layers import LAYERS

            return LAYERS[entry.name]
        if entry.kind == "activation":
            from netdsl.custom.activations import ACTIVATIONS

            return ACTIVATIONS[entry.name]
        raise ValueError(f"no netdsl {entry.kind} {entry.name!r}")
    if entry.kind == "metric" and entry.keras_name in _STRING_METRICS:
        return _string_metric(entry.keras_name)
    if not entry.keras_name.isidentifier():
        raise ValueError(f"bad keras_name in the allow-list: {entry.keras_name!r}")
    return getattr(_module(entry.kind), entry.keras_name)


def make(entry: Entry, kwargs: dict | None = None, *, as_written: str | None = None):
    """The value to hand to Keras for a non-layer entry, built from constant
    (already resolved) kwargs:

    - activation: the function, or `functools.partial(fn, **kwargs)`;
    - metric: an instance; when the spec wrote a lowercase alias (`mae`,
      `acc`) and no `name`, it is named as written, as Keras names the string
      metric (so `monitor="val_mae"` works); `accuracy` is the Keras string;
    - any other kind: `cls(**kwargs)`.

    Layers are built by the compiler (nested layers, call kwargs): use
    `keras_object` and `registry.split_kwargs` for them.
    """
    kwargs = dict(kwargs or {})
    obj = keras_object(entry)
    if entry.kind == "layer":
        raise ValueError("make() is for non-layer entries; use keras_object()")
    if entry.kind == "activation":
        return functools.partial(obj, **kwargs) if kwargs else obj
    if entry.kind == "metric" and entry.keras_name == "R2Score" and kwargs.get("num_regressors"):
        from netdsl.custom.metrics import AdjustedR2Score  # Keras' own fails in a compiled step

        obj = AdjustedR2Score
    if entry.kind == "metric":
        alias = (
            as_written
            if as_written and as_written != entry.name and as_written in entry.aliases and as_written.islower()
            else None
        )
        if entry.keras_name in _STRING_METRICS:
            return alias if alias and not kwargs else obj(**kwargs)
        if alias and "name" not in kwargs:
            kwargs["name"] = alias
    return obj(**kwargs)
