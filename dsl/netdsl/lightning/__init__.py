"""netdsl in PyTorch Lightning: a spec's model as a `LightningModule` (docs/lightning.md).

    from netdsl.lightning import SpecModule
    model = SpecModule("specs/lightning_mlp.net")

`SpecModule` (Lightning and torch) is imported when first named, so `netdsl export` reads a
checkpoint (`netdsl.lightning.checkpoint`) without Lightning. A `SpecModule` switches Keras to
the torch backend: make one before anything imports Keras on another backend.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SpecModule"]


def __getattr__(name: str) -> Any:
    if name == "SpecModule":
        from netdsl.lightning.module import SpecModule

        return SpecModule
    raise AttributeError(f"module 'netdsl.lightning' has no attribute {name!r}")
