"""Issue 19, part 1: arithmetic and functions on tensors in model and block bodies.

Every spec here is compared with the Keras code a person would write by hand:
parameters, layer classes (netdsl's weightless `TensorOp` stands for Keras'
operation nodes — `a * b`, `x + 3` — which `model.layers` does not list), outputs within 1e-6 with the
same weights. The shapes `check` infers in pure Python are the ones Keras
computes; the models save and load with `safe_mode=True`; a spec always gives
the same layer names.
"""

from __future__ import annotations

import textwrap

import keras
import numpy as np
import pytest
from keras import layers, ops

import netdsl
from netdsl.semantics.analysis import analyze


def build(text: str, model: str | None = None):
    return netdsl.build(netdsl.parse(textwrap.dedent(text), filename="tensor_exprs.net"), model=model)


def graph_of(text: str, model: str):
    analysis = analyze(netdsl.parse(textwrap.dedent(text), filename="tensor_exprs.net"))
    assert not analysis.errors, analysis.errors
    return analysis.graphs[model]


def keras_classes(model) -> list[str]:
    """The classes of a model's layers, netdsl's TensorOp left out (Keras lists no op nodes)."""
    return sorted(type(layer).__name__ for layer in model.layers if type(layer).__name__ != "TensorOp")


def same_weights(ours, theirs) -> None:
    """Copy `theirs`' weights into `ours`, layer by layer in order (weighted layers only)."""
    mine = [layer for layer in ours.layers if layer.weights]
    other = [layer for layer in theirs.layers if layer.weights]
    assert [type(a).__name__ for a in mine] == [type(b).__name__ for b in other]
    for a, b in zip(mine, other):
        a.set_weights(b.get_weights())


def assert_equivalent(ours, theirs, *inputs) -> None:
    assert ours.count_params() == theirs.count_params()
    assert keras_classes(ours) == keras_classes(theirs)
    same_weights(ours, theirs)
    np.testing.assert_allclose(run(ours, *inputs), run(theirs, *inputs), rtol=1e-6, atol=1e-6)


def run(model, *inputs) -> np.ndarray:
    """The model's output on `inputs`, called eagerly (faster than `predict` for one small batch)."""
    return keras.ops.convert_to_numpy(model(inputs[0] if len(inputs) == 1 else list(inputs)))


RNG = np.random.default_rng(19)


def sample(*shape) -> np.ndarray:
    return RNG.normal(size=(2, *shape)).astype("float32") * 3


HARD_SWISH = """
    # MobileNetV3's hard-swish, and the hard-sigmoid gate of its squeeze-excite block.
    block hard_swish() {
      input x
      output y = x * relu6(x + 3) / 6
    }

    block squeeze_excite(filters) {
      input x
      s = x -> global_average_pooling2d(keepdims=true) -> conv2d(filters // 4, 1) -> relu -> conv2d(filters, 1)
      gate = ((s + 3) -> relu(max_value=6.0)) * (1 / 6)
      output y = x * gate
    }

    model mbv3 {
      input image: (16, 16, 8)
      x = image -> conv2d(16, 3, padding="same") -> hard_swish
      output y = x -> squeeze_excite(16) -> hard_swish
    }
"""


def hard_swish_by_hand() -> keras.Model:
    def hard_swish(x):
        return x * ops.relu6(x + 3) / 6

    image = keras.Input((16, 16, 8))
    x = hard_swish(layers.Conv2D(16, 3, padding="same")(image))
    s = layers.GlobalAveragePooling2D(keepdims=True)(x)
    s = layers.Activation("relu")(layers.Conv2D(4, 1)(s))
    gate = layers.ReLU(6.0)(layers.Conv2D(16, 1)(s) + 3) * (1 / 6)
    return keras.Model(image, hard_swish(x * gate))


def test_hard_swish_blocks_equal_the_hand_written_keras_code():
    image = sample(16, 16, 8)
    assert_equivalent(build(HARD_SWISH), hard_swish_by_hand(), image)


def test_a_scaled_residual_and_a_gated_unit_equal_the_hand_written_keras_code():
    spec = """
        model m {
          input x: (10, 6)
          branch = x -> dense(6) -> dense(6)
          r = x + 0.17 * branch
          output g = r -> dense(12) -> gated
        }

        block gated() {
          input h
          a = h -> dense(4)
          b = h -> dense(4)
          output y = a * sigmoid(b) - 0.5
        }
    """
    x = keras.Input((10, 6))
    branch = layers.Dense(6)(layers.Dense(6)(x))
    r = layers.Add()([x, 0.17 * branch])
    h = layers.Dense(12)(r)
    a, b = layers.Dense(4)(h), layers.Dense(4)(h)
    theirs = keras.Model(x, a * ops.sigmoid(b) - 0.5)
    assert_equivalent(build(spec), theirs, sample(10, 6))


ATTENTION = """
    model attention {
      input q: (6, 8)
      input kv: (5, 8)
      k = kv -> dense(8)
      v = kv -> dense(8)
      scores = (q -> dense(8)) @ transpose(k, (0, 2, 1)) / sqrt(8.0)
      output y = softmax(scores, axis=-1) @ v
    }
"""


def test_scaled_dot_product_attention_written_with_matmul_divide_and_softmax():
    q_in, kv_in = keras.Input((6, 8)), keras.Input((5, 8))
    k, v, q = layers.Dense(8)(kv_in), layers.Dense(8)(kv_in), layers.Dense(8)(q_in)
    scores = ops.matmul(q, ops.transpose(k, (0, 2, 1))) / np.sqrt(8.0)
    theirs = keras.Model([q_in, kv_in], ops.matmul(ops.softmax(scores, axis=-1), v))
    ours = build(ATTENTION)
    # Keras orders the weighted layers by creation; ours: k, v, then q's dense.
    assert_equivalent(ours, keras.Model(theirs.inputs, theirs.outputs), sample(6, 8), sample(5, 8))


def test_check_infers_the_shapes_keras_computes():
    spec = """
        model m {
          input x: (8, 16)
          input c: (16,)
          input w: (1, 16)
          a = x -> dense(16)
          s = a * c
          t = a + w - 1
          u = c / (x -> dense(1))
          m1 = mean(a, axis=1)
          m2 = max(a, -1, keepdims=true)
          m3 = sum(a, (1, 2))
          p = 2 ** (-a) + minimum(a, 0.0) + clip(a, -1, 1)
          r = reshape(a, (-1, 16, 8)) @ a
          j = concat(a, x, axis=-1)
          output s, t, u, m1, m2, m3, p, r, j
        }
    """
    graph = graph_of(spec, "m")
    model = build(spec)
    want = {name: tuple(layer.output.shape[1:]) for name in graph.output_names for layer in [model.get_layer(name)]}
    inferred = {name: graph.node_of(ref).output_shapes[ref.index] for name, ref in graph.outputs}
    assert inferred == want
    assert inferred["u"] == (8, 16) and inferred["m3"] == () and inferred["m2"] == (8, 1) and inferred["r"] == (16, 16)
    classes = {name: type(model.get_layer(name)).__name__ for name in ("s", "t.add", "u", "j")}
    assert classes == {"s": "TensorOp", "t.add": "Add", "u": "TensorOp", "j": "Concatenate"}


def test_an_unknown_size_broadcasts_as_keras_has_it():
    spec = """
        model m {
          input x: (none, 8)
          input y: (1, 8)
          input z: (4, 8)
          output a = x * y
          output b = x * z
          output c = (x -> dense(8)) * 2 + y
        }
    """
    graph = graph_of(spec, "m")
    model = build(spec)
    for name, ref in graph.outputs:
        assert graph.node_of(ref).output_shapes[ref.index] == tuple(model.get_layer(name).output.shape[1:]), name


def test_names_are_those_of_a_flow_and_a_plain_sum_keeps_its_add_layer():
    spec = """
        model m {
          input a: (4,)
          input b: (4,)
          s = a + b
          h = a * relu6(a + 3) / 6
          output y = s + h + b
        }
    """
    model = build(spec)
    names = sorted(layer.name for layer in model.layers)
    assert names == ["a", "b", "h", "h.add", "h.multiply", "h.relu6", "s", "y"]
    assert type(model.get_layer("y")).__name__ == "Add" and len(model.get_layer("y").input) == 3
    assert model.get_config() == build(spec).get_config()  # deterministic


def test_saved_models_load_with_safe_mode_and_give_the_same_outputs(tmp_path):
    model = build(ATTENTION)
    path = tmp_path / "attention.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    q, kv = sample(6, 8), sample(5, 8)
    np.testing.assert_allclose(run(loaded, q, kv), run(model, q, kv), rtol=1e-6)


def test_a_tampered_tensor_op_config_is_refused():
    from netdsl.custom.tensor_ops import TensorOp

    with pytest.raises(TypeError, match="allowed table"):
        TensorOp.from_config({"name": "t", "expression": ["call", "eval", [["var", "x0"]], {}], "inputs": 1})
    with pytest.raises(TypeError, match="a name bound"):
        TensorOp.from_config({"name": "t", "expression": ["var", "x1"], "inputs": 1})


def test_the_diagram_draws_each_operator_as_a_small_node_with_its_shape():
    dot = netdsl.render(netdsl.parse(textwrap.dedent(HARD_SWISH), filename="hs.net"), model="mbv3").source
    assert "<B>+ 3</B>  (16, 16, 16)" in dot and "<B>\u00f7 6</B>  (16, 16, 16)" in dot
    assert "<B>relu6</B>  (1, 1, 16)" not in dot and "<B>relu6</B>  (16, 16, 16)" in dot


def test_a_declared_activation_applies_to_a_tensor_like_a_step():
    spec = """
        activation hswish(x) = x * relu6(x + 3) / 6

        model m {
          input x: (5,)
          output y = 1 - hswish(x)
        }
    """
    x = sample(5)
    want = 1 - x * np.clip(x + 3, 0, 6) / 6
    np.testing.assert_allclose(run(build(spec), x), want, rtol=1e-5, atol=1e-6)
