"""`netdsl build` and `netdsl summary`, and `.keras` files that load safely in a fresh process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest

import netdsl
from netdsl import cli

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"

SIAMESE = """\
model siamese {
  input a: (8,)
  input b: (8,)
  shared enc = dense(4, activation=tanh)
  ea = a -> enc
  eb = b -> enc
  output d = (ea, eb) -> subtract -> dense(1)
}
"""

# Everything a saved file must bring back without Python code: custom layers,
# declared layers and activations, allow-listed activations with arguments,
# nested layers, a shared block (a sub-model), a nested model, int inputs.
SAFE = """\
activation mish(x) = x * tanh(smooth_relu(x))
activation scaled_tanh(x, scale=1.7159, slope=0.6667) = scale * tanh(slope * x)

layer my_linear(units=32) {
  input x
  weight kernel: (x.shape[-1], units) init=glorot_uniform
  weight bias: (units,) init=zeros
  output x @ kernel + bias
}

block tower(width) {
  input x
  output y = x -> dense(width, activation=gelu(approximate=true)) -> dense(width)
}

model encoder {
  input x: (8,)
  output e = x -> linear(6) -> sine -> scale(0.5, trainable=true)
}

model everything {
  input a: (8,)
  input t: (5,) as int32
  shared tw = tower(8)
  e = a -> tw -> encoder -> my_linear(4) -> mish
  s = t -> embedding(20, 6) -> bidirectional(lstm(3)) -> leaky_relu(0.1)
  r = (a -> tw) -> dense(4, activation=scaled_tanh(scale=1.0))
  output y = (e, s, r) -> concatenate -> dense(2, activation=smooth_relu)
}

model seq {
  input q: (4, 8)
  output z = q -> attention(8, heads=2) -> residual(8, kernel_size=1) -> dense(3, activation=relu(max_value=2.0))
}
"""


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str, name: str = "spec.net") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def example_inputs(model: keras.Model, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for t in model.inputs:
        shape = (2,) + tuple(4 if d is None else d for d in t.shape[1:])
        if "int" in str(t.dtype):
            arrays.append(rng.integers(0, 10, shape).astype(str(t.dtype)))
        else:
            arrays.append(rng.standard_normal(shape).astype("float32"))
    return arrays


# ====================================================================== build


def test_build_writes_models_diagrams_and_tables(tmp_path, capsys):
    spec = write(tmp_path, SIAMESE)
    code, out, err = run(["build", str(spec), "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert (tmp_path / "out" / "siamese.keras").is_file()
    assert out.splitlines()[:10] == [
        "model siamese",
        "-" * 42,
        "Layer       Kind      Output shape  Params",
        "-" * 42,
        "a           input     (8,)               0",
        "b           input     (8,)               0",
        "ea.enc      dense     (4,)              36",
        "eb.enc      dense     (4,)          shared",
        "d.subtract  subtract  (4,)               0",
        "d           dense     (1,)               5",
    ]
    assert "params: 41 (trainable 41, non-trainable 0)" in out
    assert "outputs: d (1,)" in out
    assert f"wrote {tmp_path / 'out' / 'siamese.keras'}" in out
    if shutil.which("dot"):
        assert (tmp_path / "out" / "siamese.svg").read_bytes().startswith(b"<?xml")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) <= ["siamese.keras", "siamese.svg"]


def test_build_one_model_without_diagram(tmp_path, capsys):
    code, out, _ = run(
        ["build", str(SPECS / "custom_layers.net"), "--model", "multiply", "--no-diagram", "-o", str(tmp_path)], capsys
    )
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["multiply.keras"]
    assert "params: 273 (trainable 273, non-trainable 0)" in out  # scale(2.0) is a constant: no weight


def test_missing_dot_or_renderer_is_one_line_and_the_build_succeeds(tmp_path, capsys, monkeypatch):
    spec = write(tmp_path, SIAMESE)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, out, _ = run(["build", str(spec), "-o", str(tmp_path / "a")], capsys)
    assert code == 0 and (tmp_path / "a" / "siamese.keras").is_file()
    assert [line for line in out.splitlines() if "diagram" in line] == [
        "diagram skipped: Graphviz's 'dot' program was not found (install Graphviz, e.g. "
        "`apt-get install graphviz` or `brew install graphviz`)"
    ]
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "netdsl.diagram.render", None)
    code, out, _ = run(["build", str(spec), "-o", str(tmp_path / "b")], capsys)
    assert code == 0 and (tmp_path / "b" / "siamese.keras").is_file()
    assert [line for line in out.splitlines() if "diagram" in line][0].startswith(
        "diagram skipped: netdsl.diagram.render is not available"
    )


def test_spec_errors_exit_1_with_diagnostics_and_write_nothing(tmp_path, capsys):
    spec = write(
        tmp_path,
        'model bad {\n  input x: (32, 32, 32)\n  y = x -> conv2d(64, 3, padding="same")\n  s = y + x\n  output s\n}\n',
    )
    code, out, err = run(["build", str(spec), "-o", str(tmp_path / "out")], capsys)
    assert code == 1 and out == ""
    assert err.splitlines()[:3] == [
        f"{spec}:4:7: error: cannot add y (32, 32, 64) and x (32, 32, 32): '+' needs one shape; "
        "project x to 64 channels first: x -> conv2d(64, 1)",
        "  s = y + x",
        "      ^^^^^",
    ]
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_max_params(tmp_path, capsys):
    spec = write(tmp_path, "model m {\n  input x: (100,)\n  output y = x -> dense(100)\n}\n")
    code, _, err = run(["build", str(spec), "--max-params", "1000", "-o", str(tmp_path / "o")], capsys)
    assert code == 1
    assert "'dense' would have about 10,100 parameters; the limit is 1,000" in err


def test_failed_build_leaves_earlier_outputs_untouched(tmp_path, capsys, monkeypatch):
    spec = write(tmp_path, SIAMESE)
    out_dir = tmp_path / "out"
    assert run(["build", str(spec), "-o", str(out_dir), "--no-diagram"], capsys)[0] == 0
    saved = (out_dir / "siamese.keras").read_bytes()

    # a spec error: nothing is written
    write(tmp_path, SIAMESE.replace("dense(1)", "dense(-1)"))
    assert run(["build", str(spec), "-o", str(out_dir), "--no-diagram"], capsys)[0] == 1
    assert (out_dir / "siamese.keras").read_bytes() == saved

    # writing fails half-way: the partial file never takes the model's name
    write(tmp_path, SIAMESE.replace("dense(1)", "dense(2)"))

    def broken_save(self, path, *args, **kwargs):
        Path(path).write_bytes(b"PK\x03\x04 partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(keras.Model, "save", broken_save)
    code, _, err = run(["build", str(spec), "-o", str(out_dir), "--no-diagram"], capsys)
    assert code == 1
    assert f"cannot write {out_dir / 'siamese.keras'}: No space left on device" in err
    assert "Traceback" not in err
    assert (out_dir / "siamese.keras").read_bytes() == saved
    assert sorted(p.name for p in out_dir.iterdir()) == ["siamese.keras"]  # no temporary file left


def test_plugin_layer(tmp_path, capsys, monkeypatch):
    (tmp_path / "twice_plugin.py").write_text(
        textwrap.dedent("""
        import keras
        import netdsl

        @netdsl.register_layer("twice")
        @keras.saving.register_keras_serializable(package="twice_plugin")
        class Twice(keras.layers.Layer):
            "Multiply by two."
            def call(self, x):
                return x * 2
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = write(tmp_path, "model m {\n  input x: (3,)\n  output y = x -> twice -> dense(1)\n}\n")
    from netdsl import registry

    try:
        code, _, err = run(["build", str(spec), "-o", str(tmp_path / "o")], capsys)
        assert code == 1 and "unknown layer 'twice'" in err  # not without --plugin
        code, out, err = run(
            ["build", str(spec), "--plugin", "twice_plugin", "--no-diagram", "-o", str(tmp_path / "o")], capsys
        )
        assert code == 0, err
        assert ["y.twice", "twice", "(3,)", "0"] in [line.split() for line in out.splitlines()]
        code, _, err = run(["build", str(spec), "--plugin", "no_such_plugin_module", "-o", str(tmp_path / "o")], capsys)
        assert code == 1 and "Traceback" not in err
        assert "error: cannot load plugin 'no_such_plugin_module': ModuleNotFoundError" in err
    finally:
        registry.reset_plugins()
        sys.modules.pop("twice_plugin", None)


# ====================================================================== summary


def test_summary_json(tmp_path, capsys):
    spec = write(tmp_path, SIAMESE)
    code, out, _ = run(["summary", str(spec), "--json"], capsys)
    assert code == 0
    assert json.loads(out) == {
        "siamese": {"params": 41, "trainable_params": 41, "non_trainable_params": 0, "layers": 3, "outputs": {"d": [1]}}
    }
    assert list(tmp_path.iterdir()) == [spec]


def test_summary_json_of_several_models(capsys):
    code, out, _ = run(["summary", str(SPECS / "custom_layers.net"), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["linear_mlp", "multiply", "activations", "attention_example", "residual_net"]
    assert data["attention_example"]["outputs"] == {"score": [1], "weights": [4, 8, 16]}
    assert data["residual_net"]["params"] == 78_666 and data["residual_net"]["trainable_params"] == 78_026
    assert data["residual_net"]["non_trainable_params"] == 640  # batch norms' moving statistics


def test_summary_table(tmp_path, capsys):
    spec = write(
        tmp_path,
        "model m {\n  input tokens: (none,) as int32\n"
        "  output y = tokens -> embedding(10, 4) -> global_average_pooling1d\n}\n",
    )
    code, out, _ = run(["summary", str(spec)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "model m"
    assert lines[2].split() == ["Layer", "Kind", "Output", "shape", "Params"]
    assert lines[4].split() == ["tokens", "input", "int32", "(none,)", "0"]
    assert lines[5].split() == ["y.embedding", "embedding", "(none,", "4)", "40"]
    assert lines[-2:] == ["params: 40 (trainable 40, non-trainable 0)", "outputs: y (4,)"]


# ====================================================================== safe loading


def test_import_netdsl_does_not_import_tensorflow():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, netdsl; print(sorted(m for m in ('keras', 'tensorflow') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "[]", done.stderr


_LOAD = """
import sys
import netdsl
assert "tensorflow" not in sys.modules and "keras" not in sys.modules
import keras
import numpy as np

folder = sys.argv[1]
data = np.load(folder + "/expected.npz")
names = sorted({key.split("|")[0] for key in data.files})
for name in names:
    model = keras.saving.load_model(f"{folder}/{name}.keras", safe_mode=True)
    inputs = [data[f"{name}|in{i}"] for i in range(len(model.inputs))]
    outputs = model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    for i, out in enumerate(outputs):
        np.testing.assert_allclose(out, data[f"{name}|out{i}"], rtol=1e-5, atol=1e-5)
    print(name, model.count_params(), model.compiled)
"""


@pytest.mark.slow
def test_built_files_load_with_safe_mode_in_a_fresh_process(tmp_path, capsys):
    out_dir = tmp_path / "out"
    specs = [write(tmp_path, SAFE, "safe.net"), SPECS / "custom_layers.net", SPECS / "declared.net"]
    expected: dict[str, np.ndarray] = {}
    counts = {}
    for spec in specs:
        assert run(["build", str(spec), "-o", str(out_dir), "--no-diagram"], capsys)[0] == 0
        for name, model in netdsl.build_all(spec).items():
            # the files hold the CLI's build; reload them here for the outputs to compare against
            model = keras.saving.load_model(out_dir / f"{name}.keras", safe_mode=True)
            inputs = example_inputs(model)
            outputs = model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0)
            for i, array in enumerate(inputs):
                expected[f"{name}|in{i}"] = array
            for i, array in enumerate(outputs if isinstance(outputs, list) else [outputs]):
                expected[f"{name}|out{i}"] = array
            counts[name] = model.count_params()
    np.savez(out_dir / "expected.npz", **expected)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(out_dir)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = {line.split()[0]: int(line.split()[1]) for line in done.stdout.splitlines()}
    assert loaded == counts
    assert {"everything", "seq", "encoder", "residual_net", "declared_mlp"} <= set(loaded)


def test_saved_outputs_equal_the_built_model(tmp_path):
    model = netdsl.build(netdsl.parse(SAFE, filename="safe.net"), model="everything")
    path = tmp_path / "everything.keras"
    model.save(path)
    again = keras.saving.load_model(path, safe_mode=True)
    inputs = example_inputs(model, seed=1)
    np.testing.assert_allclose(again.predict(inputs, verbose=0), model.predict(inputs, verbose=0), rtol=1e-6, atol=1e-6)


def _tamper(path: Path, target: Path, change) -> None:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                change(config)
                data = json.dumps(config).encode()
            dst.writestr(item, data)


def _configured(config):
    if isinstance(config, dict):
        if config.get("class_name") == "ConfiguredActivation":
            yield config["config"]
        for value in config.values():
            yield from _configured(value)
    elif isinstance(config, list):
        for value in config:
            yield from _configured(value)


def test_tampered_activation_names_are_refused_on_load(tmp_path):
    model = netdsl.build(
        netdsl.parse("model m {\n  input x: (3,)\n  output y = x -> gelu(approximate=true)\n}\n", filename="m.net")
    )
    path = tmp_path / "m.keras"
    model.save(path)
    assert [c for c in _configured(json.loads(zipfile.ZipFile(path).read("config.json")))] == [
        {"name": "gelu", "kwargs": {"approximate": True}}
    ]

    def rename(config):
        for c in _configured(config):
            c["name"] = "eval"

    _tamper(path, tmp_path / "renamed.keras", rename)
    with pytest.raises(Exception, match="allow-list, received: 'eval'"):
        keras.saving.load_model(tmp_path / "renamed.keras", safe_mode=True)

    def argument(config):
        for c in _configured(config):
            c["kwargs"] = {"approximate": True, "__globals__": 1}

    _tamper(path, tmp_path / "argument.keras", argument)
    with pytest.raises(Exception, match="received: '__globals__'"):
        keras.saving.load_model(tmp_path / "argument.keras", safe_mode=True)


def test_cli_keeps_tensorflow_noise_out(tmp_path):
    spec = write(tmp_path, SIAMESE)
    netdsl_cli = Path(sys.executable).with_name("netdsl")
    command = [str(netdsl_cli)] if netdsl_cli.exists() else [sys.executable, "-m", "netdsl.cli"]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        command + ["build", str(spec), "-o", str(tmp_path / "o"), "--no-diagram"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("model siamese\n")


@pytest.mark.slow
@pytest.mark.parametrize(
    "order",
    [
        "import netdsl; import keras",
        "import keras; import netdsl",
        "import netdsl; import tensorflow as tf; import keras",
    ],
)
def test_netdsl_objects_are_registered_whatever_the_import_order(order):
    script = (
        f"{order}\n"
        "print(all(keras.saving.get_registered_object(n) is not None for n in\n"
        "          ('netdsl>Linear', 'netdsl>DeclaredLayer', 'netdsl>ConfiguredActivation', 'netdsl>sine')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert done.stdout.strip() == "True", done.stderr[-2000:]
