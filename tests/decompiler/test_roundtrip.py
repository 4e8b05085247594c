"""The round trip of `netdsl decompile` through Keras (issue 13's acceptance).

For each model: the exported spec checks clean and rebuilds the same parameter count,
layer classes (in order) and weight shapes; the original's weights load into it;
outputs on seeded random inputs differ by at most 1e-5; exporting the rebuilt model
gives the same text. Each keras.applications model is built once per session.
"""

from __future__ import annotations

from pathlib import Path

import keras
import pytest
from keras import layers

import netdsl
from netdsl.cli import main
from netdsl.decompiler.verify import verify_round_trip
from netdsl.syntax import ir
from netdsl.syntax.transform import to_ir

ROOT = Path(__file__).resolve().parents[2]


def assert_round_trip(model, flat: bool = False) -> str:
    text = netdsl.decompile(model, flat=flat)
    result, _ = verify_round_trip(model, text, flat=flat)
    assert result.ok, "\n".join(result.lines()) + "\n" + text
    return text


def spec_lines(text: str) -> int:
    """Lines that are neither blank nor comments."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


# ---------------------------------------------------------------- models a user writes


def nested_used_twice():
    x = keras.Input((16,), name="x")
    encoder = keras.Model(x, layers.Dense(8)(layers.Dense(32, activation="relu")(x)), name="encoder")
    left, right = keras.Input((16,), name="left"), keras.Input((16,), name="right")
    distance = layers.Subtract()([encoder(left), encoder(right)])
    return keras.Model([left, right], layers.Dense(1, activation="sigmoid", name="same")(distance), name="siamese")


def shared_layer():
    a, b = keras.Input((10,), name="a"), keras.Input((10,), name="b")
    project = layers.Dense(4, name="project")
    joined = layers.Concatenate()([project(a), project(b)])
    return keras.Model([a, b], layers.Dense(2, name="out")(joined), name="shared_projection")


def two_inputs_two_outputs():
    image, meta = keras.Input((8, 8, 3), name="image"), keras.Input((5,), name="meta")
    features = layers.GlobalAveragePooling2D()(layers.Conv2D(4, 3, activation="relu")(image))
    joined = layers.Concatenate()([features, layers.Dense(4, activation="tanh")(meta)])
    cls = layers.Dense(3, activation="softmax", name="cls")(joined)
    return keras.Model([image, meta], [cls, layers.Dense(1, name="box")(joined)], name="two_heads")


def unet(size: int = 32, base: int = 8):
    image = keras.Input((size, size, 3), name="image")

    def double_conv(x, filters):
        for _ in range(2):
            x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
            x = layers.Activation("relu")(layers.BatchNormalization()(x))
        return x

    skips, x = [], image
    for level in range(3):
        x = double_conv(x, base * 2**level)
        skips.append(x)
        x = layers.MaxPooling2D()(x)
    x = double_conv(x, base * 8)
    for level in reversed(range(3)):
        x = layers.Conv2DTranspose(base * 2**level, 2, strides=2)(x)
        x = double_conv(layers.Concatenate()([x, skips[level]]), base * 2**level)
    return keras.Model(image, layers.Conv2D(2, 1, activation="softmax", name="mask")(x), name="unet")


def sequential():
    return keras.Sequential(
        [
            keras.Input((20,)),
            layers.Dense(16, activation="relu"),
            layers.Dropout(0.1),
            layers.Dense(16, activation="relu"),
            layers.Dense(3),
        ],
        name="mlp",
    )


def text_encoder():
    """Integer tokens, attention with a call argument, a bidirectional LSTM wrapping a layer."""
    tokens = keras.Input((12,), dtype="int32", name="tokens")
    x = layers.Embedding(100, 16)(tokens)
    for _ in range(2):
        x = layers.LayerNormalization()(layers.Add()([x, layers.MultiHeadAttention(2, 8)(x, x, use_causal_mask=True)]))
        x = layers.LayerNormalization()(layers.Add()([x, layers.Dense(16)(layers.Dense(32, activation="gelu")(x))]))
    x = layers.GlobalAveragePooling1D()(layers.Bidirectional(layers.LSTM(8, return_sequences=True))(x))
    return keras.Model(tokens, layers.Dense(2, activation="softmax", name="label")(x), name="text")


USER_MODELS = [nested_used_twice, shared_layer, two_inputs_two_outputs, unet, sequential, text_encoder]


@pytest.mark.parametrize("make", USER_MODELS, ids=lambda f: f.__name__)
def test_user_model_round_trips(make):
    model = make()
    assert_round_trip(model)
    assert_round_trip(model, flat=True)


def test_nested_model_and_shared_layer_are_written_as_such():
    text = netdsl.decompile(nested_used_twice())
    assert text.startswith("model encoder {")
    assert "= left -> encoder" in text and "= right -> encoder" in text
    assert "shared project = dense(4)" in netdsl.decompile(shared_layer())


def test_resolved_defaults_are_left_out():
    text = netdsl.decompile(text_encoder())
    # no value_dim, attention_axes (one argument per line: the call does not fit 88 columns)
    assert "multi_head_attention(\n    2,\n    8,\n    use_causal_mask=true,\n  )" in text
    assert "bidirectional(lstm(8, return_sequences=true))" in text  # no backward_layer
    assert "input tokens: (12,) as int32" in text


def test_unet_double_convolutions_become_one_block():
    text = assert_round_trip(unet())
    assert text.count("block ") == 1
    assert 'conv2d(filters, 3, padding="same", use_bias=false)' in text


@pytest.mark.parametrize("name", ["linear_mlp", "multiply", "activations", "attention_example"])
def test_models_netdsl_built_with_its_own_layers_round_trip(name):
    model = netdsl.build(ROOT / "specs" / "custom_layers.net", model=name)
    assert_round_trip(model)


def test_keras_applications_layer_scale_and_residual_sum_are_written_as_steps():
    """ConvNeXt's block in small: keras.applications' own LayerScale class becomes netdsl's `layer_scale`, and the
    Keras code's `inputs + x` (an operation, not a layer) a sum of the spec; rebuilt, it decompiles to the same text."""
    from keras.src.applications.convnext import LayerScale

    keras.backend.clear_session(free_memory=False)  # Keras numbers `+`'s names by the models built before
    inputs = keras.Input((8, 8, 4))
    x = inputs
    for _ in range(2):
        y = layers.Conv2D(4, 7, padding="same", groups=4)(x)
        y = layers.LayerNormalization(epsilon=1e-6)(y)
        x = x + LayerScale(1e-6, 4)(layers.Dense(4)(y))
    text = assert_round_trip(keras.Model(inputs, x))
    assert "layer_scale(1e-6, 4)" in text and "output add_1 = h + y2" in text


def test_cli_verify_proves_the_round_trip_of_a_saved_file(tmp_path, capsys):
    path = tmp_path / "unet.keras"
    unet().save(path)
    code = main(["decompile", str(path), "-o", str(tmp_path / "unet.net"), "--verify"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0] == f"verify {path}:"
    assert "  parameters: 121,890 -> 121,890 (ok)" in out
    assert "  decompile of the rebuilt model: the same text (ok)" in out
    assert "FAILED" not in out
    assert (tmp_path / "unet.net").read_text(encoding="utf-8") == netdsl.decompile(path)


def test_cli_verify_that_fails_says_so_in_the_shape_of_every_command(tmp_path, capsys, monkeypatch):
    """A round trip that does not hold (here: one the real check found, plus a problem added to it)
    is one `netdsl decompile: error:` line and exit 1, after the report of each point."""
    import netdsl.decompiler.verify as verify

    real = verify.verify_round_trip

    def failing(*args, **kwargs):
        result, rebuilt = real(*args, **kwargs)
        result.problems.append("a difference this test added")
        return result, rebuilt

    monkeypatch.setattr(verify, "verify_round_trip", failing)
    path = tmp_path / "unet.keras"
    unet().save(path)
    code = main(["decompile", str(path), "-o", str(tmp_path / "unet.net"), "--verify"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out.splitlines()[-1] == "  problem: a difference this test added"
    assert captured.err == f"netdsl decompile: error: the decompiled spec of {path} does not rebuild the same model\n"


# ---------------------------------------------------------------- keras.applications

_APPLICATIONS: dict[str, object] = {}


def application(name: str):
    """keras.applications.NAME(weights=None), built once per session, with the layer names
    of a fresh session (Keras numbers auto-named layers across models: `input_layer_3`)."""
    if name not in _APPLICATIONS:
        keras.backend.clear_session(free_memory=False)
        _APPLICATIONS[name] = getattr(keras.applications, name)(weights=None)
    return _APPLICATIONS[name]


def block_uses(text: str) -> list[tuple[str, int]]:
    """Every use of a block in the model, in order, as (block, times in a row); blocks that
    call blocks are opened with their arguments (ResNet's stage(..., n) gives its n)."""
    tree = to_ir(text, "<decompile>")
    blocks = {d.name: d for d in tree.decls if isinstance(d, ir.BlockDecl)}
    model = [d for d in tree.decls if isinstance(d, ir.ModelDecl)][-1]
    found: list[tuple[str, int]] = []

    def number(expr, env):
        return expr.value if isinstance(expr, ir.Number) else env[expr.id]

    def use(step, env, times):
        callee = step.func if isinstance(step, ir.Call) else step
        if not isinstance(callee, ir.Name) or callee.id not in blocks:
            return
        found.append((callee.id, times))
        decl = blocks[callee.id]
        inner = {p.name: number(p.default, env) for p in decl.params if isinstance(p.default, ir.Number)}
        if isinstance(step, ir.Call):
            inner.update(
                {p.name: number(a, env) for p, a in zip(decl.params, step.args) if isinstance(a, (ir.Number, ir.Name))}
            )
            inner.update(
                {k.name: number(k.value, env) for k in step.kwargs if isinstance(k.value, (ir.Number, ir.Name))}
            )
        for _ in range(times):
            body(decl.body, inner)

    def walk(expr, env):
        if isinstance(expr, ir.Flow):
            for item in expr.items:
                walk(item, env)
        elif isinstance(expr, ir.BinOp) and expr.op == "*":
            use(expr.left, env, number(expr.right, env))
        elif isinstance(expr, ir.BinOp):
            walk(expr.left, env)
            walk(expr.right, env)
        elif isinstance(expr, (ir.Call, ir.Name)):
            use(expr, env, 1)

    def body(stmts, env):
        for stmt in stmts:
            if isinstance(stmt, ir.Assign):
                walk(stmt.value, env)
            elif isinstance(stmt, ir.Output):
                for item in stmt.items:
                    if item.value is not None:
                        walk(item.value, env)

    body(model.body, {})
    return found


def model_body(text: str) -> str:
    return text[text.rindex("\nmodel ") :]


APPLICATIONS = ["ResNet50", "ResNet101", "MobileNetV2", "EfficientNetB0", "DenseNet121", "InceptionV3", "VGG16"]


@pytest.mark.slow
@pytest.mark.parametrize("name", APPLICATIONS)
def test_application_round_trips(name):
    assert_round_trip(application(name))


@pytest.mark.slow
def test_resnet50_is_three_blocks_at_most_with_stages_as_repeats():
    text = netdsl.decompile(application("ResNet50"))
    assert text.count("\nblock ") + text.startswith("block ") <= 3
    assert spec_lines(text) <= 60
    assert " + " not in model_body(text), "every residual add is inside a block"
    repeats = [times for block, times in block_uses(text) if block == "residual_block"]
    assert repeats == [2, 3, 5, 2]  # identity blocks after each stage's projecting one


@pytest.mark.slow
def test_mobilenet_v2_inverted_residuals_are_block_calls():
    text = netdsl.decompile(application("MobileNetV2"))
    body = model_body(text)
    assert text.count("depthwise_conv2d(") >= 2, "the depthwise convolutions are in blocks ..."
    assert "depthwise_conv2d" not in body and " + " not in body, "... and none is left in the model"


@pytest.mark.slow
def test_densenet121_dense_layers_are_one_block_repeated_6_12_24_16_times():
    text = netdsl.decompile(application("DenseNet121"))
    dense = [name for name, times in block_uses(text) if times in (6, 12, 24, 16)]
    assert len(set(dense)) == 1
    assert [times for name, times in block_uses(text) if name == dense[0]] == [6, 12, 24, 16]


@pytest.mark.slow
@pytest.mark.parametrize("name, reference", [("ResNet50", "resnet50.net"), ("MobileNetV2", "mobilenet_v2.net")])
def test_decompile_is_at_most_twice_the_hand_written_spec(name, reference):
    text = netdsl.decompile(application(name))
    hand = (ROOT / "specs" / reference).read_text(encoding="utf-8")
    assert spec_lines(text) <= 2 * spec_lines(hand)


@pytest.mark.slow
def test_docs_show_the_current_decompile_of_resnet50():
    doc = (ROOT / "docs" / "decompile.md").read_text(encoding="utf-8")
    shown = doc.split("<!-- resnet50 decompile -->\n```net\n", 1)[1].split("```", 1)[0]
    assert shown == netdsl.decompile(application("ResNet50"))


def test_output_made_inside_a_block_keeps_its_name_through_a_file(tmp_path):
    """The last step of an output stays a single step, so the name Keras saves is the spec's."""
    spec = (
        "block two(f) {\n  input x\n  output y = x -> dense(f) -> relu\n}\n\n"
        "model m {\n  input x: (4,)\n  output out = x -> two(3) * 4 -> two(5)\n}\n"
    )
    original = netdsl.build(netdsl.parse(spec, filename="two.net"))
    text = assert_round_trip(original)
    _, rebuilt = verify_round_trip(original, text)
    rebuilt.save(tmp_path / "rebuilt.keras")
    assert netdsl.decompile(tmp_path / "rebuilt.keras") == text


def test_a_plugin_layer_maps_back_to_its_plugin_name():
    from netdsl import registry

    @keras.saving.register_keras_serializable(package="export_test")
    class Stretch(layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    try:
        netdsl.register_layer("stretch")(Stretch)
        x = keras.Input((3,), name="x")
        model = keras.Model(x, layers.Dense(2, name="out")(Stretch(3.0)(x)), name="stretched")
        text = assert_round_trip(model)
        assert "x -> stretch(factor=3.0) -> dense(2)" in text
    finally:
        registry.reset_plugins()
