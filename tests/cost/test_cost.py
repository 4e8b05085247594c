"""What a model costs before it is built (issue 31): `netdsl summary --cost`, `netdsl.summary(cost=True)`,
in pure Python. The figures are checked against XLA's own count in test_against_xla.py; here,
what a user sees and the conventions docs/cost.md states."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import netdsl
from netdsl import pipeline
from netdsl.cli import main
from netdsl.cost import ACTIVATION_FLOPS, LAYER_RULES, model_cost
from netdsl.errors import UsageError
from netdsl.registry.layers import ANATOMY

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"

AUGMENTED = """\
model aug {
  input image: (8, 8, 3)
  x = image -> auto_contrast -> conv2d(4, 3) -> flatten
  output y = x -> dense(2, activation=softmax)
}
"""


def _graph(spec: Path | str, name: str):
    program = pipeline.load(spec) if isinstance(spec, Path) else pipeline.load(text=spec)
    graphs = pipeline.checked_graphs(program, [name])
    pipeline.unsure_models(graphs)  # fills in the shapes and parameter counts summary shows
    return graphs[name]


def test_summary_cost_prints_each_layers_flops_and_the_models_cost(capsys):
    assert main(["summary", str(SPECS / "lightning_mlp.net"), "--cost", "--batch", "4"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "model lightning_mlp",
        "---------------------------------------------------------------------",
        "Layer           Kind     Output shape   Params        FLOPs    Memory",
        "---------------------------------------------------------------------",
        "image           input    (28, 28)            0      0 FLOPs  12.2 KiB",
        "hidden.flatten  flatten  (784,)              0      0 FLOPs       0 B",
        "hidden          dense    (128,)        100,480   201 KFLOPs   2.0 KiB",
        "logits          dense    (10,)           1,290  2.57 KFLOPs     160 B",
        "---------------------------------------------------------------------",
        "params: 101,770 (trainable 101,770, non-trainable 0)",
        "outputs: logits (10,)",
        "cost: batch 4, float32, optimizer adam",
        "  forward: 204 KFLOPs a sample (101,632 MACs), 814 KFLOPs a batch",
        "  training step: 2.86 MFLOPs",
        "  memory: weights 397.5 KiB, inference peak 411.9 KiB, training peak 1.6 MiB",
    ]


def test_the_mlp_counts_two_flops_per_multiply_add_plus_bias_adds_and_relus():
    cost = model_cost(_graph(SPECS / "lightning_mlp.net", "lightning_mlp"))
    macs = 784 * 128 + 128 * 10
    assert (cost.macs, cost.flops) == (macs, 2 * macs + 128 + 10 + 128)  # XLA's 203,530
    assert cost.flops == 203_530


def test_summary_json_has_the_cost_per_model_and_per_layer(capsys):
    assert main(["summary", str(SPECS / "lightning_mlp.net"), "--cost", "--json", "--precision", "mixed_bfloat16"]) == 0
    cost = json.loads(capsys.readouterr().out)["lightning_mlp"]["cost"]
    assert {
        k: cost[k]
        for k in ("batch", "precision", "optimizer", "macs", "flops", "param_bytes", "lower_bound", "unknown")
    } == {
        "batch": 32,
        "precision": "mixed_bfloat16",
        "optimizer": "adam",
        "macs": 101_632,
        "flops": 203_530,
        "param_bytes": 407_080,
        "lower_bound": False,
        "unknown": [],
    }
    assert cost["forward_flops"] == 32 * 203_530
    assert [(layer["name"], layer["flops"], layer["activation_bytes"]) for layer in cost["layers"]] == [
        ("image", 0, 32 * 784 * 4),
        ("hidden.flatten", 0, 0),
        ("hidden", 2 * 100_352 + 256, 32 * 128 * 2),
        ("logits", 2 * 1280 + 10, 32 * 10 * 2),
    ]


def test_the_library_summary_returns_the_cost():
    found = netdsl.summary(SPECS / "lightning_mlp.net", cost=True, batch=8)
    assert found["lightning_mlp"]["cost"]["forward_flops"] == 8 * 203_530
    assert "cost" not in netdsl.summary(SPECS / "lightning_mlp.net")["lightning_mlp"]


def test_a_layer_without_a_rule_is_named_and_the_totals_are_lower_bounds(tmp_path, capsys):
    (tmp_path / "aug.net").write_text(AUGMENTED, encoding="utf-8")
    assert main(["summary", str(tmp_path / "aug.net"), "--cost", "--batch", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "x.auto_contrast  auto_contrast  (8, 8, 3)          0            ?  1.5 KiB" in out  # its bytes are known
    assert out[-5:] == [
        "cost: batch 2, float32, optimizer rmsprop (lower bounds)",
        "  forward: at least 8.51 KFLOPs a sample (4,176 MACs), 17 KFLOPs a batch",
        "  training step: at least 37.7 KFLOPs",
        # inference: 1,608 B of weights + 2 x (the image's 768 B, an argument held through the call, the
        # contrast's 768 B and the convolution's 576 B, alive at once); training: weights, gradients, one
        # RMSprop slot, and at the dense layer's backward the image, the contrast (the convolution's weights'
        # gradient reads it), the convolution's output (the dense's) and softmax's, and the dense's gradients
        "  memory: weights 1.6 KiB, inference peak at least 5.7 KiB, training peak at least 10.0 KiB",
        "  unknown: x.auto_contrast: 'auto_contrast' has no cost rule",
    ]
    cost = netdsl.summary(text=AUGMENTED, cost=True)["aug"]["cost"]
    assert (cost["lower_bound"], cost["unknown"]) == (True, ["x.auto_contrast: 'auto_contrast' has no cost rule"])


BLIND = """\
model blind {
  input clips: (4, 8, 8, 3)
  x = clips -> conv_lstm2d(4, 3) -> flatten
  output y = x -> dense(2, activation=softmax)
}
"""


def test_a_size_the_inference_cannot_tell_is_named_at_each_step_it_reaches():
    cost = model_cost(_graph(BLIND, "blind"))  # the pure-Python graph: conv_lstm2d's shape is left to Keras
    assert cost.unknown == [
        "x.conv_lstm2d: 'conv_lstm2d' has no cost rule",
        "x: the size of its input is not known",
        "y: the size of its input is not known",
    ]


def test_an_augmentation_that_is_an_identity_at_inference_costs_nothing_as_dropout():
    """Each layer the cost model counts as 0 for it gives Keras' inference its pictures back unchanged."""
    import keras
    import numpy as np

    from netdsl import registry
    from netdsl.cost.layers import INFERENCE_IDENTITIES
    from netdsl.custom import factory

    given = {"random_crop": {}, "max_num_bounding_boxes": {"max_number": 3}, "random_posterization": {"factor": (1, 4)}}
    factors = {"random_rotation", "random_contrast", "random_brightness", "random_hue", "random_saturation"}
    factors |= {"random_sharpness", "random_color_degeneration"}
    pictures = np.random.default_rng(0).uniform(0, 255, (2, 8, 9, 3)).astype("float32")
    for name in INFERENCE_IDENTITIES:
        kwargs = given.get(name, {"factor": 0.1} if name in factors else {})
        kwargs |= {"height_factor": 0.1} if name == "random_zoom" else {}
        kwargs |= {"height_factor": 0.1, "width_factor": 0.1} if name == "random_translation" else {}
        kwargs |= {"x_factor": 0.1} if name == "random_shear" else {}
        layer = factory.keras_object(registry.lookup("layer", name))(**kwargs)
        assert np.array_equal(keras.ops.convert_to_numpy(layer(pictures, training=False)), pictures), name


def test_mixed_precision_halves_the_activations_not_the_weights():
    graph = _graph(SPECS / "resnet50.net", "resnet50")
    full, mixed = (model_cost(graph, batch=16, precision=p) for p in ("float32", "mixed_float16"))
    assert full.param_bytes == mixed.param_bytes == 25_636_712 * 4
    image = 16 * 224 * 224 * 3 * 4  # the input keeps its float32
    indices = 16 * 4 * 4 * 114 * 114 * 64  # the max pool's int32 index per axis of its (114, 114, 64) input
    assert full.activation_bytes - image - indices == 2 * (mixed.activation_bytes - image - indices)
    assert full.flops == mixed.flops == 7_764_021_104


def test_the_optimizer_slots_are_the_specs_optimizers():
    adam = _graph(SPECS / "lightning_mlp.net", "lightning_mlp")
    sgd = _graph((SPECS / "lightning_mlp.net").read_text().replace("adam(learning_rate=1e-3)", "sgd"), "lightning_mlp")
    with_adam, with_sgd = model_cost(adam), model_cost(sgd)
    assert (with_adam.optimizer, with_sgd.optimizer) == ("adam", "sgd")
    assert with_adam.train_memory_bytes - with_sgd.train_memory_bytes == 2 * 101_770 * 4  # m and v


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--batch", "0"], "netdsl summary: error: argument --batch: expected a whole number of 1 or more, received 0"),
        (["--batch", "x"], "netdsl summary: error: argument --batch: expected a whole number of 1 or more, received x"),
        (
            ["--precision", "fp8"],
            "netdsl summary: error: argument --precision: invalid choice: 'fp8' "
            "(choose from 'float32', 'mixed_bfloat16', 'mixed_float16')",
        ),
    ],
)
def test_bad_cost_flags_are_one_line(capsys, flags, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["summary", str(SPECS / "lightning_mlp.net"), "--cost", *flags])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == message


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"precision": "fp8"}, "unknown precision 'fp8': use one of float32, mixed_float16, mixed_bfloat16"),
        ({"batch": 0}, "the batch must be a whole number of 1 or more, received 0"),
    ],
)
def test_bad_cost_arguments_of_the_library_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError) as error:
        netdsl.summary(SPECS / "lightning_mlp.net", cost=True, **kwargs)
    assert str(error.value) == message


def test_every_rule_is_a_layer_of_the_allow_list_and_every_activation_a_number():
    assert set(LAYER_RULES) <= set(ANATOMY)
    assert all(isinstance(v, int) and v >= 0 for v in ACTIVATION_FLOPS.values())


_NO_BACKEND = (
    "import sys\nfrom netdsl.cli import main\n"
    "code = main(['summary', sys.argv[1], '--cost', '--json'])\n"
    "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))\nsys.exit(code)\n"
)


def test_summary_cost_of_resnet50_imports_no_backend():
    done = subprocess.run(
        [sys.executable, "-c", _NO_BACKEND, str(SPECS / "resnet50.net")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "[]"
    assert json.loads("\n".join(done.stdout.splitlines()[:-1]))["resnet50"]["cost"]["flops"] == 7_764_021_104


def test_the_cost_room_imports_no_backend_module():
    import ast

    room = ROOT / "dsl" / "netdsl" / "cost"
    for path in room.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [
                n
                for n in names
                if n.split(".")[0] in ("keras", "tensorflow", "jax", "torch")
                or n.startswith(("netdsl.backend", "netdsl.custom"))
            ], path


@pytest.mark.parametrize(
    "optimizer, slots",
    [
        ("sgd", 0),
        ("sgd(momentum=0.9)", 1),
        ("rmsprop", 1),
        ("rmsprop(momentum=0.9, centered=true)", 3),
        ("adam(amsgrad=true)", 3),
        ("lion", 1),
    ],
)
def test_an_optimizers_arguments_add_the_slots_keras_keeps(optimizer, slots):
    def cost(name: str):
        text = (SPECS / "lightning_mlp.net").read_text().replace("adam(learning_rate=1e-3)", name)
        return model_cost(_graph(text, "lightning_mlp"))

    assert cost(optimizer).train_memory_bytes - cost("sgd").train_memory_bytes == slots * 101_770 * 4


def test_a_flattened_tensor_lives_as_long_as_its_view_is_read():
    spec = "model m {\n  input x: (8, 8)\n  output y = x -> dense(16) -> flatten -> dense(4) -> dense(2)\n}\n"
    cost = model_cost(_graph(spec, "m"))
    params = (8 * 16 + 16) + (128 * 4 + 4) + (4 * 2 + 2)
    # the input (an argument, held through the call), the first dense's 128 values (read again through the
    # flatten by the second dense) and the second dense's 4 at once
    assert cost.inference_memory_bytes == params * 4 + (64 + 128 + 4) * 4


def test_a_prediction_holds_its_input_through_the_call():
    cost = model_cost(_graph(SPECS / "lightning_mlp.net", "lightning_mlp"))
    # at the last step: the image's 3,136 B (the caller's argument), the hidden layer's 512 B, the logits' 40 B
    assert cost.inference_memory_bytes == 101_770 * 4 + 784 * 4 + 128 * 4 + 10 * 4


def test_a_backbone_of_any_size_costs_what_it_does_on_the_callers_pictures():
    """A zoo backbone takes `(none, none, 3)`; called on 160x160 pictures it is costed at that size, step by
    step, exactly as the same spec declared for 160x160 and used alone, with no unknown step."""
    zoo = ROOT / "dsl" / "netdsl" / "zoo" / "specs" / "mobilenet_v2.net"
    alone = _graph(zoo.read_text().replace("(none, none, 3)", "(160, 160, 3)"), "mobilenet_v2")
    used = _graph(
        'import "zoo:mobilenet_v2"\n\nmodel flowers {\n  input image: (160, 160, 3)\n'
        "  output f = image -> mobilenet_v2 -> global_average_pooling2d\n}\n",
        "flowers",
    )
    mine, theirs = model_cost(used), model_cost(alone)
    (backbone,) = [step for step in mine.steps if step.kind == "model mobilenet_v2"]
    assert not mine.unknown and not theirs.unknown
    assert backbone.macs == theirs.macs == 152_803_200  # MobileNetV2 1.0 at 160x160: 153 M multiply-adds
    assert backbone.flops == theirs.flops
    assert [s.output_shapes for s in used.nodes if s.kind == "mobilenet_v2"] == [[(5, 5, 1280)]]


def test_the_unknown_steps_of_a_backbone_of_unknown_size_are_counted_not_listed():
    used = _graph(
        'import "zoo:mobilenet_v2"\n\nmodel any {\n  input image: (none, none, 3)\n'
        "  output f = image -> mobilenet_v2 -> global_average_pooling2d\n}\n",
        "any",
    )
    (backbone,) = [step for step in model_cost(used).steps if step.kind == "model mobilenet_v2"]
    assert backbone.unknown.startswith("input_layer: the input's size varies; ")
    assert backbone.unknown.endswith("; and 151 more of its steps")
