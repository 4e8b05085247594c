"""What data a run asked for (flags or library arguments), and the default train, validation and
test fractions of `--data`: one place for the flags, the library, the run folder's record and the
early data check (none of which may import `run/settings`, which reads the spec)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import UsageError

DEFAULT_SPLIT = (0.8, 0.1, 0.1)


@dataclass
class DataRequest:
    """Where the data comes from, as the user said it (flags or library arguments)."""

    data: Any = None
    split: tuple[float, ...] | None = None  # None: DEFAULT_SPLIT
    train: Any = None
    val: Any = None
    test: Any = None
    targets: dict[str, str] = field(default_factory=dict)
    features: tuple[str, ...] | None = None  # --features: the CSV columns that form the input, in this order
    drop: tuple[str, ...] = ()  # --drop: CSV columns left out of the input

    def names(self) -> DataNames:
        """The column choice as the readers take it (no classes yet: the training data gives them)."""
        return DataNames(self.features, self.drop)

    def describe(self) -> dict[str, Any]:
        """For config.json: paths as given and absolute; arrays by name and shape."""
        out: dict[str, Any] = {}
        for key in ("data", "train", "val", "test"):
            value = getattr(self, key)
            if value is not None:
                out[key] = describe_source(value)
        if self.data is not None:
            out["split"] = list(self.split or DEFAULT_SPLIT)
        if self.targets:
            out["targets"] = dict(self.targets)
        if self.features is not None:
            out["features"] = list(self.features)
        if self.drop:
            out["drop"] = list(self.drop)
        return out


@dataclass(frozen=True)
class DataNames:
    """How a table's columns and a label's names are read: `features` (exactly these CSV columns form the
    input, in this order; None: every numeric column that is no target), `drop` (CSV columns left out), and
    `classes` ({output: class names}: a label that is a name is the index of that name; empty: the training
    data's own names, sorted). A run records what it trained with, so evaluate and predict read alike."""

    features: tuple[str, ...] | None = None
    drop: tuple[str, ...] = ()
    classes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def with_classes(self, classes: Mapping[str, tuple[str, ...]]) -> DataNames:
        return DataNames(self.features, self.drop, {**self.classes, **classes})

    def key(self) -> tuple:
        """Hashable: the same names, the same key."""
        return (self.features, self.drop, tuple(sorted((k, tuple(v)) for k, v in self.classes.items())))


def parse_columns(text: str, flag: str) -> tuple[str, ...]:
    """`--features a,b,c` / `--drop id` as column names (each named once, none empty)."""
    names = tuple(part.strip() for part in text.split(","))
    if not names or any(not name for name in names):
        raise UsageError(f"{flag} takes column names separated by commas, like f0,f1,f2; received {text!r}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"{flag} names the column {repeated[0]!r} twice")
    return names


def check_columns(
    features: Any, drop: Any, flags: tuple[str, str] = ("features=", "drop=")
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """`features` and `drop` (column names: a sequence, a comma-separated string, or None) checked; `flags`:
    how messages name them (the library's keywords, or the CLI's --features and --drop)."""

    def names(value: Any, flag: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return parse_columns(value, flag)
        if not all(isinstance(v, str) for v in value):
            raise UsageError(f"{flag} takes column names (strings); received {value!r}")
        return parse_columns(",".join(value), flag) if value else ()

    chosen = None if features is None else names(features, flags[0])
    dropped = () if drop is None else names(drop, flags[1])
    if chosen is not None and dropped:
        raise UsageError(f"give the input's columns with {flags[0]} or leave some out with {flags[1]}, not both")
    return chosen, dropped


def check_split(fractions: Any) -> tuple[float, ...]:
    values = tuple(float(f) for f in fractions)
    if (
        not 1 <= len(values) <= 3
        or any(not math.isfinite(f) or f < 0 for f in values)
        or abs(sum(values) - 1.0) > 1e-6
        or values[0] <= 0
    ):
        text = ",".join(f"{f:g}" for f in values)
        raise UsageError(
            f"--split takes up to 3 fractions (train, validation, test) that add up to 1, "
            f"like 0.8,0.1,0.1; received {text}"
        )
    return values


def parse_split(text: str) -> tuple[float, ...]:
    try:
        return check_split(float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--split takes fractions like 0.8,0.1,0.1; received {text!r}") from None


def describe_source(src: Any) -> Any:
    if isinstance(src, (str, os.PathLike)):
        return {"path": str(src), "absolute": os.path.abspath(src)}
    mapping = (
        src if isinstance(src, dict) else {"x": src[0], "y": src[1]} if isinstance(src, (tuple, list)) else {"x": src}
    )
    return {"arrays": {k: list(getattr(v, "shape", ())) for k, v in mapping.items()}}
