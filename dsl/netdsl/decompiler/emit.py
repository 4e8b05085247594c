"""The exported program as IR declarations: blocks, then models (nested ones first).

Chains print as flows. A `Merge` breaks its chain: the tensor entering it is bound,
each non-trivial branch is bound, and the merge is `a + b` (an add of two) or
`(a, b) -> concatenate(...)`; the chain then goes on from there.
"""

from __future__ import annotations

from netdsl import registry
from netdsl.decompiler import spec_ir as S
from netdsl.decompiler.graph import Ref
from netdsl.decompiler.naming import Namer, identifier
from netdsl.decompiler.op_steps import op_expr
from netdsl.decompiler.units import Block, Leaf, Merge, ModelProgram, Op, Statement, Use
from netdsl.decompiler.values import same
from netdsl.syntax import ir


class FlowWriter:
    """Writes chains of units as statements into `stmts`, naming tensors with `namer`."""

    def __init__(self, namer: Namer, stmts: list):
        self.namer = namer
        self.stmts = stmts

    def chain(self, source, units: list):
        """The flow `source -> units...` (binding what a Merge needs on the way)."""
        items = list(source.items) if isinstance(source, ir.Flow) else [source]
        for unit in units:
            if isinstance(unit, Merge):
                items = self.merge(self.settle(items), unit)
            elif isinstance(unit, Leaf) and unit.step.kind == "op":
                items = self.operation(items, unit)
            elif isinstance(unit, Leaf):
                items.append(S.repeated(S.step(unit.step), unit.count))
            else:
                items.append(S.repeated(use_expr(unit), unit.count))
        return flow(items)

    def operation(self, items: list, unit: Leaf) -> list:
        """`h + 3.0` after the flow so far (bound to a name first when it is a flow)."""
        if not isinstance(unit.count, int):
            raise ValueError("an operation repeated by a block parameter")  # never: counts are of steps
        for _ in range(unit.count):
            items = [op_expr(unit.step, [self.settle(items) if len(items) > 1 else items[0]])]
        return items

    def settle(self, items: list):
        """The flow so far as a name (bound to `h` unless it already is one)."""
        if len(items) == 1 and isinstance(items[0], ir.Name):
            return items[0]
        target = self.namer.fresh("h")
        self.bind([target], flow(items))
        return S.name(target)

    def merge(self, entry, unit: Merge) -> list:
        inner = [b for b in unit.branches if b]
        branches = []
        for units in unit.branches:
            if not units:
                branches.append(entry)
                continue
            target = self.namer.fresh("y" if len(inner) == 1 else "branch")
            self.bind([target], self.chain(entry, units))
            branches.append(S.name(target))
        return merge_items(unit.step, branches)

    def bind(self, targets: list[str], value) -> None:
        self.stmts.append(S.node(ir.Assign, kind="assign", targets=targets, value=value))


def merge_items(step, sources: list) -> list:
    """`a + b` for an add of two tensors, else `(a, b) -> step`."""
    if step.kind == "layer" and step.name == "add" and len(sources) == 2:
        return [S.binop("+", sources[0], sources[1])]
    if step.kind == "op":
        return [op_expr(step, sources)]
    return [S.node(ir.Tuple, kind="tuple", items=sources), S.step(step)]


def flow(items: list):
    return items[0] if len(items) == 1 else S.node(ir.Flow, kind="flow", items=items)


def use_expr(use: Use):
    """`block(a, b, key=c)`: required parameters positionally, the others when not the default."""
    args = dict(use.args)
    positional, keywords = [], []
    for param in use.block.params:
        given = args[param.name]
        if param.default is registry.REQUIRED:
            positional.append(S.value(given))
        elif not same(given, param.default):
            keywords.append(S.node(ir.Kwarg, kind="kwarg", name=param.name, value=S.value(given)))
    if not positional and not keywords:
        return S.name(use.block.name)
    return S.node(ir.Call, kind="call", func=S.name(use.block.name), args=positional, kwargs=keywords)


# ---------------------------------------------------------------- declarations


def let_decl(name: str, value) -> ir.Let:
    return S.node(ir.Let, kind="let", name=name, value=S.value(value))


def block_decl(block: Block) -> ir.BlockDecl:
    namer = Namer({"x"} | {p.name for p in block.params})
    stmts: list = [S.node(ir.Input, kind="input", items=[S.node(ir.InputItem, kind="input_item", name="x")])]
    writer = FlowWriter(namer, stmts)
    value = writer.chain(S.name("x"), block.body)
    output = namer.fresh("y")
    stmts.append(
        S.node(ir.Output, kind="output", items=[S.node(ir.OutputItem, kind="output_item", name=output, value=value)])
    )
    params = [
        S.node(
            ir.Param, kind="param", name=p.name, default=None if p.default is registry.REQUIRED else S.value(p.default)
        )
        for p in block.params
    ]
    return S.node(ir.BlockDecl, kind="block", name=block.name, params=params, body=stmts)


def model_decl(program: ModelProgram, reserved: set[str]) -> ir.ModelDecl:
    """The model's body: inputs, shared instances, chains, outputs (in the model's order)."""
    namer = Namer(reserved)
    names: dict = {}
    stmts: list = []
    for item in program.inputs:
        names[item.ref] = namer.take(item.name)
        stmts.append(S.node(ir.Input, kind="input", items=[_input_item(names[item.ref], item)]))
    for shared_name, step in program.shared:
        stmts.append(S.node(ir.Shared, kind="shared", name=shared_name, value=S.step(step)))
    output_names: dict[Ref, str] = {}  # each output tensor's first name
    for output_name, ref in program.outputs:
        output_names.setdefault(ref, output_name)
    inline = _inline_outputs(program)
    writer = FlowWriter(namer, stmts)
    for statement in program.statements:
        value = writer.chain(_source(statement, names), statement.units)
        targets = [_target_name(statement, ref, output_names, namer) for ref in statement.targets]
        for ref, target in zip(statement.targets, targets):
            names[ref] = target
        if len(targets) == 1 and statement.targets[0] in inline:
            stmts.append(_output([S.node(ir.OutputItem, kind="output_item", name=targets[0], value=value)]))
        else:
            writer.bind(targets, value)
    rest = [ref for _, ref in program.outputs if ref not in inline]
    if rest:
        stmts.append(_output([S.node(ir.OutputItem, kind="output_item", name=names[ref]) for ref in rest]))
    return S.node(ir.ModelDecl, kind="model", name=program.name, body=stmts)


def _source(statement: Statement, names: dict):
    sources = [S.name(names[ref]) for ref in statement.sources]
    if statement.head is None:
        return sources[0]
    if statement.head.keywords:
        return _keyword_call(statement.head, sources)
    if len(sources) > 1 or statement.head.step.kind == "op":  # `split(h, 2, axis=-1)` heads its statement
        return flow(merge_items(statement.head.step, sources))
    return flow([sources[0], S.step(statement.head.step)])


def _keyword_call(head: Op, sources: list):
    """`dec -> lstm(256, initial_state=[h, c])`: the tensors its call takes by keyword as keywords."""
    positional = len(sources) - sum(count for _, count, _ in head.keywords)
    start = positional
    kwargs = []
    for name, count, listed in head.keywords:
        items = sources[start : start + count]
        start += count
        value = S.node(ir.List, kind="list", items=items) if listed else items[0]
        kwargs.append(S.node(ir.Kwarg, kind="kwarg", name=name, value=value))
    step = S.step(head.step)
    if isinstance(step, ir.Call):
        call = S.node(ir.Call, kind="call", func=step.func, args=step.args, kwargs=[*step.kwargs, *kwargs])
    else:
        call = S.node(ir.Call, kind="call", func=step, args=[], kwargs=kwargs)
    given = sources[:positional]
    source = given[0] if len(given) == 1 else S.node(ir.Tuple, kind="tuple", items=given)
    return flow([source, call])


def _target_name(statement: Statement, ref, output_names: dict, namer: Namer) -> str:
    if ref in output_names:
        return namer.take(output_names[ref])
    last = statement.units[-1] if statement.units else None
    producer: Op | None = statement.head if last is None else last.last
    if isinstance(last, Use) or (isinstance(last, Leaf) and last.count != 1) or producer is None:
        return namer.fresh("x")
    return namer.take(producer.layer_name)


def _inline_outputs(program: ModelProgram) -> set:
    """Outputs written `output NAME = flow` where their statement stands: when each is the
    single target of its statement, used by nothing else, and they come in the model's order."""
    refs = [ref for _, ref in program.outputs]
    if len(set(refs)) != len(refs):
        return set()
    used = {ref for s in program.statements for ref in s.sources}
    order = [s.targets[0] for s in program.statements if len(s.targets) == 1 and s.targets[0] in set(refs)]
    if order != refs or any(ref in used for ref in refs):
        return set()
    return set(refs)


def _input_item(name: str, item) -> ir.InputItem:
    shape = S.value(tuple(item.shape))
    dtype = None if item.dtype == "float32" else item.dtype
    return S.node(ir.InputItem, kind="input_item", name=name, shape=shape, dtype=dtype)


def _output(items: list) -> ir.Output:
    return S.node(ir.Output, kind="output", items=items)


def model_name(name: str) -> str:
    return identifier(name, "model")
