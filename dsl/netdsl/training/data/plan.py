"""Data by name: a source per file or folder, split into train / validation / test parts.

    plan = plan_data(DataRequest(data="digits.npz", split=(0.8, 0.1, 0.1)), signature, seed=7)
    plan.train.dataset(batch_size=32, order=EpochOrder(7))   # a tf.data pipeline, prefetched

A source is chosen by what the path is (`source.FORMATS`: `.npz`, `.csv`,
`.tfrecord`, or a folder of class sub-folders of images); the library also
takes arrays. Each source is opened once; a part is the source plus the
indices of its rows, so splitting never copies the data.

Splits: `--split a,b[,c]` of one source uses a permutation drawn from the
seed (the same seed, the same split); separate `--train/--val/--test`
sources are used as they are; with neither, the spec's `validation_split`
takes the last fraction of the training data, as Keras' `fit` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from netdsl.errors import UsageError
from netdsl.training.data.request import DEFAULT_SPLIT, DataRequest, check_split
from netdsl.training.data.signature import Signature
from netdsl.training.data.source import DataSource, open_source
from netdsl.training.errors import DataError

if TYPE_CHECKING:
    from netdsl.training.data.tf_data import EpochOrder  # it loads TensorFlow

ROLES = {"train": "training", "val": "validation", "test": "test"}


@dataclass
class Part:
    """Some rows of a source."""

    role: str
    source: DataSource
    rows: np.ndarray

    @property
    def n(self) -> int:
        return len(self.rows)

    def dataset(self, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True) -> Any:
        """The part as a tf.data pipeline (a distributed job shards it)."""
        return self.source.dataset(self.rows, batch_size, order, with_targets)

    def feed(self, batch_size: int, order: EpochOrder | None = None, with_targets: bool = True) -> Any:
        """The part as the running backend is best fed it (`feed.feed`)."""
        from netdsl.training.data.feed import feed

        return feed(self.source, self.rows, batch_size, order, with_targets)


@dataclass
class DataPlan:
    train: Part
    val: Part | None = None
    test: Part | None = None

    def sizes(self) -> dict[str, int]:
        return {p.role: p.n for p in (self.train, self.val, self.test) if p is not None}


def plan_data(request: DataRequest, signature: Signature, seed: int, validation_split: float | None = None) -> DataPlan:
    """Open the sources and cut them into parts; DataError / UsageError on bad data or flags."""
    names = request.names()
    if request.data is not None:
        source = open_source(request.data, signature, request.targets, names=names)
        parts = split_rows(source.n, request.split or DEFAULT_SPLIT, seed)
        first, *others = (Part(role, source, rows) if rows is not None else None for role, rows in zip(ROLES, parts))
        assert first is not None  # the train part: check_split asks for a train fraction above 0
        plan = DataPlan(first, *others)
    elif request.train is not None:
        train = open_source(request.train, signature, request.targets, names=names)
        names = names.with_classes(train.classes)  # the validation and test labels named as the training ones
        plan = DataPlan(Part("train", train, np.arange(train.n)))
        if request.val is not None:
            val = open_source(request.val, signature, request.targets, names=names)
            plan.val = Part("val", val, np.arange(val.n))
        elif validation_split:
            at = int(math.floor(train.n * (1.0 - validation_split)))  # Keras' own split point
            plan.train.rows, plan.val = np.arange(at), Part("val", train, np.arange(at, train.n))
        if request.test is not None:
            test = open_source(request.test, signature, request.targets, names=names)
            plan.test = Part("test", test, np.arange(test.n))
    else:
        raise UsageError("no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]")
    for part in (plan.train, plan.val, plan.test):
        if part is not None and part.n == 0:
            raise DataError(_empty_message(part, request, validation_split), file=part.source.origin)
    return plan


def split_rows(n: int, fractions: tuple[float, ...], seed: int) -> list[np.ndarray | None]:
    """[train, val, test] row indices (sorted); None for a part the split does not ask for."""
    fractions = check_split(fractions)
    counts = [round(f * n) for f in fractions[1:]]
    sizes = [n - sum(counts), *counts]
    order = np.random.default_rng(seed).permutation(n)
    parts, start = [], 0
    for fraction, size in zip(fractions, sizes):
        parts.append(np.sort(order[start : start + size]) if fraction > 0 else None)
        start += size
    return parts + [None] * (3 - len(parts))


def _empty_message(part: Part, request: DataRequest, validation_split: float | None) -> str:
    what = ROLES[part.role]
    if request.data is not None:
        text = ",".join(f"{f:g}" for f in request.split or DEFAULT_SPLIT)
        return f"the {what} split is empty: --split {text} of {part.source.n} samples gives it no sample"
    if part.role in ("train", "val") and request.val is None and validation_split:
        return (
            f"the {what} split is empty: validation_split = {validation_split:g} of "
            f"{part.source.n} samples gives it no sample"
        )
    return f"the {what} data is empty (no samples)"
