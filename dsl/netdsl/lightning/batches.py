"""A batch from any PyTorch `DataLoader`, as the spec's inputs and targets.

(x, y)                  x: a tensor, or a list/tuple/dict of them (several inputs, dict by name)
                        y: a tensor, or a list/tuple/dict of them (several outputs, dict by name)
{name: tensor, ...}     keyed by the spec's input and output names
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netdsl.errors import LightningError

__all__ = ["split_batch", "as_inputs", "as_list"]


def split_batch(batch: Any, inputs: list[str], outputs: list[str]) -> tuple[Any, list[Any]]:
    """(the model's inputs, the targets in output order)."""
    if isinstance(batch, Mapping):
        _check_names(batch, inputs + outputs, "a dict batch")
        return {name: batch[name] for name in inputs}, [batch[name] for name in outputs]
    if isinstance(batch, Sequence) and not isinstance(batch, str) and len(batch) == 2:
        x, y = batch
        return as_inputs(x, inputs), _targets(y, outputs)
    raise LightningError(
        f"a batch is (x, y) or a dict keyed by the spec's names ({', '.join(inputs + outputs)}); "
        f"received {_describe(batch)}"
    )


def as_inputs(x: Any, inputs: list[str]) -> Any:
    """What the Keras model is called with: one tensor, or a dict by input name."""
    if isinstance(x, Mapping):
        _check_names(x, inputs, "the inputs")
        return {name: x[name] for name in inputs}
    if isinstance(x, (list, tuple)):
        if len(x) != len(inputs):
            raise LightningError(
                f"the model takes {len(inputs)} input(s) ({', '.join(inputs)}); the batch gives {len(x)}"
            )
        return dict(zip(inputs, x))
    if len(inputs) != 1:
        raise LightningError(
            f"the model takes {len(inputs)} inputs ({', '.join(inputs)}): give x as a list or a dict by name"
        )
    return x


def as_list(outputs: Any) -> list[Any]:
    """The model's outputs as a list in output order."""
    if isinstance(outputs, Mapping):
        return list(outputs.values())
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _targets(y: Any, outputs: list[str]) -> list[Any]:
    if isinstance(y, Mapping):
        _check_names(y, outputs, "the targets")
        return [y[name] for name in outputs]
    if isinstance(y, (list, tuple)):
        if len(y) != len(outputs):
            raise LightningError(
                f"the model has {len(outputs)} output(s) ({', '.join(outputs)}); the batch gives {len(y)} target(s)"
            )
        return list(y)
    if len(outputs) != 1:
        raise LightningError(
            f"the model has {len(outputs)} outputs ({', '.join(outputs)}): give y as a list or a dict by name"
        )
    return [y]


def _check_names(given: Mapping, wanted: list[str], what: str) -> None:
    missing = [n for n in wanted if n not in given]
    if missing:
        raise LightningError(
            f"{what} is missing {', '.join(map(repr, missing))}: the spec's names are "
            f"{', '.join(wanted)}; received keys {', '.join(map(repr, sorted(map(str, given))))}"
        )


def _describe(batch: Any) -> str:
    if isinstance(batch, (list, tuple)):
        return f"a {type(batch).__name__} of {len(batch)}"
    return type(batch).__name__
