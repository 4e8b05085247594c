"""Spec values, steps and block-body expressions as IR nodes (for the formatter to print)."""

from __future__ import annotations

from typing import Any

from netdsl import registry
from netdsl.decompiler.layer_steps import Step
from netdsl.decompiler.units import InputDim, LetRef, ParamRef, Scaled
from netdsl.decompiler.values import DictValue, ListValue, Named
from netdsl.errors import Span
from netdsl.syntax import ir

SPAN = Span.at("<decompile>", 1, 1)
_SINGLE_POSITIONAL_TYPES = ("ints", "any")
_MAX_DENOMINATOR = 1000


def node(cls, **fields):
    """An IR node without validation (the decompiler builds only well-formed ones)."""
    return cls.model_construct(span=SPAN, **fields)


def name(text: str) -> ir.Name:
    return node(ir.Name, kind="name", id=text)


def value(v: Any) -> Any:
    """A spec value (see values.py) or block expression as an IR expression."""
    if v is None:
        return node(ir.NoneLit, kind="none")
    if isinstance(v, bool):
        return node(ir.Bool, kind="bool", value=v)
    if isinstance(v, float):
        return _fraction(v) or node(ir.Number, kind="number", value=v)
    if isinstance(v, int):
        return node(ir.Number, kind="number", value=v)
    if isinstance(v, str):
        return node(ir.String, kind="string", value=v)
    if isinstance(v, tuple):
        return node(ir.Tuple, kind="tuple", items=[value(i) for i in v])
    if isinstance(v, ListValue):
        return node(ir.List, kind="list", items=[value(i) for i in v.items])
    if isinstance(v, DictValue):
        return node(
            ir.Dict,
            kind="dict",
            items=[node(ir.DictItem, kind="dict_item", key=value(k), value=value(x)) for k, x in v.items],
        )
    if isinstance(v, Named):
        entry = registry.lookup(v.kind, v.name)
        positional = positional_count(entry, v.kwargs) if v.kind == "layer" else _named_positional(entry, v.kwargs)
        return call(v.name, v.kwargs, positional)
    if isinstance(v, (ParamRef, LetRef)):
        return name(v.name)
    if isinstance(v, InputDim):
        shape = node(ir.Attr, kind="attr", value=name("x"), attr="shape")
        return node(ir.Index, kind="index", value=shape, index=node(ir.Number, kind="number", value=-1))
    if isinstance(v, Scaled):
        if v.divide:
            return binop("//", value(v.base), value(v.factor))
        return binop("*", value(v.factor), value(v.base))
    raise AssertionError(f"export: no spec form for {v!r}")  # pragma: no cover


def _fraction(v: float):
    """`1 / 255` for 0.00392156862745098: a float with a long decimal that is exactly p / q."""
    if len(repr(v)) <= 12 or not 0 < abs(v) < 1e6:
        return None
    for q in range(2, _MAX_DENOMINATOR + 1):
        p = round(v * q)
        if p and p / q == v:
            return binop("/", node(ir.Number, kind="number", value=p), node(ir.Number, kind="number", value=q))
    return None


def binop(op: str, left, right) -> ir.BinOp:
    return node(ir.BinOp, kind="binop", op=op, left=left, right=right)


def call(func: str, kwargs: tuple, positional: int = 0):
    """`func(a, b, key=value)`, or the bare name without arguments."""
    if not kwargs:
        return name(func)
    args = [value(v) for _, v in kwargs[:positional]]
    keywords = [node(ir.Kwarg, kind="kwarg", name=k, value=value(v)) for k, v in kwargs[positional:]]
    return node(ir.Call, kind="call", func=name(func), args=args, kwargs=keywords)


def step(s: Step):
    """A step as written in a flow: `conv2d(64, 3, strides=2)`, `relu`, `encoder`."""
    if s.kind in ("model", "shared"):
        return name(s.name)
    return call(s.name, s.kwargs, positional_count(s.entry, s.kwargs))


def repeated(expr, count):
    """`expr * count` (count an int or a block expression), or expr when count is 1."""
    if isinstance(count, int) and count == 1:
        return expr
    return binop("*", expr, value(count))


def positional_count(entry: registry.Entry | None, kwargs: tuple) -> int:
    """How many leading arguments to write positionally: the required parameters
    (`conv2d(64, 3)`), or a lone leading size (`max_pooling2d(3)`, `zero_padding2d(1)`)."""
    if entry is None:
        return 0
    given = dict(kwargs)
    count = 0
    for i, param in enumerate(entry.params):
        if param.name not in given or not param.positional:
            break
        lone_size = (
            i == 0
            and param.type in _SINGLE_POSITIONAL_TYPES
            and param.name != "axis"
            and entry.key_args[:1] == (param.name,)
        )
        if not (param.required or lone_size):
            break
        if kwargs[count][0] != param.name:
            break
        count += 1
    return count


def _named_positional(entry: registry.Entry | None, kwargs: tuple) -> int:
    """`l2(0.0001)`: a lone first argument is written positionally."""
    if entry is None or len(kwargs) != 1 or not entry.params or entry.params[0].name != kwargs[0][0]:
        return 0
    return 1 if entry.params[0].positional else 0
