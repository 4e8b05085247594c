"""The checker: every declaration of a program checked, every model expanded.

`analyze` runs the whole front end over a loaded `Program` and returns the
expanded graph of each model with all the diagnostics found, sorted. With the
default `ShapeBackend` nothing imports Keras; the compiler runs the same
expansion with its Keras backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netdsl.errors import BuildError, Diagnostic, Exhausted, Fail, SpecError, sort_diagnostics, suggestions_limited
from netdsl.limits import MAX_DIAGNOSTICS, MAX_PARAMS, MAX_SUGGESTION_WORK
from netdsl.semantics.expand import FlowExpander
from netdsl.semantics.graph import Graph
from netdsl.semantics.scope import FileScope, build_scopes
from netdsl.semantics.shapes import ShapeBackend
from netdsl.semantics.shapes_declared import declared_objective_shape
from netdsl.semantics.state import Backend, ExpansionState
from netdsl.semantics.sweep_space import SweepSpace, check_metric, check_sweeps
from netdsl.semantics.train_checks import TrainChecker, each_output_objective
from netdsl.semantics.values import UNKNOWN, Env, describe_value
from netdsl.syntax import ir
from netdsl.syntax.loader import Program, paused_gc

# "did you mean" compares a misspelt name with every name it could have meant: at
# most this many comparisons per analysis, so that thousands of misspellings among
# thousands of names stay linear (the first hundreds still get their suggestion).


@dataclass
class Analysis:
    program: Program
    graphs: dict[str, Graph] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Those found checking the declarations on their own (constants, blocks,
    # declared layers), before any model was expanded.
    declaration_diagnostics: list[Diagnostic] = field(default_factory=list)
    # A budget of netdsl.limits was spent: the check stopped there (its graphs are partial).
    exhausted: bool = False
    # The root file's `sweep` sections, checked: {model: SweepSpace}.
    sweeps: dict[str, SweepSpace] = field(default_factory=dict)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


def analyze(
    program: Program,
    backend: Backend | None = None,
    models: list[str] | None = None,
    declarations: bool = True,
    param_limit: int | None = None,
) -> Analysis:
    """Check a program; expand `models` (default: all of the root file's models)."""
    with paused_gc(), suggestions_limited(MAX_SUGGESTION_WORK):
        return _analyze(program, backend, models, declarations, param_limit)


def checked_graphs(program: Program, names: list[str], param_limit: int | None = None) -> dict[str, Graph]:
    """The expanded graphs of the models `names`, in that order; SpecError with every error found
    (`param_limit`: as for `analyze`)."""
    analysis = analyze(program, models=names, param_limit=param_limit)
    if analysis.errors:
        raise SpecError(analysis.errors, program.sources())
    return {name: analysis.graphs[name] for name in names}


def _analyze(
    program: Program, backend: Backend | None, models: list[str] | None, declarations: bool, param_limit: int | None
) -> Analysis:
    diagnostics: list[Diagnostic] = []
    analysis = Analysis(program)
    try:
        _expand_all(program, backend, models, declarations, param_limit, analysis, diagnostics)
    except Exhausted as exc:  # a budget of netdsl.limits is spent: report it once and stop
        diagnostics.append(exc.diagnostic)
        analysis.exhausted = True
    analysis.diagnostics = _at_most(sort_diagnostics(diagnostics, list(program.files)))
    return analysis


def _at_most(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The first MAX_DIAGNOSTICS, then one line saying how many more there are (a 2 MiB file of one
    repeated line gave 41,853 errors, 7.9 MB of output: the fuzz campaign of issue 22)."""
    if len(diagnostics) <= MAX_DIAGNOSTICS:
        return diagnostics
    errors = sum(1 for d in diagnostics[MAX_DIAGNOSTICS:] if d.severity == "error")
    first = diagnostics[MAX_DIAGNOSTICS]
    more = Diagnostic(
        file=first.file,
        line=first.line,
        col=first.col,
        end_line=first.line,
        end_col=first.col,
        severity="error" if errors else "warning",
        message=f"{len(diagnostics) - MAX_DIAGNOSTICS:,} more diagnostics from here on are not shown",
    )
    return [*diagnostics[:MAX_DIAGNOSTICS], more]


def _expand_all(
    program: Program,
    backend: Backend | None,
    models: list[str] | None,
    declarations: bool,
    param_limit: int | None,
    analysis: Analysis,
    diagnostics: list[Diagnostic],
) -> None:
    scopes = build_scopes(program.files, program.imports, diagnostics)
    state = ExpansionState(
        scopes,
        backend or ShapeBackend(),
        diagnostics,
        TrainChecker(),
        param_limit=MAX_PARAMS if param_limit is None else param_limit,
    )
    state.budget_for_text(sum(len(text) for text in program.texts.values()))
    expander = FlowExpander(state)
    if declarations:
        for scope in scopes.values():
            _check_declarations(scope, expander)
    root = scopes[program.root]
    analysis.declaration_diagnostics = sort_diagnostics(diagnostics, list(program.files))
    wanted = models if models is not None else program.model_names
    for decl in program.root_file.decls:
        if isinstance(decl, ir.ModelDecl) and decl.name in wanted:
            known = state.models.get(decl.name)
            if known is not None:
                analysis.graphs[decl.name] = known
                continue
            graph = expander.expand_model(decl, root)
            state.models.setdefault(decl.name, graph)
            analysis.graphs[decl.name] = graph
            diagnostics.extend(_declared_objective_problems(graph))
    if declarations:
        analysis.sweeps = check_sweeps(root, state.consts, diagnostics)
        _check_sweep_metrics(program, analysis, diagnostics)


def _check_sweep_metrics(program: Program, analysis: Analysis, diagnostics: list[Diagnostic]) -> None:
    """Each sweep's objective against what its model's runs report (a model expanded without errors)."""
    for decl in program.root_file.decls:
        if not isinstance(decl, ir.SweepDecl) or decl.name not in analysis.graphs:
            continue
        space = analysis.sweeps.get(decl.name)
        graph = analysis.graphs[decl.name]
        if space is None or space.span is not decl.span or space.metric is None:
            continue
        if graph.train is None or graph.train.loss is None:
            diagnostics.append(
                Diagnostic.at(decl.span, f"model '{decl.name}' has no train section with a loss; a sweep trains it")
            )
            continue
        diagnostics.extend(check_metric(space, graph.train, [name for name, _ in graph.outputs]))


def _declared_objective_problems(graph: Graph | None) -> list[Diagnostic]:
    """Each declared loss or metric computed over its output's shape, as Keras would compute it in `fit`:
    one diagnostic at the train section's loss or metric for what Keras would refuse."""
    train = graph.train if graph is not None else None
    if graph is None or train is None:
        return []
    shapes = {}
    for name, ref in graph.outputs:
        found = graph.nodes[ref.node].output_shapes
        shapes[name] = found[ref.index] if ref.index < len(found) else UNKNOWN
    problems = []
    for output, resolved in each_output_objective(train.loss, train.metrics, graph.output_names):
        shape = shapes.get(output, UNKNOWN)
        if resolved.kind not in ("declared_loss", "declared_metric") or not isinstance(shape, tuple):
            continue
        try:
            declared_objective_shape(resolved.decl.config({}), shape)
        except BuildError as exc:
            kind = resolved.kind.removeprefix("declared_")
            problems.append(
                Diagnostic.at(
                    resolved.span or graph.span,
                    f"the {kind} '{resolved.name}' cannot be computed on the output '{output}' of shape "
                    f"({', '.join(['batch', *(describe_value(d) for d in shape)])}): {exc}",
                )
            )
    return problems


def _check_declarations(scope: FileScope, expander: FlowExpander) -> None:
    """Constants, functions, blocks and declared layers, each checked on its own."""
    state = expander.state
    consts = state.consts
    for decl in scope.file.decls:
        try:
            if isinstance(decl, ir.Let):
                if scope.own.get(decl.name) is decl:
                    consts.file_let(scope, decl.name, decl.span)
                else:  # a second declaration of the name (reported as such): its value checked alone
                    consts.fold(decl.value, Env(scope))
            elif isinstance(decl, ir.LetFunc):
                env = Env(scope)
                for p in decl.params:
                    env.vars[p.name] = UNKNOWN
                consts.fold(decl.body, env)
            elif isinstance(decl, ir.BlockDecl):
                expander.check_block(decl, scope)
            elif isinstance(decl, ir.ActivationDecl):
                state.declared.activation(decl, scope)
            elif isinstance(decl, ir.LayerDecl):
                state.declared.check_layer(decl, scope)
            elif isinstance(decl, (ir.LossDecl, ir.MetricDecl)):
                state.declared.objective(decl, scope)
        except Fail as exc:
            state.diagnostics.extend(exc.all_diagnostics())
