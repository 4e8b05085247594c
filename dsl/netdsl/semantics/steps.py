"""Steps: what `-> NAME(args)` names, and applying it to tensors.

The expander's collaborator (see `state.py`) that resolves a step expression —
a registry layer or activation, a block, a declared layer or activation, a
nested model, a shared instance — checks its arguments and arity, and
expands it: blocks in place as clusters, shared blocks and nested models as
sub-graphs built once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from netdsl import registry
from netdsl.errors import Diagnostic, Exhausted, Fail, Span, did_you_mean
from netdsl.limits import MAX_BLOCK_DEPTH, MAX_REPEAT
from netdsl.semantics import call_tensors
from netdsl.semantics.backbone_call import BackboneTop, backbone_top
from netdsl.semantics.call_tensors import KeywordTensors
from netdsl.semantics.consts import bind_plain, dotted_name, is_default
from netdsl.semantics.graph import Cluster, Graph, KeywordInput
from netdsl.semantics.graph_writer import GraphWriter
from netdsl.semantics.scope import Declaration, FileScope, cycle_text
from netdsl.semantics.state import (
    POISON,
    BuildState,
    ChosenEntry,
    ExpansionState,
    LayerOrActivation,
    SharedInstance,
    Step,
    Tensor,
)
from netdsl.semantics.taps import tapped
from netdsl.semantics.values import UNKNOWN, Env, StepValue, TensorValue, Value, describe_value, type_name
from netdsl.syntax import ir
from netdsl.syntax.loader import zoo_keras_names

# Keras layers left out of the allow-list on purpose, and why (for the diagnostic).
REFUSED_LAYERS = {
    "lambda": "Lambda runs Python code, so netdsl does not offer it",
    "tfsm_layer": "TFSMLayer loads a SavedModel from a file, so netdsl does not offer it",
    "torch_module_wrapper": "TorchModuleWrapper runs Python code, so netdsl does not offer it",
    "jax_layer": "JaxLayer runs Python code, so netdsl does not offer it",
    "flax_layer": "FlaxLayer runs Python code, so netdsl does not offer it",
}


class BodyRunner(Protocol):
    """What steps need of the flow expander: a block's body run, a nested model expanded, the
    tensors an expression stands for (a layer call's tensors given by keyword)."""

    def run(self, body: list[ir.Stmt], env: Env, where: str) -> None: ...

    def expand_model(self, decl: ir.ModelDecl, scope: FileScope, top: BackboneTop | None = None) -> Graph: ...

    def tensors(self, expr: ir.Expr, env: Env, final: str | None) -> list[Tensor]: ...

    def mentions_tensor(self, expr: ir.Expr, env: Env) -> bool: ...


class StepResolver:
    """Resolves step expressions and applies them to tensors (state: the shared `ExpansionState`)."""

    def __init__(self, state: ExpansionState, writer: GraphWriter, bodies: BodyRunner):
        self.state = state
        self.writer = writer
        self.bodies = bodies

    def apply(self, expr: ir.Expr, inputs: list[Tensor], env: Env, final: str | None) -> list[Tensor]:
        """A step expression (a step, a group of steps, a repeat `* N`, an `if`) applied to `inputs`."""
        if isinstance(expr, ir.Flow):  # a group of steps
            for i, step in enumerate(expr.items):
                inputs = self.apply(step, inputs, env, final if i == len(expr.items) - 1 else None)
            return inputs
        if isinstance(expr, ir.BinOp) and expr.op == "*":
            return self._repeat(expr, inputs, env, final)
        if isinstance(expr, ir.IfExp):
            cond = self.state.consts.fold(expr.cond, env)
            if cond is UNKNOWN:
                self.state.uncertain = True
                self.apply(expr.orelse, inputs, env, None)
                return self.apply(expr.then, inputs, env, final)
            return self.apply(expr.then if cond else expr.orelse, inputs, env, final)
        resolved = self.resolve_step(expr, env)
        return self.apply_step(resolved, inputs, final, self.keyword_tensors(resolved, env))

    def check_rest(self, exprs: list[ir.Expr], env: Env) -> list[Diagnostic]:
        """The steps after a failed one, with no tensor to apply them to: their names and
        arguments checked all the same, so one run reports every independent error of a
        flow (`x -> maxpool2d(2) -> flaten`), and nothing that follows from the first."""
        found: list[Diagnostic] = []
        for expr in exprs:
            if isinstance(expr, ir.Flow):
                found += self.check_rest(expr.items, env)
            elif isinstance(expr, ir.BinOp) and expr.op == "*":
                found += self.check_rest([expr.left], env)
            elif isinstance(expr, ir.IfExp):
                found += self.check_rest([expr.then, expr.orelse], env)
            else:
                try:
                    self._check_step_arguments(self.resolve_step(expr, env))
                except Fail as exc:
                    found += exc.all_diagnostics()
        return found

    def _check_step_arguments(self, step: Step) -> None:
        """A resolved step's arguments checked as `apply_step` would, without inputs."""
        entry = _chosen(step)
        if isinstance(entry, registry.Entry):
            self.state.arguments.bind(entry, step.args, step.kwargs, step.span)
        elif isinstance(entry, ir.BlockDecl):
            bind_plain(
                entry.name,
                "block",
                entry.params,
                [v for v, _ in step.args],
                {k: v for k, v, _ in step.kwargs},
                step.span,
            )

    def _repeat(self, expr: ir.BinOp, inputs: list[Tensor], env: Env, final: str | None) -> list[Tensor]:
        count = self.state.consts.fold(expr.right, env)
        if count is UNKNOWN:
            self.state.uncertain = True
            return self.apply(expr.left, inputs, env, final)
        if not isinstance(count, int) or isinstance(count, bool):
            raise Fail(expr.right.span, f"a repeat count must be an integer, received {type_name(count)}")
        if not 1 <= count <= MAX_REPEAT:
            raise Fail(expr.right.span, f"a repeat count must be between 1 and {MAX_REPEAT:,}, received {count:,}")
        if self.state.build.repeat_once:
            return self.apply(expr.left, inputs, env, final)
        outer = self.state.build.repeat
        self.state.repeat_groups += 1
        group = self.state.repeat_groups
        before, errors_before = self.writer.spent(), len(self.state.diagnostics)
        try:
            for i in range(count):
                if outer is None:
                    self.state.build.repeat = (group, i, count)
                inputs = self.apply(expr.left, inputs, env, final if i == count - 1 else None)
                if i == 0 and count > 1:
                    self.writer.afford(before, count - 1, expr.span)
                    if len(self.state.diagnostics) > errors_before:
                        # The other passes would repeat the first one's errors (and
                        # their cost): its result stands for theirs, poisoned.
                        return [POISON] * len(inputs)
        finally:
            self.state.build.repeat = outer
        return inputs

    def resolve_step(self, expr: ir.Expr, env: Env) -> Step:
        """What a step expression names, with its arguments evaluated (not yet checked)."""
        if isinstance(expr, ir.Call):
            step = self.step_target(expr.func, env)
            layer = _called_layer(step)
            tensor_kwargs = [layer is not None and layer.call_tensor(k.name) is not None for k in expr.kwargs]
            step.tensor_kwargs = [k for k, takes in zip(expr.kwargs, tensor_kwargs) if takes]
            callee = layer or (step.entry if isinstance(step.entry, ir.BlockDecl) else None)
            step.args = [(self.argument(a, env, callee, position=i), a.span) for i, a in enumerate(expr.args)]
            step.kwargs = [
                (k.name, self.argument(k.value, env, callee, k.name), k.span)
                for k, takes in zip(expr.kwargs, tensor_kwargs)
                if not takes
            ]
            if isinstance(step.entry, SharedInstance) and (step.args or step.kwargs):
                tensors = ", ".join(f"{t.name}=" for t in layer.call_tensors) if layer is not None else ""
                raise Fail(
                    expr.span,
                    f"shared instance '{step.name}' takes no arguments"
                    + (f" but the tensors of its call ({tensors})" if tensors else ""),
                    f"arguments go where it is made: shared {step.name} = ...",
                )
            return step
        if isinstance(expr, (ir.Name, ir.Attr)):
            return self.step_target(expr, env)
        raise Fail(expr.span, "expected a step (a layer, block or activation)", _step_hint(expr))

    def argument(
        self,
        expr: ir.Expr,
        env: Env,
        callee: registry.Entry | ir.BlockDecl | None = None,
        keyword: str | None = None,
        position: int | None = None,
    ) -> Value:
        """An argument's value, its items charged: checking and building walk them all. A tensor
        given to a registry layer's constructor or a block's parameter is named for what it is
        (`callee` the layer or block called, `keyword` or `position` the argument), and the tensor
        of a wrapped layer's call sent to the wrapper's call."""
        if isinstance(callee, registry.Entry) and isinstance(expr, ir.Call):
            _refuse_wrapped_tensors(callee, expr)
        try:
            value = self.state.consts.fold(expr, env)
        except Fail as exc:
            tensor = _tensor_in(expr, env) if callee is not None and exc.diagnostic is not None else None
            if tensor is None or callee is None:
                raise
            if isinstance(callee, ir.BlockDecl):
                names = [p.name for p in callee.params]
                named = keyword if keyword is not None else _nth(names, position)
                if named is None or named not in names:
                    return UNKNOWN  # not a parameter at all: binding the block's arguments says so
                raise Fail(
                    expr.span,
                    f"parameter '{named}' of block '{callee.name}' takes a constant; '{tensor}' is a tensor",
                    f"a block takes tensors as its inputs: (x, {tensor}) -> {callee.name}(...)",
                ) from None
            param = callee.param(keyword) if keyword is not None else _positional_param(callee, position)
            if param is None and keyword is not None:
                return UNKNOWN  # not a parameter at all: the arguments' check says so, with the list
            raise _tensor_for_constant(callee, param, tensor, expr.span) from None
        self.state.consts.charge_value(value, expr.span)
        return value

    def keyword_tensors(self, step: Step, env: Env) -> list[KeywordTensors]:
        """The tensors a layer's call is given by keyword (`initial_state=[h, c]`), every bad one reported."""
        layer = _called_layer(step)
        if layer is None:
            return []
        found: list[KeywordTensors] = []
        fails: list[Fail] = []
        seen: set[str] = set()
        for kwarg in step.tensor_kwargs:
            if kwarg.name in seen:
                fails.append(Fail(kwarg.span, f"parameter '{kwarg.name}' of '{layer.name}' is given twice"))
                continue
            seen.add(kwarg.name)
            try:
                given = self._keyword_tensors(layer, kwarg, env)
            except Fail as exc:
                fails.append(exc)
                continue
            if given is not None:
                found.append(given)
        if fails:
            raise Fail.of(fails)
        return found

    def _keyword_tensors(self, layer: registry.Entry, kwarg: ir.Kwarg, env: Env) -> KeywordTensors | None:
        value = kwarg.value
        if isinstance(value, ir.NoneLit):
            return None  # Keras' default: as if it were not given
        listed = isinstance(value, (ir.List, ir.Tuple))
        items = value.items if isinstance(value, (ir.List, ir.Tuple)) else [value]
        tensors: list[Tensor] = []
        for item in items:
            if isinstance(item, (ir.List, ir.Tuple)):
                raise Fail(item.span, f"'{kwarg.name}' of '{layer.name}' takes a list of tensors, not of lists")
            if not self.bodies.mentions_tensor(item, env) and _tensor_in(item, env) is None:
                raise Fail(
                    item.span,
                    f"'{kwarg.name}' of '{layer.name}' takes tensors, received {self._constant_text(item, env)}",
                    _tensor_example(layer, kwarg.name),
                )
            got = self.bodies.tensors(item, env, final=None)
            if len(got) != 1:
                raise Fail(item.span, f"this is {len(got)} tensors; bind them first: a, b = ...")
            tensors.extend(got)
        return KeywordTensors(kwarg.name, tensors, listed, value.span)

    def step_target(self, func: ir.Expr, env: Env) -> Step:
        if isinstance(func, ir.Attr):
            return self._namespaced_step(func, env)
        if not isinstance(func, ir.Name):
            raise Fail(func.span, "expected a step name")
        name = func.id
        local = env.get(name)
        if isinstance(local, SharedInstance):
            return Step(name, func.span, local)
        shadow = self.state.shadows.get(name)
        if shadow is not None and env.has(name):  # `-> dropout(dropout)` after a parameter `dropout`
            raise shadow.failure()
        if isinstance(local, TensorValue):
            raise Fail(
                func.span, f"'{name}' is a tensor, not a step", "combine tensors with a tuple: (a, b) -> concatenate"
            )
        if env.has(name) and not isinstance(local, StepValue):  # (a body's only StepValue: a SharedInstance)
            raise Fail(func.span, f"'{name}' is a constant ({describe_value(local)}), not a step")
        found = env.scope.find(name)
        if found is not None:
            return self._declared_step(found[0], found[1], func)
        return self._registry_step(name, func.span, env)

    def _namespaced_step(self, func: ir.Attr, env: Env) -> Step:
        if isinstance(func.value, ir.Name) and func.value.id in env.scope.aliases and not env.has(func.value.id):
            target = env.scope.aliases[func.value.id]
            decl = target.own.get(func.attr)
            if decl is None or isinstance(decl, ir.ModelDecl):
                raise Fail(
                    func.span,
                    f"'{func.value.id}' has no block, layer or activation '{func.attr}'",
                    did_you_mean(
                        func.attr,
                        [n for n, d in target.own.items() if not isinstance(d, (ir.ModelDecl, ir.Let, ir.LetFunc))],
                    ),
                )
            return self._declared_step(decl, target, func)
        dotted = dotted_name(func)
        raise Fail(
            func.span,
            f"unknown step '{dotted}'",
            "a dotted name reaches only a file imported with 'as' (lib.bottleneck); nothing reaches Python",
        )

    def _declared_step(
        self,
        decl: Declaration,
        scope: FileScope,
        func: ir.Name | ir.Attr,
    ) -> Step:
        if isinstance(decl, (ir.BlockDecl, ir.LayerDecl, ir.ActivationDecl, ir.ModelDecl)):
            return Step(decl.name, func.span, decl, scope=scope)
        if isinstance(decl, (ir.LossDecl, ir.MetricDecl)):
            setting = f"loss = {decl.name}" if isinstance(decl, ir.LossDecl) else f"metrics = [{decl.name}]"
            raise Fail(
                func.span,
                f"'{decl.name}' is a declared {decl.kind}, not a step",
                f"a train section names it: {setting}",
            )
        what = "a constant" if isinstance(decl, ir.Let) else "a function"
        raise Fail(func.span, f"'{decl.name}' is {what}, not a step")

    def _registry_step(self, name: str, span: Span, env: Env) -> Step:
        layer = registry.lookup("layer", name)
        activation = registry.lookup("activation", name)
        if layer is not None and activation is not None:
            # `-> relu` is the activation; `-> relu(max_value=6.0)` is the layer.
            return Step(name, span, LayerOrActivation(layer, activation))
        if layer is not None:
            return Step(name, span, layer)
        if activation is not None:
            return Step(name, span, activation)
        refused = REFUSED_LAYERS.get(registry.snake_case(name))
        if refused:
            raise Fail(
                span,
                f"unknown layer '{name}': {refused}",
                "declare it in the spec instead (activation NAME(x) = ..., layer NAME(...) { ... })",
            )
        raise Fail(span, f"unknown layer '{name}'", self._near_step(name, env))

    def _constant_text(self, expr: ir.Expr, env: Env) -> str:
        """A constant given where a tensor is needed, in words ("the integer 3")."""
        try:
            value = self.state.consts.fold(expr, env)
        except Fail:
            return "a constant"
        return f"the constant {describe_value(value)}"

    def apply_step(
        self, step: Step, inputs: list[Tensor], final: str | None, keywords: list[KeywordTensors] | None = None
    ) -> list[Tensor]:
        """A resolved step applied to `inputs` (and to the tensors its call takes by keyword), by the
        class of what it names."""
        entry = _chosen(step)
        if isinstance(entry, registry.Entry):
            kwargs = self.state.arguments.bind(entry, step.args, step.kwargs, step.span)
            if entry.kind == "layer":
                return self.emit_registry(
                    entry, _base_name(step, entry), kwargs, inputs, step.span, final, keywords=keywords or []
                )
            self._check_arity(step.name, (1, 1), inputs, step.span)
            return self.writer.emit(
                "activation", entry.name, kwargs, inputs, 1, step.span, _base_name(step, entry), final
            )
        if isinstance(entry, ir.BlockDecl):
            return self._block(step, entry, inputs, final)
        if isinstance(entry, (ir.LayerDecl, ir.ActivationDecl)):
            checked = self.state.declared.instantiate(step, inputs)
            self._check_arity(step.name, (checked.n_inputs, checked.n_inputs), inputs, step.span)
            return self.writer.emit(
                checked.kind,
                step.name,
                checked.arguments,
                inputs,
                checked.n_outputs,
                step.span,
                step.name,
                final,
                decl=checked,
            )
        if isinstance(entry, ir.ModelDecl):
            return self._nested_model(step, entry, inputs, final)
        return self._apply_shared(entry, inputs, step.span, keywords or [])

    def emit_registry(
        self,
        entry: registry.Entry,
        base: str,
        kwargs: dict[str, Any],
        inputs: list[Tensor],
        span: Span,
        final: str | None,
        shared: str | None = None,
        keywords: list[KeywordTensors] | None = None,
    ) -> list[Tensor]:
        inputs, keywords = call_tensors.place_positional(entry, inputs, keywords or [])
        self._check_arity(entry.name, entry.inputs, inputs, span)
        n_outputs = registry.output_count(entry, kwargs)
        self._check_size(entry, kwargs, inputs, span)
        call_tensors.check(entry, kwargs, inputs, keywords)
        given = tuple(KeywordInput(k.name, len(k.tensors), k.listed) for k in keywords)
        every = inputs + [t for k in keywords for t in k.tensors]  # the node's inputs: by position, then by keyword
        if n_outputs is not None:
            outputs = self.writer.emit(
                "layer", entry.name, kwargs, every, n_outputs, span, base, final, shared=shared, keywords=given
            )
            if entry.name == "reshape":
                self._warn_batch_like_reshape(kwargs, inputs, outputs, span)
            return outputs
        self.state.uncertain = True
        outputs = self.writer.emit(
            "layer", entry.name, kwargs, every, 1, span, base, final, shared=shared, keywords=given
        )
        if len(outputs) == 1 and not outputs[0].poisoned and outputs[0].shape is UNKNOWN:
            outputs[0].variadic = True  # check's guess; a Keras backend gives the real outputs
        return outputs

    def _warn_batch_like_reshape(
        self, kwargs: dict[str, Any], inputs: list[Tensor], outputs: list[Tensor], span: Span
    ) -> None:
        """`x -> reshape((-1, 64, 256))` of a (64, 256) tensor: the layer's target shape leaves the batch
        axis out, so its -1 is an axis of size 1 — most likely keras.ops.reshape's batch axis meant."""
        target = kwargs.get("target_shape")
        shape = outputs[0].shape if outputs else UNKNOWN
        if not (isinstance(target, tuple) and target and target[0] == -1 and target.count(-1) == 1):
            return
        if isinstance(shape, tuple) and shape and shape[0] == 1 and isinstance(inputs[0].shape, tuple):
            self.state.diagnostics.append(
                Diagnostic.at(
                    span,
                    f"the -1 of this reshape's target shape {describe_value(target)} is an axis of size 1",
                    f"a step's target shape leaves the batch axis out: write reshape({describe_value(target[1:])}), "
                    "or reshape((1, ...)) for the axis of size 1",
                    severity="warning",
                )
            )

    def _check_arity(self, name: str, arity: tuple[Any, ...], inputs: list[Tensor], span: Span) -> None:
        lo, hi = arity
        n = len(inputs)
        if lo <= n and (hi is None or n <= hi):
            return
        if hi is None:
            wanted = f"{lo} or more input tensors"
        elif lo == hi:
            wanted = f"{lo} input tensor{'s' if lo != 1 else ''}"
        else:
            wanted = f"{lo} to {hi} input tensors"
        hint = "feed several with a tuple: (a, b) -> " + name if n < lo else None
        layer = registry.lookup("layer", name)
        if hint is None and layer is not None and layer.call_tensors:  # `(dec, h, c) -> lstm(...)`
            keywords = ", ".join(f"{t.name}=" + ("[...]" if t.listed else "...") for t in layer.call_tensors)
            hint = f"its call takes other tensors by keyword: x -> {name}(..., {keywords})"
        raise Fail(span, f"'{name}' takes {wanted}, received {n}", hint)

    def _check_size(self, entry: registry.Entry, kwargs: dict[str, Any], inputs: list[Tensor], span: Span) -> None:
        shapes = [t.shape if isinstance(t.shape, tuple) else None for t in inputs]
        if any(s is None for s in shapes):
            return
        estimate = registry.estimate_params(entry, kwargs, shapes)  # None where a rule cannot tell
        limit = self.state.param_limit
        if estimate is not None and estimate > limit:
            raise Fail(
                span,
                f"'{entry.name}' would have about {estimate:,} parameters; the limit is {limit:,}",
                "use fewer units, or build with a higher --max-params",
            )

    # ============================================================ blocks
    def _block(self, step: Step, decl: ir.BlockDecl, inputs: list[Tensor], final: str | None) -> list[Tensor]:
        params = bind_plain(
            decl.name, "block", decl.params, [v for v, _ in step.args], {k: v for k, v, _ in step.kwargs}, step.span
        )
        # An instance is always BINDING.BLOCK (deduplicated), even as the last step:
        # the diagram clusters of `a -> blk * 3` read blk, blk_2, blk_3.
        instance = self.writer.unique_local(self.writer.scoped(decl.name))
        outer_path = self.state.build.path
        self.state.build.path = outer_path + (instance,)
        self.state.build.graph.clusters[self.state.build.path] = Cluster(
            self.state.build.path, decl.name, step.span, {k: v for k, v in params.items() if not is_default(v)}
        )
        try:
            return self.expand_block_body(decl, step.scope, params, inputs, step.span)
        except Exhausted as exc:  # shown at the outermost use: the one the user wrote here
            raise exc.moved(step.span) from None
        finally:
            self.state.build.path = outer_path

    def expand_block_body(
        self, decl: ir.BlockDecl, scope: FileScope, params: dict[str, Any], inputs: list[Tensor], span: Span
    ) -> list[Tensor]:
        key = f"{scope.path}:{decl.name}"
        if key in self.state.block_stack:
            path = [k.split(":")[-1] for k in self.state.block_stack[self.state.block_stack.index(key) :]]
            raise Fail(span, cycle_text("block", decl.name, path), "a block cannot be recursive")
        self.writer.charge_step(span)  # an instance: a scope, a cluster, its outputs
        if self.state.nesting() >= MAX_BLOCK_DEPTH:
            raise Fail(
                span,
                f"blocks nested more than {MAX_BLOCK_DEPTH} deep"
                if len(self.state.model_stack) <= 1
                else f"blocks and models nested more than {MAX_BLOCK_DEPTH} deep",
            )
        names = block_inputs(decl)
        if len(names) != len(inputs):
            raise Fail(
                span,
                f"block '{decl.name}' takes {len(names)} input tensor{'s' if len(names) != 1 else ''}, "
                f"received {len(inputs)}",
            )
        env = Env(scope)
        for name, value in params.items():
            env.vars[name] = self.state.consts.fold(_param_default(decl, name), env) if is_default(value) else value
        for (name, _), tensor in zip(names, inputs):
            env.vars[name] = tensor
        saved_outputs, self.state.build.outputs = self.state.build.outputs, []
        saved_shadows, self.state.shadows = self.state.shadows, self.state.shadows_in(decl, scope)
        self.state.block_stack.append(key)
        errors_before = len(self.state.diagnostics)
        try:
            self.bodies.run(decl.body, env, where="block")
            outputs = [t for _, t in self.state.build.outputs]
        finally:
            self.state.block_stack.pop()
            self.state.build.outputs = saved_outputs
            self.state.shadows = saved_shadows
        if not outputs and len(self.state.diagnostics) > errors_before:
            raise Fail.reported()  # its output failed, and said why: "no output" would only repeat it
        if not outputs:
            raise Fail(span, f"block '{decl.name}' has no output")
        return outputs

    # ============================================================ models and shared
    def _nested_model(self, step: Step, decl: ir.ModelDecl, inputs: list[Tensor], final: str | None) -> list[Tensor]:
        top = self._backbone_top(step, decl)
        taps = self.state.build.taps.get(decl.name)
        if taps:
            return self._tapped_call(step, decl, taps, inputs, final, top)
        sub = self._sub_model(decl, step.scope, step.span, top=top)
        if top is not None and top.input_shape is not None:
            _check_backbone_input(decl.name, top, inputs, step.span)
        if sub.weights_by_call:
            first = sub.weights_by_call[0]
            raise Fail(
                step.span,
                f"model '{decl.name}' loads ImageNet weights by a call (weights=\"imagenet\" at "
                f"{first.line}:{first.col}), which only the model built does, not a nested one",
                "call the backbone in this model itself, or build that model on its own",
            )
        return self._emit_sub(sub, inputs, step.span, decl.name, shared=f"model:{decl.name}", final=final)

    def _backbone_top(self, step: Step, decl: ir.ModelDecl) -> BackboneTop | None:
        """What a call puts on a zoo backbone's features (`efficientnet_b0(pooling="avg")`, see
        `backbone_call.py`); any other model takes no arguments. A model is one Keras model, one set of
        weights: every call of it in a body asks for the same top."""
        if not (step.args or step.kwargs):
            top = None
        elif zoo_keras_names(decl.span.file, decl.name):
            top = backbone_top(decl.name, step)
        else:
            raise Fail(step.span, f"model '{decl.name}' takes no arguments")
        called = self.state.build.backbone_tops
        if decl.name in called and called[decl.name][0] != (top.key if top else ""):
            first = called[decl.name][1]
            raise Fail(
                step.span,
                f"model '{decl.name}' is called with other arguments than at {first.line}:{first.col}",
                "a model is one set of weights: call it the same way each time, or put the difference after it",
            )
        called.setdefault(decl.name, (top.key if top else "", step.span))
        if top is not None and top.imagenet:
            self.state.build.backbone_weights.setdefault(decl.name, top)
        return top

    def _tapped_call(
        self,
        step: Step,
        decl: ir.ModelDecl,
        taps: list[ir.Attr],
        inputs: list[Tensor],
        final: str | None,
        top: BackboneTop | None = None,
    ) -> list[Tensor]:
        """The one call of a model the body taps (`semantics/taps.py`): the nested model with the tapped
        layers as extra outputs; the flow goes on with its declared outputs."""
        build = self.state.build
        if decl.name in build.tapped_call:
            first = build.tapped_call[decl.name]
            raise Fail(
                step.span,
                f"model '{decl.name}' is called again; '{decl.name}.{taps[0].attr}' taps its one call "
                f"(at {first.line}:{first.col})",
                "a model tapped by layer name is called once in the body",
            )
        build.tapped_call[decl.name] = step.span
        sub = self._sub_model(decl, step.scope, step.span, taps, top)
        if top is not None and top.input_shape is not None:
            _check_backbone_input(decl.name, top, inputs, step.span)
        outputs = self._emit_sub(sub, inputs, step.span, decl.name, shared=f"model:{decl.name}", final=final)
        declared = len(sub.outputs) - len(taps)
        for (name, _), tensor in zip(sub.outputs[declared:], outputs[declared:]):
            build.tapped[(decl.name, name)] = tensor
        return outputs[:declared]

    def _sub_model(
        self,
        decl: ir.ModelDecl,
        scope: FileScope,
        span: Span,
        taps: list[ir.Attr] | None = None,
        top: BackboneTop | None = None,
    ) -> Graph:
        """The nested model's graph, expanded once per check (once more with the layers a body taps as
        extra outputs, or a zoo backbone's top: that model is another Keras model, of the same name)."""
        key = decl.name + (top.key if top else "")
        key = key if not taps else f"{key}+" + "+".join(tap.attr for tap in taps)
        if decl.name in self.state.model_stack:
            stack = self.state.model_stack
            raise Fail(span, cycle_text("model", decl.name, stack[stack.index(decl.name) :]))
        if key not in self.state.models and self.state.nesting() >= MAX_BLOCK_DEPTH:
            raise Fail(span, f"blocks and models nested more than {MAX_BLOCK_DEPTH} deep")
        if key not in self.state.models:
            errors_before = len(self.state.diagnostics)
            graph = self.bodies.expand_model(decl, scope, top)
            if taps:
                graph = tapped(graph, taps, self.state.diagnostics)
            self.state.models[key] = graph if len(self.state.diagnostics) == errors_before else None
            if self.state.models[key] is not None:
                graph.built = self.state.backend.finish(graph)
        built = self.state.models[key]
        if built is None:
            raise Fail.reported()
        graph = built
        return graph

    def _emit_sub(
        self, sub: Graph, inputs: list[Tensor], span: Span, base: str, shared: str, final: str | None = None
    ) -> list[Tensor]:
        self._check_arity(sub.name, (len(sub.inputs), len(sub.inputs)), inputs, span)
        return self.writer.emit(
            "model", sub.name, {}, inputs, len(sub.outputs), span, base, final, shared=shared, decl=sub
        )

    def _apply_shared(
        self, instance: SharedInstance, inputs: list[Tensor], span: Span, keywords: list[KeywordTensors]
    ) -> list[Tensor]:
        step = instance.step
        key = f"shared:{'.'.join(self.state.build.path + (instance.name,))}"
        entry = step.entry
        if isinstance(entry, ir.BlockDecl):
            if instance.built is None:
                instance.built = self._shared_block_graph(instance, entry, inputs)
            return self._emit_sub(instance.built, inputs, span, instance.name, shared=key)
        if isinstance(entry, ir.ModelDecl):
            sub = self._sub_model(entry, step.scope, step.span, top=self._backbone_top(step, entry))
            return self._emit_sub(sub, inputs, span, instance.name, shared=f"model:{sub.name}")
        if isinstance(entry, LayerOrActivation):  # shared: the layer, whatever its arguments
            entry = step.entry = entry.layer
        if isinstance(entry, registry.Entry) and entry.kind == "layer":
            kwargs = self.state.arguments.bind(entry, step.args, step.kwargs, step.span)
            return self.emit_registry(entry, instance.name, kwargs, inputs, span, None, shared=key, keywords=keywords)
        if isinstance(entry, ir.LayerDecl):
            checked = self.state.declared.instantiate(step, inputs)
            return self.writer.emit(
                checked.kind,
                step.name,
                checked.arguments,
                inputs,
                checked.n_outputs,
                span,
                instance.name,
                None,
                shared=key,
                decl=checked,
            )
        raise Fail(
            span, f"'{instance.name}' is {step.what} '{step.name}'; only layers, blocks and models can be shared"
        )

    def _shared_block_graph(self, instance: SharedInstance, decl: ir.BlockDecl, inputs: list[Tensor]) -> Graph:
        """A shared block becomes a sub-model: built once, called on every use."""
        step = instance.step
        graph = Graph(instance.name, step.span)
        outer, self.state.build = self.state.build, BuildState(graph, set())
        try:
            sub_inputs = [
                self.writer.emit_input(
                    f"{instance.name}_in{i}" if len(inputs) > 1 else f"{instance.name}_in",
                    t.shape if isinstance(t.shape, tuple) else (UNKNOWN,),
                    "float32",
                    step.span,
                )
                for i, t in enumerate(inputs)
            ]
            params = bind_plain(
                step.name, "block", decl.params, [v for v, _ in step.args], {k: v for k, v, _ in step.kwargs}, step.span
            )
            outputs = self.expand_block_body(decl, step.scope, params, sub_inputs, step.span)
            graph.outputs = [(f"out{i}", t.ref) for i, t in enumerate(outputs) if t.ref is not None]  # not poisoned
        finally:
            self.state.build = outer
        if len(graph.outputs) != len(outputs):
            raise Fail.reported()
        graph.built = self.state.backend.finish(graph)
        return graph

    def _near_step(self, name: str, env: Env) -> str | None:
        shared = tuple(n for n, v in env.bindings() if isinstance(v, SharedInstance))
        key = (name, env.scope.path, shared)  # the same misspelling in every pass of a repeat
        if key not in self.state.step_hints:
            same = registry.suggest(name, ("layer", "activation"))  # `maxpool2d`: the guide's `max_pool2d`
            if same is not None and _folded(same) == _folded(name):
                self.state.step_hints[key] = f"did you mean '{same}'?"
            else:
                self.state.step_hints[key] = did_you_mean(name, _step_names(env))
        return self.state.step_hints[key]


def _check_backbone_input(name: str, top: BackboneTop, inputs: list[Tensor], span: Span) -> None:
    """A backbone whose call fixes its input (its classifier's, `input_shape=`) takes tensors of that shape."""
    assert top.input_shape is not None
    shape = inputs[0].shape if len(inputs) == 1 else None
    if not isinstance(shape, tuple) or len(shape) != len(top.input_shape):
        return
    if any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(shape, top.input_shape)):
        given = "its classifier's" if top.include_top else "the call's"
        raise Fail(
            span,
            f"model '{name}' takes pictures of shape {describe_value(top.input_shape)} ({given} input_shape), "
            f"received {describe_value(shape)}",
            f"give the size it is called on: {name}(..., input_shape={describe_value(shape)})",
        )


def _step_names(env: Env) -> Iterator[str]:
    """What a step may name here, lazily (for suggestions)."""
    yield from registry.all_keys("layer")
    yield from registry.all_keys("activation")
    steps = (ir.BlockDecl, ir.LayerDecl, ir.ActivationDecl, ir.ModelDecl)
    yield from (n for n in env.scope.names() if isinstance((env.scope.find(n) or (None,))[0], steps))
    yield from (n for n, v in env.bindings() if isinstance(v, SharedInstance))


def _folded(name: str) -> str:
    return name.lower().replace("_", "")


def block_inputs(decl: ir.BlockDecl) -> list[tuple[str, Span]]:
    names = []
    for stmt in walk_inputs(decl.body):
        for item in stmt.items:
            names.append((item.name, item.span))
    return names


def walk_inputs(body: list[ir.Stmt]) -> list[ir.Input]:
    return [stmt for stmt in body if isinstance(stmt, ir.Input)]


def _param_default(decl: ir.BlockDecl, name: str) -> ir.Expr | None:
    return next(p.default for p in decl.params if p.name == name)


def _chosen(step: Step) -> ChosenEntry:
    """What the step names, a name that is both a layer and an activation decided (once, kept in
    the step): `-> relu` is the activation, `-> relu(max_value=6.0)` the layer."""
    entry = step.entry
    if isinstance(entry, LayerOrActivation):
        entry = step.entry = entry.layer if step.args or step.kwargs or step.tensor_kwargs else entry.activation
    return entry


def _called_layer(step: Step) -> registry.Entry | None:
    """The registry layer a step calls, if it calls one (a shared instance's too): what its
    arguments are checked against, and which of them take tensors."""
    entry = step.entry
    if isinstance(entry, SharedInstance):
        entry = entry.step.entry
    if isinstance(entry, LayerOrActivation):
        return entry.layer
    return entry if isinstance(entry, registry.Entry) and entry.kind == "layer" else None


def _nth(names: list[str], position: int | None) -> str | None:
    return names[position] if position is not None and position < len(names) else None


def _positional_param(layer: registry.Entry, position: int | None) -> registry.Param | None:
    params = layer.positional_params
    return params[position] if position is not None and position < len(params) else None


def _tensor_in(expr: ir.Expr, env: Env) -> str | None:
    """The first name in an expression that is a tensor here (the reason a constant was refused)."""
    if isinstance(expr, ir.Name):
        value = env.get(expr.id)
        return expr.id if isinstance(value, TensorValue) and not value.poisoned else None
    for child in _children(expr):
        found = _tensor_in(child, env)
        if found is not None:
            return found
    return None


def _children(expr: ir.Expr) -> list[ir.Expr]:
    if isinstance(expr, (ir.List, ir.Tuple, ir.Flow)):
        return list(expr.items)
    if isinstance(expr, ir.Call):
        return [*expr.args, *(k.value for k in expr.kwargs)]
    if isinstance(expr, ir.BinOp):
        return [expr.left, expr.right]
    if isinstance(expr, ir.UnaryOp):
        return [expr.operand]
    if isinstance(expr, (ir.Index, ir.Attr)):
        return [expr.value]
    return []


def _tensor_for_constant(layer: registry.Entry, param: registry.Param | None, tensor: str, span: Span) -> Fail:
    """A tensor given where the layer's constructor takes a constant: which parameter, and where
    tensors go instead (the call's keywords, or the layer's inputs)."""
    where = f"parameter '{param.name}' of '{layer.name}'" if param is not None else f"'{layer.name}'"
    hint = f"a size is read from a shape: {tensor}.shape[-1]" if param is not None and param.type == "int" else None
    if hint is None and layer.call_tensors:
        listed = ", ".join(f"{t.name}=" for t in layer.call_tensors)
        hint = f"'{layer.name}' takes tensors as its inputs (x -> {layer.name}(...)) and by keyword: {listed}"
    elif hint is None:
        hint = f"'{layer.name}' takes tensors as its inputs: {tensor} -> {layer.name}(...)"
    return Fail(span, f"{where} takes a constant; '{tensor}' is a tensor", hint)


def _refuse_wrapped_tensors(wrapper: registry.Entry, expr: ir.Call) -> None:
    """`bidirectional(lstm(8, initial_state=[h, c]))`: the wrapped layer is a constant of the wrapper,
    never called by the spec; the tensors go to the wrapper's call, which hands them on."""
    if not isinstance(expr.func, ir.Name):
        return
    called = expr.func.id
    inner = registry.lookup("layer", called)
    if inner is None:
        return
    for kwarg in expr.kwargs:
        if inner.call_tensor(kwarg.name) is None:
            continue
        if wrapper.call_tensor(kwarg.name) is not None:
            message = f"'{kwarg.name}' goes to the call of '{wrapper.name}', not to the layer it wraps"
            hint = f"{wrapper.name}({called}(...), {kwarg.name}=...): the wrapper hands it on"
        else:
            message = f"'{wrapper.name}' calls the layer it wraps without '{kwarg.name}'"
            hint = None
        raise Fail(kwarg.span, message, hint)


def _tensor_example(layer: registry.Entry, name: str) -> str:
    if name == "initial_state":
        states = "[h, c]" if layer.name == "lstm" else "[h]"
        return f"states are tensors, as an RNN with return_state=true gives them: initial_state={states}"
    return f"name a tensor of the model: {name}=m"


def _base_name(step: Step, entry: registry.Entry) -> str:
    """A layer's base name: the registry's spelling for a name written with capitals (`Dense`)."""
    return entry.name if step.name != step.name.lower() else step.name


def _step_hint(expr: ir.Expr) -> str | None:
    if isinstance(expr, (ir.Number, ir.String)):
        return "a step is a name such as dense(10), relu or a block"
    if isinstance(expr, ir.Tuple):
        return "a tuple feeds several tensors into one step: (a, b) -> concatenate"
    return None
