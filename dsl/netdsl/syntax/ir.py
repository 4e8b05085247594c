"""The spec IR: what a `.net` file says, as frozen pydantic models.

The IR is faithful to the syntax (like sqlglot's expressions): a `Flow` is a
list of expressions and the checker decides which are tensors and which are
steps. Every node carries the `Span` of the text that made it. Class names
match the grammar rules that produce them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from netdsl.errors import Span


class Node(BaseModel):
    # defer_build: validators are built on first validation, not at import;
    # the parser constructs nodes without validation (see transform.py).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    span: Span


# ---------------------------------------------------------------- expressions


class Name(Node):
    kind: Literal["name"] = "name"
    id: str


class Number(Node):
    kind: Literal["number"] = "number"
    value: int | float


class String(Node):
    kind: Literal["string"] = "string"
    value: str


class Bool(Node):
    kind: Literal["bool"] = "bool"
    value: bool


class NoneLit(Node):
    kind: Literal["none"] = "none"


class Tuple(Node):
    kind: Literal["tuple"] = "tuple"
    items: list[Expr]


class List(Node):
    kind: Literal["list"] = "list"
    items: list[Expr]


class DictItem(Node):
    kind: Literal["dict_item"] = "dict_item"
    key: Expr
    value: Expr


class Dict(Node):
    kind: Literal["dict"] = "dict"
    items: list[DictItem]


class Attr(Node):
    """`value.attr`: `x.shape` or `lib.bottleneck`."""

    kind: Literal["attr"] = "attr"
    value: Expr
    attr: str


class Slice(Node):
    """`start:stop` or `start:stop:step` in a subscript; a bound left out is None."""

    kind: Literal["slice"] = "slice"
    start: Expr | None
    stop: Expr | None
    step: Expr | None = None


class EllipsisLit(Node):
    """`...` in a tensor's subscript: every axis not named by the others."""

    kind: Literal["ellipsis"] = "ellipsis"


class Index(Node):
    """`value[index]`; `x[:, :256]` has a `Tuple` of subscripts (slices, `...`, expressions) as its index."""

    kind: Literal["index"] = "index"
    value: Expr
    index: Expr


class Kwarg(Node):
    kind: Literal["kwarg"] = "kwarg"
    name: str
    value: Expr


class Call(Node):
    kind: Literal["call"] = "call"
    func: Expr
    args: list[Expr]
    kwargs: list[Kwarg]


class BinOp(Node):
    """`+ - * / // % ** @`, and the comparisons `== != < <= > >=`."""

    kind: Literal["binop"] = "binop"
    op: str
    left: Expr
    right: Expr


class UnaryOp(Node):
    kind: Literal["unaryop"] = "unaryop"
    op: str  # "-", "+" or "not"
    operand: Expr


class BoolOp(Node):
    kind: Literal["boolop"] = "boolop"
    op: str  # "and" or "or"
    left: Expr
    right: Expr


class IfExp(Node):
    kind: Literal["ifexp"] = "ifexp"
    cond: Expr
    then: Expr
    orelse: Expr


class Flow(Node):
    """`a -> b -> c`: a source then steps, or (inside a group) only steps."""

    kind: Literal["flow"] = "flow"
    items: list[Expr]


Expr = Annotated[
    Name
    | Number
    | String
    | Bool
    | NoneLit
    | Tuple
    | List
    | Dict
    | Attr
    | Slice
    | EllipsisLit
    | Index
    | Call
    | BinOp
    | UnaryOp
    | BoolOp
    | IfExp
    | Flow,
    Field(discriminator="kind"),
]


# ----------------------------------------------------------------- statements


class Param(Node):
    kind: Literal["param"] = "param"
    name: str
    default: Expr | None = None


class Import(Node):
    kind: Literal["import"] = "import"
    path: str
    alias: str | None = None


class Let(Node):
    kind: Literal["let"] = "let"
    name: str
    value: Expr


class LetFunc(Node):
    kind: Literal["let_func"] = "let_func"
    name: str
    params: list[Param]
    body: Expr


class InputItem(Node):
    kind: Literal["input_item"] = "input_item"
    name: str
    shape: Expr | None = None
    dtype: str | None = None


class Input(Node):
    kind: Literal["input"] = "input"
    items: list[InputItem]


class OutputItem(Node):
    """`output NAME`, `output NAME = FLOW`, or (in a declared layer) `output EXPR`."""

    kind: Literal["output_item"] = "output_item"
    name: str | None = None
    value: Expr | None = None


class Output(Node):
    kind: Literal["output"] = "output"
    items: list[OutputItem]


class Assign(Node):
    kind: Literal["assign"] = "assign"
    targets: list[str]
    value: Expr


class Shared(Node):
    kind: Literal["shared"] = "shared"
    name: str
    value: Expr


class If(Node):
    kind: Literal["if"] = "if"
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt] | None = None


class Train(Node):
    kind: Literal["train"] = "train"
    items: list[Kwarg]


class Weight(Node):
    kind: Literal["weight"] = "weight"
    name: str
    shape: Expr
    options: list[Kwarg]


Stmt = Annotated[
    Input | Output | Assign | Let | LetFunc | Shared | If | Train | Weight,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------- declarations


class ModelDecl(Node):
    kind: Literal["model"] = "model"
    name: str
    body: list[Stmt]


class BlockDecl(Node):
    kind: Literal["block"] = "block"
    name: str
    params: list[Param]
    body: list[Stmt]


class ActivationDecl(Node):
    kind: Literal["activation"] = "activation"
    name: str
    params: list[Param]
    body: Expr


class LayerDecl(Node):
    kind: Literal["layer"] = "layer"
    name: str
    params: list[Param]
    body: list[Stmt]


class LossDecl(Node):
    """`loss NAME(y_true, y_pred, p=v) = BODY`: a per-sample loss, the targets and the outputs first."""

    kind: Literal["loss"] = "loss"
    name: str
    params: list[Param]
    body: Expr


class MetricDecl(Node):
    """`metric NAME(y_true, y_pred, p=v) = BODY`: the mean over the samples of a per-sample value."""

    kind: Literal["metric"] = "metric"
    name: str
    params: list[Param]
    body: Expr


class SweepDecl(Node):
    """`sweep MODEL { NAME = ... }`: the search space and settings of `netdsl sweep` for one model."""

    kind: Literal["sweep"] = "sweep"
    name: str  # the model searched
    items: list[Kwarg]


Decl = Annotated[
    Import | Let | LetFunc | ModelDecl | BlockDecl | ActivationDecl | LayerDecl | LossDecl | MetricDecl | SweepDecl,
    Field(discriminator="kind"),
]


class Comment(Node):
    kind: Literal["comment"] = "comment"
    text: str


class File(BaseModel):
    """One parsed `.net` file."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path: str
    decls: list[Decl]
    comments: list[Comment] = []
