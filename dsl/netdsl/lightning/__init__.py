"""netdsl in PyTorch Lightning: a spec's model as a `LightningModule` (docs/lightning.md).

    from netdsl.lightning import SpecModule
    model = SpecModule("specs/lightning_mlp.net")

Importing this package loads Keras on the torch backend (and Lightning): do it before anything
imports Keras on another backend.
"""

from netdsl.lightning.module import SpecModule

__all__ = ["SpecModule"]
