"""How many tensors a registry entry returns, and its parameter count.

`output_count` and `estimate_params` answer from an `Entry`'s constant kwargs
and the input shapes alone, without importing Keras, so the checker and the
diagram can show them before anything is built. `netdsl.registry` re-exports
both; call them as `registry.output_count` / `registry.estimate_params`.
"""

from __future__ import annotations

import math
import re

from netdsl.registry.table import Entry, lookup

__all__ = ["estimate_params", "output_count"]


def _value(entry: Entry, kwargs: dict, name: str):
    if name in kwargs:
        return kwargs[name]
    p = entry.param(name)
    if p is None or p.required:
        return None
    return p.default


_RNN_STATES = {"lstm": 2, "gru": 1, "simple_rnn": 1,
               "conv_lstm1d": 2, "conv_lstm2d": 2, "conv_lstm3d": 2}


def _nested_layer(value, resolved: bool = False):
    """(Entry, kwargs) of a nested layer step (bidirectional's `layer`): given
    in that form, or (`resolved`) as the checker resolves a layer argument (an
    object with `kind == "layer"`, a registry `name` and `kwargs` pairs);
    other forms count as unknown.

    Output counts take only the first form: the checker leaves a wrapper's
    outputs to Keras (its graph is then uncertain and built with Keras)."""
    if (isinstance(value, tuple) and len(value) == 2
            and isinstance(value[0], Entry) and isinstance(value[1], dict)):
        return value
    if resolved and getattr(value, "kind", None) == "layer" and isinstance(getattr(value, "name", None), str):
        entry = lookup("layer", value.name)
        kwargs = getattr(value, "kwargs", ())
        if entry is not None and isinstance(kwargs, tuple):
            return entry, dict(kwargs)
    return None


def output_count(entry: Entry, kwargs: dict) -> int | None:
    """How many tensors the step returns, given its constant kwargs; None
    when it cannot be told (a wrapper around a layer it cannot see)."""
    name = entry.name
    if entry.kind != "layer" or entry.source == "plugin":
        return 1
    if entry.source == "netdsl":
        if name == "attention" and _value(entry, kwargs, "return_weights"):
            return 2
        return 1
    if name in _RNN_STATES:
        return 1 + _RNN_STATES[name] if _value(entry, kwargs, "return_state") else 1
    if name in ("multi_head_attention", "group_query_attention",
                "dot_product_attention", "additive_attention"):
        return 2 if _value(entry, kwargs, "return_attention_scores") else 1
    if name in ("bidirectional", "time_distributed"):
        inner = _nested_layer(kwargs.get("layer"))
        if inner is None:
            return None
        n = output_count(*inner)
        if n is None:
            return None
        if name == "time_distributed":
            return n
        states = n - 1
        merged = 2 if _value(entry, kwargs, "merge_mode") is None else 1
        return merged + 2 * states
    return 1


# Layers Keras builds without any weight.
_NO_WEIGHTS = frozenset("""
    activation activity_regularization add alpha_dropout average
    average_pooling1d average_pooling2d average_pooling3d
    adaptive_average_pooling1d adaptive_average_pooling2d adaptive_average_pooling3d
    adaptive_max_pooling1d adaptive_max_pooling2d adaptive_max_pooling3d
    concatenate cropping1d cropping2d cropping3d dot dropout elu flatten
    gaussian_dropout gaussian_noise global_average_pooling1d
    global_average_pooling2d global_average_pooling3d global_max_pooling1d
    global_max_pooling2d global_max_pooling3d identity leaky_relu masking
    max_pooling1d max_pooling2d max_pooling3d maximum minimum multiply permute
    relu repeat_vector rescaling reshape softmax spatial_dropout1d spatial_dropout2d
    spatial_dropout3d subtract unit_normalization up_sampling1d up_sampling2d
    up_sampling3d zero_padding1d zero_padding2d zero_padding3d
""".split())


def _int(v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(v)
    return v


def _dims(value, rank: int) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * rank
    value = tuple(value)
    if len(value) != rank:
        raise ValueError(value)
    return tuple(_int(v) for v in value)


def _channels(entry: Entry, kwargs: dict, shape: tuple) -> int:
    fmt = _value(entry, kwargs, "data_format")
    return _int(shape[0] if fmt == "channels_first" else shape[-1])


def _axis_size(shape: tuple, axis) -> int:
    """Size of `axis` (Keras numbering: 0 is the batch axis) of a shape
    given without its batch axis."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ValueError(axis)
    if axis == 0 or axis < -len(shape) or axis > len(shape):
        raise ValueError(axis)
    return _int(shape[axis - 1] if axis > 0 else shape[axis])


def _conv_rank(name: str) -> int:
    return int(re.search(r"(\d)d", name).group(1))


def _lora(entry, kwargs, fan_in, fan_out):
    rank = _value(entry, kwargs, "lora_rank")
    return 0 if not rank else _int(rank) * (fan_in + fan_out)


def _estimate(entry: Entry, kwargs: dict, shapes: list[tuple]) -> int | None:
    n = entry.name
    v = lambda key: _value(entry, kwargs, key)  # noqa: E731
    bias = lambda count: count if v("use_bias") else 0  # noqa: E731
    shape = tuple(shapes[0]) if shapes else ()

    if entry.source == "netdsl":
        if n == "linear":
            return _int(shape[-1]) * _int(v("units"))
        if n == "scale":  # a learned scalar, or a constant that is no weight
            return 1 if v("trainable") else 0
        if n == "scaled_sigmoid":
            return 0
        if n == "attention":
            d = _int(v("d_model"))
            q = shapes[0]
            k = shapes[1] if len(shapes) > 1 else q
            val = shapes[2] if len(shapes) > 2 else k
            return d * (_int(q[-1]) + _int(k[-1]) + _int(val[-1])) + bias(3 * d)
        if n == "residual":
            cin, f = _int(shape[-1]), _int(v("filters"))
            rank = len(shape) - 1
            k = _int(v("kernel_size")) ** rank
            total = k * cin * f + 4 * f + k * f * f + 4 * f
            if cin != f or v("stride") != 1:
                total += cin * f + 4 * f
            return total
        return None
    if n in _NO_WEIGHTS:
        return 0
    if n in ("bidirectional", "time_distributed", "spectral_normalization"):
        inner = _nested_layer(kwargs.get("layer"), resolved=True)
        if inner is None:
            return None
        if n == "time_distributed":  # the inner layer sees one time step
            return _estimate(inner[0], inner[1], [s[1:] for s in shapes])
        if n == "spectral_normalization":
            return _spectral(inner, shapes)
        backward = _nested_layer(kwargs.get("backward_layer"), resolved=True)
        forward = _estimate(inner[0], inner[1], shapes)
        back = _estimate(*(backward or inner), shapes)
        return None if forward is None or back is None else forward + back
    if n == "dense":
        cin, units = _int(shape[-1]), _int(v("units"))
        return cin * units + bias(units) + _lora(entry, kwargs, cin, units)
    if n in ("embedding", "reversible_embedding"):
        i, o = _int(v("input_dim")), _int(v("output_dim"))
        if n == "reversible_embedding" and not v("tie_weights"):
            return 2 * i * o
        return i * o + _lora(entry, kwargs, i, o)
    if re.fullmatch(r"conv[123]d(_transpose)?", n):
        rank = _conv_rank(n)
        k = math.prod(_dims(v("kernel_size"), rank))
        cin, f = _channels(entry, kwargs, shape), _int(v("filters"))
        groups = 1 if n.endswith("transpose") else _int(v("groups"))
        return k * (cin // groups) * f + bias(f)
    if re.fullmatch(r"depthwise_conv[12]d", n):
        k = math.prod(_dims(v("kernel_size"), _conv_rank(n)))
        out = _channels(entry, kwargs, shape) * _int(v("depth_multiplier"))
        return k * out + bias(out)
    if re.fullmatch(r"separable_conv[12]d", n):
        k = math.prod(_dims(v("kernel_size"), _conv_rank(n)))
        mid = _channels(entry, kwargs, shape) * _int(v("depth_multiplier"))
        f = _int(v("filters"))
        return k * mid + mid * f + bias(f)
    if re.fullmatch(r"conv_lstm[123]d", n):
        k = math.prod(_dims(v("kernel_size"), _conv_rank(n)))
        cin, f = _channels(entry, kwargs, shape), _int(v("filters"))
        return k * cin * 4 * f + k * f * 4 * f + bias(4 * f)
    if n in ("lstm", "gru", "simple_rnn"):
        cin, u = _int(shape[-1]), _int(v("units"))
        gates = {"lstm": 4, "gru": 3, "simple_rnn": 1}[n]
        b = gates * u * (2 if n == "gru" and v("reset_after") else 1)
        return gates * u * (cin + u) + bias(b)
    if n == "batch_normalization":
        c = _axis_size(shape, v("axis"))
        return c * (2 + bool(v("center")) + bool(v("scale")))
    if n in ("layer_normalization", "group_normalization"):
        axis = v("axis")
        axes = axis if isinstance(axis, tuple) else (axis,)
        c = math.prod(_axis_size(shape, a) for a in axes)
        return c * (bool(v("center")) + bool(v("scale")))
    if n == "rms_normalization":
        return _axis_size(shape, v("axis"))
    if n == "prelu":
        dims = [_int(d) for d in shape]
        shared = v("shared_axes")
        if shared is not None:
            for a in (shared if isinstance(shared, tuple) else (shared,)):
                dims[_int(a) - 1] = 1
        return math.prod(dims)
    if n in ("multi_head_attention", "group_query_attention"):
        q = shapes[0]
        val = shapes[1] if len(shapes) > 1 else q
        k = shapes[2] if len(shapes) > 2 else val
        qd, kd, vd = _int(q[-1]), _int(k[-1]), _int(val[-1])
        if n == "multi_head_attention":
            h, key_dim = _int(v("num_heads")), _int(v("key_dim"))
            value_dim = _int(v("value_dim")) if v("value_dim") is not None else key_dim
            out = v("output_shape")
            if out is None:
                out = qd
            elif isinstance(out, tuple):
                out = math.prod(_int(d) for d in out)
            else:
                out = _int(out)
            total = (qd * h * key_dim + bias(h * key_dim)
                     + kd * h * key_dim + bias(h * key_dim)
                     + vd * h * value_dim + bias(h * value_dim)
                     + h * value_dim * out + bias(out))
            if v("use_gate"):
                total += qd * h * value_dim + bias(h * value_dim)
            return total
        d = _int(v("head_dim"))
        hq, hkv = _int(v("num_query_heads")), _int(v("num_key_value_heads"))
        total = (qd * hq * d + bias(hq * d) + kd * hkv * d + bias(hkv * d)
                 + vd * hkv * d + bias(hkv * d) + hq * d * qd + bias(qd))
        if v("use_gate"):
            total += qd * hq * d + bias(hq * d)
        return total
    if n == "dot_product_attention":
        return (1 if v("use_scale") else 0) + (1 if v("score_mode") == "concat" else 0)
    if n == "additive_attention":
        return _int(shape[-1]) if v("use_scale") else 0
    return None


def _spectral(inner: tuple, shapes: list[tuple]) -> int | None:
    """The wrapped layer's weights and `vector_u`, one row as long as its kernel's last axis."""
    entry, kwargs = inner
    own = _estimate(entry, kwargs, shapes)
    if own is None:
        return None
    v = lambda key: _value(entry, kwargs, key)  # noqa: E731
    n = entry.name
    if n == "dense":
        return own + _int(v("units"))
    if n == "embedding":
        return own + _int(v("output_dim"))
    if re.fullmatch(r"conv[123]d", n):
        return own + _int(v("filters"))
    if re.fullmatch(r"conv[123]d_transpose", n):  # its kernel ends with the input channels
        return own + _channels(entry, kwargs, shapes[0])
    if re.fullmatch(r"depthwise_conv[12]d", n):
        return own + _int(v("depth_multiplier"))
    return own  # Keras refuses a layer without a kernel; the inner count bounds it from below


def estimate_params(entry: Entry, kwargs: dict, input_shapes: list[tuple]) -> int | None:
    """Cheap parameter count of a layer before any Keras constructor runs
    (trainable and non-trainable, as `count_params` reports), from its
    constant kwargs and its input shapes (batch axis excluded, may hold None).
    None when unknown: an unknown dimension, a value of the wrong type, or a
    layer without a formula here."""
    if entry.kind != "layer":
        return None
    try:
        return _estimate(entry, dict(kwargs), [tuple(s) for s in input_shapes])
    except (TypeError, ValueError, IndexError, KeyError, AttributeError,
            ZeroDivisionError, OverflowError):
        return None
