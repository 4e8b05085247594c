"""Each Keras layer as the step a spec writes for it, through the registry.

`layer_step` looks the layer's class up in the registry (the allow-list: a class
that is not there cannot be decompiled), maps every config value to its parameter
(nested activations, initializers, regularizers, constraints and layers to their
registry names) and leaves out every value equal to the parameter's default, so
`Conv2D(64, 3, padding="same")`'s twenty config keys become `conv2d(64, 3,
padding="same")`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl import registry
from netdsl.decompiler.graph import Call, Layer
from netdsl.decompiler.problems import Problems, origin
from netdsl.decompiler.values import Named, Unexpressible, collapse, default_of, normal_form, plain, same
from netdsl.semantics.args import DTYPES
from netdsl.semantics.steps import REFUSED_LAYERS

_SKIPPED_KEYS = ("name",)
_DECLARED = ("DeclaredLayer", "ActivationLayer")
# Layers of keras.applications' own modules that one of netdsl's layers computes, with the same configuration and
# the same weights in the same order (a published weights file loads into either).
_APPLICATION_TWINS = {("keras.src.applications.convnext", "LayerScale"): "netdsl.LayerScale"}
_PLUGIN_HINT = (
    "declare it in the spec (layer NAME(...) { ... }) or register a plugin for it "
    "(netdsl.register_layer, then --plugin MODULE)"
)


@dataclass(frozen=True)
class Step:
    """What `-> NAME(args)` names: a registry layer or activation, a nested model or a shared instance."""

    kind: str  # "layer" | "activation" | "model" | "shared"
    name: str  # as the spec writes it
    kwargs: tuple = ()  # ((param, value), ...): non-default arguments, in registry order
    entry: Any = field(default=None, compare=False, hash=False, repr=False)


def layer_step(layer: Layer, call: Call | None, problems: Problems) -> Step | None:
    """The step for a registry layer, or None (with the reason in `problems`)."""
    entry = _entry(layer, problems)
    if entry is None:
        return None
    rank = _rank(call)
    try:
        if entry.name == "activation":
            return _activation_step(layer)
        kwargs = _resolved_defaults(entry, _kwargs(entry, layer.config, rank, "its"), rank)
        kwargs += _call_kwargs(entry, call)
    except Unexpressible as exc:
        problems.layer(layer, f"cannot be written in a spec: {exc}")
        return None
    return Step("layer", written_name(entry, kwargs), _ordered(entry, kwargs), entry)


def _entry(layer: Layer, problems: Problems) -> registry.Entry | None:
    name = layer.class_name
    for entry in _by_class().get(name, ()):
        if _same_class(entry, layer):
            return entry
    refused = REFUSED_LAYERS.get(registry.snake_case(name))
    if refused:
        problems.layer(
            layer,
            f"cannot be decompiled: {refused}",
            "declare what it computes in the spec (activation NAME(x) = ..., layer NAME(...) { ... })",
        )
    elif layer.module.startswith("keras.src.ops"):
        problems.layer(
            layer,
            f"is the Keras operation {name} (module {layer.module}), applied to tensors "
            "in the Keras code (like `x + y`), not a layer",
            "in the Keras code, use the layer that does it (keras.layers.Add, Multiply, "
            "Reshape, ...) instead of an operation on tensors",
        )
    elif name in _DECLARED and layer.module.startswith("netdsl."):
        spec_name = layer.config.get("spec_name") or (layer.config.get("activation") or {}).get("name")
        problems.layer(
            layer,
            f"is the declared layer or activation '{spec_name}' of a netdsl spec; "
            "decompile does not recover declarations yet",
            "copy the declaration from the spec that declared it, or write it by hand",
        )
    else:
        problems.layer(
            layer, f"is not a layer netdsl knows ({origin(layer.module, layer.registered_name)})", _PLUGIN_HINT
        )
    return None


_BY_CLASS: tuple[int, dict[str, list]] = (0, {})


def _by_class() -> dict[str, list]:
    """Layer entries by the class they build (`Attention` is Keras' and netdsl's: both are kept);
    made again when plugins have added entries."""
    global _BY_CLASS
    names = registry.names("layer")
    if _BY_CLASS[0] != len(names):
        found: dict[str, list] = {}
        for name in names:
            entry = _known("layer", name)
            found.setdefault(entry.keras_name.rsplit(".", 1)[-1], []).append(entry)
        _BY_CLASS = (len(names), found)
    return _BY_CLASS[1]


def _known(kind: str, name: str) -> registry.Entry:
    """An entry the decompiler names itself: a built-in, or one the registry listed or gave before."""
    entry = registry.lookup(kind, name)
    assert entry is not None, f"the registry has no {kind} '{name}'"
    return entry


def _same_class(entry: registry.Entry, layer: Layer) -> bool:
    """Whether the registry entry found by class name is that very class (not a namesake)."""
    if entry.source == "keras":
        return _keras_layer_module(layer.module) and entry.keras_name == layer.class_name
    if entry.source == "netdsl":
        if _APPLICATION_TWINS.get((layer.module, layer.class_name)) == entry.keras_name:
            return True
        return layer.module.startswith("netdsl.") and entry.keras_name == f"netdsl.{layer.class_name}"
    return entry.keras_name.rsplit(".", 1)[-1] == layer.class_name  # a plugin


def _keras_layer_module(module: str) -> bool:
    return module == "keras.layers" or module.startswith(("keras.layers.", "keras.src.layers"))


def _activation_step(layer: Layer) -> Step:
    value = activation_value(layer.config.get("activation"), "its activation")
    extra = _kwargs(
        _known("layer", "activation"), {k: v for k, v in layer.config.items() if k != "activation"}, None, "its"
    )
    if isinstance(value, Named) and not value.kwargs and not extra:
        return Step("activation", value.name, (), registry.lookup("activation", value.name))
    # `-> leaky_relu(0.2)` would be the LeakyReLU layer: an Activation layer says so.
    value = value if value is not None else Named("activation", "linear")
    entry = _known("layer", "activation")
    return Step("layer", "activation", (("activation", value),) + extra, entry)


def _kwargs(entry: registry.Entry, config: dict, rank: int | None, where: str) -> tuple:
    kwargs = []
    for key, raw in config.items():
        if key in _SKIPPED_KEYS:
            continue
        param = entry.param(key)
        if param is None:
            if raw is None or raw is False:
                continue  # an option the registry does not list, left off (quantization_config, rms_scaling)
            raise Unexpressible(f"its config has {key}={_short(raw)}, which netdsl's {entry.name} does not take")
        value = _value(entry, param, raw, rank, f"{where} {key}")
        if not _is_default(entry, param, value, config):
            kwargs.append((key, value))
    return tuple(kwargs)


def _value(entry: registry.Entry, param: registry.Param, raw: Any, rank: int | None, where: str) -> Any:
    kind = param.type
    if kind == "activation":
        value = activation_value(raw, where)
        return None if value == Named("activation", "linear") and param.default is None else value
    if kind in ("initializer", "regularizer", "constraint"):
        return object_value(kind, raw, where)
    if kind == "layer":
        return nested_layer_value(raw, where)
    if kind == "dtype":
        return dtype_value(raw, where)
    return normal_form(entry, param, plain(raw, where), rank)


def _is_default(entry: registry.Entry, param: registry.Param, value: Any, config: dict) -> bool:
    if param.required:
        return False
    if same(value, default_of(entry, param)):
        return True
    # Pooling stores `strides=None` as the pool size.
    if param.name != "strides" or param.default is not None or "pool_size" not in config:
        return False
    pool_size = entry.param("pool_size")
    assert pool_size is not None, f"{entry.name} stores a pool_size it does not take"
    return same(value, normal_form(entry, pool_size, plain(config["pool_size"], ""), None))


def _resolved_defaults(entry: registry.Entry, kwargs: tuple, rank: int | None) -> tuple:
    """Leave out what Keras stores in place of a default it resolved itself: multi-head
    attention's `value_dim` (the key_dim) and `attention_axes` (every axis but the first
    and last), bidirectional's `backward_layer` (the layer, going backwards)."""
    given = dict(kwargs)
    drop = set()
    if entry.name == "multi_head_attention":
        if given.get("value_dim") == given.get("key_dim"):
            drop.add("value_dim")
        axes = given.get("attention_axes")
        if rank is not None and collapse(tuple(range(1, rank))) == axes:
            drop.add("attention_axes")
    if entry.name == "bidirectional" and isinstance(given.get("layer"), Named):
        forward = given["layer"]
        backward = Named(
            "layer", forward.name, _ordered(_known("layer", forward.name), forward.kwargs + (("go_backwards", True),))
        )
        if given.get("backward_layer") == backward:
            drop.add("backward_layer")
    return tuple((k, v) for k, v in kwargs if k not in drop)


def _call_kwargs(entry: registry.Entry, call: Call | None) -> tuple:
    kwargs = []
    for key, raw in (call.kwargs if call else {}).items():
        param = next((p for p in entry.call_params if p.name == key), None)
        if param is None:
            raise Unexpressible(f"it is called with {key}={raw!r}, which a spec cannot pass")
        value = plain(raw, f"call argument {key}")
        if not same(value, param.default):
            kwargs.append((key, value))
    return tuple(kwargs)


def _ordered(entry: registry.Entry, kwargs: tuple) -> tuple:
    order = {p.name: i for i, p in enumerate(entry.params + entry.call_params)}
    return tuple(sorted(kwargs, key=lambda kv: order[kv[0]]))


def written_name(entry: registry.Entry, kwargs: tuple) -> str:
    """`relu` alone is the activation; a ReLU layer without arguments is written `ReLU`."""
    if not kwargs and registry.lookup("activation", entry.name) is not None:
        return entry.keras_name.rsplit(".", 1)[-1]
    return short_name(entry)


def short_name(entry: registry.Entry) -> str:
    """The shortest snake_case key of an entry: `batch_norm` for batch_normalization."""
    keys = [entry.name] + [a for a in entry.aliases if a == a.lower()]
    return min(keys, key=lambda k: (len(k), keys.index(k)))


def _rank(call: Call | None) -> int | None:
    if call is None or not call.input_shapes or call.input_shapes[0] is None:
        return None
    return len(call.input_shapes[0])


# ---------------------------------------------------------------- nested objects


def activation_value(raw: Any, where: str) -> Named | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return _named("activation", raw, {}, where)
    if isinstance(raw, dict):
        config = raw.get("config")
        if raw.get("class_name") == "function" and isinstance(config, str) and raw.get("module") in (None, "builtins"):
            # a registered function: Keras writes module 'builtins' and the registered name "package>name";
            # only netdsl's own package (or a bare Keras name) is matched, by name, against the registry
            package, _, name = config.rpartition(">")
            if package not in ("", "netdsl"):
                raise Unexpressible(f"{where} is the custom function '{config}'")
            return _named("activation", name, {}, where)
        _keras_module(raw, where)
        if raw.get("class_name") == "ConfiguredActivation" and isinstance(config, dict):
            return _named("activation", str(config.get("name")), config.get("kwargs") or {}, where)
        if raw.get("class_name") == "DeclaredActivation" and isinstance(config, dict):
            raise Unexpressible(
                f"{where} is the declared activation '{config.get('name')}'; "
                "decompile does not recover declarations yet"
            )
    raise Unexpressible(f"{where} is an activation netdsl does not know ({_describe(raw)})")


def object_value(kind: str, raw: Any, where: str) -> Named | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return _named(kind, raw, {}, where)
    if isinstance(raw, dict) and isinstance(raw.get("config"), dict):
        _keras_module(raw, where)
        return _named(kind, str(raw.get("class_name")), raw["config"], where)
    raise Unexpressible(f"{where} is a {kind} netdsl does not know ({_describe(raw)})")


def _keras_module(raw: dict, where: str) -> None:
    """A nested object (initializer, regularizer, constraint, activation) is matched by class name,
    so its module must be Keras' or netdsl's: `export --verify` hands the file to Keras, and old
    Keras imports whatever module a config names (CVE-2025-1550; security review 2026-12, 5)."""
    module = raw.get("module")
    if module is None or (isinstance(module, str) and module.split(".")[0] in ("keras", "netdsl")):
        return
    raise Unexpressible(f"{where} names the module '{module}'; export reads Keras' and netdsl's objects only")


def nested_layer_value(raw: Any, where: str) -> Named:
    if not (isinstance(raw, dict) and isinstance(raw.get("config"), dict)):
        raise Unexpressible(f"{where} is not a layer config")
    layer = Layer(
        str(raw["config"].get("name") or ""),
        str(raw.get("class_name")),
        str(raw.get("module") or ""),
        raw.get("registered_name"),
        raw["config"],
    )
    problems = Problems("")
    entry = _entry(layer, problems)
    if entry is None:
        raise Unexpressible(f"{where} is the layer class {layer.class_name}, which netdsl does not know")
    set_by_wrapper = ("trainable", "dtype", "zero_output_for_mask")  # Bidirectional sets the last itself
    kwargs = _kwargs(entry, {k: v for k, v in layer.config.items() if k not in set_by_wrapper}, None, where)
    return Named("layer", entry.name, _ordered(entry, kwargs))


def dtype_value(raw: Any, where: str) -> str | None:
    name = raw
    if isinstance(raw, dict):
        if raw.get("class_name") not in ("DTypePolicy", "FloatDTypePolicy"):
            raise Unexpressible(f"{where} is the dtype policy {raw.get('class_name')}")
        name = (raw.get("config") or {}).get("name")
    if name is None or name == "float32":
        return None
    if not isinstance(name, str):
        raise Unexpressible(f"{where} is not a dtype name")
    if name not in DTYPES:
        raise Unexpressible(
            f"{where} is the policy '{name}'; a spec sets mixed precision for a whole model "
            "(train section, mixed_precision = true), which decompile does not write yet"
        )
    return name


def _named(kind: str, name: str, config: dict, where: str) -> Named:
    entry = registry.lookup(kind, name) or registry.lookup(kind, registry.snake_case(name))
    if entry is None:
        raise Unexpressible(f"{where} is the {kind} '{name}', which netdsl does not know")
    kwargs = []
    for key, raw in config.items():
        param = entry.param(key)
        if param is None:
            if raw is None:
                continue
            raise Unexpressible(f"{where}: the {kind} {entry.name} takes no '{key}'")
        value = normal_form(entry, param, plain(raw, f"{where} {key}"), None)
        if not same(value, default_of(entry, param)):
            kwargs.append((key, value))
    return Named(kind, entry.name, _ordered(entry, tuple(kwargs)))


def _short(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 30 else text[:27] + "..."


def _describe(raw: Any) -> str:
    if isinstance(raw, dict):
        return str(raw.get("class_name") or "an object")
    return type(raw).__name__
