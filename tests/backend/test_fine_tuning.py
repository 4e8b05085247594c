"""Issue 19, part 3: a part's initial weights from a file, frozen parts (a train section's fine-tuning).

A backbone is built, trained a step and saved; a second spec takes it as a nested
model with `init` and `freeze`, adds a new head and trains: the backbone's weights
stay bitwise those of the file, the head's change. Files are matched by layer name
(a `.keras`) or structure (a `.weights.h5`); a mismatch names the layer; a `.keras`
holding a Lambda layer gives its weights and runs nothing.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

import netdsl

BACKBONE = """
model backbone {
  input image: (8, 8, 3)
  output features = image -> conv2d(4, 3, name="conv") -> batch_norm -> tanh -> global_avg_pool2d
}
"""

HEAD = """
block head(n) {
  input x
  output y = x -> dense(8) -> dense(n)
}
"""


def spec_file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def data(n: int = 16):
    rng = np.random.default_rng(7)
    return rng.normal(size=(n, 8, 8, 3)).astype("float32"), rng.integers(0, 3, size=(n,))


@pytest.fixture(scope="module")
def trained_backbone(tmp_path_factory) -> Path:
    """The backbone with a trained classifier on top, saved: its weights are not the initializer's."""
    folder = tmp_path_factory.mktemp("backbone")
    spec = spec_file(
        folder,
        "pretrain.net",
        BACKBONE
        + HEAD
        + """
        model pretrain {
          input image: (8, 8, 3)
          f = image -> backbone
          output probs = f -> head(3)
          train {
            optimizer = adam(0.01)
            loss = sparse_categorical_crossentropy
          }
        }
    """,
    )
    keras.utils.set_random_seed(1)
    model = netdsl.build(spec, model="pretrain")
    model.fit(*data(), epochs=1, batch_size=8, verbose=0)
    model.save(folder / "pretrain.keras")
    model.get_layer("backbone").save(folder / "backbone.keras")
    return folder


def finetune_spec(folder: Path, train: str) -> Path:
    return spec_file(
        folder,
        "finetune.net",
        BACKBONE
        + HEAD
        + f"""
        model finetune {{
          input image: (8, 8, 3)
          f = image -> backbone
          output probs = f -> head(3)
          train {{
            optimizer = adam(0.05)
            loss = sparse_categorical_crossentropy
            {train}
          }}
        }}
    """,
    )


def weights_of(layer) -> list[np.ndarray]:
    return [np.array(w) for w in layer.get_weights()]


def test_a_frozen_backbone_from_a_file_stays_bitwise_equal_while_the_new_head_trains(trained_backbone):
    saved = keras.saving.load_model(trained_backbone / "backbone.keras")
    spec = finetune_spec(trained_backbone, 'init = {"backbone": "backbone.keras"}\nfreeze = ["backbone"]')
    model = netdsl.build(spec, model="finetune")
    backbone = model.get_layer("backbone")
    assert all(np.array_equal(a, b) for a, b in zip(weights_of(backbone), weights_of(saved)))
    head_before = weights_of(model.get_layer("probs.head.y.dense"))
    assert not backbone.trainable and len(model.trainable_weights) == 4
    model.fit(*data(), epochs=2, batch_size=8, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(weights_of(backbone), weights_of(saved)))
    assert not any(np.array_equal(a, b) for a, b in zip(weights_of(model.get_layer("probs.head.y.dense")), head_before))


def test_a_whole_model_and_a_block_instance_load_by_name_from_a_keras_file(trained_backbone):
    pretrained = keras.saving.load_model(trained_backbone / "pretrain.keras")
    whole = netdsl.build(finetune_spec(trained_backbone, 'init = "pretrain.keras"'), model="finetune")
    for name in ("backbone", "probs.head.y.dense", "probs.head.y"):
        got, want = weights_of(whole.get_layer(name)), weights_of(pretrained.get_layer(name))
        assert all(np.array_equal(a, b) for a, b in zip(got, want)), name
    head_only = netdsl.build(
        finetune_spec(trained_backbone, 'init = {"probs.head": "pretrain.keras"}'), model="finetune"
    )
    assert np.array_equal(
        weights_of(head_only.get_layer("probs.head.y"))[0], weights_of(pretrained.get_layer("probs.head.y"))[0]
    )
    assert not np.array_equal(
        weights_of(head_only.get_layer("backbone"))[0], weights_of(pretrained.get_layer("backbone"))[0]
    )


def test_a_weights_h5_file_loads_by_structure(trained_backbone):
    pretrained = keras.saving.load_model(trained_backbone / "pretrain.keras")
    pretrained.save_weights(trained_backbone / "pretrain.weights.h5")
    model = netdsl.build(finetune_spec(trained_backbone, 'init = "pretrain.weights.h5"'), model="finetune")
    x = data(4)[0]
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(pretrained(x)))


def test_a_mismatched_or_missing_layer_is_an_error_naming_it(trained_backbone, tmp_path):
    other = spec_file(tmp_path, "other.net", BACKBONE.replace("conv2d(4, 3", "conv2d(5, 3"))
    netdsl.build(other, model="backbone").save(trained_backbone / "wide.keras")
    spec = finetune_spec(trained_backbone, 'init = {"backbone": "wide.keras"}')
    with pytest.raises(
        netdsl.SpecError,
        match=r"layer 'conv' has weights of shapes \(3, 3, 3, 4\), \(4,\); "
        r"'wide.keras' holds \(3, 3, 3, 5\), \(5,\) for it",
    ):
        netdsl.build(spec, model="finetune")
    spec = finetune_spec(trained_backbone, 'init = "backbone.keras"')
    with pytest.raises(
        netdsl.SpecError,
        match=r"'backbone.keras' has no weights for layer 'backbone.conv', "
        r"'backbone.features.batch_norm', 'probs.head.y.dense' \(and 1 more\)",
    ):
        netdsl.build(spec, model="finetune")
    longer = finetune_spec(trained_backbone, 'init = "pretrain.keras"').read_text()
    longer = longer.replace("output probs = f -> head(3)", "output probs = f -> head(3) -> dense(2)")
    spec = spec_file(trained_backbone, "longer.net", longer)
    with pytest.raises(netdsl.SpecError, match="'pretrain.keras' has no weights for layer 'probs'.*init_strict"):
        netdsl.build(spec, model="finetune")
    spec.write_text(longer.replace('init = "pretrain.keras"', 'init = "pretrain.keras"\ninit_strict = false'))
    lenient = netdsl.build(spec, model="finetune")
    pretrained = keras.saving.load_model(trained_backbone / "pretrain.keras")
    assert np.array_equal(
        weights_of(lenient.get_layer("probs.head.y"))[0], weights_of(pretrained.get_layer("probs.head.y"))[0]
    )


def test_a_keras_file_with_a_lambda_layer_gives_its_weights_and_runs_nothing(tmp_path):
    ran = tmp_path / "ran"
    marker = str(ran)

    def touch(x):  # would leave a file behind if anything called it
        Path(marker).write_text("ran")
        return x

    inputs = keras.Input((4,), name="x")
    dense = keras.layers.Dense(3, name="out")
    keras.Model(inputs, dense(keras.layers.Lambda(touch)(inputs))).save(tmp_path / "lambda.keras")
    ran.unlink(missing_ok=True)
    spec = spec_file(
        tmp_path,
        "m.net",
        """
        model m {
          input x: (4,)
          output out = x -> dense(3)
          train {
            init = "lambda.keras"
          }
        }
    """,
    )
    model = netdsl.build(spec, model="m")
    np.testing.assert_array_equal(model.get_layer("out").get_weights()[0], dense.get_weights()[0])
    assert not ran.exists()


def test_check_names_the_part_a_pattern_misses_and_refuses_paths_outside_the_folder():
    text = textwrap.dedent(
        BACKBONE
        + HEAD
        + """
        model finetune {
          input image: (8, 8, 3)
          f = image -> backbone
          output probs = f -> head(3)
          train {
            init = {"backbon": "../backbone.keras"}
            freeze = ["probs.head*", "nothing*"]
          }
        }
    """
    )
    found = [(d.line, d.col, d.text) for d in netdsl.check(netdsl.parse(text, filename="ft.net"))]
    assert found == [
        (17, 21, "weights file '../backbone.keras' leaves the spec's folder"),
        (18, 38, "'nothing*' names no layer, block instance or nested model of 'finetune'"),
    ]


@pytest.mark.slow
def test_two_phase_fine_tuning_unfreezes_on_schedule_as_the_hand_written_recipe(trained_backbone, tmp_path):
    """keras.io's transfer-learning recipe: the head with the backbone frozen, then all of it at a lower rate."""
    spec = finetune_spec(
        trained_backbone,
        'init = {"backbone": "backbone.keras"}\nfreeze = ["backbone"]\n'
        "unfreeze_after = 2\nunfreeze_learning_rate = 0.001\n"
        "batch_size = 8\nepochs = 3\nshuffle = false",
    )
    # the head gives logits: a loss that reads them as probabilities is flat, and nothing would train
    spec.write_text(
        spec.read_text().replace(
            "loss = sparse_categorical_crossentropy", "loss = sparse_categorical_crossentropy(from_logits=true)"
        )
    )
    x, y = data()
    run = netdsl.train(spec, model="finetune", train=(x, y), seed=4, out=tmp_path / "runs")
    assert run.status == "finished" and len(run.history["loss"]) == 3

    keras.utils.set_random_seed(4)
    model = netdsl.build(spec, model="finetune")
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    model.get_layer("backbone").trainable = True
    model.get_layer("backbone").get_layer("features.batch_norm").trainable = False  # the guide: BN stays in inference
    model.compile(
        optimizer=keras.optimizers.Adam(0.001), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.fit(x, y, batch_size=8, epochs=3, initial_epoch=2, shuffle=False, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(run.model.get_weights(), model.get_weights()))
    saved = keras.saving.load_model(trained_backbone / "backbone.keras")
    after, before = weights_of(run.model.get_layer("backbone")), weights_of(saved)
    assert run.model.get_layer("backbone").trainable and len(run.model.trainable_weights) == 6
    assert not np.array_equal(after[0], before[0]), "the second phase trained the backbone's convolution"
    # gamma, beta, moving mean and variance: the pretrained ones, the batches did not move them
    assert all(np.array_equal(a, b) for a, b in zip(after[2:], before[2:])), "a batch norm left inference mode"
    assert float(run.model.optimizer.learning_rate) == pytest.approx(0.001)


DEEP = """
model deep {
  input image: (8, 8, 3)
  h = image -> conv2d(4, 3, padding="same", name="low") -> batch_norm(name="low_bn") -> relu
  output features = h -> conv2d(4, 3, name="top") -> batch_norm(name="top_bn") -> tanh -> global_avg_pool2d
}

model tuned {
  input image: (8, 8, 3)
  output probs = image -> deep -> dense(3)
  train {
    optimizer = adam(0.05)
    loss = sparse_categorical_crossentropy(from_logits=true)
    freeze = ["deep"]
    unfreeze = ["deep.top*"]
    unfreeze_after = 1
    unfreeze_learning_rate = 0.01
    batch_size = 8
    epochs = 2
    shuffle = false
  }
}
"""


@pytest.mark.slow
def test_a_second_phase_that_unfreezes_the_top_of_the_backbone_is_the_hand_written_recipe(tmp_path):
    """keras.io's EfficientNet example: the head trains on a frozen backbone, then only the backbone's top
    layers join it, batch norms excepted. `unfreeze = ["deep.top*"]` is that recipe written by hand in Keras:
    the same weights after both phases, the low layers and every batch norm as they were built."""
    spec = spec_file(tmp_path, "tuned.net", DEEP)
    x, y = data()
    run = netdsl.train(spec, model="tuned", train=(x, y), seed=4, out=tmp_path / "runs")
    assert run.status == "finished" and len(run.history["loss"]) == 2

    keras.utils.set_random_seed(4)
    model = netdsl.build(spec, model="tuned")
    built = weights_of(model.get_layer("deep"))
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    deep = model.get_layer("deep")
    deep.trainable = True
    for layer in deep.layers:  # the top convolution trains; its batch norm stays in inference mode
        layer.trainable = layer.name == "top"
    model.compile(
        optimizer=keras.optimizers.Adam(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.fit(x, y, batch_size=8, epochs=2, initial_epoch=1, shuffle=False, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(run.model.get_weights(), model.get_weights()))
    assert sorted(w.path for w in run.model.trainable_weights) == sorted(w.path for w in model.trainable_weights)
    after = {layer.name: weights_of(layer) for layer in run.model.get_layer("deep").layers if layer.weights}
    before = dict(zip([layer.name for layer in deep.layers if layer.weights], _split(built, deep)))
    for name in ("low", "low_bn", "top_bn"):
        assert all(np.array_equal(a, b) for a, b in zip(after[name], before[name])), name
    assert not np.array_equal(after["top"][0], before["top"][0]), "the second phase trained the top convolution"


def _split(weights: list[np.ndarray], model) -> list[list[np.ndarray]]:
    """`weights` (a model's get_weights()) cut into its layers' lists, in `model.layers` order."""
    cut, at = [], 0
    for layer in model.layers:
        if layer.weights:
            cut.append(weights[at : at + len(layer.weights)])
            at += len(layer.weights)
    return cut


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('unfreeze = ["deep.top*"]', "unfreeze needs unfreeze_after (the epochs of the first phase)"),
        (
            'unfreeze = ["probs"]\n    unfreeze_after = 1',
            "'probs' names 'probs', which freeze does not freeze: the second phase unfreezes parts of what the "
            "first froze",
        ),
        ("unfreeze = []\n    unfreeze_after = 1", "unfreeze names at least one part"),
    ],
)
def test_unfreeze_is_checked_against_freeze(setting, message):
    text = DEEP.replace(
        'unfreeze = ["deep.top*"]\n    unfreeze_after = 1\n    unfreeze_learning_rate = 0.01\n', setting + "\n"
    )
    assert setting in text
    assert [d.text for d in netdsl.check(netdsl.parse(text, filename="tuned.net"))] == [message]


def test_the_second_phase_keeps_the_first_phases_steps_per_execution(tmp_path):
    # A job's model steps once per execution (its placement says so at build); unfreezing, mid-run and
    # outside the placement's scope, recompiles with the same settings, not the backend's default.
    from netdsl.backend.compiler import build_one, execution_of, unfreeze
    from netdsl.semantics.session import LoadedSpec

    spec = finetune_spec(tmp_path, 'freeze = ["backbone"]\nunfreeze_after = 1\nunfreeze_learning_rate = 0.001')
    for one_step, steps in ((True, 1), (False, 32)):
        model = build_one(LoadedSpec.of(spec).model("finetune"), one_step_per_execution=one_step)
        assert model.steps_per_execution == steps
        unfreeze(model)
        assert (model.steps_per_execution, execution_of(model).steps_per_execution) == (steps, steps)
        assert float(model.optimizer.learning_rate) == pytest.approx(0.001)


# ------------------------------------------------ weights from outside the spec (build --weights, train --init-from)


def test_build_weights_loads_the_whole_model_as_init_does_and_names_a_mismatch(trained_backbone, tmp_path):
    pretrained = keras.saving.load_model(trained_backbone / "pretrain.keras")
    spec = finetune_spec(trained_backbone, "")
    model = netdsl.build(spec, model="finetune", weights=trained_backbone / "pretrain.keras")
    x = data(4)[0]
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(pretrained(x)))
    (summary,) = netdsl.summary(spec, model="finetune", weights=trained_backbone / "pretrain.keras").values()
    assert summary["params"] == pretrained.count_params()
    wide = spec_file(tmp_path, "wide.net", BACKBONE.replace("conv2d(4, 3", "conv2d(5, 3"))
    with pytest.raises(netdsl.UsageError) as error:
        netdsl.build(wide, model="backbone", weights=trained_backbone / "backbone.keras")
    assert str(error.value) == (
        f"layer 'conv' has weights of shapes (3, 3, 3, 5), (5,); "
        f"'{trained_backbone / 'backbone.keras'}' holds (3, 3, 3, 4), (4,) for it"
    )
    with pytest.raises(netdsl.UsageError, match=r"^weights file 'nowhere.keras' does not exist$"):
        netdsl.build(wide, model="backbone", weights="nowhere.keras")
    with pytest.raises(
        netdsl.UsageError, match=r"^a weights file is a .keras, .weights.h5 or Keras 2 .h5 path, received 'w.hdf5'$"
    ):
        netdsl.build(wide, model="backbone", weights="w.hdf5")


def test_the_cli_prints_what_init_and_weights_loaded_and_summary_shows_the_frozen_part(
    trained_backbone, tmp_path, capsys, monkeypatch
):
    from netdsl.cli import main

    monkeypatch.chdir(trained_backbone)
    spec = finetune_spec(trained_backbone, 'init = {"backbone": "backbone.keras"}\nfreeze = ["backbone"]')
    assert main(["build", str(spec), "-o", str(tmp_path), "--no-diagram", "--model", "finetune"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "init: 2 layers of 'backbone' from backbone.keras" in lines
    assert (
        main(
            [
                "build",
                "finetune.net",
                "-o",
                str(tmp_path),
                "--no-diagram",
                "--model",
                "finetune",
                "--weights",
                "pretrain.keras",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[lines.index("frozen: backbone") + 1 :][:4] == [
        "outputs: probs (3,)",
        "init: 2 layers of 'backbone' from backbone.keras",
        "init: 4 layers of the model from pretrain.keras",
        f"wrote {tmp_path / 'finetune.keras'}",
    ]
    assert main(["summary", "finetune.net", "--model", "finetune", "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)["finetune"]
    # by hand: the frozen backbone conv 3*3*3*4+4 = 112 and batch norm 4*4 = 16; the head 4*8+8 + 8*3+3 = 67
    assert (numbers["params"], numbers["trainable_params"], numbers["non_trainable_params"]) == (195, 67, 128)
    assert main(["summary", "finetune.net", "--model", "finetune"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[-3:] == ["params: 195 (trainable 67, non-trainable 128)", "frozen: backbone", "outputs: probs (3,)"]


def test_train_init_from_starts_from_the_file_and_records_it(trained_backbone, tmp_path, capsys):
    spec = finetune_spec(trained_backbone, 'freeze = ["backbone"]\nbatch_size = 8\nepochs = 1')
    x, y = data()
    weights = trained_backbone / "pretrain.keras"
    run = netdsl.train(
        spec, model="finetune", train=(x, y), seed=4, out=tmp_path / "runs", progress="line", init_from=weights
    )
    assert run.status == "finished"
    assert f"init: 4 layers of the model from {weights}" in capsys.readouterr().err.splitlines()
    assert json.loads((run.dir / "config.json").read_text())["settings"]["init_from"] == str(weights)
    pretrained = keras.saving.load_model(weights)  # the frozen backbone: still the file's, bitwise
    assert all(
        np.array_equal(a, b)
        for a, b in zip(weights_of(run.model.get_layer("backbone")), weights_of(pretrained.get_layer("backbone")))
    )
    with pytest.raises(netdsl.UsageError, match=r"--init-from: weights file 'nowhere.keras' does not exist$"):
        netdsl.train(spec, model="finetune", train=(x, y), out=tmp_path / "runs", init_from="nowhere.keras")


NESTED_SEQUENTIAL = """\
model stem {
  input x: (none, none, 3)
  output y = x -> batch_norm -> conv2d(4, 2, strides=2)
}

model m {
  input image: (8, 8, 3)
  output y = image -> stem -> conv2d(2, 1)

  train {
    optimizer = adam
    loss = mse
    init = "keras2.h5"
  }
}
"""


def test_a_keras_2_file_holds_a_nested_model_as_one_layer_with_its_trainable_weights_first(tmp_path):
    """Keras 2 saved a nested model (keras.applications ConvNeXt's `Sequential` stem) as ONE layer of the file,
    its weights trainable first: the batch norm's moving statistics after the convolution's kernel. netdsl
    matches the file as Keras does and gives the outputs of the model Keras loads it into."""
    import h5py
    from keras.src.legacy.saving.legacy_h5_format import save_weights_to_hdf5_group

    inputs = keras.Input((8, 8, 3))
    stem = keras.Sequential([keras.layers.BatchNormalization(), keras.layers.Conv2D(4, 2, strides=2)], name="stem")
    reference = keras.Model(inputs, keras.layers.Conv2D(2, 1)(stem(inputs)))
    rng = np.random.default_rng(5)
    for weight in reference.weights:
        weight.assign(rng.uniform(0.5, 1.5, weight.shape).astype("float32"))  # variances > 0
    with h5py.File(tmp_path / "keras2.h5", "w") as h5:
        save_weights_to_hdf5_group(h5, reference)
        stored = [name.rsplit("/", 1)[-1] for name in h5["stem"].attrs["weight_names"]]
    assert stored == ["gamma", "beta", "kernel", "bias", "moving_mean", "moving_variance"]  # one layer of the file
    spec = tmp_path / "m.net"
    spec.write_text(NESTED_SEQUENTIAL)
    model = netdsl.build(spec, model="m")
    pictures = rng.uniform(-1, 1, (2, 8, 8, 3)).astype("float32")
    ours = keras.ops.convert_to_numpy(model(pictures, training=False))
    theirs = keras.ops.convert_to_numpy(reference(pictures, training=False))
    assert np.max(np.abs(ours - theirs)) <= 1e-5
