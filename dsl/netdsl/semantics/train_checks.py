"""The `train { ... }` section: optimizer, losses, metrics and fit settings, checked."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import Diagnostic, Fail, Span, did_you_mean
from netdsl.semantics import adapting, fine_tuning
from netdsl.semantics.args import Arguments
from netdsl.semantics.consts import Consts
from netdsl.semantics.fine_tuning import InitFrom, Pattern
from netdsl.semantics.values import UNKNOWN, Env, Resolved, Sym, SymCall, describe_value, type_name
from netdsl.syntax import ir

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16", "float16", "bfloat16")


@dataclass
class TrainSpec:
    """A checked train section. Values are constants or `Resolved` registry objects."""

    optimizer: Resolved | None = None
    loss: Any = None  # Resolved, or {output: Resolved}, or [Resolved]
    metrics: Any = None  # [Resolved] or {output: [Resolved]}
    loss_weights: Any = None
    mixed_precision: str | None = None  # a Keras dtype policy name
    # None: the spec says nothing, and the backend's default applies (backend/execution.py)
    jit_compile: Any = None
    steps_per_execution: int | None = None
    fit: dict[str, Any] = field(default_factory=dict)  # batch_size, epochs, validation_split, shuffle
    callbacks: list[Resolved] = field(default_factory=list)
    # Fine-tuning (see `fine_tuning.py`): parts' initial weights from files, frozen parts.
    init: list[InitFrom] = field(default_factory=list)
    init_strict: bool = True
    freeze: list[Pattern] = field(default_factory=list)
    unfreeze: list[Pattern] = field(default_factory=list)  # what the second phase unfreezes (default: all)
    unfreeze_after: int | None = None  # epochs of the first phase; then every part trains
    unfreeze_learning_rate: float | None = None  # the second phase's learning rate
    adapt: bool | list[Pattern] = False  # preprocessing layers adapted to the training data (`adapting.py`)
    max_memory: int | None = None  # bytes a training step may need (netdsl.cost's estimate; docs/cost.md)
    spans: dict[str, Span] = field(default_factory=dict)  # each setting's value, for a diagnostic at it


_SETTINGS = (
    "optimizer",
    "loss",
    "metrics",
    "loss_weights",
    "batch_size",
    "epochs",
    "validation_split",
    "shuffle",
    "mixed_precision",
    "jit_compile",
    "steps_per_execution",
    "callbacks",
    "init",
    "init_strict",
    "freeze",
    "unfreeze",
    "unfreeze_after",
    "unfreeze_learning_rate",
    "adapt",
    "max_memory",
)

# memory units: decimal (kB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB), as a size is written
MEMORY_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_MEMORY_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*")  # linear: no nested repeats


def memory_size(text: str) -> int | None:
    """The bytes of a memory size ("12GiB", "1.5 GB", "800MiB", "4096"); None when it is not one."""
    found = _MEMORY_SIZE.fullmatch(text)
    unit = MEMORY_UNITS.get(found.group(2).lower() or "b") if found else None
    number = float(found.group(1)) * unit if found is not None and unit is not None else math.nan
    return int(number) if math.isfinite(number) and number >= 1 else None


class TrainChecker:
    def check(
        self,
        stmt: ir.Train,
        env: Env,
        outputs: list[str],
        consts: Consts,
        arguments: Arguments,
        diagnostics: list[Diagnostic],
    ) -> TrainSpec:
        """A model's train section (`outputs`: the model's output names so far); its errors go to `diagnostics`."""
        spec = TrainSpec()
        seen: set[str] = set()
        for item in stmt.items:
            try:
                if item.name not in _SETTINGS:
                    raise Fail(
                        item.span,
                        f"unknown train setting '{item.name}'",
                        did_you_mean(item.name, _SETTINGS) or "settings: " + ", ".join(_SETTINGS),
                    )
                if item.name in seen:
                    raise Fail(item.span, f"'{item.name}' is set twice")
                seen.add(item.name)
                spec.spans[item.name] = item.value.span
                value = consts.fold(item.value, env)
                self._setting(spec, item, value, arguments, outputs)
            except Fail as exc:
                diagnostics.extend(exc.all_diagnostics())
        if spec.loss is None and spec.optimizer is not None and "loss" not in seen:
            diagnostics.append(
                Diagnostic.at(
                    stmt.span,
                    "the train section sets an optimizer but no loss",
                    "add one: loss = sparse_categorical_crossentropy",
                )
            )
        diagnostics.extend(_monitoring_per_class(spec, outputs, stmt.span))
        return spec

    def _setting(self, spec: TrainSpec, item: ir.Kwarg, value: Any, arguments: Arguments, outputs: list[str]) -> None:
        resolve = arguments.resolve
        span = item.value.span
        name = item.name
        if value is UNKNOWN:
            return
        if name == "optimizer":
            spec.optimizer = resolve(_named(value, span, "optimizer"), ("optimizer",), span)
        elif name == "loss":
            spec.loss = self._per_output(
                item,
                value,
                span,
                outputs,
                lambda v: resolve(_named(v, span, "loss"), ("loss",), span),
                per_output_list=len(outputs) > 1,
            )
        elif name == "metrics":
            spec.metrics = self._per_output(
                item,
                value,
                span,
                outputs,
                lambda v: [resolve(_named(m, span, "metric"), ("metric",), span) for m in _as_list(v)],
            )
        elif name == "loss_weights":
            spec.loss_weights = self._per_output(
                item, value, span, outputs, lambda v: _positive_number(v, span, name), per_output_list=True
            )
        elif name in ("batch_size", "epochs", "steps_per_execution"):
            number = _positive_int(value, span, name)
            if name == "steps_per_execution":
                spec.steps_per_execution = number
            else:
                spec.fit[name] = number
        elif name == "validation_split":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < 1:
                raise Fail(span, f"validation_split is a fraction in [0, 1), received {describe_value(value)}")
            spec.fit[name] = float(value)
        elif name == "shuffle":
            spec.fit[name] = _bool(value, span, name)
        elif name == "mixed_precision":
            spec.mixed_precision = _policy(value, span)
        elif name == "jit_compile":
            if value != "auto" and not isinstance(value, bool):
                raise Fail(span, f'jit_compile is true, false or "auto", received {describe_value(value)}')
            spec.jit_compile = value
        elif name == "callbacks":
            spec.callbacks = [resolve(_named(c, span, "callback"), ("callback",), span) for c in _as_list(value)]
        elif name in ("init", "init_strict", "freeze", "unfreeze", "unfreeze_after", "unfreeze_learning_rate"):
            fine_tuning.setting(spec, item, value)
        elif name == "adapt":
            adapting.setting(spec, item, value)
        elif name == "max_memory":
            spec.max_memory = _memory(value, span)

    def _per_output(
        self,
        item: ir.Kwarg,
        value: Any,
        span: Span,
        outputs: list[str],
        convert: Callable[[Any], Any],
        per_output_list: bool = False,
    ) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, v in value.items():
                if key not in outputs:
                    raise Fail(
                        _key_span(item, key),
                        f"'{key}' is not an output of this model",
                        did_you_mean(str(key), outputs) or "outputs: " + ", ".join(outputs),
                    )
                out[key] = convert(v)
            return out
        if per_output_list and isinstance(value, list):
            if len(value) != len(outputs):
                raise Fail(
                    span, f"a list here gives one value per output: {len(outputs)} expected, received {len(value)}"
                )
            return [convert(v) for v in value]
        return convert(value)


_AVERAGED = 'average="macro" (or "micro", "weighted")'
# metric -> (the argument whose none gives one value per class (per output column for R2), its default,
# what to give it instead for one number)
_PER_CLASS = {
    "f1_score": ("average", None, _AVERAGED),
    "fbeta_score": ("average", None, _AVERAGED),
    "r2_score": (
        "class_aggregation",
        "uniform_average",
        'class_aggregation="uniform_average" (or "variance_weighted_average")',
    ),
}


def each_output_objective(loss: Any, metrics: Any, names: list[str]) -> list[tuple[str, Resolved]]:
    """(output name, Resolved) of each output's loss, then of each of its metrics, as the compiler spreads a
    checked train section's (one loss or list of metrics for every output, a dict or list per output)."""
    if isinstance(loss, dict):
        found = [(n, loss[n]) for n in names if n in loss]
    elif isinstance(loss, list):
        found = list(zip(names, loss))
    else:
        found = [(n, loss) for n in names] if loss is not None else []
    for name in names:
        listed = metrics.get(name, []) if isinstance(metrics, dict) else metrics or []
        found.extend((name, metric) for metric in listed)
    return found


def per_class_metric_names(metrics: Any, outputs: list[str]) -> dict[str, str]:
    """The names Keras logs a metric of one value per class under (`probs_f1_score` with several outputs),
    each with the argument that makes it one number."""
    per_output = metrics if isinstance(metrics, dict) else dict.fromkeys(outputs, metrics or [])
    names = {}
    for output, listed in per_output.items():
        for metric in listed:
            kwargs = dict(metric.kwargs)
            if metric.name not in _PER_CLASS:
                continue
            argument, default, one_number = _PER_CLASS[metric.name]
            if kwargs.get(argument, default) is not None:
                continue
            written = metric.written if metric.written and metric.written.islower() else metric.name
            name = str(kwargs.get("name") or written)
            names[f"{output}_{name}" if len(outputs) > 1 else name] = one_number
    return names


def _monitoring_per_class(spec: TrainSpec, outputs: list[str], span: Span) -> list[Diagnostic]:
    """A callback that monitors a metric of one value per class: Keras' callbacks compare one number
    (a traceback mid-run, "The truth value of an array ... is ambiguous")."""
    names = per_class_metric_names(spec.metrics, outputs)
    found = []
    for callback in spec.callbacks:
        monitor = dict(callback.kwargs).get("monitor")
        one_number = names.get(monitor.removeprefix("val_")) if isinstance(monitor, str) else None
        if one_number is not None:
            found.append(
                Diagnostic.at(
                    callback.span or span,
                    f"'{callback.name}' cannot monitor '{monitor}': the "
                    f"metric gives one value per class; give it {one_number}",
                )
            )
    return found


def _key_span(item: ir.Kwarg, key: Any) -> Span:
    """The span of a dict key in the setting's text, for a precise caret."""
    if isinstance(item.value, ir.Dict):
        for entry in item.value.items:
            if isinstance(entry.key, ir.Name) and entry.key.id == key:
                return entry.key.span
            if isinstance(entry.key, ir.String) and entry.key.value == key:
                return entry.key.span
    return item.value.span


def _named(value: Any, span: Span, what: str) -> Any:
    if isinstance(value, (Sym, SymCall, str)):
        return value
    raise Fail(span, f"expected {'an' if what[0] in 'aeiou' else 'a'} {what} name, received {type_name(value)}")


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _positive_int(value: Any, span: Span, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Fail(span, f"{name} is a positive integer, received {describe_value(value)}")
    return value


def _positive_number(value: Any, span: Span, name: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise Fail(span, f"{name} are non-negative numbers, received {describe_value(value)}")
    return float(value)


def _bool(value: Any, span: Span, name: str) -> bool:
    if not isinstance(value, bool):
        raise Fail(span, f"{name} is true or false, received {describe_value(value)}")
    return value


def _memory(value: Any, span: Span) -> int:
    size = memory_size(value) if isinstance(value, str) else None
    if size is None:
        raise Fail(
            span,
            f'max_memory is a size such as "12GiB" or "800MB", received {describe_value(value)}',
            "units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB",
        )
    return size


def _policy(value: Any, span: Span) -> str | None:
    if value is False or value is None:
        return None
    if value is True:
        return "mixed_float16"
    if isinstance(value, str) and value in POLICIES:
        return value
    raise Fail(
        span,
        f"mixed_precision is true, false or a policy name, received {describe_value(value)}",
        "policies: " + ", ".join(f'"{p}"' for p in POLICIES),
    )
