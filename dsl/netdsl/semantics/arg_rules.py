"""Argument values Keras' constructors refuse, checked without Keras.

`args.Arguments.bind` checks names and types; this table adds the ranges, signs
and combinations that Keras' constructors check (`dropout(1.5)`, `dense(-3)`,
`conv2d(8, 0)`, `sgd(momentum=1.5)`, `adam(clipnorm=1.0, clipvalue=1.0)`), so a spec
`check` passes is one `build` accepts and `render` draws. Each rule mirrors the
constructor's own check (read from Keras' source and confirmed by `tests/semantics/test_arg_rules.py`, which makes every
registry entry with out-of-range values and fails where Keras refuses
something this table lets through).

A rule applies to the parameter of that name in every entry of a kind that has it
(`_EVERY_OF_KIND`), unless the entry has its own rule (`_OWN`). A value
`check` cannot know (a block parameter checked on its own) passes: the use
of the block checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netdsl import registry
from netdsl.errors import Fail
from netdsl.semantics.values import describe_value


@dataclass(frozen=True)
class Rule:
    words: str  # what the value must be, as the diagnostic says it ("a positive integer")
    test: Callable[[Any], bool]  # on one number (each item of a tuple of them)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


POSITIVE = Rule("a positive integer", lambda v: v > 0)
NOT_NEGATIVE = Rule("zero or more", lambda v: v >= 0)
NOT_NEGATIVE_NUMBER = Rule("a number of zero or more", lambda v: v >= 0)
FRACTION = Rule("a fraction in [0, 1]", lambda v: 0 <= v <= 1)
FRACTION_BELOW_ONE = Rule("a fraction in [0, 1)", lambda v: 0 <= v < 1)
MORE_THAN_ONE = Rule("an integer greater than 1", lambda v: v > 1)
ODD = Rule("an odd integer", lambda v: v % 2 == 1)
GROUPS = Rule("a positive integer, or -1 (instance normalization)", lambda v: v > 0 or v == -1)
POSITIVE_NUMBER = Rule("a number above 0", lambda v: v > 0)
NOT_POSITIVE_NUMBER = Rule("a number of zero or less", lambda v: v <= 0)
BELOW_ONE = Rule("a number below 1", lambda v: v < 1)
OPEN_FRACTION = Rule("a fraction in (0, 1)", lambda v: 0 < v < 1)
UPPER_FRACTION = Rule("a fraction in (0, 1]", lambda v: 0 < v <= 1)
ACCUMULATION = Rule("0 (no accumulation) or an integer of 2 or more", lambda v: v == 0 or v >= 2)

# Parameter name -> rule, in every layer with a numeric parameter of that name.
_EVERY_LAYER: dict[str, Rule] = {
    name: POSITIVE
    for name in (
        "units",
        "filters",
        "kernel_size",
        "strides",
        "dilation_rate",
        "groups",
        "depth_multiplier",
        "pool_size",
        "size",
        "n",
        "input_dim",
        "output_dim",
        "num_heads",
        "key_dim",
        "value_dim",
        "heads",
        "d_model",
        "stride",
        "head_dim",
        "num_query_heads",
        "num_key_value_heads",
        "power_iterations",
        "num_tokens",
        "sliding_window",
        "projection_dim",
    )
} | {
    "output_padding": NOT_NEGATIVE,
    "cropping": NOT_NEGATIVE,
    "num_oov_indices": NOT_NEGATIVE,
    "max_tokens": MORE_THAN_ONE,
}

_DROPOUTS = (
    "dropout",
    "alpha_dropout",
    "gaussian_dropout",
    "spatial_dropout1d",
    "spatial_dropout2d",
    "spatial_dropout3d",
)
_FACTORS = {
    "scale": FRACTION,
    "x_factor": FRACTION,
    "y_factor": FRACTION,
    "addition_factor": FRACTION,
    "threshold_factor": FRACTION,
}

# Layer -> parameter -> rule: where a layer's constructor checks more, or otherwise.
_BY_LAYER: dict[str, dict[str, Rule]] = {
    **{name: {"rate": FRACTION} for name in _DROPOUTS},
    "gaussian_noise": {"stddev": FRACTION},  # Keras' own bound, though a standard deviation could be larger
    "attention": {"dropout": FRACTION_BELOW_ONE},
    "activity_regularization": {"l1": NOT_NEGATIVE_NUMBER, "l2": NOT_NEGATIVE_NUMBER},
    "relu": {"max_value": NOT_NEGATIVE_NUMBER, "negative_slope": NOT_NEGATIVE_NUMBER, "threshold": NOT_NEGATIVE_NUMBER},
    "leaky_relu": {"negative_slope": NOT_NEGATIVE_NUMBER},
    "zero_padding1d": {"padding": NOT_NEGATIVE},
    "zero_padding2d": {"padding": NOT_NEGATIVE},
    "zero_padding3d": {"padding": NOT_NEGATIVE},
    "group_normalization": {"groups": GROUPS},
    "hashing": {"num_bins": POSITIVE},
    "discretization": {"num_bins": NOT_NEGATIVE},
    "category_encoding": {"num_tokens": POSITIVE},
    "random_gaussian_blur": {"kernel_size": ODD},
    **{name: _FACTORS for name in ("random_perspective", "random_shear", "solarization")},
}

# The other kinds: kind -> parameter -> rule in every entry of the kind, and (kind, name) -> its own.
_EVERY_OF_KIND: dict[str, dict[str, Rule]] = {
    "layer": _EVERY_LAYER,
    "optimizer": {"gradient_accumulation_steps": ACCUMULATION},
    "regularizer": {"l1": NOT_NEGATIVE_NUMBER, "l2": NOT_NEGATIVE_NUMBER, "factor": NOT_NEGATIVE_NUMBER},
    "schedule": {"decay_steps": POSITIVE, "first_decay_steps": POSITIVE},
    "metric": {
        "num_thresholds": POSITIVE,
        "num_classes": POSITIVE,
        "recall": FRACTION,
        "precision": FRACTION,
        "specificity": FRACTION,
        "sensitivity": FRACTION,
        "num_regressors": NOT_NEGATIVE,
    },
}
_OWN: dict[tuple[str, str], dict[str, Rule]] = {
    **{("layer", name): rules for name, rules in _BY_LAYER.items()},
    ("optimizer", "ftrl"): {
        "initial_accumulator_value": NOT_NEGATIVE_NUMBER,
        "l1_regularization_strength": NOT_NEGATIVE_NUMBER,
        "l2_regularization_strength": NOT_NEGATIVE_NUMBER,
        "l2_shrinkage_regularization_strength": NOT_NEGATIVE_NUMBER,
        "learning_rate_power": NOT_POSITIVE_NUMBER,
    },
    ("optimizer", "lion"): {"beta_1": UPPER_FRACTION},
    ("optimizer", "sgd"): {"momentum": FRACTION},
    ("initializer", "variance_scaling"): {"scale": POSITIVE_NUMBER},
    ("loss", "categorical_generalized_cross_entropy"): {"q": OPEN_FRACTION},
    ("metric", "auc"): {"num_thresholds": MORE_THAN_ONE},
    ("metric", "f1_score"): {"threshold": UPPER_FRACTION},
    ("metric", "fbeta_score"): {"threshold": UPPER_FRACTION, "beta": POSITIVE_NUMBER},
    ("callback", "reduce_lr_on_plateau"): {"factor": BELOW_ONE},
}
# Optimizer keywords of which Keras takes at most one.
_CLIPS = ("clipnorm", "clipvalue", "global_clipnorm")

_NUMERIC = ("int", "float", "ints", "schedule_or_float")


def rule_for(entry: registry.Entry, param: registry.Param) -> Rule | None:
    """The value rule of one parameter of a registry entry, or None."""
    if param.type not in _NUMERIC:
        return None
    own = _OWN.get((entry.kind, entry.name), {})
    if param.name in own:
        return own[param.name]
    return _EVERY_OF_KIND.get(entry.kind, {}).get(param.name)


def check_ranges(entry: registry.Entry, checked: dict[str, Any], spans: dict[str, Any], span: Any) -> list[Fail]:
    """A Fail for each argument of `checked` (values already of the right type) out of its range,
    and for each combination of arguments Keras refuses; [] if all are fine."""
    fails = []
    for name, value in checked.items():
        param = entry.param(name)
        rule = rule_for(entry, param) if param is not None else None
        if rule is None or not _breaks(rule, value):
            continue
        fails.append(
            Fail(
                spans.get(name, span),
                f"parameter '{name}' of '{entry.name}' is {_plural(rule, value)}, received {describe_value(value)}",
            )
        )
    fails.extend(_combinations(entry, checked, spans, span))
    return fails


def _breaks(rule: Rule, value: Any) -> bool:
    items = value if isinstance(value, (tuple, list)) else (value,)
    return any(_number(v) and not rule.test(v) for v in items)


def _plural(rule: Rule, value: Any) -> str:
    if not isinstance(value, (tuple, list)):
        return rule.words
    return "made of " + rule.words.replace("a positive integer", "positive integers").replace(
        "an odd integer", "odd integers"
    )


def _combinations(entry: registry.Entry, checked: dict[str, Any], spans: dict[str, Any], span: Any) -> list[Fail]:
    if entry.kind == "optimizer":
        clips = [name for name in _CLIPS if checked.get(name) is not None]
        if len(clips) > 1:
            return [
                Fail(
                    spans.get(clips[1], span),
                    f"'{entry.name}' takes one of {', '.join(_CLIPS)}; received {' and '.join(clips)}",
                )
            ]
    if entry.kind == "metric" and entry.name == "auc" and checked.get("num_labels") and not checked.get("multi_label"):
        return [Fail(spans.get("num_labels", span), "'auc' takes num_labels only with multi_label=true")]
    if entry.name == "group_query_attention":
        heads, groups = checked.get("num_query_heads"), checked.get("num_key_value_heads")
        if isinstance(heads, int) and isinstance(groups, int) and heads > 0 and groups > 0 and heads % groups:
            return [
                Fail(
                    spans.get("num_key_value_heads", span),
                    f"'{entry.name}' needs num_query_heads ({heads}) divisible by num_key_value_heads ({groups})",
                )
            ]
    return []
