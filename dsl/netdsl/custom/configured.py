"""An allow-listed activation with arguments, as a serializable callable.

`-> gelu(approximate=true)` or `dense(64, activation=leaky_relu(0.1))` needs
an activation *with* arguments. `functools.partial` would do in memory but
does not serialize; `ConfiguredActivation` holds only the registry name and
the constant arguments, and resolves the name through netdsl's allow-list
(never `importlib` or a dotted path) when it is built or loaded:

    >>> act = ConfiguredActivation("leaky_relu", {"negative_slope": 0.1})
    >>> keras.layers.Dense(8, activation=act)        # saves and loads safely

A tampered config naming anything outside the allow-list, or an argument
the activation does not take, is refused on load.
"""

import keras

from netdsl import registry

_register = keras.saving.register_keras_serializable(package="netdsl")


def _check_constant(value, depth=0):
    if depth > 32:
        raise ValueError("Expected a constant argument, received a deeply nested value")
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_constant(item, depth + 1)
        return
    raise ValueError(f"Expected a constant argument (number, bool, string, null or list), received: {value!r}")


@_register
class ConfiguredActivation:
    """An allow-listed activation applied with fixed keyword arguments.

    Args:
        name: an activation name from netdsl's registry (`gelu`,
            `leaky_relu`, `sine`, ...).
        kwargs: its keyword arguments (constants), checked against the
            registry's parameter table.
    """

    def __init__(self, name, kwargs=None):
        kwargs = dict(kwargs or {})
        if not isinstance(name, str):
            raise ValueError(f"Expected an activation name, received: {name!r}")
        entry = registry.lookup("activation", name)
        if entry is None:
            raise ValueError(f"Expected an activation from netdsl's allow-list, received: {name!r}")
        allowed = {p.name for p in entry.params}
        for key, value in kwargs.items():
            if key not in allowed:
                raise ValueError(
                    f"Expected arguments of activation {entry.name!r} among "
                    f"{sorted(allowed) or 'none'}, received: {key!r}"
                )
            _check_constant(value)
        from netdsl.custom import factory

        self.name = entry.name
        self.__name__ = entry.name
        self.kwargs = kwargs
        self._fn = factory.keras_object(entry)

    def __call__(self, x):
        return self._fn(x, **self.kwargs)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.kwargs.items()))
        return f"<ConfiguredActivation {self.name}({args})>"

    def get_config(self):
        return {"name": self.name, "kwargs": dict(sorted(self.kwargs.items()))}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
