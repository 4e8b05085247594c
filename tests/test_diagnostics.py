"""Bad input gets a clear diagnostic at file:line:col, exit code 1, never a traceback.

Each tests/fixtures/errors/NAME.net has NAME.expected: the exit code and the exact
text `netdsl check` prints (regenerate with tests/support/regen_error_fixtures.py and
review the diff by hand).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "errors").glob("*.net"))


def run_check(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("spec", FIXTURES, ids=lambda p: p.stem)
def test_error_fixture_prints_its_exact_diagnostics(spec, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    expected = spec.with_suffix(".expected").read_text(encoding="utf-8")
    code, out, err = run_check(capsys, str(spec.relative_to(ROOT)))
    assert f"exit {code}\n{err}" == expected
    assert code == 1
    assert "Traceback" not in err
    assert out == ""


def test_every_fixture_has_its_expected_output():
    missing = [p.name for p in FIXTURES if not p.with_suffix(".expected").exists()]
    assert not missing


def test_nothing_in_a_spec_is_executed(capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a))
    monkeypatch.chdir(ROOT)
    code, _, err = run_check(capsys, "tests/fixtures/errors/dotted_python.net")
    assert code == 1 and calls == []
    assert "unknown step 'os.system'" in err


def test_symlink_out_of_the_spec_folder_is_refused(tmp_path, capsys):
    outside = tmp_path / "outside.net"
    outside.write_text("let secret = 1\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / "lib.net").symlink_to(outside)
    spec = root / "main.net"
    spec.write_text('import "lib.net"\nlet x = secret\n')
    code, _, err = run_check(capsys, str(spec))
    assert code == 1
    assert f"{spec}:1:1: error: import 'lib.net' leaves the spec's folder" in err


def test_include_folder_allows_an_import_outside(tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "blocks.net").write_text("let width = 8\n")
    root = tmp_path / "project"
    root.mkdir()
    spec = root / "main.net"
    spec.write_text('import "../shared/blocks.net"\nlet w = width * 2\n')
    assert run_check(capsys, str(spec))[0] == 1
    assert run_check(capsys, str(spec), "--include", str(shared))[0] == 0


def test_diamond_imports_are_loaded_once(tmp_path):
    import netdsl

    (tmp_path / "d.net").write_text("let depth = 4\nblock unit(n) {\n  input x\n  output y = x -> dense(n)\n}\n")
    (tmp_path / "b.net").write_text('import "d.net"\nlet b_width = depth * 2\n')
    (tmp_path / "c.net").write_text('import "d.net"\nlet c_width = depth * 3\n')
    spec = tmp_path / "a.net"
    spec.write_text(
        'import "b.net"\nimport "c.net"\nimport "d.net"\n'
        "model m {\n  input x: (4,)\n  output y = x -> unit(b_width + c_width)\n}\n"
    )
    program = netdsl.parse_file(spec)
    assert len(program.files) == 4
    assert netdsl.check(program) == []


def test_a_ten_megabyte_file_is_one_file_level_error(tmp_path, capsys):
    spec = tmp_path / "big.net"
    spec.write_bytes(b"# " + b"x" * (10 * 1024 * 1024) + b"\n")
    code, _, err = run_check(capsys, str(spec))
    assert code == 1
    assert err == (f"{spec}:1:1: error: file is too large (10,485,763 bytes); a spec may be at most 2,097,152 bytes\n")


def test_missing_file_is_a_diagnostic(tmp_path, capsys):
    code, _, err = run_check(capsys, str(tmp_path / "nope.net"))
    assert (code, err) == (1, f"{tmp_path / 'nope.net'}:1:1: error: no such file\n")


def test_all_errors_of_a_file_are_reported_in_one_run(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, _, err = run_check(capsys, "tests/fixtures/errors/train_errors.net")
    assert code == 1 and err.count(": error: ") == 5 and err.endswith("5 errors\n")


def test_json_format_for_editors(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, _ = run_check(capsys, "--format", "json", "tests/fixtures/errors/unknown_layer.net")
    assert code == 1
    assert json.loads(out) == [
        {
            "file": "tests/fixtures/errors/unknown_layer.net",
            "line": 3,
            "col": 27,
            "end_line": 3,
            "end_col": 31,
            "severity": "error",
            "message": "unknown layer 'dens'",
            "hint": "did you mean 'dense'?",
        }
    ]


def test_clean_spec_exits_zero_and_prints_nothing(tmp_path, capsys):
    spec = tmp_path / "ok.net"
    spec.write_text("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n")
    assert run_check(capsys, str(spec)) == (0, f"{spec}: no problems found\n", "")


@pytest.mark.parametrize("argv", [["check"], ["check", "--format", "yaml", "x.net"], ["nosuch"], []])
def test_usage_errors_exit_two(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2


def test_check_does_not_import_tensorflow_or_keras(monkeypatch):
    script = (
        "import sys; from netdsl.cli import main; "
        "code = main(['check', 'tests/fixtures/errors/shapes.net']); "
        "print(code, 'tensorflow' in sys.modules, 'keras' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "False", "False"]


def test_spec_error_from_the_library_carries_diagnostics():
    import netdsl

    with pytest.raises(netdsl.SpecError) as info:
        netdsl.parse("model m {\n  input x: (4,)\n  y = x ->\n}\n", filename="inline.net")
    (d,) = info.value.diagnostics
    assert (d.file, d.line, d.col, d.message) == ("inline.net", 4, 1, "expected a step after '->', found '}'")
