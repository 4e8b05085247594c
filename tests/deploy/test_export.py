"""`netdsl export` to ONNX, SavedModel and LiteRT, each file run in its own runtime.

The models are tests/fixtures/deploy/*.net: an MLP with smooth_relu and exact GELU (the two ops
tf2onnx cannot convert: Log1p, Erfc) and Keras' mish, a conv net, a model with two inputs and two
outputs, a tiny ViT (GELU, layer norm, attention); specs/declared.net's declared mish.
Each test also runs the file itself, apart from `--verify`'s code, on a batch size
the export never saw, and compares with the Keras model.
SavedModel and LiteRT are slow-marked (a SavedModel write is seconds per model here).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
import tomllib

import netdsl
from netdsl.cli import main
from netdsl.deploy import ExportError
from netdsl.deploy import verify as deploy_verify
from netdsl.deploy.formats import FORMATS
from netdsl.deploy.litert_format import read_metadata
from netdsl.syntax.loader import pick_models
from netdsl.training.run.settings import spec_sha256

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "fixtures" / "deploy"
SMALL = MODELS / "small.net"
VIT = MODELS / "vit_tiny.net"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["export", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def keras_outputs(model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    ordered = [inputs[tensor.name.split(":")[0]] for tensor in model.inputs]
    result = model(ordered if len(ordered) > 1 else ordered[0], training=False)
    result = result if isinstance(result, (list, tuple)) else [result]
    return {name: np.asarray(value) for name, value in zip(model.output_names, result)}


def assert_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray], tol: float) -> None:
    assert list(got) == list(want)
    for name in want:
        assert got[name].shape == want[name].shape
        np.testing.assert_allclose(got[name], want[name], rtol=tol, atol=tol, err_msg=name)


def run_onnx(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


# ------------------------------------------------------------------ ONNX, in onnxruntime


@pytest.mark.parametrize(
    ("spec", "model"),
    [(SMALL, "mlp"), (SMALL, "two_way"), (VIT, None), (ROOT / "specs" / "declared.net", "declared_mlp")],
    ids=["mish_gelu_mlp", "two_in_two_out", "vit_tiny", "declared_mish"],
)
def test_onnx_runs_in_onnxruntime_with_the_specs_names_and_any_batch(spec, model, tmp_path, capsys):
    built = netdsl.build(spec, model=model)
    built.save(tmp_path / "weights.keras")
    out = tmp_path / "model.onnx"
    args = [str(spec), "--format", "onnx", "-o", str(out), "--weights", str(tmp_path / "weights.keras")]
    code, stdout, err = cli(capsys, *args + (["--model", model] if model else []))
    assert (code, err) == (0, "")
    lines = stdout.splitlines()
    assert lines[:2] == [f"wrote {out} (onnx)", "verified in onnxruntime:"]
    assert [line.split("'")[1] for line in lines[2:]] == built.output_names
    assert all(line.startswith("  output '") and line.endswith("(tolerance 1e-05) ok") for line in lines[2:])

    import onnx

    proto = onnx.load(str(out))
    assert [i.name for i in proto.graph.input] == [t.name.split(":")[0] for t in built.inputs]
    assert [o.name for o in proto.graph.output] == built.output_names
    assert {v.type.tensor_type.shape.dim[0].dim_param for v in [*proto.graph.input, *proto.graph.output]} == {"batch"}
    meta = {p.key: p.value for p in proto.metadata_props}
    assert meta == {
        "netdsl_version": netdsl.__version__,
        "netdsl_model": built.name,
        "netdsl_spec_sha256": spec_sha256(netdsl.parse_file(spec)),
    }
    inputs = deploy_verify.sample_inputs(built, batch=5, seed=11)
    assert_close(run_onnx(out, inputs), keras_outputs(built, inputs), 1e-5)


def test_without_the_rules_tf2onnx_writes_a_graph_onnxruntime_refuses(monkeypatch):
    """The issue's finding, kept true: Keras' converter leaves Log1p (softplus as netdsl and declared mish
    compute it) and Erfc (exact GELU) as they are, and writes a graph onnxruntime refuses."""
    import onnxruntime
    import tf2onnx

    from netdsl.deploy import onnx_format

    model = netdsl.build(SMALL, model="mlp")
    monkeypatch.setattr(onnx_format, "OP_RULES", {})
    onnx_format._patch_tf2onnx()
    proto, _ = tf2onnx.convert.from_function(
        onnx_format.serving_function(model), onnx_format.input_specs(model), opset=onnx_format.OPSET
    )
    assert sorted(op for _, op in onnx_format.unconverted_ops(proto)) == ["Erfc", "Log1p"]
    with pytest.raises(Exception, match="INVALID_GRAPH"):
        onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(ExportError) as caught:
        onnx_format.onnx_bytes(model, {})
    assert str(caught.value) == (
        "error: layer 'score.dense' (Dense) cannot be exported to onnx: TensorFlow op Log1p has no ONNX conversion"
    )


def test_constants_a_layer_holds_are_folded_into_the_onnx_graph(tmp_path):
    """Normalization with a given mean and variance (EfficientNet's first layers) holds tensors, not variables:
    tf2onnx leaves them as graph inputs nobody feeds, unless folded back."""
    import keras

    x = keras.Input((8,), name="x")
    model = keras.Model(x, keras.layers.Dense(3, name="y")(keras.layers.Normalization(mean=0.5, variance=4.0)(x)))
    out = netdsl.export(model, format="onnx", out=tmp_path / "norm.onnx")
    inputs = deploy_verify.sample_inputs(model, batch=4, seed=3)
    assert_close(run_onnx(out, inputs), keras_outputs(model, inputs), 1e-5)


def test_verify_names_the_output_that_differs(tmp_path):
    spec_model = netdsl.build(SMALL, model="two_way")
    out = netdsl.export(spec_model, format="onnx", out=tmp_path / "two_way.onnx")
    other = netdsl.build(SMALL, model="two_way")  # the same architecture, other fresh weights
    result = deploy_verify.check_file(other, FORMATS["onnx"], out)
    assert not result.ok
    assert result.failure().startswith("the onnx file differs from the Keras model on output 'first' by ")
    assert result.failure().endswith("(tolerance 1e-05, checked in onnxruntime)")


def test_a_run_folder_exports_its_best_model_with_the_runs_spec_hash(tmp_path, capsys):
    model = netdsl.build(SMALL, model="convnet")
    run = tmp_path / "convnet-1"
    run.mkdir()
    (run / "config.json").write_text(
        json.dumps({"spec": {"path": str(SMALL), "sha256": "ab" * 32, "model": "convnet"}})
    )
    model.save(run / "best.keras")
    code, stdout, err = cli(capsys, str(run), "--format", "onnx")
    assert (code, err) == (0, "weights: best\n"), err  # which weights, on stderr (no report.json: no epoch to tell)
    assert stdout.splitlines()[0] == f"wrote {run / 'convnet.onnx'} (onnx)"
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(run / "convnet.onnx")).metadata_props}
    assert meta == {"netdsl_version": netdsl.__version__, "netdsl_model": "convnet", "netdsl_spec_sha256": "ab" * 32}
    code, _, err = cli(capsys, str(run), "--format", "onnx", "--last")
    assert (code, err) == (
        1,
        f"{run}: error: no model.keras yet (status: running); it is written when the run ends; "
        "--checkpoint best reads best.keras, the best epoch so far\n",
    )


# ------------------------------------------------------------------ errors: one line each


def zip_free(path: Path) -> Path:
    path.write_bytes(b"not a zip at all")
    return path


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("not_a_zip", (1, "{tmp}/broken.keras: error: not a .keras file (not a zip archive)\n")),
        (
            "unknown_format",
            (
                2,
                "netdsl export: error: unknown format 'onx'; did you mean 'onnx'? "
                "(formats: onnx, saved_model, litert)\n",
            ),
        ),
        (
            "other_tools_name",
            (
                2,
                "netdsl export: error: unknown format 'tflite'; did you mean 'litert'? "
                "(formats: onnx, saved_model, litert)\n",
            ),
        ),
        ("no_such_source", (1, "{tmp}/nothing.net: error: no such spec, run folder or .keras file\n")),
        ("not_a_source", (1, "{tmp}/notes.txt: error: not a spec (.net), a run folder or a .keras file\n")),
        ("planted_link", (1, "{tmp}/out.onnx: error: it is a symbolic link; netdsl does not write through links\n")),
        ("empty_run", (1, "{tmp}/run: error: no model.keras yet (status: running); it is written when the run ends\n")),
        (
            "not_a_run",
            (1, "{tmp}/folder: error: not a run folder (no config.json), or a run killed before it started\n"),
        ),
        (
            "in_the_way",
            (
                1,
                "{tmp}/taken: error: a folder that is not a SavedModel is in the way; remove it or choose another -o\n",
            ),
        ),
        (
            "foreign_saved_model",
            (
                1,
                "{tmp}/foreign: error: a SavedModel that netdsl did not write for you is in the "
                "way; netdsl replaces only its own: remove it or choose another -o\n",
            ),
        ),
    ],
)
def test_bad_input_is_one_line(case, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "victim").write_text("keep me")
    (tmp_path / "out.onnx").symlink_to(tmp_path / "victim")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    (tmp_path / "folder").mkdir()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("mine")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "saved_model.pb").write_bytes(b"another tool's")
    (tmp_path / "notes.txt").write_text("hello")
    zip_free(tmp_path / "broken.keras")
    args = {
        "not_a_zip": [f"{tmp_path}/broken.keras", "--format", "onnx"],
        "unknown_format": [str(SMALL), "--format", "onx"],
        "other_tools_name": [str(SMALL), "--format", "tflite"],
        "no_such_source": [f"{tmp_path}/nothing.net", "--format", "onnx"],
        "not_a_source": [f"{tmp_path}/notes.txt", "--format", "onnx"],
        "planted_link": [str(SMALL), "--model", "mlp", "--format", "onnx", "-o", f"{tmp_path}/out.onnx"],
        "empty_run": [f"{tmp_path}/run", "--format", "onnx"],
        "not_a_run": [f"{tmp_path}/folder", "--format", "onnx"],
        "in_the_way": [str(SMALL), "--model", "mlp", "--format", "saved_model", "-o", f"{tmp_path}/taken"],
        "foreign_saved_model": [str(SMALL), "--model", "mlp", "--format", "saved_model", "-o", f"{tmp_path}/foreign"],
    }[case]
    code, out, err = cli(capsys, *args)
    assert (code, out, err) == (expected[0], "", expected[1].format(tmp=tmp_path))
    assert (tmp_path / "victim").read_text() == "keep me"
    assert (tmp_path / "taken" / "mine.txt").read_text() == "mine"
    assert (tmp_path / "foreign" / "saved_model.pb").read_bytes() == b"another tool's"


def test_a_missing_runtime_is_an_install_hint(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    code, out, err = cli(capsys, str(SMALL), "--format", "onnx")
    assert (code, out, err) == (
        2,
        "",
        "netdsl export: error: --format onnx needs onnxruntime, which is not installed; pip install 'netdsl[export]'\n",
    )


def test_the_error_types_are_netdsl_errors():
    from netdsl.deploy import ExportError, MissingPackage, UnknownFormat, VerifyFailed

    assert all(issubclass(t, netdsl.NetdslError) for t in (ExportError, MissingPackage, UnknownFormat, VerifyFailed))


# ------------------------------------------------------------------ SavedModel and LiteRT


def run_saved_model(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import tensorflow as tf

    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    return {k: v.numpy() for k, v in serve(**{k: tf.constant(v) for k, v in inputs.items()}).items()}


def run_litert(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path)).get_signature_runner("serving_default")
    return dict(runner(**inputs))


# SavedModel runs TensorFlow's own kernels (differences are 0): two models show the names and metadata;
# LiteRT lowers every op anew: all four.
RUNTIME_CASES = [
    ("saved_model", SMALL, "mlp"),
    ("saved_model", SMALL, "two_way"),
    ("litert", SMALL, "mlp"),
    ("litert", SMALL, "convnet"),
    ("litert", SMALL, "two_way"),
    ("litert", VIT, None),
]


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "spec", "model"), RUNTIME_CASES, ids=lambda v: getattr(v, "stem", v))
def test_saved_model_and_litert_run_in_their_runtimes(fmt, spec, model, tmp_path):
    built = netdsl.build(spec, model=model)
    out = netdsl.export(built, format=fmt, out=tmp_path / f"m{FORMATS[fmt].suffix}")
    inputs = deploy_verify.sample_inputs(built, batch=5, seed=11)
    got = (run_saved_model if fmt == "saved_model" else run_litert)(out, inputs)
    want = keras_outputs(built, inputs)
    assert_close({name: got[name] for name in want}, want, FORMATS[fmt].tolerance)
    assert sorted(got) == sorted(want)
    recorded = (
        json.loads((out / "assets.extra" / "netdsl.json").read_text())
        if fmt == "saved_model"
        else read_metadata(out.read_bytes())
    )
    assert recorded == {"netdsl_version": netdsl.__version__}


# ResNet-50 and MobileNetV2 (minutes each to convert on a CI core) are measured by scripts/export_table.py
# with this same code, for docs/export.md's table; every other example spec runs here.
BIG = ("resnet50.net", "mobilenet_v2.net")


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", [p for p in sorted((ROOT / "specs").glob("*.net")) if p.name not in BIG], ids=lambda p: p.stem
)
def test_every_example_spec_exports_to_onnx(spec, tmp_path):
    for name in pick_models(netdsl.parse_file(spec), None):
        # verify=True: the file runs in onnxruntime beside Keras, and VerifyFailed is raised past 1e-5
        written = netdsl.export(spec, model=name, format="onnx", out=tmp_path / f"{name}.onnx")
        assert written == tmp_path / f"{name}.onnx" and written.stat().st_size > 0


def test_the_extras_name_the_packages():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    # the converters and runtimes, and TensorFlow, which tf2onnx and the LiteRT converter run on
    assert extras["export"] == [
        "netdsl[tensorflow]",
        "onnx>=1.16",
        "onnxruntime>=1.24",
        "tf2onnx>=1.17",
        "ai-edge-litert>=1.2",
    ]
    assert "netdsl[export]" in extras["dev"]  # the tests run every format
    assert all(importlib.util.find_spec(m) for fmt in FORMATS.values() for m in fmt.modules)


def test_the_format_names_kept_outside_the_deploy_room_are_the_tables():
    """The CLI's parser and the API's types name the formats without importing deploy/ (startup, typing):
    a format added to FORMATS is added there too, or this fails."""
    from typing import get_args

    from netdsl.api import ExportFormat
    from netdsl.cli.export import FORMAT_NAMES

    assert list(FORMAT_NAMES) == list(get_args(ExportFormat)) == list(FORMATS)


def test_the_docs_example_prints_what_the_command_prints(tmp_path, capsys, monkeypatch):
    doc = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    shown = doc.split("<!-- export example -->\n```\n", 1)[1].split("```", 1)[0].splitlines()
    command, expected = shown[0], shown[1:]
    assert command.startswith("$ netdsl export ")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").symlink_to(ROOT / "specs")
    code = main(command.split()[2:])
    out = capsys.readouterr().out.splitlines()
    number = re.compile(r"\d\.\d\de[-+]\d\d")  # the differences depend on the fresh weights
    assert code == 0
    assert [number.sub("N", line) for line in out] == [number.sub("N", line) for line in expected]


@pytest.mark.slow
def test_a_keras_applications_family_runs_in_litert(tmp_path):
    """keras.applications.MobileNetV2 (depthwise convolutions, ReLU6, inverted residuals) at 32x32, its
    smallest input, features pooled: its fresh softmax says the same for every input, which proves little.
    The one family the suite converts (about 30 s of CPU); LiteRT is the format that lowers every op anew.
    scripts/export_table.py --applications measures all four families in every format (docs/export.md)."""
    import keras

    from netdsl.deploy import export_model

    model = keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), include_top=False, pooling="avg")
    exported = export_model(model, format="litert", out=tmp_path / "mobilenet_v2.tflite", quiet=True)
    [check] = exported.verification.outputs
    assert check.ok and check.varies, check
    inputs = deploy_verify.sample_inputs(model, batch=2, seed=4)
    want = keras_outputs(model, inputs)
    assert_close(run_litert(exported.path, inputs), want, FORMATS["litert"].tolerance)


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("onnx", "cannot be exported to onnx: TensorFlow op Complex has no ONNX conversion"),
        ("litert", "cannot be exported to litert: TensorFlow op Complex is not a LiteRT built-in op"),
    ],
)
def test_a_fourier_transform_is_refused_by_onnx_and_litert_at_its_layer(fmt, message, tmp_path):
    """Neither converter has TensorFlow's complex numbers (`fft2`'s Complex, FFT2D): one line naming the layer
    and the op, as for any op they lack (LiteRT's report once put the error before the op's place)."""
    spec = tmp_path / "fourier.net"
    spec.write_text("model fourier {\n  input x: (4, 8)\n  re, _ = fft2((x, zeros_like(x)))\n  output y = re\n}\n")
    with pytest.raises(ExportError) as caught:
        netdsl.export(spec, format=fmt, out=tmp_path / "fourier_export", verify=False)
    assert str(caught.value) == f"error: layer 're' (TensorOp) {message}"
