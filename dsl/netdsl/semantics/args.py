"""Arguments against a registry entry's parameter table: names, positions, types.

A bare name or call given as an argument (`activation=relu`,
`kernel_regularizer=l2(1e-4)`) is resolved here, against the registry kind
the parameter's type names — never by looking anything up in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netdsl import registry
from netdsl.errors import Fail, Span, did_you_mean, habit_hint, parameter_hint
from netdsl.semantics.arg_rules import check_ranges
from netdsl.semantics.consts import arity
from netdsl.semantics.shapes_declared import reshaping_call
from netdsl.semantics.values import DTYPES as DTYPES  # defined there (array_ops reads it without this module)
from netdsl.semantics.values import UNKNOWN, Resolved, Sym, SymCall, describe_value, is_number, typed_value

# Parameter type -> the registry kinds a name given for it may come from.
_NAMED_KINDS = {
    "activation": ("activation",),
    "initializer": ("initializer",),
    "regularizer": ("regularizer",),
    "constraint": ("constraint",),
    "layer": ("layer",),
    "schedule_or_float": ("schedule",),
    "optimizer": ("optimizer",),
    "loss": ("loss",),
    "metric": ("metric",),
    "callback": ("callback",),
    "any": ("activation", "initializer", "regularizer", "constraint"),
}
_KIND_WORDS = {
    "activation": "activation",
    "initializer": "initializer",
    "regularizer": "regularizer",
    "constraint": "constraint",
    "layer": "layer",
    "schedule": "learning-rate schedule",
    "optimizer": "optimizer",
    "loss": "loss",
    "metric": "metric",
    "callback": "callback",
}

# Registry names left out on purpose: (kind, name) -> (why, what to use instead).
_WRITES_FILES = "callbacks that write files are not offered (a spec cannot choose paths to write)"
_KEEPS_BEST = "netdsl train keeps the best epoch itself: RUN_DIR/best.keras (and model.keras, checkpoint.npz)"
REFUSED = {
    ("callback", "model_checkpoint"): (_WRITES_FILES, _KEEPS_BEST),
    ("callback", "ModelCheckpoint"): (_WRITES_FILES, _KEEPS_BEST),
    ("callback", "tensor_board"): (
        _WRITES_FILES,
        "netdsl train --tensorboard writes TensorBoard logs into the run folder, history.csv and curves.svg always",
    ),
    ("callback", "csv_logger"): (_WRITES_FILES, "netdsl train writes history.csv into the run folder"),
    ("callback", "backup_and_restore"): (_WRITES_FILES, "netdsl train --resume auto continues an interrupted run"),
    ("callback", "lambda_callback"): ("it runs Python code", None),
}

# Looks up a spec-declared activation by Sym (a callback from the expander).
DeclaredLookup = Callable[[Sym], Any]
# The losses and metrics declared where the current statement stands, by name (a callback from the expander).
ObjectivesInScope = Callable[[], dict[str, Any]]


# An entry's parameters by name, its positional ones, its required ones: worked out
# once per entry (a layer call is checked against them), kept with the entry itself.
_SIGNATURES: dict[int, tuple[registry.Entry, dict[str, Any], list[Any], list[Any]]] = {}


def _signature(entry: registry.Entry) -> tuple[dict[str, Any], list[Any], list[Any]]:
    known = _SIGNATURES.get(id(entry))
    if known is None or known[0] is not entry:
        every = entry.params + entry.call_params
        known = _SIGNATURES[id(entry)] = (
            entry,
            {p.name: p for p in every},
            [p for p in entry.params if p.positional],
            [p.name for p in every if p.default is registry.REQUIRED],
        )
    return known[1:]


class Arguments:
    """Checks the arguments of one call against one registry entry."""

    def __init__(self, declared_activation: DeclaredLookup, declared_objectives: ObjectivesInScope = dict):
        self.declared_activation = declared_activation
        self.declared_objectives = declared_objectives

    def bind(
        self, entry: registry.Entry, args: list[Any], kwargs: list[tuple[str, Any, Any]], span: Span
    ) -> dict[str, Any]:
        """kwargs: (name, value, span). Returns {param: checked value}."""
        params, positional, required = _signature(entry)
        if len(args) > len(positional):
            names = ", ".join(p.name for p in positional) or "none"
            raise Fail(
                span,
                f"'{entry.name}' takes {arity(0, len(positional), 'positional argument')}, received {len(args)}",
                f"its positional parameters: {names}",
            )
        bound: dict[str, Any] = {}
        spans: dict[str, Any] = {}
        fails: list[Fail] = []  # every independent error of the call, reported together
        for param, (value, value_span) in zip(positional, args):
            bound[param.name], spans[param.name] = value, value_span
        for name, value, value_span in kwargs:
            if name not in params:
                fails.append(
                    Fail(
                        value_span,
                        f"unknown parameter '{name}' for '{entry.name}'",
                        parameter_hint(name, params) or _param_list(entry),
                    )
                )
            elif name in bound:
                fails.append(Fail(value_span, f"parameter '{name}' of '{entry.name}' is given twice"))
            else:
                bound[name], spans[name] = value, value_span
        for name in required:
            if name not in bound:
                fails.append(
                    Fail(span, f"'{entry.name}' is missing the required parameter '{name}'", _param_list(entry))
                )
        checked: dict[str, Any] = {}
        for name, value in bound.items():
            try:
                checked[name] = self.check(params[name], value, spans[name], entry.name)
            except Fail as exc:
                fails.append(exc)
        if not fails:
            fails = check_ranges(entry, checked, spans, span)
        if fails:
            raise Fail.of(fails)
        return checked

    def check(self, param: registry.Param, value: Any, span: Span, owner: str) -> Any:
        """The value if it fits the parameter's type (names resolved), else a Fail."""
        if value is UNKNOWN:
            return value
        if value is None and (
            param.default is None or param.nullable or param.type not in ("int", "float", "bool", "str")
        ):
            return None
        kind = param.type
        if kind == "dtype" and isinstance(value, Sym) and value.namespace is None and value.name in DTYPES:
            return value.name
        if (
            kind in _NAMED_KINDS
            and isinstance(value, (Sym, SymCall, str))
            and not (kind == "any" and isinstance(value, str))
        ):
            return self.resolve(value, _NAMED_KINDS[kind], span)
        checker = _CHECKS.get(kind)
        if checker is None or checker(value, param):
            return float(value) if kind == "float" and _is_int(value) else value
        if isinstance(value, (Sym, SymCall)):
            sym = value.sym if isinstance(value, SymCall) else value
            raise Fail(span, f"unknown name '{sym.name}'", habit_hint(sym.name) or _quote_hint(sym.name, param))
        if kind == "str" and isinstance(value, str) and param.choices:
            choices = ", ".join(f'"{c}"' for c in param.choices) + (" or none" if param.nullable else "")
            near = did_you_mean(value, param.choices)
            raise Fail(
                span,
                f"parameter '{param.name}' of '{owner}' is one of {choices}, received {describe_value(value)}",
                near.replace("'", '"') if near else None,
            )
        raise Fail(
            span,
            f"parameter '{param.name}' of '{owner}' expects {_TYPE_WORDS.get(kind, kind)}, "
            f"received {typed_value(value)}",
            _choices_hint(param),
        )

    def resolve(self, value: Sym | SymCall | str, kinds: tuple[str, ...], span: Span) -> Resolved:
        """A name (or call) given for a registry kind, checked, as a Resolved."""
        if isinstance(value, str):
            value = Sym(value, span)
        sym = value.sym if isinstance(value, SymCall) else value
        if "activation" in kinds:
            decl = self.declared_activation(sym)
            if decl is not None:
                return self._declared(decl, value, span)
        declared = self._objectives(kinds)
        if _spelled(sym) in declared:
            return self._declared_objective(declared[_spelled(sym)], value, kinds, span)
        if sym.namespace is None:
            for kind in kinds:
                entry = registry.lookup(kind, sym.name)
                if entry is not None:
                    return self._registry_object(entry, value, span)
        words = " or ".join(_KIND_WORDS[k] for k in kinds) if len(kinds) <= 2 else "name"
        refused = REFUSED.get((kinds[0], sym.name)) if sym.namespace is None else None
        if refused is not None:
            raise Fail(sym.span, f"unknown {words} '{sym.name}': {refused[0]}", refused[1])
        pool = [*declared, *(key for kind in kinds for key in registry.all_keys(kind))]
        hint = habit_hint(sym.name) if sym.namespace is None else None
        if hint is None and "loss" in kinds and _folded(sym.name) in _CROSS_ENTROPIES:
            hint = (
                "which one depends on the labels: sparse_categorical_crossentropy for class ids, "
                "categorical_crossentropy for one-hot rows, binary_crossentropy for 0/1 "
                "(add from_logits=true when the output has no softmax or sigmoid)"
            )
        raise Fail(sym.span, f"unknown {words} '{_spelled(sym)}'", hint or did_you_mean(sym.name, pool))

    def _objectives(self, kinds: tuple[str, ...]) -> dict[str, Any]:
        """The declared losses and metrics a name given for `kinds` may mean (none but for a loss or metric)."""
        return self.declared_objectives() if "loss" in kinds or "metric" in kinds else {}

    def _declared_objective(self, decl: Any, value: Sym | SymCall, kinds: tuple[str, ...], span: Span) -> Resolved:
        """`loss = contrastive(margin=1)`, `metrics = [gap]`: a declared loss or metric with its constants bound.
        A declared loss is a metric too (the mean of its per-sample values), as a Keras loss function is."""
        if decl is None:  # its declaration failed its check, and says so
            raise Fail.reported()
        kind = "loss" if "loss" in kinds else "metric"
        if kind == "loss" and decl.kind == "metric":
            raise Fail(
                value.span,
                f"'{decl.name}' is a declared metric, not a loss",
                f"list it in metrics = [{decl.name}], or declare it as 'loss {decl.name}(...) = ...'",
            )
        args = list(value.args) if isinstance(value, SymCall) else []
        kwargs = dict(value.kwargs) if isinstance(value, SymCall) else {}
        bound = decl.bind_constants(args, kwargs, value.span)
        # its span is the name's (`{y: contrastive}`): diagnostics about it point there
        return Resolved(f"declared_{kind}", decl.name, tuple(sorted(bound.items())), decl=decl, span=value.span)

    def _registry_object(self, entry: registry.Entry, value: Sym | SymCall, span: Span) -> Resolved:
        if isinstance(value, SymCall):
            args = [(a, value.span) for a in value.args]
            spans = value.kwarg_spans or (value.span,) * len(value.kwargs)
            kwargs = [(k, v, at) for (k, v), at in zip(value.kwargs, spans)]
            checked = self.bind(entry, args, kwargs, value.span)
        else:
            checked = self.bind(entry, [], [], value.span)
        written = (value.sym if isinstance(value, SymCall) else value).name
        return Resolved(entry.kind, entry.name, tuple(sorted(checked.items())), span=span, written=written)

    def _declared(self, decl: Any, value: Sym | SymCall, span: Span) -> Resolved:
        reshaping = reshaping_call(decl.body)
        if reshaping is not None:  # a layer's activation keeps the layer's shape
            what = "slices its input" if reshaping == "get_item" else f"changes its input's shape ('{reshaping}')"
            raise Fail(
                span,
                f"the activation '{decl.name}' {what}, so it is no layer's activation: "
                "the layer's output shape would not be its own",
                f"apply it as a step: -> dense(...) -> {decl.name}",
            )
        args = list(value.args) if isinstance(value, SymCall) else []
        kwargs = dict(value.kwargs) if isinstance(value, SymCall) else {}
        bound = decl.bind_constants(args, kwargs, span)
        return Resolved("declared_activation", decl.name, tuple(sorted(bound.items())), decl=decl, span=span)


# PyTorch's and other libraries' names of a cross-entropy loss, folded (`CrossEntropyLoss`, `cross_entropy`).
_CROSS_ENTROPIES = {"crossentropy", "crossentropyloss", "nllloss", "nll", "ce", "celoss", "softmaxcrossentropy"}


def _folded(name: str) -> str:
    return name.lower().replace("_", "")


def _spelled(sym: Sym) -> str:
    return f"{sym.namespace}.{sym.name}" if sym.namespace else sym.name


def _param_list(entry: registry.Entry) -> str:
    names = [p.name for p in entry.params if p.name not in ("name", "dtype", "trainable")]
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"'{entry.name}' takes: {shown}" if names else f"'{entry.name}' takes no parameters"


def _quote_hint(name: str, param: registry.Param) -> str | None:
    """`padding=same`: the string the parameter takes, quoted."""
    if param.choices and name.lower() in {c.lower() for c in param.choices}:
        return f'a string is quoted: {param.name}="{name}"'
    return None


def _choices_hint(param: registry.Param) -> str | None:
    if param.choices:
        return "one of: " + ", ".join(f'"{c}"' for c in param.choices) + (", none" if param.nullable else "")
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_str(v: Any, p: registry.Param) -> bool:
    if not isinstance(v, str):
        return False
    return not p.choices or v.lower() in {c.lower() for c in p.choices}


_CHECKS: dict[str, Callable[[Any, registry.Param], bool]] = {
    "int": lambda v, p: _is_int(v),
    "float": lambda v, p: is_number(v),
    "bool": lambda v, p: isinstance(v, bool),
    "str": _check_str,
    "ints": lambda v, p: _is_int(v) or (isinstance(v, (tuple, list)) and all(_is_int(x) for x in v)),
    "shape": lambda v, p: isinstance(v, (tuple, list)) and all(_is_int(x) or x is None or x is UNKNOWN for x in v),
    "tuple": lambda v, p: isinstance(v, (tuple, list)),
    "list": lambda v, p: isinstance(v, (tuple, list)),
    "dict": lambda v, p: isinstance(v, dict),
    "dtype": lambda v, p: isinstance(v, str) and v in DTYPES,
    "schedule_or_float": lambda v, p: is_number(v),
    "activation": lambda v, p: False,
    "initializer": lambda v, p: is_number(v),  # a number is a constant initializer
    "regularizer": lambda v, p: False,
    "constraint": lambda v, p: False,
    "layer": lambda v, p: False,
    "any": lambda v, p: not isinstance(v, (Sym, SymCall)),
}

_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "ints": "an integer or a tuple of integers",
    "shape": "a shape tuple",
    "tuple": "a tuple",
    "list": "a list",
    "dict": "a dict",
    "dtype": 'a dtype name such as "float32"',
    "schedule_or_float": "a number or a learning-rate schedule",
    "activation": "an activation",
    "initializer": "an initializer",
    "regularizer": "a regularizer",
    "constraint": "a constraint",
    "layer": "a layer",
}
