"""Adding nodes to the graph being built: each one named, handed to the backend, and charged.

The expander's collaborator (see `state.py`) that every other one makes nodes
through. A node's name is deterministic: the statement's binding (`h = x ->
dense(8) -> relu` makes `h.dense` and `h`), inside its block instances'
path (`res.conv`), with `_2`, `_3`, ... for a name used again. The budgets
of `netdsl.limits` are charged here too: statements run, block instances and
layers made, and the passes of a repeat before they run.
"""

from __future__ import annotations

from typing import Any, cast

from netdsl.errors import BuildError, Exhausted, Fail, Span
from netdsl.limits import FAILED_STATEMENT_STEPS, MAX_LAYERS
from netdsl.semantics.declared import Instance
from netdsl.semantics.graph import Graph, KeywordInput, Node, TensorRef
from netdsl.semantics.state import POISON, ExpansionState, Tensor
from netdsl.semantics.tensor_ops import OpSpec
from netdsl.semantics.values import is_unknown


class GraphWriter:
    """Makes the nodes of `state.build.graph`, names them and charges the budgets."""

    def __init__(self, state: ExpansionState):
        self.state = state

    # ============================================================ nodes
    def emit_input(self, name: str, shape: tuple[Any, ...], dtype: str, span: Span) -> Tensor:
        build = self.state.build
        graph = build.graph
        self.charge_layer(span)
        build.used.add(name)
        node = Node(len(graph.nodes), name, "input", "input", {"shape": shape}, [], 1, (), span, dtype=dtype)
        graph.nodes.append(node)
        graph.inputs.append(node.id)
        backend = self.state.backend
        try:
            handle = backend.input(node, shape, dtype)
        except BuildError as exc:
            raise Fail(span, str(exc)) from None
        node.output_shapes = [backend.shape(handle)]
        tensor = Tensor(TensorRef(node.id), handle, node.output_shapes[0])
        if build.first_input is None:
            build.first_input = tensor
        return tensor

    def emit(
        self,
        op: str,
        kind: str,
        args: dict[str, Any],
        inputs: list[Tensor],
        n_outputs: int,
        span: Span,
        base: str,
        final: str | None,
        shared: str | None = None,
        decl: Instance | OpSpec | Graph | None = None,
        keywords: tuple[KeywordInput, ...] = (),
    ) -> list[Tensor]:
        """A node of `n_outputs` outputs applied to `inputs` (poisoned outputs if an input is); the
        last of them, as `keywords` counts, given to its call by keyword."""
        self.charge_layer(span)  # a path whose input failed counts what it would make
        if any(t.poisoned for t in inputs):
            return [POISON] * n_outputs
        state = self.state
        build = state.build
        graph = build.graph
        if is_unknown(args) or (decl is not None and is_unknown(getattr(decl, "config", None))):
            state.uncertain = True
        name = self.node_name(final, base)
        refs = cast("list[TensorRef]", [t.ref for t in inputs])  # poisoned inputs returned above
        node = Node(
            len(graph.nodes),
            name,
            op,
            kind,
            args,
            refs,
            n_outputs,
            build.path,
            span,
            shared=shared,
            repeat=build.repeat,
            decl=decl,
            keywords=keywords,
        )
        graph.nodes.append(node)
        try:
            handles = state.backend.apply(node, [t.handle for t in inputs])
        except BuildError as exc:
            graph.nodes.pop()
            raise Fail(span, str(exc)) from None
        node.n_outputs = len(handles)
        shape = state.backend.shape
        node.output_shapes = [shape(h) for h in handles]
        return [Tensor(TensorRef(node.id, i), h, s) for i, (h, s) in enumerate(zip(handles, node.output_shapes))]

    # ============================================================ names
    def node_name(self, final: str | None, base: str) -> str:
        if final is not None:
            return self.unique_full(self._full(final))
        return self.unique_full(self._full(self.scoped(base)))

    def scoped(self, base: str) -> str:
        """`base` under the current statement's binding: `h.dense`."""
        binding = self.state.current_binding
        return f"{binding}.{base}" if binding else base

    def _full(self, local: str) -> str:
        return ".".join(self.state.build.path + (local,))

    def unique_full(self, name: str) -> str:
        """`name`, or `name_2`, `name_3`, ... for the second and later uses."""
        build = self.state.build
        used = build.used
        candidate = name
        if candidate in used:
            n = build.suffixes.get(name, 2)
            while f"{name}_{n}" in used:
                n += 1
            build.suffixes[name] = n + 1
            candidate = f"{name}_{n}"
        used.add(candidate)
        return candidate

    def unique_local(self, local: str) -> str:
        """A unique name for `local` in the current block instance, without the instance's path."""
        full = self.unique_full(self._full(local))
        return full[len(self._full("")) :] if self.state.build.path else full

    # ============================================================ budgets
    def spent(self) -> tuple[int, int, int]:
        """Layers, steps and constant work spent so far (to price the passes of a repeat)."""
        return self.state.build.layers, self.state.steps_spent, self.state.consts.work

    def afford(self, before: tuple[int, int, int], times: int, span: Span) -> None:
        """After one pass of a repeat, refuse the other `times` passes if they cannot fit."""
        layers, steps, work = (now + (now - was) * times for now, was in zip(self.spent(), before))
        consts = self.state.consts
        if layers > MAX_LAYERS:
            raise Fail(span, f"the model has more than {MAX_LAYERS:,} layers after expansion")
        if steps > self.state.steps_limit:
            raise over_steps(span, self.state.steps_limit)
        if work > consts.work_limit:
            consts.charge(work - consts.work, span)

    def charge_step(self, span: Span) -> None:
        """One statement run, block instance or layer made: spent of `steps_limit`."""
        state = self.state
        state.steps_spent += 1
        if state.steps_spent > state.steps_limit:
            raise over_steps(span, state.steps_limit)

    def charge_failure(self, span: Span) -> None:
        """A statement that failed: its diagnostic costs more than the statement."""
        state = self.state
        state.steps_spent += FAILED_STATEMENT_STEPS
        if state.steps_spent > state.steps_limit:
            raise over_steps(span, state.steps_limit)

    def charge_layer(self, span: Span) -> None:
        """One layer of the current model, made or skipped after a failed input."""
        self.charge_step(span)
        build = self.state.build
        build.layers += 1
        if build.layers > MAX_LAYERS:
            raise Fail(span, f"the model has more than {MAX_LAYERS:,} layers after expansion")


def over_steps(span: Span, limit: int) -> Exhausted:
    return Exhausted(
        span,
        f"the spec takes more than {limit:,} steps to expand",
        "a statement, block instance or layer counts each time a repeat or a block use runs it",
    )
