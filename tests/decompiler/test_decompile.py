"""`netdsl decompile` of saved models: exact specs, exact diagnostics, no TensorFlow for a file.

tests/fixtures/decompile/NAME.json is the config.json of a small Keras model (made by
tests/fixtures/decompile/make_fixtures.py); each test zips it into NAME.keras as `model.save`
would. A model that exports has NAME.net, the exact spec; one that cannot has
NAME.expected, the exit code and the exact diagnostics. REGEN_DECOMPILE=1 rewrites both
(review the diff by hand). The round trips through Keras are in test_roundtrip.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import netdsl
from netdsl.cli import main
from netdsl.decompiler import archive
from netdsl.syntax.formatter import format_text

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "decompile"
CONFIGS = sorted(FIXTURES.glob("*.json"))
REGEN = os.environ.get("REGEN_DECOMPILE") == "1"


def keras_file(folder: Path, name: str, config: str | bytes | None = None, **members: str | bytes) -> Path:
    """A .keras archive holding `config` as config.json (from tests/fixtures/decompile/NAME.json by default)."""
    path = folder / f"{name}.keras"
    with zipfile.ZipFile(path, "w") as archive_file:
        archive_file.writestr("metadata.json", json.dumps({"keras_version": "3"}))
        if config is None:
            config = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
        if config is not False:
            archive_file.writestr("config.json", config)
        for member, data in members.items():
            archive_file.writestr(member, data)
    return path


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def decompile_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["decompile", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_fixture_decompiles_to_its_exact_spec_or_diagnostics(config, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keras_file(tmp_path, config.stem)
    code, out, err = decompile_cli(capsys, f"{config.stem}.keras")
    spec, expected = config.with_suffix(".net"), config.with_suffix(".expected")
    if REGEN:
        spec.unlink(missing_ok=True)
        expected.unlink(missing_ok=True)
        if code == 0:
            spec.write_text(out, encoding="utf-8")
        else:
            expected.write_text(f"exit {code}\n{err}", encoding="utf-8")
    assert "Traceback" not in err
    if spec.exists():
        assert (code, err) == (0, "")
        assert out == spec.read_text(encoding="utf-8")
        assert format_text(out) == out, "not in netdsl fmt form"
        assert not [d for d in netdsl.check(text=out, filename=spec.name) if d.severity == "error"]
    else:
        assert f"exit {code}\n{err}" == expected.read_text(encoding="utf-8")
        assert code == 1 and out == ""


def test_every_fixture_has_its_expected_output():
    missing = [
        p.name for p in CONFIGS if not p.with_suffix(".net").exists() and not p.with_suffix(".expected").exists()
    ]
    assert not missing


def test_unexpressible_layers_are_all_named_with_class_and_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keras_file(tmp_path, "code_layers")
    code, _, err = decompile_cli(capsys, "code_layers.keras")
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith(
        "code_layers.keras:1:1: error: layer 'double' (Lambda) cannot be decompiled: Lambda runs Python code"
    )
    assert lines[1].startswith("code_layers.keras:1:1: error: layer 'twice' (Twice) is not a layer netdsl knows")
    assert "register a plugin" in lines[1]
    assert lines[-1] == "2 errors"


def test_decompile_of_a_file_does_not_import_tensorflow_or_keras(tmp_path):
    path = keras_file(tmp_path, "small_cnn")
    code = (
        "import sys, netdsl; text = netdsl.decompile(sys.argv[1]); "
        "heavy = [m for m in ('tensorflow', 'keras', 'jax') if m in sys.modules]; "
        "print(heavy, len(text.splitlines()))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[] ")


def test_the_weights_are_never_read(tmp_path, monkeypatch):
    """Only config.json is opened: a huge or broken weights member changes nothing."""
    path = keras_file(tmp_path, "small_cnn", **{"model.weights.h5": b"\x00" * 1000})
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(
        zipfile.ZipFile,
        "open",
        lambda self, name, *a, **k: opened.append(getattr(name, "filename", name)) or real_open(self, name, *a, **k),
    )
    assert netdsl.decompile(path) == (FIXTURES / "small_cnn.net").read_text(encoding="utf-8")
    assert opened == ["config.json"]


def test_output_file_is_written_and_the_same_as_printed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keras_file(tmp_path, "nested_shared")
    code, out, err = decompile_cli(capsys, "nested_shared.keras", "-o", "out/siamese.net")
    assert (code, out, err) == (0, "", "")
    written = (tmp_path / "out" / "siamese.net").read_text(encoding="utf-8")
    assert written == (FIXTURES / "nested_shared.net").read_text(encoding="utf-8")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["siamese.net"]  # no temporary file left


def test_flat_decompile_has_no_blocks_and_no_repeats(tmp_path):
    path = keras_file(tmp_path, "small_cnn")
    flat = netdsl.decompile(path, flat=True)
    assert "block " not in flat and " * " not in flat
    assert flat.count("conv2d(") == 4
    assert "block " in netdsl.decompile(path)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "missing.keras", "missing.keras:1:1: error: no such file"),
        (lambda d: d, "is a directory, not a .keras file"),
        (
            lambda d: written(d / "plain.keras", b"hello"),
            "plain.keras:1:1: error: not a .keras file (not a zip archive); decompile reads models saved with "
            "model.save('model.keras')",
        ),
        (
            lambda d: keras_file(d, "empty", config=False),
            "empty.keras:1:1: error: not a .keras file (it has no config.json)",
        ),
        (
            lambda d: keras_file(d, "broken", config="{not json"),
            "broken.keras:1:1: error: config.json is not valid JSON",
        ),
        (
            lambda d: keras_file(d, "list", config="[1, 2]"),
            "list.keras:1:1: error: config.json does not describe a model (expected a JSON object)",
        ),
        (
            lambda d: keras_file(d, "deep", config="[" * 100_000 + "]" * 100_000),
            "deep.keras:1:1: error: config.json is nested too deeply",
        ),
        (
            lambda d: written(d / "old.h5", b"\x89HDF"),
            "old.h5:1:1: error: HDF5 (.h5) models are not supported; load it in Keras and save it as .keras",
        ),
    ],
    ids=["missing", "directory", "not-zip", "no-config", "bad-json", "not-object", "too-deep", "h5"],
)
def test_unreadable_files_are_one_line_errors(make, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = make(Path("."))
    code, out, err = decompile_cli(capsys, str(path))
    assert code == 1 and out == ""
    assert message in err
    assert len(err.splitlines()) == 1


def test_a_config_over_the_size_limit_is_refused_unread(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(archive, "MAX_CONFIG_BYTES", 1000)
    keras_file(tmp_path, "small_cnn")
    code, _, err = decompile_cli(capsys, "small_cnn.keras")
    assert code == 1
    assert err.startswith("small_cnn.keras:1:1: error: config.json is too large (24,")
    assert "at most 1,000)" in err


def test_decompile_is_deterministic(tmp_path):
    path = keras_file(tmp_path, "nested_shared")
    assert netdsl.decompile(path) == netdsl.decompile(str(path)) == netdsl.decompile(Path(path))
