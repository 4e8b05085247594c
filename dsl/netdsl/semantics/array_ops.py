"""Spectral and index functions of tensor expressions: their signatures and exact shape rules.

`re, im = fft2((x, zeros_like(x)))`, `frames_re, frames_im = stft(x, 64, 32, 64)`,
`positions = arange(maxlen)`, `one_hot(ids, 10)`, `cumsum(x, axis=1)`,
`values, indices = top_k(x, 5)`: keras.ops' functions, written with keras.ops'
arguments. The spectral ones take and give a signal as two real tensors, its
real and imaginary parts: a function that takes a complex signal takes them
as one pair `(real, imag)`, as keras.ops does; one that gives a complex
signal gives two tensors, destructured like `split`'s.

Pure Python: `check` computes every shape here, Keras' own rules
(`keras.src.ops.math`, `numpy`), an unknown size staying unknown; what Keras
would refuse is a `ArrayOpError` naming the argument at fault. Shapes here
INCLUDE the batch axis (None when unknown); axes count it as 0, and no
function may work along it (the transforms take the last axes, which must be
axes of the sample).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from netdsl.errors import BuildError, Fail
from netdsl.semantics.values import DTYPES, describe_value
from netdsl.syntax import ir

Shape = tuple[Any, ...]
# Comparisons and logic of two tensors (booleans, for `where`): they broadcast as `+` does.
COMPARISONS = ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or")
WINDOWS = ("hann", "hamming")  # keras.ops.stft's windows by name (or none: a rectangular one)


class ArrayOpError(BuildError):
    """A call Keras would refuse; `param` names the argument at fault (None: the call as a whole)."""

    def __init__(self, message: str, param: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.param = param
        self.hint = hint


@dataclass(frozen=True)
class Signature:
    """What one function takes: its tensors, then its constants in keras.ops' order."""

    tensors: int  # tensor operands: 0 (arange), 1, or 2 (real and imaginary parts)
    params: tuple[str, ...]  # its constants, positional in this order or by keyword
    required: tuple[str, ...]  # of them, those without a default
    outputs: int  # tensors it gives
    usage: str  # the call as written, for messages
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def pair(self) -> bool:
        """Whether the tensors come as one (real, imag) pair, as keras.ops takes a complex signal."""
        return self.tensors == 2


SIGNATURES: dict[str, Signature] = {
    "fft": Signature(2, (), (), 2, "fft((real, imag))"),
    "fft2": Signature(2, (), (), 2, "fft2((real, imag))"),
    "ifft2": Signature(2, (), (), 2, "ifft2((real, imag))"),
    "rfft": Signature(1, ("fft_length",), (), 2, "rfft(x, fft_length=64)", {"fft_length": None}),
    "irfft": Signature(2, ("fft_length",), (), 1, "irfft((real, imag), fft_length=64)", {"fft_length": None}),
    "stft": Signature(
        1,
        ("sequence_length", "sequence_stride", "fft_length", "window", "center"),
        ("sequence_length", "sequence_stride", "fft_length"),
        2,
        "stft(x, sequence_length=64, sequence_stride=32, fft_length=64)",
        {"window": "hann", "center": True},
    ),
    "istft": Signature(
        2,
        ("sequence_length", "sequence_stride", "fft_length", "length", "window", "center"),
        ("sequence_length", "sequence_stride", "fft_length"),
        1,
        "istft((real, imag), sequence_length=64, sequence_stride=32, fft_length=64)",
        {"length": None, "window": "hann", "center": True},
    ),
    "arange": Signature(
        0, ("start", "stop", "step", "dtype"), ("start",), 1, "arange(maxlen)", {"stop": None, "step": 1, "dtype": None}
    ),
    "one_hot": Signature(
        1, ("num_classes", "axis", "dtype"), ("num_classes",), 1, "one_hot(ids, 10)", {"axis": -1, "dtype": None}
    ),
    "cumsum": Signature(1, ("axis",), ("axis",), 1, "cumsum(x, axis=1)"),
    "cumprod": Signature(1, ("axis",), ("axis",), 1, "cumprod(x, axis=1)"),
    "argmax": Signature(1, ("axis", "keepdims"), ("axis",), 1, "argmax(x, axis=-1)", {"keepdims": False}),
    "argmin": Signature(1, ("axis", "keepdims"), ("axis",), 1, "argmin(x, axis=-1)", {"keepdims": False}),
    "top_k": Signature(1, ("k", "sorted"), ("k",), 2, "values, indices = top_k(x, 5)", {"sorted": True}),
}


def output_shapes(name: str, shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    """The shapes (batch axis included) of `name`'s outputs on tensors of `shapes` with constants
    `params` (every parameter of its signature, defaults filled in)."""
    return _RULES[name](shapes, params)


def bind(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the signature's defaults filled in, `arange(n)` read as keras.ops reads it (0 to n)."""
    signature = SIGNATURES[name]
    bound = {**signature.defaults, **params}
    if name == "arange" and bound["stop"] is None:
        bound["start"], bound["stop"] = 0, bound["start"]
    return bound


def split_arguments(name: str, call: ir.Call) -> tuple[list[ir.Expr], dict[str, ir.Expr]]:
    """A call's tensor operands and its constants by parameter name, as written (positional constants
    follow the tensors in keras.ops' order). Fail at the argument that does not fit the signature."""
    signature = SIGNATURES[name]
    positional = list(call.args)
    if signature.pair:
        first = positional.pop(0) if positional else None
        if not isinstance(first, ir.Tuple) or len(first.items) != 2:
            raise Fail(
                first.span if first is not None else call.span,
                f"'{name}' takes a complex signal as one (real, imag) pair, as keras.ops.{name} does",
                f"write {signature.usage}; a real signal's imaginary part is zeros_like(x)",
            )
        tensors = list(first.items)
    else:
        tensors, positional = positional[: signature.tensors], positional[signature.tensors :]
        if len(tensors) < signature.tensors:
            raise Fail(call.span, f"'{name}' needs a tensor: {signature.usage}")
    if len(positional) > len(signature.params):
        raise Fail(
            positional[len(signature.params)].span,
            f"'{name}' takes {_count(len(signature.params), 'constant')} after its "
            f"{'tensors' if signature.pair else 'tensor'}, received {len(positional)}",
            f"its parameters: {', '.join(signature.params)}" if signature.params else signature.usage,
        )
    constants = dict(zip(signature.params, positional))
    for keyword in call.kwargs:
        if keyword.name not in signature.params:
            known = f"its parameters: {', '.join(signature.params)}" if signature.params else "it takes none"
            raise Fail(keyword.span, f"'{name}' has no parameter '{keyword.name}'", known)
        if keyword.name in constants:
            raise Fail(keyword.span, f"'{name}' is given '{keyword.name}' twice")
        constants[keyword.name] = keyword.value
    missing = [key for key in signature.required if key not in constants]
    if missing:
        raise Fail(call.span, f"'{name}' needs {' and '.join(repr(m) for m in missing)}: {signature.usage}")
    return tensors, constants


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}" if n else f"no {what}s"


# ---------------------------------------------------------------- checks of one argument


def _int(params: dict[str, Any], key: str, name: str) -> int:
    value = params[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ArrayOpError(f"'{key}' of '{name}' must be a positive integer, received {describe_value(value)}", key)
    return value


def _optional_int(params: dict[str, Any], key: str, name: str) -> int | None:
    return None if params.get(key) is None else _int(params, key, name)


def _bool(params: dict[str, Any], key: str, name: str) -> bool:
    value = params[key]
    if not isinstance(value, bool):
        raise ArrayOpError(f"'{key}' of '{name}' must be true or false, received {describe_value(value)}", key)
    return value


def dtype(params: dict[str, Any], name: str) -> str | None:
    """`dtype=` of `arange`, `one_hot` and `cast`: a name of `input ... as DTYPE`'s, or none (keras.ops' default)."""
    value = params.get("dtype")
    if value is None:
        return None
    if not isinstance(value, str) or value not in DTYPES or value == "string":
        raise ArrayOpError(
            f"'dtype' of '{name}' must name a numeric dtype, received {describe_value(value)}",
            "dtype",
            'e.g. dtype="int32" or dtype="float32"',
        )
    return value


def axis_index(axis: Any, rank: int, name: str, usage: str) -> int:
    """An axis (counting the batch axis as 0) of a tensor of `rank` axes, as a positive index; never the batch."""
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise ArrayOpError(
            f"axis {describe_value(axis)} of '{name}' is out of range for a tensor of {rank} axes "
            "(axes count the batch axis as 0)",
            "axis",
        )
    index = axis % rank
    if index == 0:
        raise ArrayOpError(
            f"'{name}' cannot work along the batch axis (axis 0)", "axis", f"the first axis of a sample is 1: {usage}"
        )
    return index


def _sample_axes(shape: Shape, least: int, name: str, what: str) -> None:
    """The transforms work on the last axes, which must be axes of the sample, not the batch axis."""
    if len(shape) - 1 < least:
        raise ArrayOpError(
            f"'{name}' transforms {what}, and a tensor of shape {_show(shape[1:])} has "
            f"{'no axis' if len(shape) == 1 else f'{len(shape) - 1} axis'} besides the batch axis"
        )


def _pair(shapes: Sequence[Shape], name: str) -> Shape:
    """The shape of a (real, imag) pair: both parts alike, an unknown size taking the other's."""
    real, imag = shapes
    if len(real) != len(imag) or any(a is not None and b is not None and a != b for a, b in zip(real, imag)):
        raise ArrayOpError(
            f"the real and imaginary parts given to '{name}' must have one shape, received {_show(real[1:])} "
            f"and {_show(imag[1:])}",
            None,
            "zeros_like(x) is the imaginary part of a real signal",
        )
    return tuple(a if a is not None else b for a, b in zip(real, imag))


def _known_last(shape: Shape, count: int, name: str) -> None:
    """keras.ops' complex transforms need the sizes they transform known."""
    unknown = [i for i in range(len(shape) - count, len(shape)) if shape[i] is None]
    if unknown:
        axes = "axis" if count == 1 else "axes"
        raise ArrayOpError(
            f"'{name}' needs the size of its last {'' if count == 1 else f'{count} '}{axes} known; "
            f"received a tensor of shape {_show(shape[1:])}"
        )


# ---------------------------------------------------------------- the rules


def _fft(shapes: Sequence[Shape], params: dict[str, Any], name: str = "fft", axes: int = 1) -> list[Shape]:
    shape = _pair(shapes, name)
    _sample_axes(shape, axes, name, "its last axis" if axes == 1 else f"its last {axes} axes")
    _known_last(shape, axes, name)
    return [shape, shape]


def _rfft(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    shape = shapes[0]
    _sample_axes(shape, 1, "rfft", "its last axis")
    length = _optional_int(params, "fft_length", "rfft")
    n = length if length is not None else shape[-1]
    out = shape[:-1] + (None if n is None else n // 2 + 1,)
    return [out, out]


def _irfft(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    shape = _pair(shapes, "irfft")
    _sample_axes(shape, 1, "irfft", "its last axis")
    length = _optional_int(params, "fft_length", "irfft")
    if length is None and shape[-1] is not None and shape[-1] < 2:
        raise ArrayOpError(
            "'irfft' of a last axis of size 1 gives no samples", "fft_length", "give the length: fft_length=..."
        )
    n = length if length is not None else (None if shape[-1] is None else 2 * (shape[-1] - 1))
    return [shape[:-1] + (n,)]


def _frames(params: dict[str, Any], name: str) -> tuple[int, int, int, bool]:
    """stft's and istft's framing: (sequence_length, sequence_stride, fft_length, center), checked."""
    sequence_length = _int(params, "sequence_length", name)
    stride = _int(params, "sequence_stride", name)
    fft_length = _int(params, "fft_length", name)
    if fft_length < sequence_length:
        raise ArrayOpError(
            f"'fft_length' of '{name}' must be at least its 'sequence_length' ({sequence_length}), "
            f"received {fft_length}",
            "fft_length",
        )
    window = params["window"]
    if window is not None and window not in WINDOWS:
        raise ArrayOpError(
            f"'window' of '{name}' is \"hann\", \"hamming\" or none, received {describe_value(window)}", "window"
        )
    return sequence_length, stride, fft_length, _bool(params, "center", name)


def _stft(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    shape = shapes[0]
    _sample_axes(shape, 1, "stft", "its last axis")
    _, stride, fft_length, center = _frames(params, "stft")
    n = shape[-1]
    frames = None
    if n is not None:
        padded = 2 * (fft_length // 2) if center else 0
        if center and n <= fft_length // 2:  # padded by reflection: Keras needs more samples than the pad
            raise ArrayOpError(
                f"'stft' with center=true pads each end by reflecting {fft_length // 2} samples, "
                f"more than a signal of {n} has",
                "fft_length",
            )
        if n + padded < fft_length:
            raise ArrayOpError(
                f"a signal of {n} samples{' padded to ' + str(n + padded) if padded else ''} is shorter than "
                f"one frame of 'stft' ({fft_length})",
                "fft_length",
            )
        frames = 1 + (n + padded - fft_length) // stride
    out = shape[:-1] + (frames, fft_length // 2 + 1)
    return [out, out]


def _istft(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    shape = _pair(shapes, "istft")
    _sample_axes(shape, 2, "istft", "its last 2 axes (frames and frequencies)")
    _, stride, fft_length, center = _frames(params, "istft")
    length = _optional_int(params, "length", "istft")
    bins = fft_length // 2 + 1
    if shape[-1] is not None and shape[-1] != bins:
        raise ArrayOpError(
            f"'istft' with fft_length={fft_length} takes {bins} frequencies on the last axis, "
            f"received a tensor of shape {_show(shape[1:])}",
            "fft_length",
        )
    size = length
    if size is None and shape[-2] is not None:
        size = (shape[-2] - 1) * stride + fft_length - (2 * (fft_length // 2) if center else 0)
    return [shape[:-2] + (size,)]


def arange_length(params: dict[str, Any]) -> int:
    """How many values `arange(start, stop, step)` gives (numpy's count); at least one."""
    start, stop, step = params["start"], params["stop"], params["step"]
    for key, value in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ArrayOpError(f"'{key}' of 'arange' must be a number, received {describe_value(value)}", key)
    if step == 0:
        raise ArrayOpError("the step of 'arange' cannot be 0", "step")
    count = max(0, int(math.ceil((stop - start) / step)))
    if count == 0:
        raise ArrayOpError(
            f"arange({describe_value(start)}, {describe_value(stop)}, {describe_value(step)}) gives no values"
        )
    return count


def _arange(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    dtype(params, "arange")
    return [(None, arange_length(params))]


def _one_hot(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    shape = shapes[0]
    classes = _int(params, "num_classes", "one_hot")
    dtype(params, "one_hot")
    index = axis_index(params["axis"], len(shape) + 1, "one_hot", "one_hot(ids, 10, axis=-1)")
    return [shape[:index] + (classes,) + shape[index:]]


def _along(name: str) -> Callable[[Sequence[Shape], dict[str, Any]], list[Shape]]:
    """cumsum and cumprod: the shape kept, along an axis of the sample."""

    def rule(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
        axis_index(params["axis"], len(shapes[0]), name, SIGNATURES[name].usage)
        return [shapes[0]]

    return rule


def _arg_reduction(name: str) -> Callable[[Sequence[Shape], dict[str, Any]], list[Shape]]:
    """argmax and argmin: the axis dropped (kept as 1 with keepdims=true)."""

    def rule(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
        shape = shapes[0]
        index = axis_index(params["axis"], len(shape), name, SIGNATURES[name].usage)
        if _bool(params, "keepdims", name):
            return [shape[:index] + (1,) + shape[index + 1 :]]
        return [shape[:index] + shape[index + 1 :]]

    return rule


def _top_k(shapes: Sequence[Shape], params: dict[str, Any]) -> list[Shape]:
    shape = shapes[0]
    _sample_axes(shape, 1, "top_k", "its last axis")
    k = _int(params, "k", "top_k")
    _bool(params, "sorted", "top_k")
    if shape[-1] is not None and k > shape[-1]:
        raise ArrayOpError(f"'top_k' takes k={k} of a last axis of size {shape[-1]}", "k")
    out = shape[:-1] + (k,)
    return [out, out]


_RULES: dict[str, Callable[[Sequence[Shape], dict[str, Any]], list[Shape]]] = {
    "fft": _fft,
    "fft2": lambda shapes, params: _fft(shapes, params, "fft2", 2),
    "ifft2": lambda shapes, params: _fft(shapes, params, "ifft2", 2),
    "rfft": _rfft,
    "irfft": _irfft,
    "stft": _stft,
    "istft": _istft,
    "arange": _arange,
    "one_hot": _one_hot,
    "cumsum": _along("cumsum"),
    "cumprod": _along("cumprod"),
    "argmax": _arg_reduction("argmax"),
    "argmin": _arg_reduction("argmin"),
    "top_k": _top_k,
}


def _show(shape: Shape) -> str:
    return describe_value(tuple(shape))
