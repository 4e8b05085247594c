"""Constant folding: `let`, arguments, repeat counts, shapes, conditions.

Constant expressions are evaluated here, at compile time, by a small
interpreter over the IR. They can never touch tensors, files, the network or
Python: the only functions are `min max abs int float round floor ceil len`
and the spec's own `let` functions. Everything is bounded before the work is
done (see `netdsl.limits`): the size of every value counted through shared
references, its nesting, the depth of the evaluation, and the total work of
one check, so that a spec cannot make the checker allocate or loop without
limit.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from enum import Enum
from typing import Any, Final, cast

from netdsl.errors import CyclicDefinition, Exhausted, Fail, Span
from netdsl.limits import (
    MAX_CALL_DEPTH,
    MAX_CONST_WORK,
    MAX_EXPRESSION_DEPTH,
    MAX_INT,
    MAX_SEQUENCE,
    MAX_VALUE_DEPTH,
    MAX_VALUE_ITEMS,
)
from netdsl.semantics.scope import FileScope, cycle_text
from netdsl.semantics.values import (
    UNKNOWN,
    Binding,
    Closure,
    Env,
    StepValue,
    Sym,
    SymCall,
    TensorValue,
    Value,
    binding_name,
    describe_value,
    is_number,
    is_unknown,
    type_name,
)
from netdsl.syntax import ir


def _round(x: Any, ndigits: Any = None) -> Any:
    return round(x) if ndigits is None else round(x, ndigits)


BUILTINS: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (function, min args, max args)
    "min": (min, 1, 64),
    "max": (max, 1, 64),
    "abs": (abs, 1, 1),
    "int": (int, 1, 1),
    "float": (float, 1, 1),
    "round": (_round, 1, 2),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "len": (len, 1, 1),
}

_ARITH: dict[str, Callable[..., Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class Consts:
    """Evaluates constant expressions in an Env (or a file's top-level scope)."""

    def __init__(self) -> None:
        self.calls: list[str] = []  # let functions being called, for recursion
        self.lets: list[tuple[str, str]] = []  # file-level lets being folded, for cycles
        self.depth = 0  # folds in progress: the evaluation's recursion
        self.work = 0  # spent of `work_limit` in this check
        self.work_limit = MAX_CONST_WORK  # more for a large file (analysis.py)
        # Items and nesting of every list, tuple and dict made here, by id (the
        # value is kept so its id stays its own): a value's size is then known
        # from its items' without walking shared references again.
        self._sizes: dict[int, tuple[Any, int, int]] = {}

    # ---------------------------------------------------------- names
    def file_let(self, scope: FileScope, name: str, span: Span) -> Value:
        """The folded value of a file-level `let`, evaluated once, in any order."""
        if name in scope.let_values:
            return cast(Value, scope.let_values[name])
        if name in scope.failed_lets:
            raise Fail.reported()  # reported where it was folded
        decl = scope.own[name]
        if not isinstance(decl, ir.Let):  # every caller found a `let` of this name in this scope
            raise Fail(span, f"internal: '{name}' is not a constant of {scope.path}")
        key = (scope.path, name)
        if key in self.lets:
            path = [n for _, n in self.lets[self.lets.index(key) :]]
            raise CyclicDefinition(span, cycle_text("constant", name, path, "is defined in terms of itself"))
        if len(self.lets) >= MAX_CALL_DEPTH:
            raise Fail(
                span,
                f"constant '{name}' is defined through more than {MAX_CALL_DEPTH} constants declared after it",
                "declare a constant before the constants that use it",
            )
        self.lets.append(key)
        try:
            value = self.fold(decl.value, Env(scope))
        except Fail as exc:
            if not isinstance(exc, CyclicDefinition):  # each constant of a cycle reports it from its own side
                scope.failed_lets.add(name)
            raise
        finally:
            self.lets.pop()
        scope.let_values[name] = value
        return value

    def lookup(self, name: str, env: Env, span: Span) -> Binding:
        """What `name` is here: an environment's binding (a value, a tensor, a shared instance), a
        file's constant or function, or else a `Sym` (a registry name, or an unknown one)."""
        value = env.get(name, _MISSING)
        if value is not _MISSING:
            return value
        found = env.scope.find(name)
        if found is not None:
            decl, scope = found
            if isinstance(decl, ir.Let):
                return self.file_let(scope, name, span)
            if isinstance(decl, ir.LetFunc):
                return Closure(decl, None, scope)
        return Sym(name, span)

    # ---------------------------------------------------------- evaluation
    def fold(self, expr: Any, env: Env) -> Value:
        method = _FOLDERS.get(type(expr))
        if method is None:
            raise Fail(expr.span, "expected a constant here", _const_hint(expr))
        self.work += 1
        if self.work > self.work_limit:
            self.charge(0, expr.span)
        if self.depth >= MAX_EXPRESSION_DEPTH:
            raise Fail(
                expr.span,
                f"expression nested more than {MAX_EXPRESSION_DEPTH} deep",
                "counting the let functions and constants it goes through"
                if self.calls or len(self.lets) > 1
                else "split it with let: let a = ...",
            )
        self.depth += 1
        try:
            return method(self, expr, env)
        finally:
            self.depth -= 1

    def charge(self, work: int, span: Span) -> None:
        """Spend `work` of this check's constant budget, before doing it."""
        self.work += work
        if self.work > self.work_limit:
            raise Exhausted(
                span,
                f"the spec's constants take more than {self.work_limit:,} steps to evaluate",
                "functions that call each other more than once, or large constants "
                "given to many layers, multiply the work",
            )

    def charge_value(self, value: Any, span: Span) -> None:
        """Spend the items of a value handed to a step (checking it walks them all)."""
        self.charge(self.size(value)[0] if isinstance(value, (list, tuple, dict)) else 1, span)

    def made(
        self, value: tuple[Any, ...] | list[Any] | dict[Any, Any], span: Span, size: tuple[int, int] | None = None
    ) -> Value:
        """A list, tuple or dict just made (`size`: its (items, nesting) when known
        without walking it): charged, and refused when too large or too deep."""
        items, depth = size or self.size(value)
        if size is not None:
            self._sizes[id(value)] = (value, items, depth)
        if items > MAX_VALUE_ITEMS:
            raise Fail(
                span,
                f"value too large: more than {MAX_VALUE_ITEMS:,} items in all",
                "nested lists count every item, each reference to a shared list again",
            )
        if depth > MAX_VALUE_DEPTH:
            raise Fail(span, f"value nested more than {MAX_VALUE_DEPTH} deep")
        self.charge(len(value), span)
        return value

    def size(self, value: Any) -> tuple[int, int]:
        """(items, nesting) of a value: its items counted in full, through shared references."""
        if not isinstance(value, (list, tuple, dict)):
            return 1, 0
        known = self._sizes.get(id(value))
        if known is not None and known[0] is value:
            return known[1], known[2]
        items, depth = len(value), 1
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, (list, tuple, dict)):
                sub_items, sub_depth = self.size(item)
                items, depth = items + sub_items, max(depth, sub_depth + 1)
        if depth > 1 or items > 64:  # a short flat value is cheaper to count again than to remember
            self._sizes[id(value)] = (value, items, depth)
        return items, depth

    def walk_cost(self, value: Any) -> int:
        """The work of reading a value whole (comparing it, finding its minimum, parsing its text):
        its items counted in full for a list, tuple or dict, a 64th of its length for a string."""
        if isinstance(value, (list, tuple, dict)):
            return self.size(value)[0]
        if isinstance(value, str):
            return len(value) // 64
        return 0

    def _fold_number(self, e: ir.Number, env: Env) -> Value:
        return e.value

    def _fold_string(self, e: ir.String, env: Env) -> Value:
        return e.value

    def _fold_bool(self, e: ir.Bool, env: Env) -> Value:
        return e.value

    def _fold_none(self, e: ir.NoneLit, env: Env) -> Value:
        return None

    def _fold_name(self, e: ir.Name, env: Env) -> Value:
        value: Binding = self.lookup(e.id, env, e.span)
        if isinstance(value, TensorValue):
            if value.poisoned:
                raise Fail.reported()  # a name whose statement failed: that error says why
            raise Fail(
                e.span, f"'{e.id}' is a tensor; a constant is needed here", f"use '{e.id}.shape' for its static shape"
            )
        if isinstance(value, StepValue):
            raise Fail(
                e.span,
                f"'{e.id}' is a shared instance; a constant is needed here",
                f"apply it to a tensor: x -> {e.id}",
            )
        return value

    def _fold_tuple(self, e: ir.Tuple, env: Env) -> Value:
        return self.made(tuple(self.fold(item, env) for item in e.items), e.span)

    def _fold_list(self, e: ir.List, env: Env) -> Value:
        return self.made([self.fold(item, env) for item in e.items], e.span)

    def _fold_dict(self, e: ir.Dict, env: Env) -> Value:
        out = {}
        for item in e.items:
            # A bare name as a key is the name itself, as in `loss = {probs: mse}`.
            key = item.key.id if isinstance(item.key, ir.Name) else self.fold(item.key, env)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise Fail(item.key.span, f"a dict key must be a name, string or number, received {type_name(key)}")
            out[key] = self.fold(item.value, env)
        return self.made(out, e.span)

    def _fold_attr(self, e: ir.Attr, env: Env) -> Value:
        if isinstance(e.value, ir.Name):
            base = env.get(e.value.id, _MISSING)
            if isinstance(base, TensorValue):
                if e.attr == "shape":
                    return base.shape
                raise Fail(e.span, f"a tensor has no attribute '{e.attr}'", "only '.shape' is available")
            if base is _MISSING and e.value.id in env.scope.aliases:
                return self._alias_member(env.scope.aliases[e.value.id], e)
        dotted = dotted_name(e)
        raise Fail(
            e.span,
            f"'{dotted}' is not a name netdsl knows",
            'a dotted name reaches an imported file\'s declarations (import "f.net" as lib) '
            "or a tensor's shape (x.shape)",
        )

    def _alias_member(self, target: FileScope, e: ir.Attr) -> Value:
        decl = target.own.get(e.attr)
        if decl is None or isinstance(decl, ir.ModelDecl):
            raise Fail(
                e.span,
                f"'{cast(ir.Name, e.value).id}' has no declaration '{e.attr}'",
                _near(e.attr, [n for n, d in target.own.items() if not isinstance(d, ir.ModelDecl)]),
            )
        if isinstance(decl, ir.Let):
            return self.file_let(target, e.attr, e.span)
        if isinstance(decl, ir.LetFunc):
            return Closure(decl, None, target)
        return Sym(e.attr, e.span, namespace=cast(ir.Name, e.value).id)

    def _fold_index(self, e: ir.Index, env: Env) -> Value:
        value = self.fold(e.value, env)
        if isinstance(e.index, ir.EllipsisLit) or (
            isinstance(e.index, ir.Tuple) and any(isinstance(i, (ir.Slice, ir.EllipsisLit)) for i in e.index.items)
        ):
            raise Fail(e.index.span, "a constant takes one index or slice; several subscripts and '...' slice tensors")
        if isinstance(e.index, ir.Slice):
            parts = (e.index.start, e.index.stop, e.index.step)
            start, stop, step = (self.fold(p, env) if p is not None else None for p in parts)
            if value is UNKNOWN or is_unknown((start, stop, step)):
                return UNKNOWN
            if not isinstance(value, (tuple, list, str)):
                raise Fail(e.value.span, f"cannot slice {type_name(value)}")
            for bound, node in zip((start, stop, step), parts):
                if node is not None and bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)):
                    raise Fail(node.span, f"a slice bound must be an integer, received {type_name(bound)}")
            if step == 0:
                raise Fail(cast(ir.Expr, e.index.step).span, "a slice's step cannot be 0")
            cut = slice(cast("int | None", start), cast("int | None", stop), cast("int | None", step))
            if isinstance(value, str):
                text = value[cut]
                self.charge(len(text) // 64, e.span)  # copying text is cheap, but not free
                return text
            return self.made(value[cut], e.span)
        index = self.fold(e.index, env)
        if value is UNKNOWN or index is UNKNOWN:
            return UNKNOWN
        if isinstance(value, dict):
            if not isinstance(index, (str, int, float, bool)) and index is not None:
                raise Fail(e.index.span, f"a dict key is a name, string or number, received {type_name(index)}")
            if index not in value:
                raise Fail(e.index.span, f"key {describe_value(index)} is not in the dict")
            return cast(Value, value[index])
        if not isinstance(value, (tuple, list, str)):
            raise Fail(e.value.span, f"cannot index {type_name(value)}")
        if not isinstance(index, int) or isinstance(index, bool):
            raise Fail(e.index.span, f"an index must be an integer, received {type_name(index)}")
        if not -len(value) <= index < len(value):
            raise Fail(e.index.span, f"index {index} is out of range for {type_name(value)} of length {len(value)}")
        return cast(Value, value[index])

    def _fold_unaryop(self, e: ir.UnaryOp, env: Env) -> Value:
        value = self.fold(e.operand, env)
        if value is UNKNOWN:
            return UNKNOWN
        if e.op == "not":
            return not value
        if not is_number(value):
            raise Fail(e.operand.span, f"'{e.op}' needs a number, received {type_name(value)}")
        return -value if e.op == "-" else +value

    def _fold_boolop(self, e: ir.BoolOp, env: Env) -> Value:
        left = self.fold(e.left, env)
        if left is UNKNOWN:
            self.fold(e.right, env)
            return UNKNOWN
        if e.op == "and":
            return self.fold(e.right, env) if left else left
        return left if left else self.fold(e.right, env)

    def _fold_ifexp(self, e: ir.IfExp, env: Env) -> Value:
        cond = self.fold(e.cond, env)
        if cond is UNKNOWN:
            then, orelse = self.fold(e.then, env), self.fold(e.orelse, env)
            self.charge(min(self.walk_cost(then), self.walk_cost(orelse)), e.span)  # `==` reads both
            return then if then == orelse else UNKNOWN
        return self.fold(e.then if cond else e.orelse, env)

    def _fold_binop(self, e: ir.BinOp, env: Env) -> Value:
        left, right = self.fold(e.left, env), self.fold(e.right, env)
        if type(left) in _NUMBERS and type(right) in _NUMBERS and e.op in _ARITH:
            # The common case first: the constant budget's worst case is millions of these.
            return self._arith_numbers(e, left, right)
        if isinstance(left, (Sym, SymCall)):
            raise Fail(e.left.span, *_unknown_name_message(left))
        if isinstance(right, (Sym, SymCall)):
            raise Fail(e.right.span, *_unknown_name_message(right))
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        if e.op in _COMPARE:
            return self._compare(e, left, right)
        if e.op == "@":
            raise Fail(
                e.span,
                "'@' multiplies tensors; it is not a constant operator",
                "it belongs in a declared layer's output expression",
            )
        return self._arith(e, left, right)

    def _compare(self, e: ir.BinOp, left: Value, right: Value) -> bool:
        # Two lists are compared item by item: as much work as the shorter holds (a function
        # comparing a 100,000-item list twice per level took 5 s within the budget's steps).
        self.charge(min(self.walk_cost(left), self.walk_cost(right)), e.span)
        if e.op in ("==", "!="):
            return _COMPARE[e.op](left, right)
        try:
            return _COMPARE[e.op](left, right)
        except TypeError:
            raise Fail(e.span, f"cannot compare {type_name(left)} with {type_name(right)} using '{e.op}'") from None

    def _arith(self, e: ir.BinOp, left: Any, right: Any) -> Value:  # each operand's type checked below
        if e.op == "*" and (isinstance(left, (str, list, tuple)) or isinstance(right, (str, list, tuple))):
            seq, times = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
            if not isinstance(times, int) or isinstance(times, bool):
                raise Fail(e.span, f"cannot multiply {type_name(seq)} by {type_name(times)}")
            if len(seq) * max(times, 0) > MAX_SEQUENCE:
                raise Fail(e.span, f"value too large: more than {MAX_SEQUENCE:,} items")
            (items, depth), times = self.size(seq), max(times, 0)
            self._check_items(items * times, e.span)
            return self._made_sequence(seq * times, e.span, (items * times, depth if times else 1))
        if e.op == "+" and type(left) is type(right) and isinstance(left, (str, list, tuple)):
            if len(left) + len(right) > MAX_SEQUENCE:
                raise Fail(e.span, f"value too large: more than {MAX_SEQUENCE:,} items")
            (left_items, left_depth), (right_items, right_depth) = self.size(left), self.size(right)
            self._check_items(left_items + right_items, e.span)
            return self._made_sequence(left + right, e.span, (left_items + right_items, max(left_depth, right_depth)))
        if not (is_number(left) and is_number(right)):
            raise Fail(e.span, f"cannot apply '{e.op}' to {type_name(left)} and {type_name(right)}")
        return self._arith_numbers(e, left, right)

    def _arith_numbers(self, e: ir.BinOp, left: Any, right: Any) -> Value:
        """An arithmetic operator on two numbers (ints or floats, not bools: the callers checked)."""
        if e.op in ("/", "//", "%") and right == 0:
            raise Fail(e.right.span, "division by zero")
        if e.op == "**":
            _check_power(e, left, right)
        try:
            result = _ARITH[e.op](left, right)
        except (OverflowError, ValueError):
            raise Fail(e.span, "value too large") from None
        return _bounded(result, e)

    def _check_items(self, items: int, span: Span) -> None:
        """Refuse a value of more than MAX_VALUE_ITEMS items before making it."""
        if items > MAX_VALUE_ITEMS:
            raise Fail(
                span,
                f"value too large: more than {MAX_VALUE_ITEMS:,} items in all",
                "nested lists count every item, each reference to a shared list again",
            )

    def _made_sequence(self, value: str | tuple[Any, ...] | list[Any], span: Span, size: tuple[int, int]) -> Value:
        if isinstance(value, str):
            self.charge(len(value) // 64, span)  # copying text is cheap, but not free
            return value
        return self.made(value, span, size)

    def _fold_call(self, e: ir.Call, env: Env) -> Value:
        func = self._callee(e.func, env)
        args = [self.fold(a, env) for a in e.args]
        kwargs = [(k.name, self.fold(k.value, env)) for k in e.kwargs]
        if isinstance(func, Closure):
            return self.call_closure(func, args, dict(kwargs), e)
        if isinstance(func, str):
            return self._builtin(func, args, kwargs, e)
        return SymCall(func, tuple(args), tuple(kwargs), e.span, tuple(k.span for k in e.kwargs))

    def _callee(self, func: Any, env: Env) -> Any:
        """A let function, a builtin's name, or the Sym of a registry object."""
        if isinstance(func, ir.Name):
            value = self.lookup(func.id, env, func.span)
            if isinstance(value, Closure):
                return value
            if isinstance(value, Sym) and func.id in BUILTINS:
                return func.id
            if isinstance(value, Sym):
                return value
            raise Fail(func.span, f"'{func.id}' is {binding_name(value)}, not a function")
        if isinstance(func, ir.Attr):
            value = self._fold_attr(func, env)
            if isinstance(value, (Closure, Sym)):
                return value
        raise Fail(func.span, "expected a function name before '('")

    def _builtin(self, name: str, args: list[Value], kwargs: list[tuple[str, Value]], e: ir.Call) -> Value:
        fn, lo, hi = BUILTINS[name]
        if kwargs:
            raise Fail(e.kwargs[0].span, f"'{name}' takes no keyword arguments")
        if not lo <= len(args) <= hi:
            raise Fail(e.span, f"'{name}' takes {arity(lo, hi)}, received {len(args)}")
        if any(is_unknown(a) for a in args):
            return UNKNOWN
        if name != "len":  # `min`/`max` read every item, `int`/`float` every character (`len` reads none)
            self.charge(sum(self.walk_cost(a) for a in args), e.span)
        if name in ("min", "max") and len(args) == 1:
            if not isinstance(args[0], (tuple, list)) or not args[0]:
                raise Fail(e.args[0].span, f"'{name}' of one value needs a non-empty tuple or list")
        try:
            return _bounded(fn(*args), e)
        except (TypeError, ValueError, OverflowError):
            described = ", ".join(type_name(a) for a in args)
            raise Fail(e.span, f"'{name}' cannot take {described}") from None

    def call_closure(self, func: Closure, args: list[Value], kwargs: dict[str, Value], e: Any) -> Value:
        decl = func.decl
        key = f"{func.scope.path}:{decl.name}"
        if key in self.calls:
            chain = " -> ".join(c.split(":")[-1] for c in self.calls[self.calls.index(key) :] + [key])
            raise Fail(e.span, f"function '{decl.name}' calls itself: {chain}")
        if len(self.calls) >= MAX_CALL_DEPTH:
            raise Fail(e.span, f"functions nested more than {MAX_CALL_DEPTH} calls deep")
        self.charge(CALL_WORK, e.span)
        bound = bind_plain(decl.name, "function", decl.params, args, kwargs, e.span)
        local = Env(func.scope, func.env)
        for name, value in bound.items():
            local.vars[name] = value if value is not _DEFAULT else self.fold(_param(decl, name).default, local)
        self.calls.append(key)
        try:
            return self.fold(decl.body, local)
        finally:
            self.calls.pop()


# How each kind of expression folds: one method per IR class (an IR class not here is not a constant).
_FOLDERS: dict[type[ir.Node], Callable[[Consts, Any, Env], Value]] = {
    ir.Number: Consts._fold_number,
    ir.String: Consts._fold_string,
    ir.Bool: Consts._fold_bool,
    ir.NoneLit: Consts._fold_none,
    ir.Name: Consts._fold_name,
    ir.Tuple: Consts._fold_tuple,
    ir.List: Consts._fold_list,
    ir.Dict: Consts._fold_dict,
    ir.Attr: Consts._fold_attr,
    ir.Index: Consts._fold_index,
    ir.UnaryOp: Consts._fold_unaryop,
    ir.BoolOp: Consts._fold_boolop,
    ir.IfExp: Consts._fold_ifexp,
    ir.BinOp: Consts._fold_binop,
    ir.Call: Consts._fold_call,
}

# What a let function's call costs of the constant budget besides its arguments and
# body: binding and a new scope take about as long as ten operators.
CALL_WORK = 10

_NUMBERS = frozenset({int, float})  # the types of numbers (`type(True)` is bool, not int)


class _Missing(Enum):
    MISSING = "missing"


_MISSING: Final = _Missing.MISSING  # no environment binds the name
_DEFAULT = object()  # a parameter left to its default, evaluated in the callee's scope


def bind_plain(
    name: str, what: str, params: list[ir.Param], args: list[Any], kwargs: dict[str, Any], span: Span
) -> dict[str, Any]:
    """Match arguments to untyped parameters (let functions, blocks, declared layers)."""
    names = [p.name for p in params]
    if len(args) > len(params):
        raise Fail(
            span,
            f"{what} '{name}' takes {arity(0, len(params), 'argument')}, received {len(args)}",
            f"its parameters: {', '.join(names) or 'none'}",
        )
    bound: dict[str, Any] = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise Fail(
                span,
                f"{what} '{name}' has no parameter '{key}'",
                _near(key, names) or f"its parameters: {', '.join(names) or 'none'}",
            )
        if key in bound:
            raise Fail(span, f"parameter '{key}' of '{name}' is given twice")
        bound[key] = value
    for p in params:
        if p.name not in bound:
            if p.default is None:
                raise Fail(span, f"{what} '{name}' is missing the required parameter '{p.name}'")
            bound[p.name] = _DEFAULT
    return bound


def _param(decl: Any, name: str) -> ir.Param:
    found: ir.Param = next(p for p in decl.params if p.name == name)
    return found


def is_default(value: Any) -> bool:
    return value is _DEFAULT


def _check_power(e: ir.BinOp, base: Any, exponent: Any) -> None:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if exponent * math.log2(abs(base)) > 63:
            raise Fail(e.span, "value too large")


def _bounded(result: Any, e: Any) -> Value:
    kind = type(result)
    if (kind is int and -MAX_INT < result < MAX_INT) or (kind is float and math.isfinite(result)):
        return cast(Value, result)  # the common case, before the checks that name what is wrong
    if isinstance(result, int) and not isinstance(result, bool) and abs(result) >= MAX_INT:
        raise Fail(e.span, "value too large")
    if isinstance(result, float) and (math.isinf(result) or math.isnan(result)):
        raise Fail(e.span, "value too large" if math.isinf(result) else "result is not a number")
    if isinstance(result, complex):
        raise Fail(e.span, "result is not a real number")
    return cast(Value, result)


def arity(lo: int, hi: int, noun: str = "argument") -> str:
    if lo == hi:
        return f"{lo} {noun}{'s' if lo != 1 else ''}"
    if lo == 0:
        return f"at most {hi} {noun}{'s' if hi != 1 else ''}"
    return f"{lo} to {hi} {noun}s"


def _near(name: str, candidates: list[str]) -> str | None:
    from netdsl.errors import did_you_mean

    return did_you_mean(name, candidates)


def dotted_name(e: Any) -> str:
    """`lib.bottleneck`, `os.system`: a dotted name as written, for diagnostics."""
    if isinstance(e, ir.Name):
        return e.id
    if isinstance(e, ir.Attr):
        return f"{dotted_name(e.value)}.{e.attr}"
    return "..."


def _const_hint(expr: Any) -> str | None:
    if isinstance(expr, ir.Flow):
        return "a flow ('->') makes tensors; it cannot stand where a constant is needed"
    return None


def _unknown_name_message(value: Any) -> tuple[str, str | None]:
    from netdsl.errors import habit_hint

    sym = value.sym if isinstance(value, SymCall) else value
    return f"unknown name '{sym.name}'", habit_hint(sym.name)
