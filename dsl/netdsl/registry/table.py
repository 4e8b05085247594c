"""The allow-list of everything a spec may name, with parameter tables.

One table per kind (see `KINDS`). Each `Entry` knows its parameters (names,
types, defaults, positional order), how many tensors it takes and returns,
and, in `netdsl.registry.layers`, each layer's anatomy (output shapes, parameter
count, output count; the package re-exports `output_shapes`, `estimate_params`
and `output_count`), so the checker validates a spec without importing Keras.
The tables live in `data.json`, generated from the installed Keras by `scripts/gen_registry.py` and committed; this
module only reads it (once, lazily). The Keras objects themselves are reached by
`netdsl.custom.factory`, from names in this allow-list only.

Conventions the checker and compiler rely on:

- Keys: an entry is found by its canonical snake_case name, by its Keras class
  name (`Dense`, `Conv2D`) and by its aliases (`batch_norm`, `max_pool2d`).
  Lookups are exact; `suggest` does the fuzzy part.
- A parameter whose default is `None` also accepts `none`.
- `positional` parameters may be given positionally, in `Entry.params` order.
  The base-layer keywords `name`, `dtype`, `trainable` never are. The
  compiler passes every argument to Keras by keyword.
- `Entry.call_params` are constant keyword arguments of the layer's *call*
  (e.g. `use_causal_mask` of multi_head_attention), given in the same
  argument list as the constructor's in a spec; the compiler routes them.
- `Entry.call_tensors` are the arguments of the layer's call that take
  tensors (`initial_state` of an RNN, `attention_mask`, `key`): a spec gives
  them by keyword in the same list (`lstm(64, initial_state=[h, c])`), and
  they become inputs of the call, never arguments of the constructor.
- Type strings are the keys of `TYPES`.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from netdsl.syntax.keywords import KEYWORDS

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
    "register_plugin",
    "snake_case",
    "camel_case",
    "split_kwargs",
    "type_of_default",
]

DATA_FILE = Path(__file__).with_name("data.json")

KINDS = (
    "layer",
    "activation",
    "initializer",
    "regularizer",
    "constraint",
    "optimizer",
    "loss",
    "metric",
    "schedule",
    "callback",
)

# Every type string a Param may carry, and what a value of it may be.
TYPES = {
    "int": "an integer",
    "float": "a number (an integer is accepted)",
    "bool": "true or false",
    "str": "a string (see Param.choices where the set is closed)",
    "ints": "an integer, or a tuple/list of integers (kernel_size, strides, axis, ...)",
    "shape": "a tuple/list of integers or none (a tensor shape without the batch axis)",
    "tuple": "a tuple or list of constants",
    "list": "a list or tuple of constants (never a string: for vocabulary a string would be a file path)",
    "dict": "a dict of constants",
    "activation": "an activation name or activation(...) call",
    "initializer": "an initializer name or initializer(...) call",
    "regularizer": "a regularizer name or regularizer(...) call",
    "constraint": "a constraint name or constraint(...) call",
    "dtype": 'a dtype or dtype-policy name such as "float32" or "mixed_float16"',
    "layer": "a nested layer step, e.g. bidirectional(lstm(64))",
    "schedule_or_float": "a number or a learning-rate schedule call",
    "any": "any constant",
}

_BASE_LAYER_PARAMS = ("name", "dtype", "trainable")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The language's keywords can never be entry names.
_KEYWORDS = frozenset(KEYWORDS)


class _Required:
    """The default of a required parameter (a singleton)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "REQUIRED"

    def __reduce__(self):
        return (_Required, ())

    def __bool__(self):
        return False


REQUIRED = _Required()


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: object
    positional: bool
    choices: tuple[str, ...] | None = None
    nullable: bool = False  # `none` is one of its values, though its default is not (Keras' None)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class CallTensor:
    """An argument of a layer's call that takes tensors (`initial_state=[h, c]`, `attention_mask=m`)."""

    name: str
    listed: bool = False  # takes a list of tensors (an RNN's states, Attention's [query_mask, value_mask])
    position: int | None = None  # an input Keras also takes by position (multi_head_attention's value: 1)


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    keras_name: str
    params: tuple[Param, ...]
    description: str
    inputs: tuple[int, int | None] = (1, 1)
    call_style: str = "single"
    key_args: tuple[str, ...] = ()
    source: str = "keras"
    # Additions to the agreed API (both default to empty):
    aliases: tuple[str, ...] = ()  # every other key of this entry
    call_params: tuple[Param, ...] = ()  # constant call-time keywords
    call_tensors: tuple[CallTensor, ...] = ()  # call-time keywords that take tensors

    def call_tensor(self, name: str) -> CallTensor | None:
        """The call argument called `name` that takes tensors, or None."""
        return next((t for t in self.call_tensors if t.name == name), None)

    def param(self, name: str) -> Param | None:
        """The constructor or call parameter called `name`, or None."""
        return self.params_by_name.get(name)

    @functools.cached_property
    def params_by_name(self) -> dict[str, Param]:
        """{name: parameter}, the first of that name (constructor before call): `param` is asked for every
        argument of every layer that the shapes, the parameter counts and the cost read."""
        by_name: dict[str, Param] = {}
        for p in self.params + self.call_params:
            by_name.setdefault(p.name, p)
        return by_name

    @property
    def positional_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.positional)


# --------------------------------------------------------------------------
# Names


_TOKENS = (  # CamelCase pieces the generic rule would split wrongly
    ("PReLU", "Prelu"),
    ("ReLU", "Relu"),
    ("AdamW", "Adamw"),
    ("IoU", "Iou"),
    ("NaN", "Nan"),
    ("RMSprop", "Rmsprop"),
    ("FBeta", "Fbeta"),
    ("L1L2", "L1_L2"),
)


def snake_case(name: str) -> str:
    """`Conv2DTranspose` -> `conv2d_transpose`, `LSTM` -> `lstm`,
    `PReLU` -> `prelu`, `GlobalAveragePooling2D` -> `global_average_pooling2d`.

    Digits stay with the word before them and a `D` after a digit stays with
    it (`2D` -> `2d`); acronyms stay whole (`KLDivergence` -> `kl_divergence`).
    A name that is already snake_case is returned unchanged.
    """
    for old, new in _TOKENS:
        name = name.replace(old, new)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)  # LSTMCell -> LSTM_Cell
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s)  # ConvLSTM -> Conv_LSTM
    s = re.sub(r"([0-9])([A-Z][a-z])", r"\1_\2", s)  # F1Score -> F1_Score
    return s.lower()


def camel_case(name: str) -> str:
    """`scaled_sigmoid` -> `ScaledSigmoid` (for plugin and custom names)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


# --------------------------------------------------------------------------
# Tables


class _Tables:
    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
        self.keys: dict[str, dict[str, str]] = {k: {} for k in KINDS}

    def add(self, entry: Entry):
        self.entries[entry.kind][entry.name] = entry
        for key in (entry.name,) + entry.aliases:
            self.keys[entry.kind][key] = entry.name


_tables: _Tables | None = None
_lock = threading.Lock()
_plugin_objects: dict[tuple[str, str], object] = {}


def type_of_default(default) -> str:
    """The parameter type a default value implies ("any" when it implies none)."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, str):
        return "str"
    if isinstance(default, tuple):
        return "tuple"
    return "any"


def _to_tuple(value):
    if isinstance(value, list):
        return tuple(_to_tuple(v) for v in value)
    return value


def _param_from_json(d: dict) -> Param:
    choices = d.get("choices")
    return Param(
        name=d["name"],
        type=d["type"],
        default=REQUIRED if d.get("required") else _to_tuple(d.get("default")),
        positional=bool(d["positional"]),
        choices=tuple(choices) if choices is not None else None,
        nullable=bool(d.get("nullable", False)),
    )


def _entry_from_json(kind: str, name: str, d: dict) -> Entry:
    return Entry(
        kind=kind,
        name=name,
        keras_name=d["keras_name"],
        params=tuple(_param_from_json(p) for p in d["params"]),
        description=d["description"],
        inputs=(d["inputs"][0], d["inputs"][1]),
        call_style=d["call_style"],
        key_args=tuple(d["key_args"]),
        source=d["source"],
        aliases=tuple(d["aliases"]),
        call_params=tuple(_param_from_json(p) for p in d.get("call_params", ())),
        call_tensors=tuple(
            CallTensor(t["name"], bool(t.get("listed", False)), t.get("position")) for t in d.get("call_tensors", ())
        ),
    )


def _load() -> _Tables:
    global _tables
    if _tables is None:
        with _lock:
            if _tables is None:
                data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
                tables = _Tables()
                for kind in KINDS:
                    for name, d in data["kinds"][kind].items():
                        tables.add(_entry_from_json(kind, name, d))
                _tables = tables
    return _tables


def _check_kind(kind: str):
    if kind not in KINDS:
        raise ValueError(f"Expected a kind among {KINDS}, received: {kind!r}")


def lookup(kind: str, name: str) -> Entry | None:
    """The entry of `kind` whose canonical name, class name or alias is
    exactly `name`, or None."""
    _check_kind(kind)
    t = _load()
    canonical = t.keys[kind].get(name)
    return None if canonical is None else t.entries[kind][canonical]


def names(kind: str) -> list[str]:
    """Canonical names of `kind`, sorted."""
    _check_kind(kind)
    return sorted(_load().entries[kind])


def all_keys(kind: str) -> list[str]:
    """Every key `lookup` accepts for `kind` (names, class names, aliases), sorted."""
    _check_kind(kind)
    return sorted(_load().keys[kind])


def _fold(name: str) -> str:
    return name.lower().replace("_", "")


def suggest(name: str, kinds: Iterable[str]) -> str | None:
    """The nearest known key of any of `kinds`, for "did you mean".

    First a match that differs only in case or underscores (`Conv2d` ->
    `conv2d`, `maxpooling2d` -> `max_pooling2d`; canonical names win), then
    the closest key by `difflib` with cutoff 0.75 (`dens` -> `dense`).
    """
    kinds = list(kinds)
    t = _load()
    canon: list[str] = []
    keys: list[str] = []
    for kind in kinds:
        _check_kind(kind)
        canon.extend(t.entries[kind])
        keys.extend(t.keys[kind])
    # snake_case keys first: they are the ones the language reference uses.
    order = lambda k: (k != k.lower(), k)  # noqa: E731
    canon, keys = sorted(set(canon), key=order), sorted(set(keys), key=order)
    folded = _fold(name)
    for pool in (canon, keys):
        for key in pool:
            if _fold(key) == folded:
                return key
    close = difflib.get_close_matches(name, keys, n=1, cutoff=0.75)
    return close[0] if close else None


# --------------------------------------------------------------------------
# Plugins


def register_plugin(kind: str, name: str, params: tuple[Param, ...], description: str, obj) -> Entry:
    """Add a plugin entry (from a Python decorator chosen by the person running
    the compiler, never by a spec). Its keys are `name` and its CamelCase (or
    snake_case) twin. Refuses with ValueError a name that is not a plain
    identifier, is a language keyword, or whose keys shadow an existing key of
    the same kind (or, for layers and activations, of the other of the two:
    both are steps)."""
    _check_kind(kind)
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in _KEYWORDS:
        raise ValueError(f"Expected a plugin name that is an identifier and not a keyword, received: {name!r}")
    params = tuple(params)
    for p in params:
        if not isinstance(p, Param):
            raise ValueError(f"Expected Param objects for plugin {name!r}, received: {p!r}")
        if p.type not in TYPES:
            raise ValueError(
                f"Expected a type among {sorted(TYPES)} for "
                f"parameter {p.name!r} of plugin {name!r}, "
                f"received: {p.type!r}"
            )
    if not callable(obj):
        raise ValueError(f"Expected a class or function for plugin {name!r}, received: {obj!r}")
    twin = snake_case(name) if name != name.lower() else camel_case(name)
    own_keys = tuple(dict.fromkeys((name, twin)))
    against = {kind}
    if kind in ("layer", "activation"):
        against = {"layer", "activation"}
    t = _load()
    with _lock:
        for k in sorted(against):
            for key in own_keys:
                if key in t.keys[k]:
                    existing = t.keys[k][key]
                    raise ValueError(
                        f"plugin {kind} {name!r} would shadow the existing {k} "
                        f"{existing!r} (key {key!r}); choose another name"
                    )
        entry = Entry(
            kind=kind,
            name=name,
            keras_name=f"plugin.{getattr(obj, '__qualname__', name)}",
            params=params,
            description=" ".join(str(description).split()),
            inputs=(1, 1),
            call_style="single",
            key_args=tuple(p.name for p in params if p.required),
            source="plugin",
            aliases=tuple(k for k in own_keys if k != name),
        )
        t.add(entry)
        _plugin_objects[(kind, name)] = obj
    return entry


def plugin_object(entry: Entry):
    """The object a plugin entry was registered with (used by custom.factory)."""
    return _plugin_objects[(entry.kind, entry.name)]


def reset_plugins():
    """Forget every plugin (for tests)."""
    global _tables
    with _lock:
        _plugin_objects.clear()
        _tables = None


def split_kwargs(entry: Entry, kwargs: dict) -> tuple[dict, dict]:
    """(constructor kwargs, call kwargs) of a step's keyword arguments, by
    `Entry.call_params` (e.g. `use_causal_mask` goes to the call)."""
    call_names = {p.name for p in entry.call_params}
    ctor = {k: v for k, v in kwargs.items() if k not in call_names}
    call = {k: v for k, v in kwargs.items() if k in call_names}
    return ctor, call
