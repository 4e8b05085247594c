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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import Span


class _Unknown:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "?"

    def __reduce__(self):
        return (_Unknown, ())


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
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
    args: tuple
    kwargs: tuple  # ((name, value), ...)
    span: Span


@dataclass(frozen=True)
class Resolved:
    """A registry object named in a spec: `relu`, `he_normal`, `l2(1e-4)`, `adam(...)`."""

    kind: str  # registry kind, or "declared_activation"
    name: str  # canonical registry name, or the declared activation's name
    kwargs: tuple = ()  # ((name, value), ...) already checked
    decl: Any = None  # for declared activations: the checked DeclaredActivation
    span: Span | None = field(default=None, compare=False)
    written: str | None = field(default=None, compare=False)  # the name as the spec spelled it (`mae`)

    def describe(self) -> str:
        if not self.kwargs:
            return self.name
        args = ", ".join(f"{k}={describe_value(v)}" for k, v in self.kwargs)
        return f"{self.name}({args})"


def describe_value(value: Any) -> str:
    """A value as the spec would write it, for diagnostics and diagrams."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(describe_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(describe_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{describe_value(k)}: {describe_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Resolved):
        return value.describe()
    if isinstance(value, Sym):
        return value.name
    if isinstance(value, SymCall):
        return f"{value.sym.name}(...)"
    return repr(value)


def type_name(value: Any) -> str:
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
    return type(value).__name__
