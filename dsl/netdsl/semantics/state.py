"""What the expander's collaborators share: one declared state object, and the types they pass around.

Expanding a model is the work of four collaborators, each holding the one
`ExpansionState` of a check (no collaborator keeps state of its own):

- `expand.FlowExpander`: statements and flows, the entry points;
- `steps.StepResolver`: what `-> NAME(args)` names, applied to tensors
  (layers, blocks, declared layers, nested models, shared instances);
- `tensor_exprs.TensorExpressions`: operators and functions on tensors;
- `graph_writer.GraphWriter`: each node added to the graph, named, handed to
  the backend and charged to the budgets.

Also here: the `Backend` protocol the expansion hands its nodes to, and the
values of a model body besides constants (`Tensor`, `Step`, `SharedInstance`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Union, cast

from netdsl import registry
from netdsl.errors import Diagnostic, Fail, Span
from netdsl.limits import BYTES_PER_EXPANSION_STEP, CONST_WORK_PER_BYTE, MAX_CONST_WORK, MAX_EXPANSION_STEPS, MAX_PARAMS
from netdsl.semantics.args import Arguments
from netdsl.semantics.consts import Consts
from netdsl.semantics.declared import CheckedActivation, CheckedObjective, Declared
from netdsl.semantics.graph import Graph, Node, TensorRef
from netdsl.semantics.scope import Declaration, FileScope
from netdsl.semantics.shadowing import Shadow, shadows
from netdsl.semantics.train_checks import TrainChecker
from netdsl.semantics.values import UNKNOWN, StepValue, Sym, TensorValue, Value
from netdsl.syntax import ir

# What a backend makes of a tensor: a Keras tensor (`backend.builder`), or its
# inferred shape (`semantics.shapes`). The expansion only hands it back.
Handle = Any


class Backend(Protocol):
    """What the expansion hands each node to, as soon as the node is known."""

    def input(self, node: Node, shape: tuple[Any, ...], dtype: str) -> Handle: ...

    def apply(self, node: Node, inputs: list[Handle]) -> list[Handle]: ...

    def shape(self, handle: Handle) -> Value: ...

    def finish(self, graph: Graph) -> Any: ...


@dataclass(eq=False)
class Tensor(TensorValue):
    """A tensor bound in a model or block body."""

    ref: TensorRef | None  # None: poisoned by an earlier error
    handle: Handle
    shape: Value  # without the batch axis: a tuple, or UNKNOWN
    # The only output check knows of a layer whose output count it cannot
    # know (`time_distributed` of a layer without a shape rule): `a, b, c = ...` may
    # take as many outputs from it as it names.
    variadic: bool = False

    @property
    def poisoned(self) -> bool:  # type: ignore[override]  # TensorValue's plain field, computed here
        return self.ref is None


POISON = Tensor(None, None, UNKNOWN)


@dataclass(frozen=True)
class LayerOrActivation:
    """A registry name that is both (`relu`): the activation, or the layer when called with arguments."""

    layer: registry.Entry
    activation: registry.Entry


# What a step names, told apart by its class (as the IR is): a registry layer or activation
# (`registry.Entry`; its `kind` is the registry's namespace), a declaration of the spec (block,
# layer, activation, nested model), a shared instance, or a registry name that is both a layer
# and an activation until its use decides (`LayerOrActivation`).
ChosenEntry = Union[registry.Entry, ir.BlockDecl, ir.LayerDecl, ir.ActivationDecl, ir.ModelDecl, "SharedInstance"]
StepEntry = ChosenEntry | LayerOrActivation


@dataclass
class Step:
    """A resolved step: what `-> NAME(args)` names, with its arguments evaluated."""

    name: str
    span: Span
    entry: StepEntry
    scope: FileScope = cast("FileScope", None)  # set for every step that names a declaration
    args: list[tuple[Value, Span]] = field(default_factory=list)
    kwargs: list[tuple[str, Value, Span]] = field(default_factory=list)
    # The keyword arguments that take tensors (`initial_state=[h, c]`), left as written: they are
    # evaluated where the step is applied, as the inputs of its call (`StepResolver.keyword_tensors`).
    tensor_kwargs: list[ir.Kwarg] = field(default_factory=list)

    @property
    def what(self) -> str:
        """What kind of step it is, in words ("declared activation"), for messages."""
        entry = self.entry
        if isinstance(entry, registry.Entry):
            return entry.kind
        if isinstance(entry, SharedInstance):
            return "shared instance"
        return _WHAT[type(entry)]


_WHAT: dict[type, str] = {
    LayerOrActivation: "layer or activation",
    ir.BlockDecl: "block",
    ir.LayerDecl: "declared layer",
    ir.ActivationDecl: "declared activation",
    ir.ModelDecl: "model",
}


@dataclass
class SharedInstance(StepValue):
    """`shared NAME = STEP`: one layer (or sub-graph) called on every use."""

    name: str
    step: Step
    built: Graph | None = None  # the sub-graph of a shared block, once built


@dataclass
class BuildState:
    """The graph being built and the naming state of the current block instance."""

    graph: Graph
    used: set[str]  # layer names taken in this graph
    suffixes: dict[str, int] = field(default_factory=dict)  # next suffix to try per name
    path: tuple[str, ...] = ()  # the block instances from the model down to here
    repeat: tuple[int, int, int] | None = None  # (group, pass, passes) of the `* N` being expanded
    outputs: list[tuple[str, Tensor]] = field(default_factory=list)  # only appended to, or replaced
    layers: int = 0  # nodes made, and those a failed input skipped (MAX_LAYERS)
    # a statement of the body (not its train section) was refused: the layers it would have made are missing
    refused_statement: bool = False
    repeat_once: bool = False  # a block checked on its own: each `* N` runs one pass
    # Taps (`semantics/taps.py`): the `MODEL.LAYER` names of the model body, by model; the tensors of the
    # model's one call, by (model, layer); the span of that call, by model.
    taps: dict[str, list[ir.Attr]] = field(default_factory=dict)
    tapped: dict[tuple[str, str], Tensor] = field(default_factory=dict)
    tapped_call: dict[str, Span] = field(default_factory=dict)
    # A zoo backbone's top by model (`backbone_call.BackboneTop.key`) and the span of its first call.
    backbone_tops: dict[str, tuple[str, Span]] = field(default_factory=dict)
    # The zoo backbones called with `weights="imagenet"`, by model: an `init` of the caller's train section.
    backbone_weights: dict[str, Any] = field(default_factory=dict)
    first_input: Tensor | None = None  # the graph's first input: lends `arange(n)` its batch size


@dataclass
class OutputIndex:
    """The names in one `BuildState.outputs` list, kept in step with it (a speed cache:
    `output a, b, ...` asks, for each name, whether it is an output already)."""

    outputs: list[tuple[str, Tensor]] | None = None  # the list indexed (a new list starts over)
    counted: int = 0  # of its items, those in `names`
    names: set[str] = field(default_factory=set)

    def has(self, outputs: list[tuple[str, Tensor]], name: str) -> bool:
        if self.outputs is not outputs:
            self.outputs, self.counted, self.names = outputs, 0, set()
        if self.counted < len(outputs):
            self.names.update(output for output, _ in outputs[self.counted :])
            self.counted = len(outputs)
        return name in self.names


def _no_build() -> BuildState:
    return BuildState(Graph("", Span.at("", 1, 1)), set())


@dataclass(eq=False)
class ExpansionState:
    """Everything one check's expansion reads and writes, declared in one place."""

    # ---- given
    scopes: dict[str, FileScope]  # every file's names, by path
    backend: Backend  # what each node is handed to
    diagnostics: list[Diagnostic]  # found so far; the check's result
    train_checker: TrainChecker | None = None  # checks a model's `train` section (None: not checked)
    param_limit: int = MAX_PARAMS  # a layer estimated larger is refused (`--max-params`)
    # ---- collaborators with state of their own
    consts: Consts = field(default_factory=Consts)  # folds constants; its work budget
    declared: Declared = field(init=False)  # checks spec-declared layers and activations
    arguments: Arguments = field(init=False)  # checks a registry step's arguments
    # ---- what is being built
    build: BuildState = field(default_factory=_no_build)  # set by each model, block or shared block
    models: dict[str, Graph | None] = field(default_factory=dict)  # nested models, built once (None: failed)
    model_stack: list[str] = field(default_factory=list)  # models being expanded, outermost first
    block_stack: list[str] = field(default_factory=list)  # "file:block" being expanded (cycles, nesting)
    repeat_groups: int = 0  # `* N` groups expanded so far (each node's `repeat` names its group)
    # Set when a model's expansion had to guess (an `if` or repeat count it could not
    # decide, an argument or output count it could not know): its graph is then only
    # an approximation of what Keras will build.
    uncertain: bool = False
    # ---- the statement being expanded: its binding names the layers it makes, its
    # file scope finds the declared activations an argument names.
    current_binding: str | None = None
    current_scope: FileScope | None = None
    shadows: dict[str, Shadow] = field(default_factory=dict)
    """the names of the body being expanded that hide a step it uses later (`semantics.shadowing`)"""
    output_index: OutputIndex = field(default_factory=OutputIndex)  # see OutputIndex
    # ---- budgets (netdsl.limits)
    steps_spent: int = 0  # of `steps_limit`: statements run, block instances and layers made
    steps_limit: int = MAX_EXPANSION_STEPS
    # ---- diagnostics' bookkeeping
    step_hints: dict[tuple[str, str, tuple[str, ...]], str | None] = field(default_factory=dict)
    """"did you mean" of an unknown step, by name, file and shared instances in scope (a repeat asks again)"""
    block_alone: set[tuple[str, int, int, str]] = field(default_factory=set)
    """the errors each block gives checked on its own: not repeated at each use"""
    shadows_of: dict[int, dict[str, Shadow]] = field(default_factory=dict)
    """`shadows` of each model and block declaration, found once (by the declaration's id)"""

    def __post_init__(self) -> None:
        self.declared = Declared(self.consts)
        self.arguments = Arguments(self.find_declared_activation, self.declared_objectives)

    def budget_for_text(self, size: int) -> None:
        """The budgets of a program of `size` bytes: a large file pays for what it writes out."""
        self.steps_limit = max(MAX_EXPANSION_STEPS, size // BYTES_PER_EXPANSION_STEP)
        self.consts.work_limit = max(MAX_CONST_WORK, size * CONST_WORK_PER_BYTE)

    def error(self, span: Span, message: str, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic.at(span, message, hint))

    def shadows_in(self, decl: ir.ModelDecl | ir.BlockDecl, scope: FileScope) -> dict[str, Shadow]:
        """The names of a model's or block's body that hide a step it uses (found once per declaration)."""
        key = id(decl)
        if key not in self.shadows_of:
            params = decl.params if isinstance(decl, ir.BlockDecl) else []
            self.shadows_of[key] = shadows(params, decl.body, scope)
        return self.shadows_of[key]

    def nesting(self) -> int:
        """Blocks and nested models being expanded, the outermost model not counted."""
        return len(self.block_stack) + max(len(self.model_stack) - 1, 0)

    def is_output(self, name: str) -> bool:
        """Whether the current build already has an output `name`."""
        return self.output_index.has(self.build.outputs, name)

    def find_declared_activation(self, sym: Sym) -> CheckedActivation | None:
        """The declared activation an argument names (`activation=mish`), seen from the current statement."""
        scope = self.current_scope
        if scope is None:
            return None
        found: tuple[Declaration, FileScope] | None
        if sym.namespace is not None:
            target = scope.aliases.get(sym.namespace)
            decl = target.own.get(sym.name) if target else None
            found = (decl, target) if decl is not None and target is not None else None
        else:
            found = scope.find(sym.name)
        if found is None or not isinstance(found[0], ir.ActivationDecl):
            return None
        return self.declared.activation(found[0], found[1])

    def declared_objectives(self) -> dict[str, CheckedObjective | None]:
        """The losses and metrics declared in the current statement's file or imported into it, by name, checked
        (None: one that fails its check, reported at its declaration)."""
        scope = self.current_scope
        if scope is None:
            return {}
        places: dict[str, tuple[Declaration, FileScope] | None] = {name: scope.find(name) for name in scope.names()}
        for alias, target in scope.aliases.items():  # `import "losses.net" as lib`: lib.contrastive
            places.update({f"{alias}.{name}": (decl, target) for name, decl in target.own.items()})
        found: dict[str, CheckedObjective | None] = {}
        for name, where in places.items():
            if where is not None and isinstance(where[0], (ir.LossDecl, ir.MetricDecl)):
                try:
                    found[name] = self.declared.objective(where[0], where[1])
                except Fail:
                    found[name] = None
        return found
