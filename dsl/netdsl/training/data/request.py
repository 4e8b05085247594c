"""What data a run asked for (flags or library arguments), and the default train, validation and
test fractions of `--data`: one place for the flags, the library, the run folder's record and the
early data check (none of which may import `run/settings`, which reads the spec)."""

from __future__ import annotations

import math
import os
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
        return out



def check_split(fractions: Any) -> tuple[float, ...]:
    values = tuple(float(f) for f in fractions)
    if not 1 <= len(values) <= 3 or any(not math.isfinite(f) or f < 0 for f in values) \
            or abs(sum(values) - 1.0) > 1e-6 or values[0] <= 0:
        text = ",".join(f"{f:g}" for f in values)
        raise UsageError(f"--split takes up to 3 fractions (train, validation, test) that add up to 1, "
                         f"like 0.8,0.1,0.1; received {text}")
    return values


def parse_split(text: str) -> tuple[float, ...]:
    try:
        return check_split(float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--split takes fractions like 0.8,0.1,0.1; received {text!r}") from None


def describe_source(src: Any) -> Any:
    if isinstance(src, (str, os.PathLike)):
        return {"path": str(src), "absolute": os.path.abspath(src)}
    mapping = src if isinstance(src, dict) else {"x": src[0], "y": src[1]} if isinstance(src, (tuple, list)) \
        else {"x": src}
    return {"arrays": {k: list(getattr(v, "shape", ())) for k, v in mapping.items()}}
