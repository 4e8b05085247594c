"""`netdsl train`, `netdsl evaluate`, `netdsl predict` as a user runs them: what they print, exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from netdsl.cli import main

RNG = np.random.default_rng(5)
SPEC = """\
model tiny {
  input x: (3,)
  output probs = x -> dense(2, activation=softmax)
  train {
    optimizer = sgd(learning_rate=0.1)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    batch_size = 5
    epochs = 2
  }
}
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("tiny.net").write_text(SPEC)
    rows = ["f1,f2,f3,label"] + [f"{a:.3f},{b:.3f},{c:.3f},{int(a > b)}" for a, b, c in RNG.random((40, 3))]
    Path("t.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def best_weights(run_dir: str) -> str:
    """The line every command reading the run prints on stderr for its default weights (its best epoch)."""
    report = json.loads(Path(run_dir, "report.json").read_text())
    best = report["best"]
    return f"weights: best (epoch {best['epoch']} of {report['epochs_run']}, val_loss {best['val_loss']:.4f})"


def test_train_prints_the_tutorials_numbers_and_the_run_folder(work, capsys):
    code, out, err = run(capsys, "train", "tiny.net", "--data", "t.csv", "--targets", "probs=label", "--seed", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("status: finished (2 of 2 epochs, ")
    assert lines[1].startswith("train: loss ") and " accuracy " in lines[1]
    assert lines[2].startswith("val:   val_loss ") and lines[3].startswith("test:  test_loss ")
    assert lines[4] == "run folder: runs/tiny-1"
    # stderr is not a terminal here: one line per epoch
    assert err.splitlines()[0] == "run folder: runs/tiny-1"
    assert [line.split("  ")[0] for line in err.splitlines()[1:3]] == ["epoch 1/2", "epoch 2/2"]
    assert err.splitlines()[3:] == [best_weights("runs/tiny-1")]  # the weights the test: line scored
    code, out, err = run(
        capsys,
        "train",
        "tiny.net",
        "--data",
        "t.csv",
        "--targets",
        "probs=label",
        "--progress",
        "none",
        "--epochs",
        "1",
        "--split",
        "0.5,0.5",
    )
    assert code == 0 and err == "run folder: runs/tiny-2\n" and "test:" not in out


def test_a_run_folder_named_with_control_characters_is_printed_escaped(work, capsys):
    # a folder name is text from outside: an ESC or a newline in it cannot recolour the terminal or fake a line
    code, out, err = run(
        capsys,
        "train",
        "tiny.net",
        "--data",
        "t.csv",
        "--targets",
        "probs=label",
        "--progress",
        "none",
        "--epochs",
        "1",
        "-o",
        "runs\x1b[31m\nfake",
    )
    assert code == 0
    assert err == "run folder: runs\\x1b[31m\\nfake/tiny-1\n" + best_weights("runs\x1b[31m\nfake/tiny-1") + "\n"
    assert out.splitlines()[-1] == "run folder: runs\\x1b[31m\\nfake/tiny-1"
    assert Path("runs\x1b[31m\nfake", "tiny-1", "report.json").is_file()


def test_a_progress_bar_redraws_in_place(work, capsys):
    code, _, err = run(
        capsys, "train", "tiny.net", "--data", "t.csv", "--targets", "probs=label", "--progress", "bar", "--epochs", "1"
    )
    assert code == 0
    assert "\repoch 1/1 [" in err.replace("\x1b[2K", "") and "] 7/7" in err  # 32 training rows / 5 = 7 batches


def test_evaluate_and_predict_a_run_folder(work, capsys):
    assert run(capsys, "train", "tiny.net", "--data", "t.csv", "--targets", "probs=label", "--progress", "none")[0] == 0
    code, out, err = run(
        capsys,
        "evaluate",
        "runs/tiny-1",
        "--data",
        "t.csv",
        "--targets",
        "probs=label",
        "--json",
        "--checkpoint",
        "last",
    )
    values = json.loads(out)
    assert code == 0 and set(values) == {"loss", "accuracy"} and err == "weights: last (epoch 2 of 2)\n"
    # the folder's model.keras at the run's batch size (5): the same sums, so the same printed digits
    # (at the default 32 the batches' float32 sums differ in the last bits, and .6g can round apart)
    code, out, _ = run(
        capsys,
        "evaluate",
        "runs/tiny-1/model.keras",
        "--data",
        "t.csv",
        "--targets",
        "probs=label",
        "--batch-size",
        "5",
    )
    assert out.splitlines()[0].split() == ["loss", f"{values['loss']:.6g}"]
    code, out, _ = run(
        capsys, "predict", "runs/tiny-1", "--data", "t.csv", "--targets", "probs=label", "-o", "preds.npz"
    )
    assert code == 0 and out == "wrote preds.npz (40 samples; probs (40, 2))\n"
    with np.load("preds.npz") as preds:
        assert preds.files == ["source", "probs", "class", "classes"]
        assert np.allclose(preds["probs"].sum(axis=1), 1.0, atol=1e-5)
        assert preds["source"].tolist() == [str(line) for line in range(2, 42)]  # each row's line in t.csv
        assert preds["classes"].tolist() == ["0", "1"]  # integer labels: the classes by number
        assert preds["class"].tolist() == [str(i) for i in preds["probs"].argmax(axis=1)]
        first = preds["probs"]
    # the run recorded the columns its input is made of (config.json): the label column is left aside
    # by name, without --targets
    config = json.loads(Path("runs/tiny-1/config.json").read_text())
    assert config["columns"] == {"x": ["f1", "f2", "f3"]} and config["classes"] == {"probs": ["0", "1"]}
    code, out, err = run(capsys, "predict", "runs/tiny-1", "--data", "t.csv", "-o", "preds.csv")
    assert (code, err) == (0, best_weights("runs/tiny-1") + "\n")
    rows = list(csv.DictReader(Path("preds.csv").open(newline="")))
    assert list(rows[0]) == ["source", "class", "0", "1"]
    np.testing.assert_allclose([[float(r["0"]), float(r["1"])] for r in rows], first, atol=1e-6)
    code, _, err = run(capsys, "predict", "runs/tiny-1", "--data", "t.csv", "-o", "preds.txt")
    assert (code, err) == (2, "netdsl predict: error: -o takes a .csv, .npz or .json file; received 'preds.txt'\n")
    # a .keras file outside a run folder records no columns: the label column must be named
    Path("elsewhere").mkdir()
    Path("elsewhere/tiny.keras").write_bytes(Path("runs/tiny-1/model.keras").read_bytes())
    code, _, err = run(capsys, "predict", "elsewhere/tiny.keras", "--data", "t.csv", "-o", "preds.npz")
    assert (code, err) == (
        1,
        "t.csv:1:1: error: input 'x' expects 3 values per row (shape (3,)), found 4 numeric columns\n",
    )  # the label column: name it with --targets


def test_an_image_folder_trains_end_to_end(work, capsys):
    Path("img.net").write_text(
        SPEC.replace("tiny", "img")
        .replace("input x: (3,)", "input x: (8, 8, 3)")
        .replace("x -> dense", "x -> rescaling(1.0 / 255) -> flatten -> dense")
    )
    for label in ("cats", "dogs"):
        Path("pics", label).mkdir(parents=True)
        for i in range(5):
            image = RNG.integers(0, 256, (10, 12, 3), dtype=np.uint8)
            Path("pics", label, f"{i}.jpg").write_bytes(tf.io.encode_jpeg(image).numpy())
    code, out, err = run(capsys, "train", "img.net", "--data", "pics", "--split", "0.8,0.2", "--progress", "none")
    assert code == 0, err
    assert json.loads(Path("runs/img-1/report.json").read_text())["samples"] == {"train": 8, "val": 2}


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--val", "t.csv"],
            "netdsl train: error: --val and --test go with --train (with --data, --split cuts the data)",
        ),
        (
            ["--train", "t.csv", "--split", "0.5,0.5"],
            "netdsl train: error: --split cuts --data; with --train, give --val and --test",
        ),
        ([], "netdsl train: error: no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]"),
        (
            ["--data", "t.csv", "--targets", "probs"],
            "netdsl train: error: --targets takes OUTPUT=COLUMN pairs, like probs=label; received 'probs'",
        ),
        (["--data", "t.csv", "--epochs", "0"], "netdsl train: error: --epochs takes a positive integer; received 0"),
    ],
)
def test_usage_errors_exit_2_before_anything_runs(work, capsys, args, message):
    code, out, err = run(capsys, "train", "tiny.net", *args)
    assert (code, out, err) == (2, "", message + "\n")
    assert not Path("runs").exists()


def test_a_spec_that_cannot_train_is_a_spec_error_at_the_model(work, capsys):
    Path("bare.net").write_text("model bare {\n  input x: (3,)\n  output y = x -> dense(1)\n}\n")
    code, _, err = run(capsys, "train", "bare.net", "--data", "t.csv")
    assert code == 1
    assert err.splitlines()[0] == (
        "bare.net:1:1: error: model 'bare' has no train section; training needs a loss; "
        "add: train { optimizer = adam  loss = sparse_categorical_crossentropy }"
    )
    assert not Path("runs").exists()


def test_resume_auto_starts_a_new_run_when_none_is_unfinished(work, capsys):
    code, out, _ = run(
        capsys,
        "train",
        "tiny.net",
        "--data",
        "t.csv",
        "--targets",
        "probs=label",
        "--progress",
        "none",
        "--resume",
        "auto",
    )
    assert code == 0 and "run folder: runs/tiny-1" in out
    code, out, _ = run(
        capsys,
        "train",
        "tiny.net",
        "--data",
        "t.csv",
        "--targets",
        "probs=label",
        "--progress",
        "none",
        "--resume",
        "auto",
    )
    assert code == 0 and "run folder: runs/tiny-2" in out  # tiny-1 finished: a new run
    code, _, err = run(capsys, "train", "tiny.net", "--resume", "auto")
    assert (code, err) == (
        2,
        "netdsl train: error: no training data: give --data SRC, or --train SRC [--val SRC] "
        "[--test SRC] (and no unfinished run of 'tiny' in runs to resume)\n",
    )
    code, _, err = run(capsys, "evaluate", "runs/tiny-3", "--data", "t.csv")
    assert (code, err) == (1, "runs/tiny-3: error: no such file or folder\n")


def test_a_plugin_layer_trains_and_its_run_evaluates(work, capsys, monkeypatch):
    import sys
    import textwrap

    from netdsl import registry

    Path("halve_plugin.py").write_text(
        textwrap.dedent("""
        import keras
        import netdsl

        @netdsl.register_layer("halve")
        @keras.saving.register_keras_serializable(package="halve_plugin")
        class Halve(keras.layers.Layer):
            "Multiply by one half."
            def call(self, x):
                return x * 0.5
    """)
    )
    monkeypatch.syspath_prepend(str(work))
    Path("plug.net").write_text(SPEC.replace("x -> dense", "x -> halve -> dense"))
    try:
        code, _, err = run(capsys, "train", "plug.net", "--data", "t.csv", "--targets", "probs=label")
        assert code == 1 and "unknown layer 'halve'" in err and not Path("runs").exists()
        code, _, err = run(
            capsys,
            "train",
            "plug.net",
            "--data",
            "t.csv",
            "--targets",
            "probs=label",
            "--plugin",
            "halve_plugin",
            "--progress",
            "none",
        )
        assert code == 0, err
        code, out, err = run(
            capsys, "evaluate", "runs/tiny-1", "--data", "t.csv", "--targets", "probs=label", "--plugin", "halve_plugin"
        )
        assert code == 0 and out.startswith("loss"), err
    finally:
        registry.reset_plugins()
        sys.modules.pop("halve_plugin", None)


PER_CLASS = """\
model per_class {
  input x: (3,)
  output probs = x -> dense(2, activation=softmax)
  train {
    optimizer = sgd(learning_rate=0.1)
    loss = categorical_crossentropy
    metrics = [f1_score, accuracy]
    batch_size = 5
    epochs = 2
  }
}
"""


def test_a_metric_of_one_value_per_class_is_a_list_everywhere(work, capsys):
    """f1_score without `average`: a list in report.json, history.csv and --json, `[a, b]` in the
    CLI's lines, one curve per class; equal to Keras' own F1Score on the run's model."""
    import keras

    Path("per_class.net").write_text(PER_CLASS)
    x = RNG.random((40, 3)).astype("float32")
    labels = (x[:, 0] > x[:, 1]).astype(int)
    np.savez("pc.npz", x=x, probs=np.eye(2, dtype="float32")[labels])
    code, out, err = run(capsys, "train", "per_class.net", "--data", "pc.npz", "--seed", "2", "--progress", "line")
    assert code == 0 and "Traceback" not in err
    report = json.loads(Path("runs/per_class-1/report.json").read_text())
    for group in ("train", "val", "test"):
        assert isinstance(report[group]["f1_score"], list) and len(report[group]["f1_score"]) == 2
    train = report["train"]["f1_score"]
    lines = out.splitlines()
    assert lines[1] == (
        f"train: loss {report['train']['loss']:.4f}  accuracy {report['train']['accuracy']:.4f}  "
        f"f1_score [{train[0]:.4f}, {train[1]:.4f}]"
    )
    epoch_line = err.splitlines()[2]
    assert epoch_line.startswith("epoch 2/2  loss ") and f"  f1_score [{train[0]:.4g}, {train[1]:.4g}]  " in epoch_line
    history = Path("runs/per_class-1/history.csv").read_text().splitlines()
    assert history[0] == "epoch,loss,accuracy,f1_score,val_loss,val_accuracy,val_f1_score"
    assert json.loads(next(csv.reader([history[2]]))[3]) == train
    assert "train [0]" in Path("runs/per_class-1/curves.svg").read_text()

    code, out, err = run(capsys, "evaluate", "runs/per_class-1", "--data", "pc.npz", "--json", "--checkpoint", "last")
    assert (code, err) == (0, "weights: last (epoch 2 of 2)\n")
    values = json.loads(out)
    model = keras.saving.load_model("runs/per_class-1/model.keras")
    metric = keras.metrics.F1Score()
    for start in range(0, 40, 5):  # the run's batch size: Keras sums its counts batch by batch
        metric.update_state(np.eye(2, dtype="float32")[labels[start : start + 5]], model(x[start : start + 5]))
    np.testing.assert_allclose(values["f1_score"], np.asarray(metric.result()), atol=1e-6)
    code, out, _ = run(capsys, "evaluate", "runs/per_class-1", "--data", "pc.npz", "--checkpoint", "last")
    f1 = values["f1_score"]
    assert code == 0 and out.splitlines()[2] == f"f1_score  [{f1[0]:.6g}, {f1[1]:.6g}]"


def test_r2_score_of_one_value_per_output_column_trains_and_evaluates_as_keras(work, capsys):
    """r2_score(class_aggregation=none) is Keras' R2Score(class_aggregation=None): a list, one R2 per column."""
    import keras

    Path("columns.net").write_text(
        HUBER.replace("robust", "columns")
        .replace("dense(1)", "dense(2)")
        .replace("metrics = [mae]", "metrics = [r2_score(class_aggregation=none)]")
    )
    x = RNG.random((40, 3)).astype("float32")
    y = np.stack([3 * x[:, 0] - 1, x[:, 1] + x[:, 2]], axis=1).astype("float32")
    np.savez("cols.npz", x=x, y=y)
    code, out, err = run(capsys, "train", "columns.net", "--data", "cols.npz", "--seed", "3", "--progress", "none")
    assert code == 0, err
    assert out.splitlines()[1].startswith("train: loss ") and " r2_score [" in out.splitlines()[1]
    code, out, err = run(capsys, "evaluate", "runs/columns-1", "--data", "cols.npz", "--json", "--checkpoint", "last")
    assert (code, err) == (0, "weights: last (epoch 2 of 2)\n")
    values = json.loads(out)
    metric = keras.metrics.R2Score(class_aggregation=None)
    metric.update_state(y, keras.saving.load_model("runs/columns-1/model.keras")(x))
    assert isinstance(values["r2_score"], list) and len(values["r2_score"]) == 2
    np.testing.assert_allclose(values["r2_score"], np.asarray(metric.result()), atol=1e-5)


HUBER = """\
model robust {
  input x: (3,)
  output y = x -> dense(1)
  train {
    optimizer = sgd(learning_rate=0.1)
    loss = huber(delta=0.5)
    metrics = [mae]
    batch_size = 5
    epochs = 2
  }
}
"""


def test_a_run_folder_evaluates_with_its_specs_huber_delta(work, capsys):
    """Keras saves Huber without `delta`: the reloaded model.keras alone scores with delta 1.0. A run
    folder is scored with its spec's loss, equal to a hand-written Keras evaluate with Huber(delta=0.5)."""
    import keras

    Path("robust.net").write_text(HUBER)
    x = RNG.random((40, 3)).astype("float32")
    y = (3 * x[:, :1] - 1).astype("float32")
    np.savez("reg.npz", x=x, y=y)
    assert run(capsys, "train", "robust.net", "--data", "reg.npz", "--seed", "3", "--progress", "none")[0] == 0
    model = keras.saving.load_model("runs/robust-1/model.keras")
    model.compile(loss=keras.losses.Huber(delta=0.5), metrics=["mae"])
    wanted = model.evaluate(x, y, batch_size=5, return_dict=True, verbose=0)
    model.compile(loss=keras.losses.Huber(delta=1.0), metrics=["mae"])
    saved_delta = model.evaluate(x, y, batch_size=5, return_dict=True, verbose=0)["loss"]
    assert abs(saved_delta - wanted["loss"]) > 1e-3  # the two deltas score apart on this data
    for trained, which, weights in (
        ("runs/robust-1", ["--checkpoint", "last"], "weights: last (epoch 2 of 2)\n"),
        ("runs/robust-1/model.keras", [], ""),
    ):
        code, out, err = run(capsys, "evaluate", trained, "--data", "reg.npz", "--batch-size", "5", "--json", *which)
        assert (code, err) == (0, weights)
        values = json.loads(out)
        assert abs(values["loss"] - wanted["loss"]) <= 1e-6 and abs(values["mae"] - wanted["mae"]) <= 1e-6
    # The spec edited since: its train section may not be the run's, so the file's own compile scores (delta 1.0).
    Path("robust.net").write_text(HUBER + "# edited\n")
    code, out, _ = run(
        capsys, "evaluate", "runs/robust-1", "--data", "reg.npz", "--batch-size", "5", "--json", "--checkpoint", "last"
    )
    assert code == 0 and abs(json.loads(out)["loss"] - saved_delta) <= 1e-6


def test_a_run_folder_reads_its_spec_from_the_include_folders_it_trained_with(work, capsys):
    """A spec importing from an -I folder: config.json records the folder, and evaluate of the run folder
    re-reads the spec from it, so the spec's huber(delta=0.5) scores, not the saved file's delta 1.0
    (the spec did not load without the folder, and the file's own compile scored silently)."""
    import keras

    Path("shared").mkdir()
    Path("shared/blocks.net").write_text(
        "let huber_delta = 0.5\n\nblock regressor(units) {\n  input x\n  output y = x -> dense(units)\n}\n"
    )
    Path("project").mkdir()
    Path("project/robust.net").write_text(
        'import "../shared/blocks.net"\n\n'
        + HUBER.replace("x -> dense(1)", "x -> regressor(1)").replace("huber(delta=0.5)", "huber(delta=huber_delta)")
    )
    x = RNG.random((40, 3)).astype("float32")
    y = (3 * x[:, :1] - 1).astype("float32")
    np.savez("reg.npz", x=x, y=y)
    code, _, err = run(
        capsys, "train", "project/robust.net", "-I", "shared", "--data", "reg.npz", "--seed", "3", "--progress", "none"
    )
    assert code == 0, err
    config = json.loads(Path("runs/robust-1/config.json").read_text())
    assert config["spec"]["include"] == [str(work / "shared")]  # absolute: evaluate may run from elsewhere
    model = keras.saving.load_model("runs/robust-1/model.keras")
    model.compile(loss=keras.losses.Huber(delta=0.5), metrics=["mae"])
    wanted = model.evaluate(x, y, batch_size=5, return_dict=True, verbose=0)
    model.compile(loss=keras.losses.Huber(delta=1.0), metrics=["mae"])
    assert abs(model.evaluate(x, y, batch_size=5, return_dict=True, verbose=0)["loss"] - wanted["loss"]) > 1e-3
    code, out, err = run(
        capsys, "evaluate", "runs/robust-1", "--data", "reg.npz", "--batch-size", "5", "--json", "--checkpoint", "last"
    )
    assert (code, err) == (0, "weights: last (epoch 2 of 2)\n")
    values = json.loads(out)
    assert abs(values["loss"] - wanted["loss"]) <= 1e-6 and abs(values["mae"] - wanted["mae"]) <= 1e-6


def test_adjusted_r2_trains_and_evaluates_as_keras_computes_it_eagerly(work, capsys):
    """r2_score(num_regressors=2): Keras' own R2Score fails inside a compiled step (TensorFlow: a "data"
    error; JAX: TracerBoolConversionError); netdsl's AdjustedR2Score trains, and evaluate equals Keras'
    own R2Score run eagerly over the same batches."""
    import keras

    Path("adjusted.net").write_text(
        HUBER.replace("robust", "adjusted").replace("metrics = [mae]", "metrics = [r2_score(num_regressors=2)]")
    )
    x = RNG.random((40, 3)).astype("float32")
    y = (3 * x[:, :1] - 1 + 0.1 * RNG.standard_normal((40, 1))).astype("float32")
    np.savez("adj.npz", x=x, y=y)
    code, out, err = run(capsys, "train", "adjusted.net", "--data", "adj.npz", "--seed", "4", "--progress", "none")
    assert code == 0, err
    assert " r2_score " in out.splitlines()[1]
    code, out, err = run(capsys, "evaluate", "runs/adjusted-1", "--data", "adj.npz", "--json", "--checkpoint", "last")
    assert (code, err) == (0, "weights: last (epoch 2 of 2)\n")
    model = keras.saving.load_model("runs/adjusted-1/model.keras")
    keras_own = keras.metrics.R2Score(num_regressors=2)
    for start in range(0, 40, 5):
        keras_own.update_state(y[start : start + 5], model(x[start : start + 5]))
    assert abs(json.loads(out)["r2_score"] - float(keras_own.result())) <= 1e-6
