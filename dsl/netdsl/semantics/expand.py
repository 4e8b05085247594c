"""Expanding a model into a graph: statements, flows and naming.

The expander walks a model's statements with constants folded, expands every
block use in place (each use a new cluster of layers), and hands each layer
to a *backend* as soon as it is known:

- `semantics.shapes.ShapeBackend` infers shapes in pure Python (used by
  `netdsl check` and topology rendering: no TensorFlow);
- `backend.builder.KerasBackend` builds the Keras layer and calls it, so
  `x.shape` inside a block is the real static shape.

`FlowExpander` is the first of the expander's collaborators, which share one
`state.ExpansionState`: it runs statements and flows, and makes the others
(`steps.StepResolver`, `tensor_exprs.TensorExpressions`,
`graph_writer.GraphWriter`).

Errors are collected, not raised: a statement that fails binds its targets
to a poisoned tensor, so one mistake does not cascade into many.
"""

from collections.abc import Iterator
from typing import Any, cast

from netdsl import registry
from netdsl.errors import Diagnostic, Fail, Span, did_you_mean
from netdsl.limits import MAX_DIM
from netdsl.registry.layers.rnn import STATES
from netdsl.registry.layers.wrappers import nested
from netdsl.semantics.adapting import check_adapt
from netdsl.semantics.args import DTYPES
from netdsl.semantics.backbone_call import BackboneTop, step_arguments
from netdsl.semantics.fine_tuning import InitFrom, Pattern, check_parts
from netdsl.semantics.graph import Graph, TensorRef, repeated_layer_names
from netdsl.semantics.graph_writer import GraphWriter
from netdsl.semantics.scope import FileScope
from netdsl.semantics.shapes import ShapeBackend
from netdsl.semantics.state import POISON, BuildState, ExpansionState, SharedInstance, Tensor
from netdsl.semantics.steps import StepResolver, block_inputs, walk_inputs
from netdsl.semantics.taps import drop_untaken_outputs, find_taps
from netdsl.semantics.tensor_exprs import TensorExpressions
from netdsl.semantics.train_checks import TrainSpec
from netdsl.semantics.values import UNKNOWN, Closure, Env, Sym, SymCall, binding_name, describe_value, type_name
from netdsl.syntax import ir
from netdsl.syntax.loader import zoo_keras_names


class FlowExpander:
    """Expands models and blocks: statements, flows and outputs (state: the shared `ExpansionState`)."""

    def __init__(self, state: ExpansionState):
        self.state = state
        self.writer = GraphWriter(state)
        self.steps = StepResolver(state, self.writer, self)
        self.tensor_exprs = TensorExpressions(state, self.writer, self.steps, self)

    # ============================================================ entry points
    def expand_model(self, decl: ir.ModelDecl, scope: FileScope, top: BackboneTop | None = None) -> Graph:
        """A model's graph (a nested model's too: its own build, inside the one that uses it); a zoo
        backbone's with the `top` its call asks for after its output."""
        state = self.state
        graph = Graph(decl.name, decl.span)
        outer, state.build = state.build, BuildState(graph, set())
        outer_uncertain, state.uncertain = state.uncertain, False
        state.model_stack.append(decl.name)
        reported = len(state.diagnostics)
        outer_shadows, state.shadows = state.shadows, state.shadows_in(decl, scope)
        try:
            env = Env(scope)
            state.build.taps = find_taps(decl.body, scope)
            self._model_inputs(decl, env, top.input_shape if top is not None else None)
            self.run(decl.body, env, where="model")
            if top is not None:
                _keras_application_names(graph, decl)  # the top's unnamed layers are numbered after them
                self._backbone_top(top)
                graph.classifier = top.include_top
            self._backbone_weights(graph)
            graph.outputs = [(name, t.ref) for name, t in state.build.outputs if t.ref is not None]  # not poisoned
            if state.build.tapped_call and isinstance(state.backend, ShapeBackend):  # a Keras build has called it
                drop_untaken_outputs(graph)
            if not graph.keras_application:
                _keras_application_names(graph, decl)
            state.diagnostics.extend(repeated_layer_names(graph))
            if graph.train is not None:
                # a refused statement leaves its layers out: patterns naming them would only say it again
                state.diagnostics.extend(check_parts(graph, graph.train, body_failed=state.build.refused_statement))
                if not any(d.severity == "error" for d in state.diagnostics[reported:]):  # no layer left out
                    state.diagnostics.extend(check_adapt(graph, graph.train))
            if not state.build.outputs:
                state.error(
                    _name_span(decl, "model"),
                    f"model '{decl.name}' has no output",
                    "add one: output probs = x -> dense(10)",
                )
        finally:
            graph.uncertain = state.uncertain
            state.uncertain = state.uncertain or outer_uncertain
            state.build = outer
            state.model_stack.pop()
            state.shadows = outer_shadows
        return graph

    def _backbone_top(self, top: BackboneTop) -> None:
        """keras.applications' pooling or classifier after a zoo backbone's one output, under Keras' layer
        names (`avg_pool`, `predictions`); the backbone's output is the last of them."""
        state = self.state
        if len(state.build.outputs) != 1 or not top.layers:  # its output failed, and said why; or no layer
            return
        ((_, tensor),) = state.build.outputs
        graph = state.build.graph
        names = {node.name for node in graph.nodes}
        try:
            for layer in top.layers:
                entry = registry.lookup("layer", layer.layer)
                assert entry is not None, layer.layer  # zoo/heads.py names registry layers
                args, kwargs = step_arguments(layer, top.span)
                bound = state.arguments.bind(entry, args, kwargs, top.span)
                name = layer.name or _keras_own_name(layer.layer, names)
                (tensor,) = self.steps.emit_registry(entry, name, bound, [tensor], top.span, name)
                graph.nodes[-1].name = name  # Keras' name, whatever names the spec's layers took
                names.add(name)
        except Fail as exc:
            state.diagnostics.extend(exc.all_diagnostics())
            return
        state.build.outputs = [(graph.nodes[-1].name, tensor)]

    def _backbone_weights(self, graph: Graph) -> None:
        """`efficientnet_b0(weights="imagenet")`: the family's published file loaded into the backbone, as
        `init = {"efficientnet_b0": "zoo:efficientnet_b0"}` in the train section would (one is made for it),
        before the section's own `init` parts; a backbone given its weights both ways is an error."""
        state = self.state
        if not state.build.backbone_weights or state.train_checker is None:
            return
        if graph.train is None:
            graph.train = TrainSpec()
        given = []
        for name, top in state.build.backbone_weights.items():
            twice = next((init for init in graph.train.init if init.part.text == name), None)
            if twice is not None:
                where = f"{top.span.line}:{top.span.col}"
                state.error(
                    twice.span,
                    f"'{name}' has its weights from its call (weights=\"imagenet\" at {where}) and from init",
                    "give them one way",
                )
                continue
            given.append(InitFrom(Pattern(name, top.span), top.weights_path, top.span))
        graph.train.init[:0] = given
        graph.weights_by_call = [init.span for init in given]

    def check_block(self, decl: ir.BlockDecl, scope: FileScope) -> None:
        """Check a block on its own: parameters and input shapes unknown.

        Each repeat inside runs once: with shapes unknown the other passes
        would find nothing new, and a block used by a model is expanded in
        full there (where its size counts)."""
        state = self.state
        graph = Graph(f"<block {decl.name}>", decl.span)
        outer, state.build = state.build, BuildState(graph, set(), repeat_once=True)
        found_before = len(state.diagnostics)
        try:
            inputs = [self.writer.emit_input(name, (UNKNOWN,), "float32", span) for name, span in block_inputs(decl)]
            params = {p.name: UNKNOWN for p in decl.params}
            self.steps.expand_block_body(decl, scope, params, inputs, decl.span)
        except Fail as exc:
            state.diagnostics.extend(exc.all_diagnostics())
        finally:
            state.build = outer
            state.block_alone.update(_key(d) for d in state.diagnostics[found_before:])

    def _in_block_use(self, found: list[Diagnostic]) -> list[Diagnostic]:
        """Errors inside a block's body, each naming the use it came from (`res(32)`
        fails where `res(16)` did not). One the block gives on its own, whatever its
        arguments, was reported once at the body: it is not repeated per use."""
        build = self.state.build
        cluster = build.graph.clusters.get(build.path) if build.path else None
        if cluster is None or build.repeat_once:  # no use: a block checked on its own
            return found
        args = ", ".join(f"{k}={describe_value(v)}" for k, v in cluster.args.items())
        where = f"{cluster.span.file}:{cluster.span.line}:{cluster.span.col}"
        use = f" (in {'.'.join(cluster.path)} = {cluster.block}({args}) at {where})"
        alone = self.state.block_alone
        return [d if _key(d) in alone else d.model_copy(update={"message": d.message + use}) for d in found]

    # ============================================================ statements
    def run(self, body: list[ir.Stmt], env: Env, where: str) -> None:
        """A model's or block's statements; one that fails is reported and binds its targets to POISON."""
        state = self.state
        saved = state.current_binding, state.current_scope
        state.current_scope = env.scope
        try:
            for stmt in body:
                state.current_binding = _binding(stmt)
                try:
                    self.writer.charge_step(stmt.span)
                    self._stmt(stmt, env, where)
                except Fail as exc:
                    found = exc.all_diagnostics()
                    if found:
                        state.diagnostics.extend(self._in_block_use(found))
                        self.writer.charge_failure(stmt.span)
                        state.build.refused_statement |= not isinstance(stmt, ir.Train)
                    for name in _targets(stmt):
                        env.vars[name] = POISON
        finally:
            state.current_binding, state.current_scope = saved

    def _stmt(self, stmt: ir.Node, env: Env, where: str) -> None:
        """One statement, by its IR class."""
        match stmt:
            case ir.Assign():
                self._assign(stmt, env)
            case ir.Output():
                self._output(stmt, env, where)
            case ir.Let():
                env.vars[stmt.name] = self.state.consts.fold(stmt.value, env)
            case ir.LetFunc():
                env.vars[stmt.name] = Closure(stmt, env, env.scope)
            case ir.Shared():
                self._shared(stmt, env)
            case ir.If():
                self._if(stmt, env, where)
            case ir.Train():
                self._train(stmt, env, where)
            case ir.Weight():
                raise Fail(stmt.span, "'weight' belongs in a declared layer", "layer my_layer(units) { ... }")
            case _:  # ir.Input: a model's are bound before its body runs, a block's by each use
                pass

    def _train(self, stmt: ir.Train, env: Env, where: str) -> None:
        state = self.state
        if where != "model":
            raise Fail(stmt.span, "a 'train' section belongs in a model")
        if state.build.graph.train is not None:
            raise Fail(stmt.span, "a model has one 'train' section")
        if state.train_checker is not None:
            outputs = [name for name, _ in state.build.outputs]
            state.build.graph.train = state.train_checker.check(
                stmt, env, outputs, state.consts, state.arguments, state.diagnostics
            )

    def _model_inputs(self, decl: ir.ModelDecl, env: Env, shape_given: tuple[Any, ...] | None = None) -> None:
        """The model's inputs; a zoo backbone's one input of the shape its call gives (`input_shape=`)."""
        seen: dict[str, Span] = {}
        for stmt in walk_inputs(decl.body):
            for item in stmt.items:
                try:
                    if item.name in seen:
                        raise Fail(
                            item.span, f"duplicate input '{item.name}'", f"the first is at line {seen[item.name].line}"
                        )
                    seen[item.name] = item.span
                    shape = shape_given or self._input_shape(item, env)
                    dtype = self._input_dtype(item)
                    env.vars[item.name] = self.writer.emit_input(item.name, shape, dtype, item.span)
                except Fail as exc:
                    self.state.diagnostics.extend(exc.all_diagnostics())
                    env.vars[item.name] = POISON
        if not seen:
            self.state.error(
                _name_span(decl, "model"), f"model '{decl.name}' has no input", "add one: input x: (28, 28, 1)"
            )

    def _input_shape(self, item: ir.InputItem, env: Env) -> tuple[Any, ...]:
        if item.shape is None:
            raise Fail(
                item.span,
                f"model input '{item.name}' needs a shape",
                f"input {item.name}: (28, 28, 1) — the batch axis is left out",
            )
        shape = self.state.consts.fold(item.shape, env)
        if isinstance(shape, int) and not isinstance(shape, bool):
            raise Fail(item.shape.span, "an input shape is a tuple", f"write ({shape},)")
        if not isinstance(shape, tuple):
            raise Fail(item.shape.span, f"an input shape is a tuple, received {type_name(shape)}")
        for dim in shape:
            if dim is None or dim is UNKNOWN:
                continue
            if not isinstance(dim, int) or isinstance(dim, bool) or not 0 < dim <= MAX_DIM:
                raise Fail(
                    item.shape.span,
                    f"input dimensions must be positive integers or none, received {describe_value(shape)}",
                    _input_shape_hint(shape),
                )
        return shape

    def _input_dtype(self, item: ir.InputItem) -> str:
        if item.dtype is None:
            return "float32"
        if item.dtype not in DTYPES:
            raise Fail(item.span, f"unknown dtype '{item.dtype}'", did_you_mean(item.dtype, DTYPES))
        return item.dtype

    def _assign(self, stmt: ir.Assign, env: Env) -> None:
        outputs = self.tensors(stmt.value, env, final=stmt.targets[0])
        if len(outputs) == 1 and outputs[0].variadic and len(stmt.targets) > 1:
            outputs = self._spread(outputs[0], len(stmt.targets))
        if len(outputs) != len(stmt.targets):
            giver = "the flow"
            if isinstance(stmt.value, ir.Call) and isinstance(stmt.value.func, ir.Name):
                giver = f"'{stmt.value.func.id}'"  # split(x, 3, axis=-1)
            raise Fail(
                stmt.span,
                f"{len(stmt.targets)} name{'s' if len(stmt.targets) > 1 else ''} "
                f"on the left, but {giver} gives {len(outputs)} tensor"
                f"{'s' if len(outputs) != 1 else ''}",
                self._states_hint(outputs),
            )
        for name, tensor in zip(stmt.targets, outputs):
            env.vars[name] = tensor

    def _states_hint(self, outputs: list[Tensor]) -> str | None:
        """What an RNN with return_state=true gives, named: `seq, h, c = x -> lstm(...)`."""
        ref = outputs[0].ref if outputs else None
        if ref is None or len(outputs) < 2:
            return None
        node = self.state.build.graph.node_of(ref)
        names = _rnn_output_names(node.kind, node.args) if node.op == "layer" else None
        if names is None or len(names) != len(outputs):
            return None
        return f"'{node.kind}' with return_state=true gives its output, then its states: {', '.join(names)} = ..."

    def _spread(self, tensor: Tensor, count: int) -> list[Tensor]:
        """A layer whose output count check could not know, taken as `count` outputs."""
        node = self.state.build.graph.node_of(cast(TensorRef, tensor.ref))  # a tensor just emitted
        node.n_outputs, node.output_shapes = count, [UNKNOWN] * count
        return [Tensor(TensorRef(node.id, i), UNKNOWN, UNKNOWN) for i in range(count)]

    def _output(self, stmt: ir.Output, env: Env, where: str) -> None:
        for item in stmt.items:
            try:
                if item.value is not None:
                    if item.name is None:
                        raise Fail(item.value.span, "an output needs a name", "output NAME or output NAME = FLOW")
                    tensors = self.tensors(item.value, env, final=item.name)
                    if len(tensors) != 1:
                        raise Fail(
                            item.value.span,
                            f"output '{item.name}' is {len(tensors)} tensors; "
                            "bind them first: a, b = FLOW, then output a, b",
                        )
                    env.vars[item.name] = tensors[0]
                name = cast(str, item.name)  # `output NAME`, or refused above
                tensor = self._tensor_named(name, env, item.span)
                if self.state.is_output(name):
                    raise Fail(item.span, f"'{item.name}' is already an output")
                self.state.build.outputs.append((name, tensor))
            except Fail as exc:
                self.state.diagnostics.extend(self._in_block_use(exc.all_diagnostics()))
                if item.name and not self.state.is_output(item.name):
                    self.state.build.outputs.append((item.name, POISON))  # keeps the outputs' count right

    def _shared(self, stmt: ir.Shared, env: Env) -> None:
        step = self.steps.resolve_step(stmt.value, env)
        if isinstance(step.entry, SharedInstance):
            raise Fail(stmt.value.span, f"'{step.name}' is already a shared instance; use it directly")
        if step.tensor_kwargs:  # each call of the one layer takes its own: keras.io's decoder, called twice
            given = step.tensor_kwargs[0]
            raise Fail(
                given.span,
                f"'{given.name}' is given where a shared instance is called, not where it is made",
                f"x -> {stmt.name}({given.name}=...)",
            )
        env.vars[stmt.name] = SharedInstance(stmt.name, step)

    def _if(self, stmt: ir.If, env: Env, where: str) -> None:
        cond = self.state.consts.fold(stmt.cond, env)
        if isinstance(cond, (Sym, SymCall)):
            sym = cond.sym if isinstance(cond, SymCall) else cond
            raise Fail(sym.span, f"unknown name '{sym.name}'", self._near_constant(sym.name, env))
        if cond is UNKNOWN:
            self.state.uncertain = True
            self._if_unknown(stmt, env, where)
        elif cond:
            self.run(stmt.then, env, where)
        elif stmt.orelse is not None:
            self.run(stmt.orelse, env, where)

    def _if_unknown(self, stmt: ir.If, env: Env, where: str) -> None:
        """`check` cannot decide: check both branches; names bound in either stay usable.

        Each branch starts from the outputs declared before the `if`, so an
        output declared in both branches (only one of which will run) is not
        a duplicate; the outputs of both are kept, the then-branch's first."""
        branches = []
        before = list(self.state.build.outputs)
        added: dict[str, Tensor] = {}
        for body in (stmt.then, stmt.orelse or []):
            child = env.child()
            self.state.build.outputs = list(before)
            self.run(body, child, where)
            branches.append(child.vars)
            for name, tensor in self.state.build.outputs[len(before) :]:
                earlier = added.setdefault(name, tensor)
                if (
                    earlier is not tensor
                    and isinstance(earlier, Tensor)
                    and not earlier.poisoned
                    and earlier.shape != tensor.shape
                ):
                    added[name] = Tensor(earlier.ref, earlier.handle, UNKNOWN)
        self.state.build.outputs = before + list(added.items())
        for name in set(branches[0]) | set(branches[1]):
            values = [b[name] for b in branches if name in b]
            first, tensors = values[0], [v for v in values if isinstance(v, Tensor)]
            if isinstance(first, Tensor) and len(tensors) == len(values):
                same = all(t.shape == first.shape for t in tensors)
                env.vars[name] = Tensor(first.ref, first.handle, first.shape if same else UNKNOWN)
            else:
                env.vars[name] = first if all(v == first for v in values) else UNKNOWN

    # ============================================================ tensors
    def tensors(self, expr: ir.Expr, env: Env, final: str | None) -> list[Tensor]:
        """The tensors an expression in tensor position stands for."""
        if isinstance(expr, ir.Name):
            return [self._tensor_named(expr.id, env, expr.span)]
        if isinstance(expr, ir.Tuple):
            out: list[Tensor] = []
            for item in expr.items:
                out.extend(self.tensors(item, env, final=None))
            return out
        if isinstance(expr, ir.Flow):
            tensors = self.tensors(expr.items[0], env, final=None)
            steps = expr.items[1:]
            for i, step in enumerate(steps):
                try:
                    tensors = self.steps.apply(step, tensors, env, final if i == len(steps) - 1 else None)
                except Fail as exc:
                    exc.more = exc.more + tuple(self.steps.check_rest(steps[i + 1 :], env))
                    raise
            return tensors
        if (
            isinstance(expr, ir.BinOp)
            and expr.op == "+"
            and all(self.tensor_exprs.mentions_tensor(term, env) for term in _sum_terms(expr))
        ):
            terms = _sum_terms(expr)
            inputs: list[Tensor] = []
            for term in terms:
                got = self.tensors(term, env, final=None)
                if len(got) != 1:
                    raise Fail(term.span, f"'+' adds single tensors; this side is {len(got)} tensors")
                inputs.extend(got)
            add = cast(registry.Entry, registry.lookup("layer", "add"))
            try:
                return self.steps.emit_registry(add, "add", {}, inputs, expr.span, final)
            except Fail as exc:
                raise _add_mismatch(terms, inputs, expr.span) or exc from None
        if self.tensor_exprs.is_tensor_expression(expr, env):
            return self.tensor_exprs.tensor_expression(expr, env, final)
        if isinstance(expr, ir.BinOp) and expr.op in ("//", "%"):
            raise Fail(
                expr.span,
                f"'{expr.op}' does not apply to tensors",
                "tensors take + - * / ** @ and the functions of docs/language.md",
            )
        if isinstance(expr, ir.IfExp):
            cond = self.state.consts.fold(expr.cond, env)
            if cond is UNKNOWN:
                self.state.uncertain = True
                then = self.tensors(expr.then, env, final)
                self.tensors(expr.orelse, env, None)
                return then
            return self.tensors(expr.then if cond else expr.orelse, env, final)
        if isinstance(expr, ir.Attr) and isinstance(expr.value, ir.Name) and expr.attr == "shape":
            raise Fail(expr.span, "a shape is a constant, not a tensor")
        if isinstance(expr, ir.Attr) and self.tensor_exprs.is_tap(expr, env):
            return [self._tap(expr)]
        hint = None
        if isinstance(expr, (ir.Call, ir.Name)):
            hint = "a flow starts from a tensor: x -> dense(10)"
        elif isinstance(expr, ir.Number):  # `x + 3 -> relu` reads as `x + (3 -> relu)`
            hint = "'->' binds tighter than '+' and '-': (x + 3) -> relu applies a step to a sum"
        raise Fail(expr.span, "expected a tensor here", hint)

    def _tap(self, expr: ir.Attr) -> Tensor:
        """`MODEL.LAYER`: that layer's output in the body's one call of the model (`semantics/taps.py`)."""
        model = cast(ir.Name, expr.value).id
        build = self.state.build
        if (model, expr.attr) in build.tapped:
            return build.tapped[(model, expr.attr)]
        if model in build.tapped_call:  # the call reported the unknown layer name
            raise Fail.reported()
        if model in build.taps:
            raise Fail(
                expr.span,
                f"'{model}.{expr.attr}' is a tensor of a call of model '{model}', and there is none before it",
                f"call the model first: features = x -> {model}",
            )
        raise Fail(
            expr.span,
            f"'{model}.{expr.attr}' is taken in a block; a tap is taken in the model body that calls '{model}'",
            f"give it to the block as an input: (x, {model}.{expr.attr}) -> BLOCK",
        )

    def mentions_tensor(self, expr: ir.Expr, env: Env) -> bool:
        """Whether an expression stands for a tensor rather than a constant (`tensor_exprs`' rule)."""
        return self.tensor_exprs.mentions_tensor(expr, env)

    def _tensor_named(self, name: str, env: Env, span: Span) -> Tensor:
        value = env.get(name)
        if isinstance(value, Tensor):
            return value
        if value is None and not env.has(name):
            known = registry.lookup("layer", name) or registry.lookup("activation", name)
            if env.scope.find(name) is not None or known:
                raise Fail(span, f"'{name}' is a step, not a tensor", f"apply it to a tensor: x -> {name}")
            tensors = (n for n, v in env.bindings() if isinstance(v, Tensor))  # lazy: see did_you_mean
            raise Fail(span, f"undefined tensor '{name}'", did_you_mean(name, tensors))
        raise Fail(span, f"'{name}' is {binding_name(value)}, not a tensor")

    def _near_constant(self, name: str, env: Env) -> str | None:
        return did_you_mean(name, _visible_names(env))


def _rnn_output_names(kind: str, args: dict[str, Any]) -> list[str] | None:
    """Names for what a recurrent layer with return_state=true gives, in Keras' order (None for
    another layer): the sequence (both directions' apart when a bidirectional one merges nothing),
    then the states, the forward layer's before the backward one's."""
    states = ["h", "c"][: STATES[kind]] if kind in STATES else None
    if states is not None:
        return ["seq", *states]
    inner = nested(args.get("layer")) if kind == "bidirectional" else None
    if inner is None or inner.name not in STATES:
        return None
    states = ["h", "c"][: STATES[inner.name]]
    merged = ["forward_seq", "backward_seq"] if args.get("merge_mode", "concat") is None else ["seq"]
    return [*merged, *(f"forward_{s}" for s in states), *(f"backward_{s}" for s in states)]


def _input_shape_hint(shape: tuple[Any, ...]) -> str | None:
    """`(None, 784)`: Python's None, and most likely the batch axis, which an input shape leaves out."""
    if not any(isinstance(d, Sym) and d.name == "None" for d in shape):
        return None
    rest = shape[1:]
    if isinstance(shape[0], Sym) and rest and all(isinstance(d, int) for d in rest):
        return f"an input shape leaves out the batch axis: write {describe_value(rest)}"
    return "names are lowercase in a spec: write none"


def _add_mismatch(terms: list[ir.Expr], inputs: list[Tensor], span: Span) -> Fail | None:
    """`y + x` of two shapes that do not add: both named with their shapes, and the usual
    fix (a projection of the odd one out to the first's channels), or None if the shapes add."""
    shapes = [t.shape for t in inputs if isinstance(t.shape, tuple)]
    if len(shapes) != len(inputs):
        return None
    first = shapes[0]
    odd = next((i for i, s in enumerate(shapes) if not _adds(first, s)), None)
    if odd is None:
        return None
    named = [f"{_term_text(term)} {describe_value(shape)}" for term, shape in zip(terms, shapes)]
    message = f"cannot add {', '.join(named[:-1])} and {named[-1]}: '+' needs one shape"
    hint = None
    channels, rank = first[-1] if first else None, len(first)
    if len(shapes[odd]) == rank and isinstance(channels, int) and first[:-1] == shapes[odd][:-1]:
        projection = {
            1: f"dense({channels})",
            2: f"conv1d({channels}, 1)",
            3: f"conv2d({channels}, 1)",
            4: f"conv3d({channels}, 1)",
        }.get(rank)
        if projection:
            name = _term_text(terms[odd])
            start = name if isinstance(terms[odd], ir.Name) else "..."
            hint = f"project {name} to {channels} channels first: {start} -> {projection}"
    elif len(shapes[odd]) == rank and rank >= 2 and first[-1] == shapes[odd][-1]:
        hint = "the sizes differ: downsample both paths alike (the same strides or pooling)"
    return Fail(span, message, hint)


def _adds(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether Keras' Add takes shapes `a` and `b` (a size of 1 or an unknown one broadcasts)."""
    return len(a) == len(b) and all(x is None or y is None or x == y or 1 in (x, y) for x, y in zip(a, b))


def _term_text(term: ir.Expr) -> str:
    return term.id if isinstance(term, ir.Name) else "a term"


def _key(d: Diagnostic) -> tuple[str, int, int, str]:
    return d.file, d.line, d.col, d.message


def _visible_names(env: Env) -> Iterator[str]:
    """Local names, then the file's, lazily (for suggestions)."""
    yield from env.local_names()
    yield from env.scope.names()


def _targets(stmt: ir.Stmt) -> list[str]:
    if isinstance(stmt, ir.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ir.Let, ir.Shared)):
        return [stmt.name]
    if isinstance(stmt, ir.Output):
        return [item.name for item in stmt.items if item.name and item.value is not None]
    return []


def _binding(stmt: ir.Stmt) -> str | None:
    """The name a statement binds, which names the layers it makes."""
    if isinstance(stmt, ir.Assign):
        return stmt.targets[0]
    if isinstance(stmt, ir.Output):
        return next((item.name for item in stmt.items if item.value is not None), None)
    return None


def _sum_terms(expr: ir.Expr) -> list[ir.Expr]:
    if isinstance(expr, ir.BinOp) and expr.op == "+":
        return _sum_terms(expr.left) + _sum_terms(expr.right)
    return [expr]


def _name_span(decl: ir.ModelDecl, keyword: str) -> Span:
    """The span of a declaration's name (just after its keyword)."""
    col = decl.span.col + len(keyword) + 1
    return Span.at(decl.span.file, decl.span.line, col, len(decl.name))


def _keras_own_name(layer: str, taken: set[str]) -> str:
    """The name Keras gives a layer it makes unnamed in a fresh session: its class's, `_1`, `_2`, ... after the
    layers of that class before it (keras.applications' layers, named as in such a session)."""
    name, count = layer, 0
    while name in taken:
        count += 1
        name = f"{layer}_{count}"
    return name


def _keras_application_names(graph: Graph, decl: ir.ModelDecl) -> None:
    """A zoo backbone's layers take keras.applications' names (`conv4_block6_out`, not the spec's
    `stage_3.y.relu`): its Keras model's layers are named as the application's, and `freeze`,
    `summary` and `render` use the names users know, and name its parts alone (`freeze`)."""
    names = zoo_keras_names(decl.span.file, decl.name)
    for node in graph.nodes if names else ():
        node.name = names.get(node.name, node.name)
    graph.keras_application = bool(names)
