"""The exported program's building blocks: ops, units and statements.

An `Op` is one layer call. A `Statement` binds the result of a chain of units
applied to one or more named tensors (`y = x -> conv2d(64, 3) -> relu`). A unit is
what a chain step can be:

- `Leaf`: one step, `count` times in a row (`-> dense(64) * 3`);
- `Merge`: a sub-graph with one entry and one exit tensor whose last op combines
  chains that all start from the entry (`x + (x -> f)`, an Inception module);
- `Use`: a call of a recovered block, `count` times in a row.

Blocks are recovered by rewriting chains of units (see `blocks.py`); values inside
a block's body may be `Expr`s of its parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netdsl.decompiler.graph import Ref
from netdsl.decompiler.layer_steps import Step


@dataclass(eq=False)
class Op:
    index: int  # position in the model's calls
    step: Step
    inputs: list[Ref]
    n_outputs: int
    layer_name: str  # the Keras layer's name (names bound tensors in flat exports)
    in_channels: int | None = None  # last axis of the first input, when known
    # Tensors its call takes by keyword (`initial_state=[h, c]`): the last of `inputs`, (name, count, as a list) each.
    keywords: tuple[tuple[str, int, bool], ...] = ()

    @property
    def out(self) -> Ref:
        return Ref(self.index, 0)


@dataclass(eq=False)
class Leaf:
    step: Step
    count: Any = 1  # an int, or an Expr inside a block body
    in_channels: int | None = None
    last: Op | None = None


@dataclass(eq=False)
class Merge:
    step: Step  # the op that combines the branches (add, concatenate, multiply, ...)
    branches: list[list]  # one chain of units per input of `step`, in order; [] is the entry itself
    in_channels: int | None = None
    last: Op | None = None
    count: Any = 1


@dataclass(eq=False)
class Use:
    block: Block
    args: tuple  # ((param, value), ...) for every parameter of the block
    count: Any = 1
    in_channels: int | None = None
    last: Op | None = None


@dataclass
class BlockParam:
    name: str
    default: Any  # registry.REQUIRED when the call must pass it


@dataclass(eq=False)
class Block:
    name: str
    params: list[BlockParam]
    body: list  # units, applied to the block's input `x`
    uses: int = 0


@dataclass(eq=False)
class Statement:
    """`targets = sources -> head -> units...` (head: a multi-input or multi-output op, or None)."""

    sources: list[Ref]
    head: Op | None
    units: list
    targets: list[Ref]


# ---------------------------------------------------------------- block body expressions


@dataclass(frozen=True)
class ParamRef:
    name: str


@dataclass(frozen=True)
class InputDim:
    """`x.shape[-1]`: the channels of the block's input."""


@dataclass(frozen=True)
class Scaled:
    """`factor * base`, or `base // factor` when `divide`."""

    base: Any  # ParamRef or InputDim
    factor: int
    divide: bool = False


@dataclass(frozen=True)
class LetRef:
    """A file-level constant (`let init = variance_scaling(...)`) standing for a value used often."""

    name: str


Expr = (ParamRef, InputDim, Scaled, LetRef)


@dataclass
class ModelProgram:
    """One exported model: its inputs, shared instances, statements and outputs."""

    name: str
    inputs: list  # graph.Input
    shared: list[tuple[str, Step]]
    statements: list[Statement]
    outputs: list[tuple[str, Ref]]
