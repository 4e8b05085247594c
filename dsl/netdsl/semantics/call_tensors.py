"""Tensors a layer's call takes by keyword: `lstm(64, initial_state=[h, c])`, `attention_mask=m`.

The registry lists the arguments of each layer's call that take tensors (`Entry.call_tensors`,
generated from Keras' call signatures). A spec writes them in the step's argument list, by keyword,
beside the constructor's arguments; `steps.py` evaluates them as tensors, and this module checks
them against the layer before its node is made: how many (an LSTM's two states), and which shapes
(each state as wide as the units, a mask one flag per step). The node then takes them as its last
inputs (`graph.KeywordInput`), and the Keras backend passes them to the call by keyword.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netdsl import registry
from netdsl.errors import Fail, Span
from netdsl.registry.layers.anatomy import Args, shape_text
from netdsl.registry.layers.rnn import STATES
from netdsl.registry.layers.wrappers import nested
from netdsl.semantics.state import Tensor

Shape = tuple[Any, ...]


@dataclass
class KeywordTensors:
    """The tensors given to one keyword of a layer's call, with where the spec gives them."""

    name: str
    tensors: list[Tensor]
    listed: bool  # written as a list (`[h, c]`)
    span: Span  # the value's: an error about these tensors points there


@dataclass(frozen=True)
class Wanted:
    """What a keyword of a call takes: how many tensors, and each one's shape where it is known."""

    counts: tuple[int, ...]  # the numbers of tensors it accepts
    what: str  # the tensors in words, for a wrong count ("its states h and c")
    shapes: tuple[Shape | None, ...] = ()  # the shape of each tensor (a size of None: any); () unknown
    why: str = ""  # where the shapes come from ("its units")
    broadcast: bool = False  # a size of 1 stretches to the wanted size (masks added to scores)


# ---------------------------------------------------------------- positions


def place_positional(
    entry: registry.Entry, inputs: list[Tensor], keywords: list[KeywordTensors]
) -> tuple[list[Tensor], list[KeywordTensors]]:
    """`value=` and `key=` of multi_head_attention are inputs Keras also takes by position: they go
    to their places after the query, so that `q -> multi_head_attention(..., value=v)` is the same
    layer call as `(q, v) -> multi_head_attention(...)` (for the shape rules, the diagram, the build)."""
    positioned = sorted(
        ((position, k) for k in keywords if (position := _position(entry, k.name)) is not None), key=lambda p: p[0]
    )
    if not positioned:
        return inputs, keywords
    placed = list(inputs)
    for position, keyword in positioned:
        if len(placed) > position:
            raise Fail(
                keyword.span,
                f"'{keyword.name}' of '{entry.name}' is given twice: as input {position + 1} of the tuple "
                "and by keyword",
                f"give it one way: (query, value) -> {entry.name}(...), or query -> {entry.name}(..., value=v)",
            )
        if len(placed) < position:
            missing = next((t.name for t in entry.call_tensors if t.position == len(placed)), "query")
            raise Fail(keyword.span, f"'{keyword.name}' of '{entry.name}' needs '{missing}' too")
        if len(keyword.tensors) != 1:
            raise Fail(keyword.span, f"'{keyword.name}' of '{entry.name}' takes one tensor")
        placed.extend(keyword.tensors)
    return placed, [k for k in keywords if _position(entry, k.name) is None]


def _position(entry: registry.Entry, name: str) -> int | None:
    found = entry.call_tensor(name)
    return None if found is None else found.position


# ---------------------------------------------------------------- counts and shapes


def check(entry: registry.Entry, kwargs: dict[str, Any], inputs: list[Tensor], keywords: list[KeywordTensors]) -> None:
    """Each keyword's tensors against what the layer takes; every mismatch one error at its argument."""
    shapes = [t.shape if isinstance(t.shape, tuple) else None for t in inputs]
    fails = []
    for keyword in keywords:
        listed = entry.call_tensor(keyword.name)
        if listed is not None and keyword.listed and not listed.listed:
            fails.append(
                Fail(
                    keyword.span,
                    f"'{keyword.name}' of '{entry.name}' takes one tensor, received a list of {len(keyword.tensors)}",
                )
            )
            continue
        rule = _RULES.get(keyword.name)
        wanted = None if rule is None else _wanted(rule, entry, kwargs, shapes)
        if wanted is not None:
            fail = _mismatch(entry, keyword, wanted)
            if fail is not None:
                fails.append(fail)
    if fails:
        raise Fail.of(fails)


def _wanted(rule: Rule, entry: registry.Entry, kwargs: dict[str, Any], shapes: list[Shape | None]) -> Wanted | None:
    try:
        return rule(Args(entry, kwargs), shapes)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None  # an argument or size check does not know: Keras decides


def _mismatch(entry: registry.Entry, keyword: KeywordTensors, wanted: Wanted) -> Fail | None:
    given = keyword.tensors
    where = f"'{keyword.name}' of '{entry.name}'"
    if len(given) not in wanted.counts:
        counts = " or ".join(str(n) for n in wanted.counts)
        plural = "s" if wanted.counts != (1,) else ""
        return Fail(keyword.span, f"{where} takes {counts} tensor{plural} ({wanted.what}), received {len(given)}")
    if not wanted.shapes:
        return None
    got = [t.shape for t in given]
    if all(_fits(want, shape, wanted.broadcast) for want, shape in zip(wanted.shapes, got)):
        return None
    expected = list(wanted.shapes[: len(got)])
    form = "a shape that broadcasts to" if wanted.broadcast else "shape"
    if len(set(expected)) == 1:
        takes = f"{'a tensor' if len(got) == 1 else f'{len(got)} tensors'} of {form} {shape_text(expected[0])}"
    else:
        takes = f"tensors of shapes {_joined(expected)}"
    return Fail(keyword.span, f"{where} takes {takes} ({wanted.why}), received {_joined(got)}")


def _fits(want: Shape | None, got: Any, broadcast: bool) -> bool:
    if want is None or not isinstance(got, tuple):
        return True
    if len(want) != len(got):
        return False
    return all(w is None or g is None or w == g or (broadcast and g == 1) for w, g in zip(want, got))


def _joined(shapes: list[Any]) -> str:
    texts = [shape_text(s) for s in shapes]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


# ---------------------------------------------------------------- the rules, by keyword

Rule = Callable[[Args, list[Shape | None]], "Wanted | None"]

_STATE_NAMES = {1: "its state", 2: "its states h and c"}
_SEQUENCES = ("lstm", "gru", "simple_rnn", "conv_lstm1d", "conv_lstm2d", "conv_lstm3d", "bidirectional")


def _initial_state(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    if args.name == "bidirectional":
        return _bidirectional_states(args)
    count = STATES[args.name]
    if args.name.startswith("conv_lstm"):
        return Wanted((count,), _STATE_NAMES[count])  # their shapes follow the convolution
    units = _size(args["units"])
    return Wanted((count,), _STATE_NAMES[count], ((units,),) * count, "its units")


def _bidirectional_states(args: Args) -> Wanted | None:
    """The forward layer's states, then the backward one's (Keras splits the list in two halves)."""
    forward = nested(args["layer"])
    backward = nested(args["backward_layer"]) or forward
    if forward is None or backward is None or forward.name not in STATES:
        return None
    count = STATES[forward.name]
    what = f"the forward layer's {count} state{'s' if count > 1 else ''}, then the backward one's"
    if forward.name.startswith("conv_lstm"):
        return Wanted((2 * count,), what)
    front, back = _size(forward["units"]), _size(backward["units"])
    return Wanted((2 * count,), what, ((front,),) * count + ((back,),) * count, "the units of each direction")


def _mask(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    shape = shapes[0]
    if shape is None:
        return None
    one = (1,)
    if args.name in _SEQUENCES or args.name == "time_distributed":
        return Wanted(one, "a flag per step", ((shape[0],),), f"one flag per step of its input {shape_text(shape)}")
    if args.name == "global_average_pooling1d":
        steps = shape[1] if args["data_format"] == "channels_first" else shape[0]
        return Wanted(one, "a flag per step", ((steps,),), f"one flag per step of its input {shape_text(shape)}")
    if args.name == "softmax":
        return Wanted(one, "the mask", (shape,), "its input's", broadcast=True)
    if args.name == "batch_normalization":  # Keras stretches it over the channels
        return Wanted(one, "the mask", (shape[:-1],), f"its input {shape_text(shape)} without the channels", True)
    if args.name in ("additive_attention", "dot_product_attention"):
        value = shapes[1] if len(shapes) > 1 else None
        if value is None:
            return None
        key = shapes[2] if len(shapes) > 2 and shapes[2] is not None else value
        return Wanted(
            (2, 3),
            "[query_mask, value_mask]",
            (shape[:-1], value[:-1], key[:-1]),
            "a flag per step of the query, then of the value",
        )
    return None


def _count_weights(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    return None if shapes[0] is None else Wanted((1,), "a weight per value", (shapes[0],), "its input's")


def _attention_parts(args: Args, shapes: list[Shape | None]) -> tuple[Shape, Shape, Shape] | None:
    """(query, value, key) of multi_head_attention, with the key the value where none is given."""
    if len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
        return None
    key = shapes[2] if len(shapes) > 2 else shapes[1]
    return None if key is None else (shapes[0], shapes[1], key)


def _query_mask(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    parts = _attention_parts(args, shapes)
    return None if parts is None else Wanted((1,), "a mask", (parts[0][:-1],), "a flag per step of the query")


def _value_mask(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    parts = _attention_parts(args, shapes)
    return None if parts is None else Wanted((1,), "a mask", (parts[1][:-1],), "a flag per step of the value")


def _key_mask(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    parts = _attention_parts(args, shapes)
    return None if parts is None else Wanted((1,), "a mask", (parts[2][:-1],), "a flag per step of the key")


def _attention_mask(args: Args, shapes: list[Shape | None]) -> Wanted | None:
    parts = _attention_parts(args, shapes)
    if parts is None or args["attention_axes"] is not None:
        return None
    query, value, _ = parts
    return Wanted((1,), "a mask", (query[:-1] + value[:-1],), "query steps by value steps", broadcast=True)


def _size(value: Any) -> int | None:
    """A constant size, or None (a size only a block's use will tell)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_RULES: dict[str, Rule] = {
    "initial_state": _initial_state,
    "mask": _mask,
    "count_weights": _count_weights,
    "query_mask": _query_mask,
    "value_mask": _value_mask,
    "key_mask": _key_mask,
    "attention_mask": _attention_mask,
}
