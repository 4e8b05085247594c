"""Saving a built model: atomically, so a failed save leaves earlier files untouched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netdsl.atomic import replacing

__all__ = ["save_atomic"]


def save_atomic(model: Any, target: Path) -> Path:
    """`model.save(target)` through a temporary `.keras` file in the same folder."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not optimizer.built:
        # Saved with its (zero) slots, so loading does not warn that the
        # optimizer's variables do not match.
        optimizer.build(model.trainable_variables)
    with replacing(target, suffix=".tmp.keras") as tmp:
        model.save(tmp)
    return Path(target)
