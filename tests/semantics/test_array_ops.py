"""Issue 30, item 3: spectral and index functions of tensors (`semantics/array_ops.py`).

Each function is compared with the keras.ops call a person writes for it, on the same numbers: the
spec's outputs equal keras.ops' (the transforms on (real, imag) pairs, destructured); the shapes
`check` infers in pure Python equal the ones Keras computes, an unknown size staying unknown; a saved
model reloads with `safe_mode=True`; `fmt` keeps the spellings. `arange(maxlen)` embeds positions
as keras.io's text transformer does in its `TokenAndPositionEmbedding`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import layers, ops

import netdsl
from netdsl.semantics.analysis import analyze
from netdsl.syntax.formatter import format_text
from netdsl.syntax.transform import to_ir
from tests.support.keras_io_layers import TokenAndPositionEmbedding

RNG = np.random.default_rng(3)


def parse(text: str):
    return netdsl.parse(textwrap.dedent(text), filename="array_ops.net")


def inferred_shapes(text: str, model: str) -> dict[str, tuple]:
    """The output shapes `check` infers, without Keras."""
    analysis = analyze(parse(text))
    assert not analysis.errors, analysis.errors
    graph = analysis.graphs[model]
    return {name: graph.node_of(ref).output_shapes[ref.index] for name, ref in graph.outputs}


def numpy(value) -> np.ndarray:
    return np.asarray(ops.convert_to_numpy(value))


def run(model, *inputs) -> dict[str, np.ndarray]:
    got = model(inputs[0] if len(inputs) == 1 else list(inputs))
    got = got if isinstance(got, (list, tuple)) else [got]
    return {name: numpy(t) for name, t in zip(model.output_names, got, strict=True)}


SPECTRAL = """
    model spectral {
      input x: (6, 8)
      input y: (6, 8)
      re, im = fft((x, y))
      re2, im2 = fft2((x, zeros_like(x)))
      back_re, back_im = ifft2((re2, im2))
      r, i = rfft(x)
      r16, i16 = rfft(x, fft_length=16)
      signal = irfft((r, i))
      longer = irfft((r, i), fft_length=12)
      s_re, s_im = stft(x, 4, 2, 8)
      f_re, f_im = stft(x, sequence_length=4, sequence_stride=1, fft_length=4, window=none, center=false)
      again = istft((s_re, s_im), 4, 2, 8, length=8)
      output re, im, re2, im2, back_re, r, i16, signal, longer, s_re, s_im, f_re, again
    }
"""


def keras_spectral(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The same, written with keras.ops."""
    re, im = ops.fft((x, y))
    re2, im2 = ops.fft2((x, ops.zeros_like(x)))
    back_re, _ = ops.ifft2((re2, im2))
    r, i = ops.rfft(x)
    _, i16 = ops.rfft(x, fft_length=16)
    s_re, s_im = ops.stft(x, 4, 2, 8)
    f_re, _ = ops.stft(x, sequence_length=4, sequence_stride=1, fft_length=4, window=None, center=False)
    out = {"re": re, "im": im, "re2": re2, "im2": im2, "back_re": back_re, "r": r, "i16": i16}
    out |= {"signal": ops.irfft((r, i)), "longer": ops.irfft((r, i), fft_length=12)}
    out |= {"s_re": s_re, "s_im": s_im, "f_re": f_re, "again": ops.istft((s_re, s_im), 4, 2, 8, length=8)}
    return {name: numpy(value) for name, value in out.items()}


def test_the_spectral_functions_are_keras_ops_on_real_and_imaginary_pairs():
    x, y = (RNG.normal(size=(2, 6, 8)).astype("float32") for _ in range(2))
    model = netdsl.build(parse(SPECTRAL))
    got, want = run(model, x, y), keras_spectral(x, y)
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(got["back_re"], x, atol=1e-5)  # the inverse transform undoes it
    np.testing.assert_allclose(got["signal"], x, atol=1e-5)
    np.testing.assert_allclose(got["again"], x, atol=1e-5)
    shapes = {name: tuple(value.shape[1:]) for name, value in want.items()}
    assert inferred_shapes(SPECTRAL, "spectral") == shapes
    assert shapes["i16"] == (6, 9) and shapes["s_re"] == (6, 5, 5) and shapes["f_re"] == (6, 5, 3)


def test_an_unknown_length_stays_unknown_and_the_transform_builds():
    spec = """
        model audio {
          input wave: (none,)
          input frames: (none, 16)
          re, im = stft(wave, 16, 8, 16)
          r, i = rfft(frames)
          output re, r, signal = irfft((r, i))
        }
    """
    assert inferred_shapes(spec, "audio") == {"re": (None, 9), "r": (None, 9), "signal": (None, 16)}
    model = netdsl.build(parse(spec))
    wave, frames = RNG.normal(size=(2, 64)).astype("float32"), RNG.normal(size=(2, 3, 16)).astype("float32")
    got = run(model, wave, frames)
    np.testing.assert_allclose(got["re"], numpy(ops.stft(wave, 16, 8, 16)[0]), atol=1e-5)
    np.testing.assert_allclose(got["signal"], frames, atol=1e-5)


INDEX = """
    model index {
      input x: (5, 6)
      input ids: (5,) as int32
      positions = arange(5)
      odd = arange(1, 10, 2)
      quarters = arange(0.0, 1.0, 0.25)
      codes = one_hot(ids, 7)
      columns = one_hot(ids, 7, axis=1, dtype="int32")
      running = cumsum(x, axis=1)
      product = cumprod(x, axis=-1)
      best = argmax(x, axis=-1)
      worst = argmin(x, axis=1, keepdims=true)
      values, indices = top_k(x, 3)
      output positions, odd, quarters, codes, columns, running, product, best, worst, values, indices
      output masked = where(x, zeros_like(x), ones_like(x) * 2)
    }
"""


def keras_index(x: np.ndarray, ids: np.ndarray) -> dict[str, np.ndarray]:
    """The same with keras.ops; `arange` in a model gives every sample the same values."""
    batch = len(x)
    every = lambda value: np.broadcast_to(numpy(value), (batch, *value.shape))  # noqa: E731
    values, indices = ops.top_k(x, 3)
    out = {
        "positions": every(ops.arange(5)),
        "odd": every(ops.arange(1, 10, 2)),
        "quarters": every(ops.arange(0.0, 1.0, 0.25)),
        "codes": ops.one_hot(ids, 7),
        "columns": ops.one_hot(ids, 7, axis=1, dtype="int32"),
        "running": ops.cumsum(x, axis=1),
        "product": ops.cumprod(x, axis=-1),
        "best": ops.argmax(x, axis=-1),
        "worst": ops.argmin(x, axis=1, keepdims=True),
        "values": values,
        "indices": indices,
        "masked": ops.where(x, ops.zeros_like(x), ops.ones_like(x) * 2),
    }
    return {name: numpy(value) for name, value in out.items()}


def test_the_index_functions_are_keras_ops_and_check_knows_their_shapes():
    x = RNG.normal(size=(3, 5, 6)).astype("float32")
    x[0, 0, 0] = 0.0  # `where` picks the other branch there
    ids = RNG.integers(0, 7, size=(3, 5)).astype("int32")
    model = netdsl.build(parse(INDEX))
    got, want = run(model, x, ids), keras_index(x, ids)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
    shapes = {name: tuple(value.shape[1:]) for name, value in want.items()}
    assert inferred_shapes(INDEX, "index") == shapes
    assert shapes["positions"] == (5,) and shapes["columns"] == (7, 5) and shapes["worst"] == (1, 6)


def test_a_built_model_of_them_reloads_in_safe_mode(tmp_path):
    x, y = (RNG.normal(size=(2, 6, 8)).astype("float32") for _ in range(2))
    model = netdsl.build(parse(SPECTRAL))
    path = tmp_path / "spectral.keras"
    model.save(path)
    back = keras.saving.load_model(path, safe_mode=True)
    got, again = run(model, x, y), run(back, x, y)
    for name in got:
        np.testing.assert_array_equal(got[name], again[name])
    ids = RNG.integers(0, 7, size=(2, 5)).astype("int32")
    index = netdsl.build(parse(INDEX))
    index.save(tmp_path / "index.keras")
    back = keras.saving.load_model(tmp_path / "index.keras", safe_mode=True)
    x5 = RNG.normal(size=(2, 5, 6)).astype("float32")
    for name, value in run(index, x5, ids).items():
        np.testing.assert_array_equal(value, run(back, x5, ids)[name])


# keras.io, "Text classification with Transformer": its TokenAndPositionEmbedding layer.
TEXT = """
    let maxlen = 12
    let vocab_size = 40
    let embed_dim = 8

    model token_and_position {
      input tokens: (maxlen,) as int32
      positions = arange(maxlen) -> embedding(maxlen, embed_dim)
      output x = (tokens -> embedding(vocab_size, embed_dim)) + positions
    }
"""


def test_positions_are_embedded_from_arange_as_keras_io_s_text_transformer_does():
    tokens = keras.Input((12,), dtype="int32")
    theirs_layer = TokenAndPositionEmbedding(12, 40, 8)
    theirs = keras.Model(tokens, theirs_layer(tokens))
    ours = netdsl.build(parse(TEXT))
    assert ours.count_params() == theirs.count_params() == 12 * 8 + 40 * 8
    ours.get_layer("positions").set_weights(theirs_layer.pos_emb.get_weights())
    ours.get_layer("x.embedding").set_weights(theirs_layer.token_emb.get_weights())
    ids = RNG.integers(0, 40, size=(3, 12)).astype("int32")
    np.testing.assert_allclose(numpy(ours(ids)), numpy(theirs(ids)), rtol=1e-6, atol=1e-6)
    assert inferred_shapes(TEXT, "token_and_position") == {"x": (12, 8)}


DECLARED = """
    layer spectral_mix(classes) {
      input x, ids
      weight scale: (x.shape[-1],) init=ones
      output irfft((x, zeros_like(x)), fft_length=8) * 2 + cumsum(x, axis=1)[..., :1] + arange(8)
      output one_hot(ids, classes, dtype="float32") * scale[0]
    }

    model declared {
      input x: (6, 5)
      input ids: (6,) as int32
      y, codes = (x, ids) -> spectral_mix(4)
      output y, codes
    }
"""


def test_a_declared_layer_calls_them_on_whole_tensors_as_keras_ops_does():
    x = RNG.normal(size=(2, 6, 5)).astype("float32")
    ids = RNG.integers(0, 4, size=(2, 6)).astype("int32")
    got = run(netdsl.build(parse(DECLARED)), x, ids)
    spectrum = ops.irfft((x, ops.zeros_like(x)), fft_length=8)
    want = numpy(spectrum) * 2 + numpy(ops.cumsum(x, axis=1))[..., :1] + np.arange(8)
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["codes"], numpy(ops.one_hot(ids, 4)))
    assert inferred_shapes(DECLARED, "declared") == {"y": (6, 8), "codes": (6, 4)}


def test_fmt_writes_them_canonically_and_keeps_their_meaning():
    text = (
        "model m {\n  input x: (4, 6)\n  re,im=fft2((x,zeros_like(x)))\n"
        "  a , b = stft(x[:, 0],4,2,4,window=none)\n  p=arange(0,4,2)\n  output y = re+p[:,none,:1]\n}\n"
    )
    formatted = format_text(text)
    assert format_text(formatted) == formatted
    assert "  re, im = fft2((x, zeros_like(x)))\n" in formatted
    assert "  a, b = stft(x[:, 0], 4, 2, 4, window=none)\n" in formatted

    def meaning(value):
        if hasattr(value, "model_dump"):
            value = value.model_dump()
        if isinstance(value, dict):
            return {k: meaning(v) for k, v in value.items() if k != "span"}
        return [meaning(v) for v in value] if isinstance(value, list) else value

    assert meaning(to_ir(formatted, "m.net")) == meaning(to_ir(text, "m.net"))


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "a, b = fft2(x, zeros_like(x))",
            "'fft2' takes a complex signal as one (real, imag) pair, as keras.ops.fft2 does",
        ),
        ("a = fft2((x, x))", "1 name on the left, but 'fft2' gives 2 tensors"),
        ("a = one_hot(x, 3, axis=0)", "'one_hot' cannot work along the batch axis (axis 0)"),
        ("a = arange(3, 3)", "arange(3, 3, 1) gives no values"),
        ("a, b = top_k(x, 7)", "'top_k' takes k=7 of a last axis of size 6"),
    ],
)
def test_a_wrong_call_is_one_error_at_the_statement(statement, message):
    text = f"model m {{\n  input x: (4, 6)\n  {statement}\n  output z = x\n}}\n"
    errors = analyze(netdsl.parse(text, filename="m.net")).errors
    assert [(e.line, e.message) for e in errors] == [(3, message)]


def test_a_block_checked_on_its_own_leaves_unknown_constants_unknown():
    spec = """
        block frames(length, stride) {
          input wave
          re, im = stft(wave, length, stride, length)
          output y = re * re + im * im
        }

        model m {
          input wave: (64,)
          output power = wave -> frames(16, 8)
        }
    """
    assert inferred_shapes(spec, "m") == {"power": (9, 9)}


@pytest.mark.parametrize("spec", [SPECTRAL, INDEX, TEXT], ids=["spectral", "index", "text"])
def test_a_built_model_decompiles_to_its_functions(spec):
    """`netdsl decompile`'s round trip: the functions written as a spec writes them (a pair as a pair,
    every tensor given named, `arange(n)` without the input that lends it a batch axis)."""
    from netdsl.decompiler.verify import verify_round_trip

    model = netdsl.build(parse(spec))
    text = netdsl.decompile(model)
    result, _ = verify_round_trip(model, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text
    wanted = {
        "spectral": ["= fft((x, y))", "= stft(x, 4, 2, 8)", "= istft((", "window=none, center=false)"],
        "index": ["= arange(5)", "= arange(1, 10, 2)", "= one_hot(ids, 7)", "= top_k(x, 3)"],
        "text": ["= arange(12) -> embedding(12, 8)"],
    }
    name = {SPECTRAL: "spectral", INDEX: "index", TEXT: "text"}[spec]
    assert all(piece in text for piece in wanted[name]), text


def test_the_cost_of_a_transform_is_the_radix_2_count_and_fnet_is_costed_whole():
    """`summary --cost`: a complex FFT of n points 5 n log2 n FLOPs, a real one half of it per row, the
    index functions their comparisons or nothing; no function of FNet is left unknown."""
    spec = """
        model costs {
          input x: (8, 16)
          re, im = fft2((x, zeros_like(x)))
          r, i = rfft(x)
          values, indices = top_k(x, 3)
          output re, r, values, running = cumsum(x, axis=1), positions = arange(8)
        }
    """
    found = netdsl.summary(text=textwrap.dedent(spec), filename="costs.net", cost=True)["costs"]["cost"]
    flops = {layer["name"]: layer["flops"] for layer in found["layers"]}
    assert flops["re"] == 5 * 8 * 16 * 7  # 128 points: log2 128 = 7
    assert flops["r"] == int(2.5 * 8 * 16 * 4)  # eight rows of 16 points
    assert flops["values"] == 8 * 16 * 2 and flops["running"] == 8 * 16
    assert flops["re.zeros_like"] == flops["positions"] == 0
    assert not found["unknown"] and not found["lower_bound"]
    fnet = Path(__file__).resolve().parents[2] / "specs" / "keras_io" / "fnet.net"
    assert not netdsl.summary(fnet, cost=True)["fnet_classifier"]["cost"]["unknown"]


LOGIC = """
    layer gate() {
      input x
      output where(greater(x, 0.0), x, cast(less_equal(x, -1.0), dtype="float32"))
    }

    model logic {
      input x: (4, 6)
      input y: (6,)
      big = greater(x, 0.5)
      both = logical_and(big, less(x, y))
      output z = where(both, x, cast(equal(x, y), "float32"))
      output n = cast(logical_not(big), dtype="int32")
      output either = where(logical_or(not_equal(x, 0.0), greater_equal(y, 1.0)), y, x)
      output gated = x -> gate
    }
"""


def test_comparisons_logic_and_casts_are_keras_ops_for_where():
    x = RNG.normal(size=(3, 4, 6)).astype("float32")
    y = RNG.normal(size=(3, 6)).astype("float32")
    x[0, 0, :2] = 0.0
    y[0, 1] = x[0, 0, 1]  # an equal pair
    got = run(netdsl.build(parse(LOGIC)), x, y)
    yy = y[:, None, :]  # a tensor of fewer axes gets size-1 axes after the batch axis, as Keras' merges do
    big = ops.greater(x, 0.5)
    want = {
        "z": ops.where(ops.logical_and(big, ops.less(x, yy)), x, ops.cast(ops.equal(x, yy), "float32")),
        "n": ops.cast(ops.logical_not(big), "int32"),
        "either": ops.where(ops.logical_or(ops.not_equal(x, 0.0), ops.greater_equal(yy, 1.0)), yy, x),
        "gated": ops.where(ops.greater(x, 0.0), x, ops.cast(ops.less_equal(x, -1.0), "float32")),
    }
    for name, value in want.items():
        assert got[name].dtype == numpy(value).dtype, name
        np.testing.assert_array_equal(got[name], numpy(value), err_msg=name)
    assert inferred_shapes(LOGIC, "logic") == {"z": (4, 6), "n": (4, 6), "either": (4, 6), "gated": (4, 6)}


def test_under_mixed_precision_a_transform_runs_in_float32_and_gives_float16_back():
    """keras.ops' transforms take no float16: netdsl's run in float32 and cast back, as keras_hub's FNetEncoder
    does around its `ops.fft2`, so a mixed_float16 model builds and gives its own dtype."""
    from netdsl.custom.tensor_ops import TensorOp

    tree = ["call", "fft2", [["var", "x0"], ["call", "zeros_like", [["var", "x0"]], {}]], {}]
    layer = TensorOp(tree, inputs=1, dtype="mixed_float16")
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    re, im = layer(x)
    assert [keras.backend.standardize_dtype(t.dtype) for t in (re, im)] == ["float16", "float16"]
    half = x.astype("float16").astype("float32")  # what the layer's autocast hands the transform
    want = numpy(ops.fft2((half, np.zeros_like(half)))[0]).astype("float16")
    np.testing.assert_allclose(numpy(re).astype("float32"), want.astype("float32"), rtol=1e-3, atol=1e-2)


def test_a_declared_activation_of_another_shape_is_a_step_of_its_own_shape():
    spec = """
        activation best(x) = cast(argmax(x, axis=-1), "float32")
        activation running(x) = cumsum(x, axis=-1)      # its input's shape: a layer's activation

        model picks {
          input x: (5, 4)
          output y = x -> dense(4, activation=running) -> best
        }
    """
    x_in = keras.Input((5, 4))
    dense = layers.Dense(4, activation=lambda t: ops.cumsum(t, axis=-1))
    theirs = keras.Model(x_in, ops.cast(ops.argmax(dense(x_in), axis=-1), "float32"))
    ours = netdsl.build(parse(spec))
    ours.layers[1].set_weights(dense.get_weights())
    x = RNG.normal(size=(2, 5, 4)).astype("float32")
    np.testing.assert_array_equal(numpy(ours(x)), numpy(theirs(x)))
    assert inferred_shapes(spec, "picks") == {"y": (5,)} == {"y": tuple(ours.output.shape[1:])}
    assert tuple(theirs.output.shape[1:]) == (5,)


def test_a_declared_activation_that_reduces_has_the_reduced_shape_in_check_and_keras():
    """`mean(x, axis=-1)` in an activation was taken for its input's shape by check and Keras' symbolic
    shape alike, while the tensor it gives has the axis reduced."""
    spec = """
        activation avg(x) = mean(x, axis=-1)

        model reduced {
          input x: (5, 4)
          output y = x -> avg
        }
    """
    ours = netdsl.build(parse(spec))
    x = RNG.normal(size=(2, 5, 4)).astype("float32")
    np.testing.assert_allclose(numpy(ours(x)), x.mean(axis=-1), rtol=1e-6)
    assert inferred_shapes(spec, "reduced") == {"y": (5,)} == {"y": tuple(ours.output.shape[1:])}
