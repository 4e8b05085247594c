"""`predict` and `evaluate` on exported files, run in their own runtimes; `export --data` and `--seed`.

The files are exported once per module from tests/fixtures/deploy/scored.net (models with a
train section) with `seed=5` and `data=` (so the export itself exercises both), and
compared with the Keras model built from the same seed: the outputs within the format's
tolerance, the loss and metrics equal to Keras' own `evaluate` of the `.keras` file.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.deploy import verify as deploy_verify
from netdsl.deploy.formats import FORMATS

ROOT = Path(__file__).resolve().parents[2]
SCORED = ROOT / "tests" / "fixtures" / "deploy" / "scored.net"
SEED = 5
FILES = {"onnx": "classifier.onnx", "litert": "classifier.tflite", "saved_model": "classifier_saved_model"}


def seeded_keras(model: str, seed: int = SEED):
    import keras

    keras.utils.set_random_seed(seed)  # as export(seed=...) does right before building
    return netdsl.build(SCORED, model=model)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exported")
    rng = np.random.default_rng(0)
    np.savez(
        folder / "classifier.npz",
        features=rng.standard_normal((40, 12)).astype("float32"),
        probs=rng.integers(0, 3, 40),
    )
    np.savez(
        folder / "two_heads.npz",
        a=rng.standard_normal((40, 6)).astype("float32"),
        b=rng.standard_normal((40, 4)).astype("float32"),
        probs=rng.integers(0, 3, 40),
        box=rng.standard_normal((40, 2)).astype("float32"),
    )
    for fmt, name in FILES.items():
        netdsl.export(
            SCORED, model="classifier", format=fmt, out=folder / name, seed=SEED, data=folder / "classifier.npz"
        )
    # LiteRT's signature lists outputs in its own order, not the spec's: evaluate must pair them by name
    netdsl.export(SCORED, model="two_heads", format="litert", out=folder / "two_heads.tflite", seed=SEED)
    for model in ("classifier", "two_heads"):
        seeded_keras(model).save(folder / f"{model}.keras")
    return folder


def close(got: dict, want: dict, tol: float) -> None:
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=tol, atol=tol, err_msg=key)


@pytest.mark.parametrize("fmt", list(FILES))
def test_predict_runs_the_file_in_its_runtime_and_equals_keras(fmt, work, capsys):
    got = netdsl.predict(work / FILES[fmt], data=work / "classifier.npz", batch_size=16)  # 16, 16, 8: any batch
    want = netdsl.predict(work / "classifier.keras", data=work / "classifier.npz")
    assert got["probs"].shape == (40, 3)
    close(got, want, FORMATS[fmt].tolerance)  # same seed, same weights: the export's --seed works
    assert (
        main(
            [
                "predict",
                str(work / FILES[fmt]),
                "--data",
                str(work / "classifier.npz"),
                "--batch-size",
                "16",
                "-o",
                str(work / f"{fmt}.npz"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == f"wrote {work / f'{fmt}.npz'} (40 samples; probs (40, 3))\n"
    np.testing.assert_array_equal(np.load(work / f"{fmt}.npz")["probs"], got["probs"])


@pytest.mark.parametrize(("fmt", "model"), [*((fmt, "classifier") for fmt in FILES), ("litert", "two_heads")])
def test_evaluate_scores_the_file_with_the_specs_loss_and_metrics(fmt, model, work):
    file = work / (FILES[fmt] if model == "classifier" else "two_heads.tflite")
    got = netdsl.evaluate(file, data=work / f"{model}.npz", spec=SCORED, model=model, batch_size=16)
    want = netdsl.evaluate(work / f"{model}.keras", data=work / f"{model}.npz", batch_size=16)
    assert list(got) == list(want)  # the same names, in the same order (loss first)
    assert list(want)[:2] == ["loss", "box_loss" if model == "two_heads" else "sparse_categorical_accuracy"]
    np.testing.assert_allclose(list(got.values()), list(want.values()), rtol=FORMATS[fmt].tolerance)


def test_what_numpy_does_not_score_is_scored_by_keras_alike(work, monkeypatch):
    from netdsl import scoring

    file = work / "two_heads.tflite"
    in_numpy = netdsl.evaluate(file, data=work / "two_heads.npz", spec=SCORED, model="two_heads", batch_size=16)
    monkeypatch.setattr(scoring, "not_in_numpy", lambda train, names: "the metric 'x' (a plugin's)")
    by_keras = netdsl.evaluate(file, data=work / "two_heads.npz", spec=SCORED, model="two_heads", batch_size=16)
    assert list(in_numpy) == list(by_keras)
    np.testing.assert_allclose(list(in_numpy.values()), list(by_keras.values()), rtol=1e-6)


def test_a_litert_file_records_its_model_so_evaluate_picks_it_without_model(work, tmp_path, capsys):
    from netdsl.deploy.exported_runtime import open_exported
    from netdsl.deploy.litert_format import read_metadata, with_entry
    from netdsl.training.run.settings import spec_sha256

    file = work / "two_heads.tflite"
    assert open_exported(file).metadata == {
        "netdsl_model": "two_heads",
        "netdsl_version": netdsl.__version__,
        "netdsl_spec_sha256": spec_sha256(netdsl.parse_file(SCORED)),
        "netdsl_classes": '{"probs": ["0", "1", "2"]}',
    }  # its class loss's
    picked = netdsl.evaluate(file, data=work / "two_heads.npz", spec=SCORED, batch_size=16)
    assert picked == netdsl.evaluate(file, data=work / "two_heads.npz", spec=SCORED, model="two_heads", batch_size=16)
    # a .tflite another tool wrote (no `netdsl` metadata entry) still needs --model for a spec of several
    foreign = tmp_path / "foreign.tflite"
    foreign.write_bytes(file.read_bytes().replace(b"netdsl", b"nxtdsl"))
    assert open_exported(foreign).metadata == {}
    damaged = file.read_bytes().replace(b'{"netdsl_classes"', b"#" * 17)  # the entry is there, its JSON is not
    assert read_metadata(damaged) == {}
    # an entry nested deeper than the JSON parser recurses, or too large to be netdsl's: no metadata, no traceback
    plain = foreign.read_bytes()
    assert read_metadata(with_entry(plain, b"[" * 60_000)) == {}
    assert read_metadata(with_entry(plain, b'{"netdsl_model": "' + b"m" * 70_000 + b'"}')) == {}
    assert read_metadata(with_entry(plain, b'{"netdsl_model": "m"}')) == {"netdsl_model": "m"}
    assert main(["evaluate", str(foreign), "--data", str(work / "two_heads.npz"), "--spec", str(SCORED)]) == 1
    assert capsys.readouterr().err == (
        f"{SCORED}:1:1: error: the spec declares 2 models; pick one with "
        "--model NAME (model=NAME in the library); models: "
        "classifier, two_heads\n"
    )


def test_evaluate_takes_the_spec_of_the_run_folder_the_file_is_in(work, capsys):
    from netdsl.training.run.settings import spec_sha256

    run = work / "classifier-1"
    run.mkdir()
    sha = spec_sha256(netdsl.parse_file(SCORED))
    (run / "config.json").write_text(f'{{"spec": {{"path": "{SCORED}", "sha256": "{sha}", "model": "classifier"}}}}')
    (run / "classifier.onnx").write_bytes((work / FILES["onnx"]).read_bytes())
    assert main(["evaluate", str(run / "classifier.onnx"), "--data", str(work / "classifier.npz"), "--json"]) == 0
    assert list(__import__("json").loads(capsys.readouterr().out)) == ["loss", "sparse_categorical_accuracy"]


def test_a_file_in_a_run_folder_is_scored_with_the_runs_defines(work, tmp_path, capsys):
    """The run's -D overrides apply to the spec it recorded, as they do for the run's own model.keras."""
    from netdsl.training.run.settings import spec_sha256

    spec = tmp_path / "top.net"
    spec.write_text(
        "let top = 1\n"
        + SCORED.read_text().replace(
            "metrics = [sparse_categorical_accuracy]", "metrics = [sparse_top_k_categorical_accuracy(k=top)]"
        )
    )
    run = tmp_path / "classifier-1"
    run.mkdir()
    (run / "classifier.onnx").write_bytes((work / FILES["onnx"]).read_bytes())
    recorded = {"path": str(spec), "sha256": spec_sha256(netdsl.parse_file(spec)), "model": "classifier"}
    scores = {}
    for top in (1, 3):
        (run / "config.json").write_text(json.dumps({"spec": recorded, "defines": {"top": top}}))
        assert main(["evaluate", str(run / "classifier.onnx"), "--data", str(work / "classifier.npz"), "--json"]) == 0
        scores[top] = json.loads(capsys.readouterr().out)["sparse_top_k_categorical_accuracy"]
    assert scores[1] < 1.0 and scores[3] == 1.0  # 3 classes: the true one is always among the top 3


def test_a_metric_of_one_value_per_class_is_a_list_equal_to_keras(work, tmp_path, capsys):
    """f1_score without `average` on an exported file: one value per class, as Keras' F1Score gives them."""
    import keras

    spec = tmp_path / "per_class.net"
    spec.write_text(
        SCORED.read_text().replace(
            "loss = sparse_categorical_crossentropy\n    metrics = [sparse_categorical_accuracy]",
            "loss = categorical_crossentropy\n    metrics = [f1_score]",
        )
    )
    with np.load(work / "classifier.npz") as data:
        features, labels = data["features"], data["probs"]
    np.savez(tmp_path / "onehot.npz", features=features, probs=np.eye(3, dtype="float32")[labels])
    code = main(
        [
            "evaluate",
            str(work / FILES["onnx"]),
            "--data",
            str(tmp_path / "onehot.npz"),
            "--spec",
            str(spec),
            "--model",
            "classifier",
            "--batch-size",
            "16",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert (code, captured.err) == (
        0,
        f"netdsl evaluate: warning: {work / FILES['onnx']}: the spec changed since "
        f"export ({spec}'s sha256 differs from the one the file records); scored "
        "with the spec as it is now\n",
    )  # another spec than the exported one
    got = json.loads(captured.out)
    model = keras.saving.load_model(work / "classifier.keras")
    model.compile(loss=keras.losses.CategoricalCrossentropy(), metrics=[keras.metrics.F1Score()])
    want = model.evaluate(features, np.eye(3, dtype="float32")[labels], batch_size=16, return_dict=True, verbose=0)
    assert list(got) == ["loss", "f1_score"] and isinstance(got["f1_score"], list) and len(got["f1_score"]) == 3
    close(got, {k: np.asarray(v).tolist() for k, v in want.items()}, FORMATS["onnx"].tolerance)


def test_a_spec_changed_since_export_is_one_warning_line_and_the_file_is_still_scored(work, tmp_path, capsys):
    file = work / FILES["onnx"]
    args = [
        "evaluate",
        str(file),
        "--data",
        str(work / "classifier.npz"),
        "--model",
        "classifier",
        "--batch-size",
        "16",
        "--json",
    ]
    assert main([*args, "--spec", str(SCORED)]) == 0
    same = capsys.readouterr()
    assert same.err == ""  # the spec it was exported from: nothing to say
    edited = tmp_path / "edited\x1b[31m" / "scored.net"  # a folder named with ESC: printed escaped
    edited.parent.mkdir()
    edited.write_text(SCORED.read_text() + "# edited after export\n")
    assert main([*args, "--spec", str(edited)]) == 0
    changed = capsys.readouterr()
    shown = f"{tmp_path}/edited\\x1b[31m/scored.net"
    assert changed.err == (
        f"netdsl evaluate: warning: {file}: the spec changed since export ({shown}'s sha256 "
        "differs from the one the file records); scored with the spec as it is now\n"
    )
    assert json.loads(changed.out) == json.loads(same.out)  # a comment changes the hash, not the scores
    with pytest.warns(netdsl.SpecChangedWarning, match="the spec changed since export"):
        netdsl.evaluate(file, data=work / "classifier.npz", spec=edited, model="classifier", batch_size=16)


def test_evaluate_reads_a_spec_importing_from_an_include_folder(work, tmp_path, capsys):
    """`--spec` importing from a folder outside its own is read with `-I` (library: `include=`), as train
    reads it; without the folder the import is refused, one line."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "defs.net").write_text("let hidden_units = 16\n")
    (tmp_path / "project").mkdir()
    spec = tmp_path / "project" / "scored.net"
    spec.write_text('import "../shared/defs.net"\n' + SCORED.read_text())
    common = [
        "evaluate",
        str(work / FILES["onnx"]),
        "--data",
        str(work / "classifier.npz"),
        "--spec",
        str(spec),
        "--model",
        "classifier",
        "--batch-size",
        "16",
        "--json",
    ]
    assert main(common) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"{spec}:1:1: error: import '../shared/defs.net' leaves the spec's folder; imports must stay inside the "
        "root spec's folder or a folder given with --include"
    )
    assert main([*common, "-I", str(tmp_path / "shared")]) == 0
    captured = capsys.readouterr()
    # (the spec with its import is not the one the file was exported from: said, and scored)
    assert captured.err == (
        f"netdsl evaluate: warning: {work / FILES['onnx']}: the spec changed since export "
        f"({spec}'s sha256 differs from the one the file records); scored with the spec as it "
        "is now\n"
    )
    want = netdsl.evaluate(
        work / FILES["onnx"], data=work / "classifier.npz", spec=SCORED, model="classifier", batch_size=16
    )
    assert json.loads(captured.out) == want
    with pytest.warns(netdsl.SpecChangedWarning):
        assert (
            netdsl.evaluate(
                work / FILES["onnx"],
                data=work / "classifier.npz",
                spec=spec,
                model="classifier",
                batch_size=16,
                include=[tmp_path / "shared"],
            )
            == want
        )


def test_a_saved_model_folders_record_is_read_bounded_and_never_through_a_link(work, tmp_path):
    import shutil

    from netdsl.deploy.exported_runtime import open_exported
    from netdsl.deploy.saved_model_format import METADATA

    folder = tmp_path / "sm"
    shutil.copytree(work / FILES["saved_model"], folder)
    assert open_exported(folder).metadata["netdsl_model"] == "classifier"
    record = folder / METADATA
    for planted in (b"[" * 60_000, b'{"netdsl_model": "' + b"m" * 70_000 + b'"}', b"[1, 2]"):
        record.write_bytes(planted)  # nested deeper than json recurses, oversized, not an object
        assert open_exported(folder).metadata == {}
    record.unlink()
    (tmp_path / "elsewhere.json").write_text('{"netdsl_model": "classifier"}')
    record.symlink_to(tmp_path / "elsewhere.json")
    assert open_exported(folder).metadata == {}


def commands_without_a_backend(commands: list[list[str]]) -> str:
    """Run the CLI `commands` in a fresh process, each to exit 0, and assert that none of them imported
    Keras, TensorFlow, JAX or torch; what they printed."""
    script = (
        "import sys\nfrom netdsl.cli import main\n"
        f"for args in {commands!r}:\n"
        "    assert main(args) == 0, args\n"
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    *printed, imported = done.stdout.splitlines()
    assert imported == "[]"
    return "\n".join(printed)


def test_onnx_and_litert_run_without_keras_or_tensorflow(work):
    commands_without_a_backend(
        [
            ["predict", str(work / name), "--data", str(work / "classifier.npz"), "-o", str(work / f"{name}.npz")]
            for name in (FILES["onnx"], FILES["litert"])
        ]
    )


def test_evaluate_of_onnx_and_litert_imports_no_keras_tensorflow_jax_or_torch(work):
    with np.load(work / "classifier.npz") as data:
        rows = np.column_stack([data["features"], data["probs"]])
    header = ",".join([f"f{i}" for i in range(12)] + ["label"])
    np.savetxt(work / "classifier.csv", rows, delimiter=",", header=header, comments="", fmt="%.9g")
    npz = ["--data", str(work / "classifier.npz")]
    csv = ["--data", str(work / "classifier.csv"), "--targets", "probs=label"]
    # no --model: the files' metadata names it (LiteRT's read without TensorFlow too)
    out = commands_without_a_backend(
        [
            ["evaluate", str(work / name), *data, "--spec", str(SCORED), "--batch-size", "16", "--json"]
            for name in (FILES["onnx"], FILES["litert"])
            for data in (npz, csv)
        ]
    )
    want = netdsl.evaluate(work / "classifier.keras", data=work / "classifier.npz", batch_size=16)
    printed = [json.loads(part + "}") for part in out.split("}")[:-1]]  # onnx: npz, csv; litert: ...
    assert len(printed) == 4
    for values in printed:
        assert list(values) == list(want)
        np.testing.assert_allclose(list(values.values()), list(want.values()), rtol=FORMATS["litert"].tolerance)


def test_a_file_in_a_run_folder_is_run_with_the_runs_batch_size(work, monkeypatch):
    from netdsl.deploy import exported_inference
    from netdsl.training.run.settings import spec_sha256

    run = work / "classifier-2"
    run.mkdir()
    sha = spec_sha256(netdsl.parse_file(SCORED))
    (run / "config.json").write_text(
        json.dumps({"spec": {"path": str(SCORED), "sha256": sha, "model": "classifier"}, "settings": {"batch_size": 7}})
    )
    (run / "classifier.onnx").write_bytes((work / FILES["onnx"]).read_bytes())
    seen: list[int] = []
    real = exported_inference.output_batches

    def counted(model, source, batch_size, with_targets=False):
        seen.append(batch_size)
        return real(model, source, batch_size, with_targets)

    monkeypatch.setattr(exported_inference, "output_batches", counted)
    netdsl.predict(run / "classifier.onnx", data=work / "classifier.npz")
    netdsl.evaluate(run / "classifier.onnx", data=work / "classifier.npz")
    netdsl.predict(run / "classifier.onnx", data=work / "classifier.npz", batch_size=5)
    netdsl.predict(work / FILES["onnx"], data=work / "classifier.npz")  # not in a run folder: 32
    other = work / "another-tool"
    other.mkdir()
    (other / "config.json").write_text('["not a run\'s config"]')
    (other / "classifier.onnx").write_bytes((work / FILES["onnx"]).read_bytes())
    netdsl.predict(other / "classifier.onnx", data=work / "classifier.npz")  # another config.json: 32
    assert seen == [7, 7, 5, 32, 32]


def test_export_verifies_on_the_first_samples_of_the_users_data(work, capsys):
    model = seeded_keras("classifier")
    inputs = deploy_verify.data_inputs(model, work / "classifier.npz")
    np.testing.assert_array_equal(inputs["features"], np.load(work / "classifier.npz")["features"][:32])
    check = deploy_verify.check_file(model, FORMATS["onnx"], work / FILES["onnx"], data=work / "classifier.npz")
    assert check.ok and check.outputs[0].varies


def test_the_same_seed_gives_the_same_file_outputs_another_seed_other_ones(work):
    first, other = seeded_keras("classifier"), seeded_keras("classifier", SEED + 1)
    x = np.load(work / "classifier.npz")["features"]
    assert not np.allclose(np.asarray(first(x)), np.asarray(other(x)))
    again = netdsl.export(SCORED, model="classifier", format="onnx", out=work / "again.onnx", seed=SEED, verify=False)
    same = netdsl.predict(again, data=work / "classifier.npz")
    np.testing.assert_array_equal(
        same["probs"], netdsl.predict(work / FILES["onnx"], data=work / "classifier.npz")["probs"]
    )


# ------------------------------------------------------------------ errors: one line each


def garbage(path: Path) -> Path:
    path.write_bytes(b"this is no model")
    return path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["predict", "{tmp}/junk.onnx", "--data", "{work}/classifier.npz", "-o", "{tmp}/p.npz"],
            (
                1,
                "{tmp}/junk.onnx: error: onnxruntime cannot load it ([ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load "
                "model from {tmp}/junk.onnx failed:Protobuf parsing failed.)\n",
            ),
        ),
        (
            ["predict", "{tmp}/junk.tflite", "--data", "{work}/classifier.npz", "-o", "{tmp}/p.npz"],
            (
                1,
                "{tmp}/junk.tflite: error: the LiteRT interpreter cannot load it (The model is not a valid Flatbuffer "
                "buffer)\n",
            ),
        ),
        (
            ["predict", "{tmp}/notes.txt", "--data", "{work}/classifier.npz", "-o", "{tmp}/p.npz"],
            (
                1,
                "{tmp}/notes.txt: error: not a .keras file ('.txt'); netdsl loads models saved as .keras; load it in "
                "Keras and save it with model.save('model.keras')\n",
            ),
        ),
        (
            ["predict", "{tmp}/missing.onnx", "--data", "{work}/classifier.npz", "-o", "{tmp}/p.npz"],
            (1, "{tmp}/missing.onnx: error: no such onnx file\n"),
        ),
        (
            ["predict", "{work}/classifier.onnx", "--data", "{tmp}/narrow.npz", "-o", "{tmp}/p.npz"],
            (1, "{tmp}/narrow.npz: error: input 'features' expects shape (N, 12), found (4, 7)\n"),
        ),
        (
            [
                "predict",
                "{work}/classifier.onnx",
                "--data",
                "{work}/classifier.npz",
                "-o",
                "{tmp}/p.npz",
                "--backend",
                "jax",
            ],
            (2, "netdsl predict: error: --backend does not apply to an exported file: it runs in its own runtime\n"),
        ),
        (
            ["evaluate", "{tmp}/alone.onnx", "--data", "{work}/classifier.npz"],
            (
                2,
                "netdsl evaluate: error: an exported file holds no loss or metrics; give the spec with --spec SPEC.net (or keep "
                "the file in its run folder, whose spec is used)\n",
            ),
        ),
        (
            ["evaluate", "{work}/classifier.onnx", "--spec", str(SCORED)],
            (
                2,
                "netdsl evaluate: error: evaluate needs --data SRC, except for a run folder (its own test split by default)\n",
            ),
        ),
        (
            ["evaluate", "{work}/classifier.onnx", "--spec", "{tmp}/f1.net", "--data", "{work}/classifier.npz"],
            (
                1,
                "{tmp}/f1.net: error: the metric 'f1_score' needs one-hot targets shaped as the predictions ((3,) per "
                "sample); the data's are one number\n",
            ),
        ),
    ],
)
def test_bad_input_is_one_line(args, expected, work, tmp_path, capsys):
    garbage(tmp_path / "junk.onnx")
    garbage(tmp_path / "junk.tflite")
    (tmp_path / "notes.txt").write_text("hello")
    np.savez(tmp_path / "narrow.npz", features=np.zeros((4, 7), "float32"))
    (tmp_path / "alone.onnx").write_bytes((work / FILES["onnx"]).read_bytes())
    (tmp_path / "f1.net").write_text(
        SCORED.read_text().replace("metrics = [sparse_categorical_accuracy]", "metrics = [f1_score]")
    )
    code = main([arg.format(tmp=tmp_path, work=work) for arg in args])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err) == (expected[0], "", expected[1].format(tmp=tmp_path, work=work))


def test_a_missing_runtime_is_an_install_hint(work, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    code = main(["predict", str(work / FILES["onnx"]), "--data", str(work / "classifier.npz"), "-o", "p.npz"])
    assert (code, capsys.readouterr().err) == (
        2,
        "netdsl predict: error: running an onnx file needs onnxruntime, which is "
        "not installed; pip install 'netdsl[export]'\n",
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"weights": "w.keras"}, "--seed draws a spec's fresh weights; --weights gives them"),
        ({"source": "m.keras"}, "m.keras: error: --seed draws a spec's fresh weights; this source has trained weights"),
    ],
)
def test_seed_is_for_fresh_weights_only(kwargs, expected):
    source = kwargs.pop("source", SCORED)
    with pytest.raises(netdsl.NetdslError) as caught:
        netdsl.export(source, format="onnx", seed=1, **kwargs)
    assert str(caught.value).endswith(expected)
