"""Block recovery: a rewrite of the chains that never changes the model they build.

Repeatedly, the repeated run of units that saves the most text (see `motifs.py`)
becomes a block (see `templates.py`) and each of its places a call of it; then
consecutive equal steps and calls become one with `* N` (in netdsl each copy has
its own weights, as in the original). Runs of block calls repeat in turn, so a
ResNet stage — one projecting block, then identity blocks `* N` — can become a
block of its own. It stops when no fold saves at least `MIN_SAVING` characters.
"""

from __future__ import annotations

from netdsl.decompiler.motifs import Motif, Skeletons, find_motifs, text_cost
from netdsl.decompiler.naming import Namer
from netdsl.decompiler.op_steps import template_of
from netdsl.decompiler.templates import Template, build_template
from netdsl.decompiler.units import Block, Leaf, Merge, ModelProgram, Use
from netdsl.decompiler.values import same
from netdsl.limits import MAX_BLOCKS, MAX_CANDIDATES

MIN_SAVING = 60  # characters: about one line
DEFINITION_COST = 50  # `block name(params) {`, `input x`, `output y = ...`, `}`


def recover_blocks(programs: list[ModelProgram], file_names: Namer) -> list[Block]:
    """Fold repeated structure of the programs' chains into blocks (in place); the blocks made."""
    blocks: list[Block] = []
    pinned = _output_units(programs)
    for _ in range(MAX_BLOCKS):
        chains = _chains(programs)
        for chain in chains:
            _repeat_runs(chain, pinned)
        best = _best_fold(chains, pinned)
        if best is None:
            break
        motif, template = best
        block = Block(file_names.fresh(_block_name(template.body)), template.params, template.body)
        _apply(chains, motif, template, block)
        blocks.append(block)
    for chain in _chains(programs):
        _repeat_runs(chain, pinned)
    return blocks


def _output_units(programs: list[ModelProgram]) -> set[int]:
    """The units that make a model's outputs, and those of several outputs (`a, b = split(h, 2, axis=-1)`,
    a block gives one tensor). They stay single steps: Keras names an output after
    the layer that makes it, and a spec names that layer only when it is the flow's last step."""
    pinned = set()
    for program in programs:
        outputs = {ref for _, ref in program.outputs}
        for statement in program.statements:
            if statement.units and (outputs.intersection(statement.targets) or len(statement.targets) > 1):
                pinned.add(id(statement.units[-1]))
    return pinned


def _chains(programs: list[ModelProgram]) -> list[list]:
    """Every chain of units still in the programs: statements' and (recursively) merges' branches."""
    found: list[list] = []

    def visit(units: list) -> None:
        found.append(units)
        for unit in units:
            if isinstance(unit, Merge):
                for branch in unit.branches:
                    visit(branch)

    for program in programs:
        for statement in program.statements:
            visit(statement.units)
    return found


def _best_fold(chains: list[list], pinned: set[int]) -> tuple[Motif, Template] | None:
    skeletons = Skeletons()
    best, best_saving = None, MIN_SAVING
    for motif in find_motifs(chains, skeletons, pinned)[:MAX_CANDIDATES]:
        if motif.bound - DEFINITION_COST <= best_saving:
            break  # sorted by bound: no later motif can do better
        occurrences = [chains[c][s : s + motif.length] for c, s in motif.places]
        shape = [skeletons.of(u)[0] for u in occurrences[0]]
        if any([skeletons.of(u)[0] for u in occ] != shape for occ in occurrences[1:]):
            continue  # a hash collision
        template = build_template(occurrences, [occ[0].in_channels for occ in occurrences])
        if template is None:
            continue
        saving = _saving(occurrences, template)
        if saving > best_saving:
            best, best_saving = (motif, template), saving
    return best


def _saving(occurrences: list[list], template: Template) -> int:
    before = sum(text_cost(u) for occ in occurrences for u in occ)
    definition = (
        DEFINITION_COST + sum(text_cost(u) for u in template.body) + sum(len(p.name) + 2 for p in template.params)
    )
    calls = 0
    for args in template.args:
        calls += 8 + sum(len(str(v)) + 2 for (name, v), p in zip(args, template.params) if not same(v, p.default))
    return before - definition - calls


def _apply(chains: list[list], motif: Motif, template: Template, block: Block) -> None:
    places = sorted(zip(motif.places, template.args), key=lambda pa: (pa[0][0], -pa[0][1]))
    for (c, start), args in places:
        chain = chains[c]
        units = chain[start : start + motif.length]
        use = Use(block, args, 1, units[0].in_channels, units[-1].last)
        chain[start : start + motif.length] = [use]
        block.uses += 1


def _repeat_runs(chain: list, pinned: set[int]) -> None:
    """Consecutive equal steps (or calls with equal arguments) as one unit `* N`."""
    i = 0
    while i + 1 < len(chain):
        a, b = chain[i], chain[i + 1]
        if id(b) not in pinned and _repeatable(a, b):
            a.count += b.count
            a.last = b.last
            del chain[i + 1]
        else:
            i += 1


def _repeatable(a, b) -> bool:
    if not (isinstance(a.count, int) and isinstance(b.count, int)):
        return False
    if isinstance(a, Leaf) and isinstance(b, Leaf):
        return a.step.kind in ("layer", "activation") and a.step == b.step
    if isinstance(a, Use) and isinstance(b, Use):
        return a.block is b.block and all(same(x, y) for (_, x), (_, y) in zip(a.args, b.args))
    return False


def _block_name(body: list) -> str:
    """A name that says what the block is: residual_block, concat_block, stage, conv_bn_relu ..."""
    if any(isinstance(u, Use) for u in body):
        return "stage"
    merge = next((u for u in body if isinstance(u, Merge)), None)
    if merge is not None:
        identity = any(not b for b in merge.branches)
        kind = _step_word(merge.step)
        if kind == "add":
            return "residual_block" if identity else "projection_block"
        if kind == "concatenate":
            return "dense_block" if identity else "concat_block"
        if kind == "multiply":
            return "gate_block"
        return f"{kind}_block"
    names = [_SHORT.get(_step_word(unit.step), _step_word(unit.step)) for unit in body]
    if len(names) <= 3:
        return "_".join(dict.fromkeys(names))  # conv_bn_relu
    return f"{names[0]}_block"


def _step_word(step) -> str:
    """A step's name in a block's name: an operation (`x * 2`, `split(...)`) is `op`, not its template, but the sum or
    product of two tensors (`inputs + x` in Keras code) is `add` or `multiply`, as the layer a spec's `x + y` builds:
    the block keeps its name when the rebuilt model is decompiled again."""
    if step.kind != "op":
        return step.name
    template = template_of(step)
    if template[0] == "bin" and all(operand[0] == "var" for operand in template[2:]):
        return _TWO_TENSORS.get(template[1], "op")
    return "op"


_TWO_TENSORS = {"+": "add", "*": "multiply"}


_SHORT = {
    "conv2d": "conv",
    "conv1d": "conv",
    "conv3d": "conv",
    "batch_norm": "bn",
    "depthwise_conv2d": "dwconv",
    "separable_conv2d": "sepconv",
    "max_pool2d": "pool",
    "avg_pool2d": "pool",
    "zero_padding2d": "pad",
    "conv2d_transpose": "upconv",
    "ReLU": "relu",
    "relu": "relu",
    "dense": "dense",
    "dropout": "dropout",
}
