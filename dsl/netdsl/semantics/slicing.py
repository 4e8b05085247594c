"""Slices, splits and unstacks of tensors: `x[:, :256]`, `a, b = split(x, 2, axis=-1)`, `unstack(x, axis=1)`.

Pure Python: the shape rules `check` uses, and the one place that says what a
slice's key may be. The key is stored in expression trees (`netdsl.custom.expr`,
`["call", "get_item", [X, ["const", KEY]]]`) as JSON, one item per subscript:

    an int             an index: reads one position and drops the axis
    [start, stop, step] a slice, each bound an int or null (left out)
    null               `none`, NumPy's newaxis: a new axis of size 1
    "..."              every axis the other items leave out

The convention is NumPy's and Keras code's: a tensor's slice names its batch
axis first, which stays whole (`x[:, :256]`, `x[..., 1:]`); `split` and
`unstack` take an `axis` that counts the batch axis as 0 and cannot be it.
Shapes here INCLUDE the batch axis (None when unknown); errors are
`SliceError`s that say which subscript is wrong (its position in the key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netdsl.errors import BuildError, Fail, Span
from netdsl.limits import MAX_SPLIT_OUTPUTS
from netdsl.semantics.values import UNKNOWN, Value, describe_value
from netdsl.syntax import ir
from netdsl.syntax.format_expr import POSTFIX, ExprPrinter

ELLIPSIS = "..."
Shape = tuple[Any, ...]


class SliceError(BuildError):
    """A slice, split or unstack a tensor cannot take; `item` is the subscript at fault (None: the whole)."""

    def __init__(self, message: str, item: int | None = None, hint: str | None = None):
        super().__init__(message)
        self.item = item
        self.hint = hint


def is_full(item: Any) -> bool:
    """`:` (or `::1`): the whole axis."""
    return isinstance(item, list) and item[0] is None and item[1] is None and item[2] in (None, 1)


def has_unknown(key: Sequence[Any]) -> bool:
    return any(item is UNKNOWN or (isinstance(item, list) and UNKNOWN in item) for item in key)


def check_items(key: Sequence[Any], batch: bool = True) -> None:
    """What a key's items must be whatever the tensor: one `...`, no step of 0, the batch axis whole
    when the key names it first (`batch`: the tensor has one; a declared layer's weight has none).
    Values UNKNOWN (a block checked alone) pass."""
    ellipses = [i for i, item in enumerate(key) if item == ELLIPSIS]
    if len(ellipses) > 1:
        raise SliceError("a slice takes one '...'", ellipses[1])
    for i, item in enumerate(key):
        if isinstance(item, list) and item[2] == 0:
            raise SliceError("a slice's step cannot be 0", i)
    if batch and key and key[0] != ELLIPSIS and not is_full(key[0]) and key[0] is not UNKNOWN:
        raise SliceError("a tensor's slice starts with its batch axis, which stays whole", 0)


def expand(key: Sequence[Any], rank: int) -> list[tuple[int, Any]]:
    """The key with `...` written out and a trailing one implied: (the key item's position, item) per
    axis read or made; a `...` becomes whole slices (position of the `...`). `rank` counts the batch axis."""
    named = sum(1 for item in key if item != ELLIPSIS and item is not None)
    if named > rank:
        raise SliceError(
            f"the slice names {named} axes of a tensor of {rank} (the batch axis and {rank - 1} more)",
        )
    out: list[tuple[int, Any]] = []
    spread = False
    for i, item in enumerate(key):
        if item == ELLIPSIS:
            out.extend((i, [None, None, None]) for _ in range(rank - named))
            spread = True
        else:
            out.append((i, item))
    if not spread:
        out.extend((len(key), [None, None, None]) for _ in range(rank - named))
    return out


def sliced_shape(shape: Shape, key: Sequence[Any], batch: bool = True) -> Shape:
    """The shape (batch axis included) of `x[key]`; SliceError for a key this tensor cannot take."""
    check_items(key, batch)
    if has_unknown(key):
        raise ValueError("unknown subscripts")  # callers ask has_unknown first
    out: list[Any] = []
    axis = 0
    for position, item in expand(key, len(shape)):
        if item is None:
            out.append(1)
            continue
        size = shape[axis]
        if batch and axis == 0 and not is_full(item):
            raise SliceError("a tensor's slice starts with its batch axis, which stays whole", position)
        if isinstance(item, int):
            if size is not None and not -size <= item < size:
                raise SliceError(f"index {item} is out of range for axis {axis} of size {size}", position)
        else:
            out.append(_slice_length(item, size, axis, position))
        axis += 1
    return tuple(out)


def _slice_length(item: list[Any], size: Any, axis: int, position: int) -> Any:
    start, stop, step = item
    if size is None:
        if isinstance(step, int) and step < 0:  # built forwards then flipped: the positions must be known
            raise SliceError(f"a backwards slice needs the size of axis {axis} known; it is not", position)
        return None  # Keras' rule: an unknown size stays unknown
    for bound in (start, stop):
        if bound is not None and not -size <= bound <= size:
            raise SliceError(f"slice bound {bound} is out of range for axis {axis} of size {size}", position)
    length = len(range(*slice(start, stop, step).indices(size)))
    if length == 0:
        raise SliceError(f"the slice {slice_text(item)} selects nothing of axis {axis} (size {size})", position)
    return length


def slice_text(item: list[Any]) -> str:
    """`1:5`, `::2`: a slice item as written."""
    start, stop, step = ("" if b is None else str(b) for b in item)
    return f"{start}:{stop}" + (f":{step}" if item[2] is not None else "")


def key_text(key: Sequence[Any]) -> str:
    """A key as subscripts: `:, :256`."""
    parts = []
    for item in key:
        if isinstance(item, list):
            parts.append(slice_text(item))
        elif item is None:
            parts.append("none")
        else:
            parts.append(str(item))
    return ", ".join(parts)


# ---------------------------------------------------------------- split and unstack


def axis_index(axis: Any, rank: int, what: str) -> int:
    """An `axis` argument (counting the batch axis as 0) as a positive index; never the batch axis."""
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise SliceError(
            f"axis {describe_value(axis)} of '{what}' is out of range for a tensor of {rank} axes "
            "(axes count the batch axis as 0)"
        )
    index = axis % rank
    if index == 0:
        raise SliceError(f"'{what}' cannot cut the batch axis (axis 0)", None, "the first axis of a sample is 1")
    return index


def split_count(parts: Any) -> int | None:
    """How many tensors `split(x, parts, ...)` gives (None: `parts` is not a count or a list)."""
    if isinstance(parts, int) and not isinstance(parts, bool):
        if parts < 1:
            raise SliceError(f"'split' makes 1 or more parts, received {parts}")
        return parts
    return len(parts) + 1 if isinstance(parts, (list, tuple)) else None


def check_count(name: str, count: int) -> None:
    """Refused before any list of `count` shapes is made."""
    if count > MAX_SPLIT_OUTPUTS:
        raise SliceError(f"'{name}' would give {count:,} tensors; at most {MAX_SPLIT_OUTPUTS:,} are allowed")


def split_shapes(shape: Shape, parts: Any, axis: Any) -> list[Shape]:
    """The shapes of `split(x, parts, axis)`: `parts` equal sections, or a list of the indices the axis
    is cut at (keras.ops.split's, NumPy's)."""
    index = axis_index(axis, len(shape), "split")
    size = shape[index]
    count = split_count(parts)
    if count is not None:
        check_count("split", count)
    if isinstance(parts, int) and not isinstance(parts, bool):
        if size is not None and size % parts:
            raise SliceError(
                f"cannot split axis {axis} of size {size} into {parts} equal parts",
                None,
                "give the indices to cut at instead: split(x, [64], axis=-1) makes sizes 64 and the rest",
            )
        return [_with(shape, index, None if size is None else size // parts)] * parts
    cuts = list(parts)
    if not cuts or not all(isinstance(c, int) and not isinstance(c, bool) for c in cuts):
        raise SliceError(
            f"'split' takes a number of equal parts or a list of indices, received {describe_value(parts)}"
        )
    if any(b <= a for a, b in zip(cuts, cuts[1:])) or cuts[0] <= 0 or (size is not None and cuts[-1] >= size):
        bound = f"between 1 and {size - 1}" if size is not None else "from 1"
        raise SliceError(
            f"the indices of 'split' must increase, each {bound}, received {describe_value(tuple(cuts))}",
            None,
            "they are where the axis is cut: split(x, [64, 128]) gives sizes 64, 64 and the rest",
        )
    edges = [0, *cuts, size]
    return [_with(shape, index, None if b is None else b - a) for a, b in zip(edges, edges[1:])]


def unstack_shapes(shape: Shape, axis: Any) -> list[Shape]:
    """The shapes of `unstack(x, axis=...)`: one tensor per position of the axis, which is dropped."""
    index = axis_index(axis, len(shape), "unstack")
    size = shape[index]
    if size is None:
        raise SliceError(f"'unstack' needs the size of axis {axis} known; it is not")
    check_count("unstack", size)
    return [shape[:index] + shape[index + 1 :]] * size


def _with(shape: Shape, index: int, size: Any) -> Shape:
    return shape[:index] + (size,) + shape[index + 1 :]


# ---------------------------------------------------------------- errors at the source


def check_perm(perm: Value, rank: int | None, span: Span) -> None:
    """A perm of `transpose`: every axis (`rank` counts the batch axis; None: not known), the batch axis,
    0, first and staying, as keras.ops.transpose takes it in Keras code."""
    axes: list[Any] = list(perm) if isinstance(perm, (tuple, list)) else []
    ints = bool(axes) and all(isinstance(p, int) and not isinstance(p, bool) for p in axes)
    if ints and sorted(axes) == list(range(1, len(axes) + 1)) and (rank is None or len(axes) == rank - 1):
        raise Fail(
            span,
            "the perm of 'transpose' names every axis, the batch axis (0) first, as keras.ops.transpose's does",
            f"write {describe_value((0, *axes))}; the step -> permute(...) takes the sample's axes alone",
        )
    if not (
        ints
        and sorted(axes) == list(range(len(axes)))
        and axes[0] == 0
        and len(axes) >= 2
        and (rank is None or len(axes) == rank)
    ):
        wanted = f"of 0 to {rank - 1}" if rank is not None else "of 0 to the rank"
        raise Fail(
            span,
            f"the perm of 'transpose' orders every axis {wanted}, the batch axis (0) first, "
            f"received {describe_value(perm)}",
        )


def slice_failure(exc: SliceError, expr: ir.Index, items: Sequence[ir.Node]) -> Fail:
    """A slice's error at the subscript at fault; the batch axis's with the slice written right."""
    at = items[exc.item].span if exc.item is not None and exc.item < len(items) else expr.span
    hint = exc.hint
    if "batch axis" in str(exc) and exc.item == 0:
        printer = ExprPrinter()
        hint = (
            f"write {printer.expr(expr.value, POSTFIX)}[:, {printer.subscripts(expr.index)}]: "
            "every sample, then the sample's axes"
        )
    return Fail(at, str(exc), hint)
