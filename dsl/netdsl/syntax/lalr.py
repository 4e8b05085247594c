"""The LALR(1) driver: lark's tables, with the result built while parsing.

`run` is lark's LALR loop (`lark/parsers/lalr_parser_state.py`) over our
token tuples, with one change that makes a parse cost per token rather than
per reduction: a rule that only passes its one child on (`?sum: flow`, the
steps of the expression precedence chain) does not call anything; the
parser only moves to the next state. Every other reduction calls the
*reducer* of its rule with the rule's raw children (every token included).

`shaped_reducers` makes those reducers from a *builder*: an object with a
method per grammar rule (named like the rule or its alias, as lark's
Transformer methods are) that receives the children lark would put in the
tree (anonymous tokens dropped, `_rule`s inlined, `[..]` placeholders as
None) and the rule's position, computed as lark's `propagate_positions`
computes it: from the first to the last child that has one, a `?rule` that
passes a parenthesised child on extending that child to its parentheses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from netdsl.syntax.tables import END, Rule, Tables

Position = tuple[Any, ...]  # (line, col, end_line, end_col)
Reducer = Callable[[list[Any]], Any]


class SyntaxFailure(Exception):
    """The parser has no action for `token` in its current state (the top of `state_stack`)."""

    def __init__(self, token: tuple[Any, ...], expected: set[str], value_stack: list[Any], state_stack: list[int]):
        super().__init__(f"unexpected {token[0]}")
        self.token, self.expected, self.value_stack = token, expected, value_stack
        self.state_stack = state_stack


class Reductions:
    """What reducing by each rule does, ready for `run`.

    `reducers[i]` builds the value of rule i from its children; None means the
    rule has one child and its value is that child."""

    def __init__(self, tables: Tables, reducers: list[Reducer | None]):
        self.rules = [(r.size, r.origin, reducers[r.index]) for r in tables.rules]
        passing = frozenset(i for i, reduce in enumerate(reducers) if reduce is None)
        # Where a run of pass-on rules ends, by (state below, state on top, token type):
        # the same in every parse, so learnt once (an atom climbs a dozen of them).
        self.climbs: dict[Any, Any] = tables.climbs.setdefault(passing, {})


def run(
    tables: Tables,
    tokens: Iterable[tuple[Any, ...]],
    reductions: Reductions,
    end: Callable[..., Any],
    shift: Callable[..., Any] | None = None,
    resume: tuple[list[int], list[Any]] | None = None,
) -> Any:
    """Parse `tokens`; the value of the start rule. Raises SyntaxFailure.

    `end(last)` makes the end-of-input token from the last token (None when
    there was none); `shift(token)`, when given, is what a token becomes on
    the stack. `resume`: the (state, value) stacks to start from, those of a
    parse that read the text before `tokens` (the syntax-error path's)."""
    states = tables.states
    rules = reductions.rules
    climbs = reductions.climbs
    end_state = tables.end_state
    state_stack, value_stack = resume if resume is not None else ([tables.start_state], [])
    token = None
    for token in tokens:
        kind = token[0]
        while True:
            top = state_stack[-1]
            action = states[top].get(kind)
            if action is None:
                raise SyntaxFailure(token, tables.expected(top), value_stack, state_stack)
            if action >= 0:
                state_stack.append(action)
                value_stack.append(token if shift is None else shift(token))
                break
            size, origin, reduce = rules[~action]
            if reduce is None:  # rules that pass their one child on: only the state changes
                key = (state_stack[-2], top, kind)
                landing = climbs.get(key)
                if landing is None:
                    landing = climbs[key] = _climb(states, rules, state_stack[-2], top, kind)
                state_stack[-1] = landing
                continue
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            value_stack.append(reduce(children))
            state_stack.append(states[state_stack[-1]][origin])
    last = end(token)
    while True:
        action = states[state_stack[-1]].get(END)
        if action is None:
            raise SyntaxFailure(last, tables.expected(state_stack[-1]), value_stack, state_stack)
        assert action < 0, "the end of input is never shifted"
        size, origin, reduce = rules[~action]
        if size:
            children = value_stack[-size:]
            del state_stack[-size:]
            del value_stack[-size:]
        else:
            children = []
        value_stack.append(reduce(children) if reduce is not None else children[0])
        state_stack.append(states[state_stack[-1]][origin])
        if state_stack[-1] == end_state:
            return value_stack[-1]


def _climb(states: list[Any], rules: list[Any], below: int, top: int, kind: str) -> int:
    """The state reached from `top` (above `below`) by reducing pass-on rules on `kind`."""
    while True:
        action = states[top].get(kind)
        if action is None or action >= 0:
            return top
        size, origin, reduce = rules[~action]
        if reduce is not None:
            return top
        top = states[below][origin]


def end_token(last: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The end-of-input token, at the last token (lark's `$END`)."""
    return (END, "") + last[2:] if last is not None else (END, "", 1, 1, None, None)


def recognizer(tables: Tables) -> Reductions:
    """Reductions that build nothing: for only finding out whether text parses."""
    known: Reductions | None = tables.recognizer
    if known is None:
        known = tables.recognizer = Reductions(tables, [None if r.size == 1 else _nothing for r in tables.rules])
    return known


def _nothing(children: list[Any]) -> None:
    return None


# ----------------------------------------------------------------- shaping


class Part:
    """A rule's children that are not one IR node: a list (`params`, `args`,
    a body) or an inlined `_rule`, with the rule's position (None when empty)."""

    __slots__ = ("items", "pos")

    def __init__(self, items: list[Any], pos: Position | None):
        self.items = items
        self.pos = pos


PASS = None  # a builder's method for a one-child rule that is that child (`posarg = PASS`)


def shaped_reducers(tables: Tables, builder: Any, positions: bool = True) -> list[Reducer | None]:
    """One reducer per rule of `tables`, handing `builder` what lark's tree would hold.

    The builder's `containers` dict ({id(node): position}) receives the
    position of every node that a `?rule` passed on with more text around it
    (`(x + 1)`: the node is `x + 1`, its container the parentheses). With
    `positions=False` every position is None (for a builder that needs none)."""
    single = _single_child_rules(tables)
    containers: dict[int, Position] = builder.containers
    position = _positions(containers) if positions else _no_position
    reducers: list[Reducer | None] = []
    for rule in tables.rules:
        plan = _plan(rule, single)
        inline = rule.origin.startswith("_") and rule.origin not in single
        if rule.origin in single or (rule.expand1 and not rule.alias):
            if rule.size == 1 and plan == [(0, False, 0)]:
                reducers.append(None)  # the child itself, with its own position
            else:
                reducers.append(_passing(plan, rule, builder, position, containers))
        elif inline:
            reducers.append(_inlining(plan, position))
        else:
            method = getattr(builder, rule.name)
            if method is PASS and rule.size == 1 and plan == [(0, False, 0)]:
                reducers.append(None)  # the builder takes the child as it is
            else:
                reducers.append(_building(plan, rule, method, position))
    return reducers


def _plan(rule: Rule, single: set[str]) -> list[tuple[int, bool, int]]:
    """lark's child filter (parse_tree_builder.maybe_create_child_filter):
    (raw index, splice its items, Nones to put before it) for each child kept,
    and a last entry (-1, False, Nones at the end) when placeholders end the rule."""
    empty = rule.empty_indices
    if empty:
        runs = "".join(str(int(b)) for b in empty).split("0")
        nones_at = [len(ones) for ones in runs]
    else:
        nones_at = [0] * (rule.size + 1)
    plan = []
    nones = 0
    for i, (name, is_term, filter_out) in enumerate(rule.symbols):
        nones += nones_at[i]
        if rule.keep_all_tokens or not (is_term and filter_out):
            splice = not is_term and name.startswith("_") and name not in single
            plan.append((i, splice, nones))
            nones = 0
    nones += nones_at[rule.size]
    if nones:
        plan.append((-1, False, nones))
    return plan


def _single_child_rules(tables: Tables) -> set[str]:
    """The `_rules` whose every alternative leaves exactly one child (`_decl`,
    `_name`): inlining one of them is the child itself, no list needed."""
    by_origin: dict[str, list[Rule]] = {}
    for rule in tables.rules:
        by_origin.setdefault(rule.origin, []).append(rule)
    single: set[str] = set()
    changed = True
    while changed:
        changed = False
        for origin, rules in by_origin.items():
            if origin in single or not origin.startswith("_"):
                continue
            if all(_leaves_one(rule, single) for rule in rules):
                single.add(origin)
                changed = True
    return single


def _leaves_one(rule: Rule, single: set[str]) -> bool:
    if rule.empty_indices and any(rule.empty_indices):
        return False
    kept = [
        (name, is_term)
        for name, is_term, filter_out in rule.symbols
        if rule.keep_all_tokens or not (is_term and filter_out)
    ]
    if len(kept) != 1:
        return False
    name, is_term = kept[0]
    return is_term or not name.startswith("_") or name in single


def _filter(plan: list[Any], raw: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for i, splice, nones in plan:
        if nones:
            kept.extend([None] * nones)
        if i < 0:
            continue
        if splice:
            if kept:
                kept.extend(raw[i].items)
            else:  # `__rule_star: __rule_star item`: grow the list in place, as lark does
                kept = raw[i].items
        else:
            kept.append(raw[i])
    return kept


def _building(plan: list[Any], rule: Rule, method: Callable[..., Any], position: Callable[..., Any]) -> Reducer:
    if rule.size == 1 and rule.symbols[0][1] and plan == [(0, False, 0)]:  # one token: its position

        def reduce_token(raw: list[Any]) -> Any:
            return method(raw, raw[0][2:])

        return reduce_token
    if plan == [(i, False, 0) for i in range(rule.size)]:  # every child kept as it is

        def reduce_plain(raw: list[Any]) -> Any:
            return method(raw, position(raw))

        return reduce_plain

    def reduce(raw: list[Any]) -> Any:
        return method(_filter(plan, raw), position(raw))

    return reduce


def _inlining(plan: list[Any], position: Callable[..., Any]) -> Reducer:
    if plan and plan[0] == (0, True, 0):  # `__rule_star: __rule_star item`: the same Part grows

        def reduce_growing(raw: list[Any]) -> Part:
            part: Part = raw[0]
            part.items = _filter(plan, raw)
            part.pos = position(raw)
            return part

        return reduce_growing

    def reduce(raw: list[Any]) -> Part:
        return Part(_filter(plan, raw), position(raw))

    return reduce


def _passing(
    plan: list[Any], rule: Rule, builder: Any, position: Callable[..., Any], containers: dict[int, Any]
) -> Reducer:
    """A `?rule` (or one-child `_rule`): one child left is the child itself."""
    fallback: Any = getattr(builder, rule.name, None)  # called only where 2+ children stay, which has one

    def reduce(raw: list[Any]) -> Any:
        kept = _filter(plan, raw)
        if len(kept) == 1:
            child = kept[0]
            if len(raw) > 1 and type(child) is not tuple and type(child) is not Part and position is not _no_position:
                containers[id(child)] = position(raw)
            return child
        return fallback(kept, position(raw))

    return reduce


def _no_position(raw: list[Any]) -> None:
    return None


def _positions(containers: dict[int, Position]) -> Callable[[list[Any]], Position | None]:
    """lark's propagate_positions: from the first child with a position to the last."""

    def start(value: Any) -> tuple[Any, ...] | None:
        kind = type(value)
        if kind is tuple:
            return value[2], value[3]
        if kind is Part:
            return value.pos[:2] if value.pos else None
        if value is None:
            return None
        if containers:
            box = containers.get(id(value))
            if box is not None:
                return box[:2]
        span = value.span
        return span.line, span.col

    def end(value: Any) -> tuple[Any, ...] | None:
        kind = type(value)
        if kind is tuple:
            return value[4], value[5]
        if kind is Part:
            return value.pos[2:] if value.pos else None
        if value is None:
            return None
        if containers:
            box = containers.get(id(value))
            if box is not None:
                return box[2:]
        span = value.span
        return span.end_line, span.end_col

    def position(raw: list[Any]) -> Position | None:
        # The common case first: a token or a node at each end.
        if raw:
            a, z = raw[0], raw[-1]
            kind_a, kind_z = type(a), type(z)
            if kind_a is tuple:
                line, col = a[2], a[3]
            elif kind_a is Part or (containers and id(a) in containers):
                return spread(raw)
            else:
                span = a.span
                line, col = span.line, span.col
            if kind_z is tuple:
                return line, col, z[4], z[5]
            if kind_z is not Part and not (containers and id(z) in containers):
                span = z.span
                return line, col, span.end_line, span.end_col
        return spread(raw)

    def spread(raw: list[Any]) -> Position | None:
        for value in raw:
            first = start(value)
            if first is not None:
                break
        else:
            return None
        for value in reversed(raw):
            last = end(value)
            if last is not None:
                return first + last
        return None  # pragma: no cover - a child with a start has an end

    return position
