"""What a model eats and returns, by name: the key by which data reaches it.

Read from a built or loaded `keras.Model`: its inputs (name, per-sample shape,
dtype) and its outputs (name, per-sample shape) in the model's order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netdsl import registry

if TYPE_CHECKING:
    import numpy as np

# One batch as NumPy by the signature's names, for a runtime that is not Keras (`DataSource.batches`):
# ({input: array}, {output: array} or None).
Batch = tuple["dict[str, np.ndarray]", "dict[str, np.ndarray] | None"]


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple  # per sample (no batch axis); None for a size the model leaves open
    dtype: str

    @property
    def size(self) -> int | None:
        """Values per sample, or None when a size is open."""
        return None if any(d is None for d in self.shape) else math.prod(self.shape)

    @property
    def is_integer(self) -> bool:
        return self.dtype.startswith(("int", "uint"))

    def shape_text(self) -> str:
        return shape_text(self.shape)


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    @classmethod
    def of(cls, model: Any) -> Signature:
        inputs = tuple(TensorSpec(_tensor_name(t), tuple(t.shape[1:]), str(t.dtype)) for t in model.inputs)
        outputs = tuple(
            TensorSpec(name, tuple(t.shape[1:]), str(t.dtype)) for name, t in zip(model.output_names, model.outputs)
        )
        return cls(inputs, outputs)

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]

    @property
    def single(self) -> bool:
        """One input and one output: data may also name them `x` and `y`."""
        return len(self.inputs) == 1 and len(self.outputs) == 1


def shape_text(shape: tuple) -> str:
    """(28, 28) / (10,) / () with `None` for an open size."""
    return registry.shape_text(shape, open_size="None")


def _tensor_name(tensor: Any) -> str:
    name = getattr(tensor, "name", None) or "input"
    return name.split(":")[0]
