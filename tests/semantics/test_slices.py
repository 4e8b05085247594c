"""Issue 30, item 2: slices, splits and unstacks of tensors.

Each spec is compared with the Keras code a person writes for it (`x[:, :256]`,
`keras.ops.split`, `keras.ops.unstack`): parameters, outputs equal after the
weights are copied, and the shapes `check` infers in pure Python equal to the
ones Keras computes. The gMLP block of keras.io's MLP image-classification
example, whose spatial gating unit splits the channels in two, is a spec equal
to the example's code. A built model saves and loads with `safe_mode=True`.
"""

from __future__ import annotations

import textwrap

import keras
import numpy as np
import pytest
from keras import layers, ops

import netdsl
from netdsl.semantics.analysis import analyze
from netdsl.syntax.formatter import format_text
from netdsl.syntax.transform import to_ir

RNG = np.random.default_rng(30)


def parse(text: str):
    return netdsl.parse(textwrap.dedent(text), filename="slices.net")


def build(text: str, model: str | None = None):
    return netdsl.build(parse(text), model=model)


def inferred_shapes(text: str, model: str) -> dict[str, tuple]:
    """The output shapes `check` infers, without Keras."""
    analysis = analyze(parse(text))
    assert not analysis.errors, analysis.errors
    graph = analysis.graphs[model]
    return {name: graph.node_of(ref).output_shapes[ref.index] for name, ref in graph.outputs}


def without_spans(value):
    """An IR's model_dump() without its spans: what a text means."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    if isinstance(value, dict):
        return {k: without_spans(v) for k, v in value.items() if k != "span"}
    if isinstance(value, list):
        return [without_spans(v) for v in value]
    return value


def outputs(model, *inputs) -> list[np.ndarray]:
    got = model(inputs[0] if len(inputs) == 1 else list(inputs))
    got = got if isinstance(got, (list, tuple)) else [got]
    return [ops.convert_to_numpy(t) for t in got]


def copy_weights(ours, theirs) -> None:
    """`theirs`' weights into `ours`, weighted layer by weighted layer, in order."""
    mine = [layer for layer in ours.layers if layer.weights]
    other = [layer for layer in theirs.layers if layer.weights]
    assert [type(a).__name__ for a in mine] == [type(b).__name__ for b in other]
    for a, b in zip(mine, other):
        a.set_weights(b.get_weights())


def assert_same_model(ours, theirs, *inputs) -> None:
    assert ours.count_params() == theirs.count_params()
    copy_weights(ours, theirs)
    for a, b in zip(outputs(ours, *inputs), outputs(theirs, *inputs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


SLICES = """
    model slices {
      input x: (10, 512)
      h = x -> dense(512)
      output first = h[:, :, :256]
      output rest = h[..., 1:]
      output strided = h[:, ::2, -3:]
      output row = h[:, 3]
      output last = h[:, -1, 100:200:7]
      output wide = h[:, none, 2:4]
      output gated = h[..., :256] * sigmoid(h[..., 256:])
      output backwards = h[:, 8:2:-2, ::-3]
    }
"""


def keras_slices():
    x = keras.Input((10, 512))
    h = layers.Dense(512)(x)
    out = [
        h[:, :, :256],
        h[..., 1:],
        h[:, ::2, -3:],
        h[:, 3],
        h[:, -1, 100:200:7],
        h[:, None, 2:4],
        h[..., :256] * ops.sigmoid(h[..., 256:]),
        h[:, 8:2:-2, ::-3],
    ]
    return keras.Model(x, out)


def test_slices_are_keras_code_s_and_check_knows_their_shapes():
    ours, theirs = build(SLICES), keras_slices()
    assert_same_model(ours, theirs, RNG.normal(size=(2, 10, 512)).astype("float32"))
    keras_shapes = [tuple(t.shape[1:]) for t in theirs.outputs]
    assert list(inferred_shapes(SLICES, "slices").values()) == keras_shapes
    assert keras_shapes[3] == (512,) and keras_shapes[4] == (15,) and keras_shapes[5] == (1, 2, 512)
    assert keras_shapes[7] == (3, 171)


def test_an_unknown_size_stays_unknown_and_a_slice_of_it_builds():
    spec = """
        model seq {
          input x: (none, 6)
          output a = x[:, 1:, ::2]
          output b = x[:, 0]
        }
    """
    assert inferred_shapes(spec, "seq") == {"a": (None, 3), "b": (6,)}
    x = RNG.normal(size=(2, 5, 6)).astype("float32")
    a, b = outputs(build(spec), x)
    np.testing.assert_array_equal(a, x[:, 1:, ::2])
    np.testing.assert_array_equal(b, x[:, 0])


SPLITS = """
    model splits {
      input x: (6, 12)
      h = x -> dense(12)
      a, b = split(h, 2, axis=-1)
      p, q, r = split(h, [3, 10], axis=2)
      first, second, third = unstack(h[:, :3], axis=1)
      output halves = a * b
      output parts = concat(p, r, axis=-1) + q[:, :, :1]
      output rows = first + second - third
    }
"""


def test_split_and_unstack_destructure_as_keras_ops_give_them():
    x = keras.Input((6, 12))
    h = layers.Dense(12)(x)
    a, b = ops.split(h, 2, axis=-1)
    p, q, r = ops.split(h, [3, 10], axis=2)
    first, second, third = ops.unstack(h[:, :3], axis=1)
    theirs = keras.Model(x, [a * b, ops.concatenate([p, r], axis=-1) + q[:, :, :1], first + second - third])
    ours = build(SPLITS)
    assert_same_model(ours, theirs, RNG.normal(size=(2, 6, 12)).astype("float32"))
    assert inferred_shapes(SPLITS, "splits") == {"halves": (6, 6), "parts": (6, 5), "rows": (12,)}
    assert [len(ours.get_layer(name).output) for name in ("a", "p", "first")] == [2, 3, 3]


def test_a_built_model_with_slices_and_splits_reloads_in_safe_mode(tmp_path):
    model = build(SPLITS)
    path = tmp_path / "splits.keras"
    model.save(path)
    back = keras.saving.load_model(path, safe_mode=True)
    x = RNG.normal(size=(2, 6, 12)).astype("float32")
    for a, b in zip(outputs(model, x), outputs(back, x), strict=True):
        np.testing.assert_array_equal(a, b)


GMLP = """
    # keras.io, "Image classification with modern MLP models": the gMLP layer.
    block gmlp(num_patches, dim, rate=0.2) {
      input inputs
      x = inputs -> layer_norm(epsilon=1e-6)
      projected = x -> dense(dim * 2, activation=gelu) -> dropout(rate)
      u, v = split(projected, 2, axis=2)                  # the spatial gating unit
      v = v -> layer_norm(epsilon=1e-6)
      v = transpose(v, (0, 2, 1)) -> dense(num_patches, bias_initializer=ones)
      output y = x + ((u * transpose(v, (0, 2, 1))) -> dense(dim))
    }

    model gmlp_blocks {
      input patches: (16, 8)
      output y = patches -> gmlp(16, 8) * 2
    }
"""


def keras_gmlp_layer(x, num_patches: int, dim: int, rate: float = 0.2):
    """The example's gMLPLayer.call, written with the same layers in the order it calls them."""
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    projected = layers.Dropout(rate)(layers.Dense(dim * 2, activation="gelu")(x))
    u, v = ops.split(projected, indices_or_sections=2, axis=2)
    v = layers.LayerNormalization(epsilon=1e-6)(v)
    v = layers.Dense(num_patches, bias_initializer="ones")(ops.transpose(v, axes=(0, 2, 1)))
    return x + layers.Dense(dim)(u * ops.transpose(v, axes=(0, 2, 1)))


def test_the_gmlp_block_of_keras_io_is_the_example_s_code():
    patches = keras.Input((16, 8))
    theirs = keras.Model(patches, keras_gmlp_layer(keras_gmlp_layer(patches, 16, 8), 16, 8))
    ours = build(GMLP)
    # per block: two layer norms of 8 channels, dense 8 -> 16, the spatial dense 16 -> 16, dense 8 -> 8
    assert ours.count_params() == theirs.count_params() == 2 * (2 * 16 + (8 * 16 + 16) + (16 * 16 + 16) + (8 * 8 + 8))
    assert_same_model(ours, theirs, RNG.normal(size=(2, 16, 8)).astype("float32"))
    assert inferred_shapes(GMLP, "gmlp_blocks") == {"y": (16, 8)}


DECLARED = """
    layer glu_proj(units) {                       # a gated linear unit: half the channels gate the rest
      input x
      weight kernel: (x.shape[-1], 2 * units)
      output (x @ kernel)[..., :units] * sigmoid((x @ kernel)[..., units:]) + kernel[0, :units]
    }

    model declared {
      input x: (5, 6)
      output y = x -> glu_proj(4)
    }
"""


def test_a_declared_layer_slices_as_a_model_body_does_its_weights_without_a_batch_axis():
    ours = build(DECLARED)
    kernel = RNG.normal(size=(6, 8)).astype("float32")
    ours.get_layer("y").set_weights([kernel])
    x = RNG.normal(size=(2, 5, 6)).astype("float32")
    z = x @ kernel
    want = z[..., :4] / (1 + np.exp(-z[..., 4:])) + kernel[0, :4]
    np.testing.assert_allclose(outputs(ours, x)[0], want, rtol=1e-5, atol=1e-5)
    assert inferred_shapes(DECLARED, "declared") == {"y": (5, 4)}


def test_fmt_writes_subscripts_canonically_and_keeps_their_meaning():
    text = "model m {\n  input x: (4, 6)\n  a, b = split(x,2,axis=-1)\n  output y = x[:,1:3:1,...,]*a[...,::2][:,none]\n}\n"
    formatted = format_text(text)
    assert format_text(formatted) == formatted
    assert without_spans(to_ir(formatted, "m.net")) == without_spans(to_ir(text, "m.net"))
    assert "  output y = x[:, 1:3:1, ...] * a[..., ::2][:, none]\n" in formatted
    assert "  a, b = split(x, 2, axis=-1)\n" in formatted


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("y = x[:3]", "a tensor's slice starts with its batch axis, which stays whole"),
        ("y = x[:, 9]", "index 9 is out of range for axis 1 of size 4"),
        ("a, b = split(x, 3, axis=-1)", "2 names on the left, but 'split' gives 3 tensors"),
        ("a, b, c = unstack(x, axis=1)", "3 names on the left, but 'unstack' gives 4 tensors"),
    ],
)
def test_a_wrong_slice_or_destructuring_is_one_error_at_the_statement(statement, message):
    text = f"model m {{\n  input x: (4, 6)\n  {statement}\n  output z = x\n}}\n"
    errors = analyze(netdsl.parse(text, filename="m.net")).errors
    assert [(e.line, e.message) for e in errors] == [(3, message)]


def test_a_declared_activation_that_slices_has_the_shape_keras_gives_it():
    spec = """
        activation glu(x) = x[..., :4] * sigmoid(x[..., 4:])   # half the channels gate the others

        model gated {
          input x: (5, 8)
          output y = x -> glu -> dense(3)
        }
    """
    x_in = keras.Input((5, 8))
    theirs = keras.Model(x_in, layers.Dense(3)(x_in[..., :4] * ops.sigmoid(x_in[..., 4:])))
    ours = build(spec)
    assert_same_model(ours, theirs, RNG.normal(size=(2, 5, 8)).astype("float32"))
    assert tuple(ours.get_layer("y.glu").output.shape[1:]) == (5, 4)
    assert inferred_shapes(spec, "gated") == {"y": (5, 3)}


def test_a_constant_slice_takes_a_step_as_python_s_does():
    spec = """
        let widths = [8, 16, 24, 32, 40][1::2]        # 16 and 32
        let reversed = (1, 2, 3)[::-1]
        model steps {
          input x: (4,)
          output y = x -> dense(widths[0] + widths[1] + reversed[0])
        }
    """
    assert inferred_shapes(spec, "steps") == {"y": (51,)}


@pytest.mark.parametrize("spec", [SPLITS, GMLP], ids=["splits", "gmlp"])
def test_a_built_model_decompiles_to_its_slices_and_splits(spec):
    """The round trip of `netdsl decompile`: parameters, weights and outputs, and the rebuilt model
    decompiles to the same text (the gMLP block's split ends a statement, never a block)."""
    from netdsl.decompiler.verify import verify_round_trip

    model = build(spec)
    text = netdsl.decompile(model)
    result, _ = verify_round_trip(model, text)
    assert result.ok, "\n".join(result.lines()) + "\n" + text
    assert "= split(" in text
