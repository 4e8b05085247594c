"""The values a checked spec computes with, at compile time.

Constants are plain Python values (int, float, str, bool, None, tuple, list,
dict). Besides them:

- `UNKNOWN`: a constant `check` cannot know (a shape it could not infer, a
  block parameter with no default when the block is checked on its own).
  Every operation on it gives `UNKNOWN`; an `if` on it checks both branches.
- `Sym` / `SymCall`: a bare name or call in argument position (`relu`,
  `l2(1e-4)`, `adam(learning_rate=1e-3)`) waiting for the parameter's type to
  say which registry kind it names.
- `Resolved`: a `Sym`/`SymCall` resolved to a registry entry or a declared
  activation; the compiler turns it into a Keras object.
- `Closure`: a `let f(a) = ...` function with the environment it was declared in.

`Env` is a body's environment: each name bound to a `Binding`, a value or one of the two
things a body binds besides constants, a tensor (`TensorValue`, see `state.Tensor`) or a
shared instance (`StepValue`, see `state.SharedInstance`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, TypeGuard, TypeVar, Union, overload

from netdsl.errors import Span, printable
from netdsl.limits import MAX_SHOWN_VALUE
from netdsl.semantics.scope import FileScope
from netdsl.syntax import ir

# The dtypes of `input ... as DTYPE` (and of `cast`, `arange` and `one_hot`, but `string`).
DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "string",
    "complex64",
    "complex128",
)


class Unknown(Enum):
    """The type of `UNKNOWN`, its one member (an enum: one object, even after pickling or copying)."""

    UNKNOWN = "?"

    def __repr__(self) -> str:
        return "?"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format("?", spec)


UNKNOWN: Final = Unknown.UNKNOWN

Value = Union[
    int,
    float,
    str,
    bool,
    None,
    tuple[Any, ...],
    list[Any],
    dict[Any, Any],
    Unknown,
    "Sym",
    "SymCall",
    "Resolved",
    "Closure",
]
"""Anything a spec's expression evaluates to at compile time (see the module docstring)."""


class TensorValue:
    """Marker base for tensors living in an Env (see state.Tensor)."""

    shape: Value  # without the batch axis: a tuple, or UNKNOWN
    poisoned: bool = False  # bound by a statement that failed


class StepValue:
    """Marker base for a step bound in an Env (see state.SharedInstance): not a constant."""


# What a name of a body is bound to: a constant's value (a block parameter, a local `let`, a
# function), a tensor, or a shared instance (`shared s = dense(8)`).
Binding = Value | TensorValue | StepValue

_Default = TypeVar("_Default")


class Env:
    """A local environment: block parameters, local constants, tensors, shared instances."""

    __slots__ = ("scope", "parent", "vars")

    def __init__(self, scope: FileScope, parent: Env | None = None):
        self.scope = scope
        self.parent = parent
        self.vars: dict[str, Binding] = {}

    @overload
    def get(self, name: str) -> Binding: ...

    @overload
    def get(self, name: str, default: _Default) -> Binding | _Default: ...

    def get(self, name: str, default: object = None) -> object:
        """The innermost binding of `name`, or `default` (None) where no environment binds it."""
        env: Env | None = self
        while env is not None:
            if name in env.vars:
                return env.vars[name]
            env = env.parent
        return default

    def has(self, name: str) -> bool:
        env: Env | None = self
        while env is not None:
            if name in env.vars:
                return True
            env = env.parent
        return False

    def bindings(self) -> Iterator[tuple[str, Binding]]:
        """Each name visible here with its innermost binding, lazily (for suggestions)."""
        seen: set[str] = set()
        env: Env | None = self
        while env is not None:
            for name, value in env.vars.items():
                if name not in seen:
                    seen.add(name)
                    yield name, value
            env = env.parent

    def local_names(self) -> list[str]:
        names: list[str] = []
        env: Env | None = self
        while env is not None:
            names.extend(env.vars)
            env = env.parent
        return names

    def child(self) -> Env:
        return Env(self.scope, self)


@dataclass(frozen=True)
class Closure:
    """A `let f(a, b=1) = ...` function with the environment it was declared in."""

    decl: ir.LetFunc
    env: Env | None
    scope: FileScope


class SpecName(str):
    """A define's value written as a bare name (`-D act=gelu`): a name for a constant that holds
    one (`let act = relu`), else the string "gelu". Written back bare by `describe_value`."""


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float, not a bool (which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_unknown(value: object) -> bool:
    """True if the value is unknown or holds an unknown part (walked without
    recursion: a declared layer's config holds expression trees)."""
    if value is UNKNOWN:
        return True
    if not isinstance(value, (tuple, list, dict)):
        return False
    stack = list(value.values()) if isinstance(value, dict) else list(value)
    while stack:
        item = stack.pop()
        if item is UNKNOWN:
            return True
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


@dataclass(frozen=True)
class Sym:
    name: str
    span: Span
    namespace: str | None = None  # an import alias: `lib.mish`


@dataclass(frozen=True)
class SymCall:
    sym: Sym
    args: tuple[Any, ...]
    kwargs: tuple[Any, ...]  # ((name, value), ...)
    span: Span
    kwarg_spans: tuple[Any, ...] = field(default=(), compare=False)  # where each keyword is, for its errors


@dataclass(frozen=True)
class Resolved:
    """A registry object named in a spec: `relu`, `he_normal`, `l2(1e-4)`, `adam(...)`."""

    kind: str  # registry kind, or "declared_activation"
    name: str  # canonical registry name, or the declared activation's name
    kwargs: tuple[Any, ...] = ()  # ((name, value), ...) already checked
    decl: Any = None  # for declared activations: the checked DeclaredActivation
    span: Span | None = field(default=None, compare=False)
    written: str | None = field(default=None, compare=False)  # the name as the spec spelled it (`mae`)

    def describe(self) -> str:
        if not self.kwargs:
            return self.name
        args = ", ".join(f"{k}={describe_value(v)}" for k, v in self.kwargs)
        return f"{self.name}({args})"


def describe_value(value: Value, limit: int | None = MAX_SHOWN_VALUE, *, raw_controls: bool = False) -> str:
    """A value as the spec would write it, for diagnostics and diagrams, and (with `limit=None`)
    for a `-D NAME=VALUE` that reads back the same value; cut with "..." after `limit`
    characters (None: whole), without walking the rest. A string's control characters (ESC,
    BEL, bidi controls) are written as escapes (`\\x1b`: `printable`), so that a value quoted in a
    message or a table cannot drive the terminal; `raw_controls` keeps them (a `-D` value handed to
    another process, which the spec's strings take as they are)."""
    out = _Text(limit, raw_controls)
    try:
        _describe(value, out)
    except _Full:
        return "".join(out.parts)[:limit] + "..."
    return "".join(out.parts)


class _Full(Exception):
    pass


class _Text:
    def __init__(self, limit: int | None, raw_controls: bool = False):
        self.parts: list[str] = []
        self.left = limit
        self.raw_controls = raw_controls

    def add(self, text: str) -> None:
        self.parts.append(text)
        if self.left is not None:
            self.left -= len(text)
            if self.left < 0:
                raise _Full()


def _describe(value: Value, out: _Text) -> None:
    if isinstance(value, (tuple, list)):
        out.add("(" if isinstance(value, tuple) else "[")
        for i, item in enumerate(value):
            if i:
                out.add(", ")
            _describe(item, out)
        out.add(",)" if isinstance(value, tuple) and len(value) == 1 else ")" if isinstance(value, tuple) else "]")
    elif isinstance(value, dict):
        out.add("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.add(", ")
            _describe(key, out)
            out.add(": ")
            _describe(item, out)
        out.add("}")
    else:
        out.add(_scalar_text(value, out.raw_controls))


def _string_text(text: str, raw_controls: bool = False) -> str:
    """A string in quotes, escaped as the spec reads it back (`\\" \\\\ \\n \\t`); its other control
    characters as `printable` writes them, unless `raw_controls`."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    if raw_controls:
        return '"' + body.replace("\n", "\\n").replace("\t", "\\t") + '"'
    return '"' + printable(body) + '"'


def _scalar_text(value: Value, raw_controls: bool = False) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, SpecName):
        return str(value)
    if isinstance(value, str):
        return _string_text(value, raw_controls)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Resolved):
        return value.describe()
    if isinstance(value, Sym):
        return value.name
    if isinstance(value, SymCall):
        return f"{value.sym.name}(...)"
    if isinstance(value, Closure):
        return f"'{value.decl.name}'"
    return repr(value)


def binding_name(value: Binding) -> str:
    """What a name is bound to, in the words of a diagnostic ("a tensor", "an integer")."""
    if isinstance(value, TensorValue):
        return "a tensor"
    if isinstance(value, StepValue):
        return "a shared instance"
    return type_name(value)


def typed_value(value: Value) -> str:
    """A value with what it is, for "received ..." ("an integer 3", "a string \"x\""); none is
    both its type and its value, so it is named once."""
    return "none" if value is None else f"{type_name(value)} {describe_value(value)}"


def type_name(value: Value) -> str:
    """What a value is, in the words of a diagnostic."""
    if value is UNKNOWN:
        return "an unknown value"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return "a tuple"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, (Sym, SymCall, Resolved)):
        return "a name"
    if isinstance(value, Closure):
        return "the function"
    return type(value).__name__
