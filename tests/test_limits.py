"""Every limit lives in `netdsl.limits`, and whatever a spec holds, check ends with diagnostics.

The blow-ups themselves (constants sharing references, repeats multiplied
through nesting, functions calling each other twice per level, ...) are
fixtures in tests/fixtures/errors/ with their exact output; these tests cover what a
fixture file cannot: special files, import chains, the last-resort guard,
and that the largest spec the limits allow still checks clean.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import netdsl
from netdsl import limits
from netdsl.cli import main
from netdsl.errors import Diagnostic
from netdsl.syntax import parser

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dsl" / "netdsl"

# Constants named MAX_* that are not bounds on a spec: how much of a value a
# diagram or a diagnostic shows, how long the language server waits or how many
# completions it sends, a flag's range, how many parameters an exported block
# may take before it is no easier to read.
DISPLAY_ONLY = {
    ("errors.py", "MAX_SHOWN"),
    ("diagram/dot.py", "MAX_VALUE"),
    ("diagram/view.py", "MAX_ARGS"),
    ("lsp/diagnostics.py", "MAX_DELAY"),
    ("lsp/completion.py", "MAX_ITEMS"),
    ("training/run/settings.py", "MAX_SEED"),
    ("decompiler/templates.py", "MAX_PARAMS"),
    ("decompiler/spec_ir.py", "_MAX_DENOMINATOR"),
    ("preview/server.py", "MAX_STREAMS"),
    ("preview/server.py", "MAX_CONNECTIONS"),
    ("preview/server.py", "MAX_STREAMS_PER_ORIGIN"),
    ("preview/watch.py", "MAX_HASHED_BYTES"),
}
# The parser takes these from netdsl.limits (the test below checks it reads the same values).
PARSER_OWN = {
    ("syntax/parser.py", name)
    for name in ("MAX_FILE_BYTES", "MAX_NESTING", "MAX_NUMBER_DIGITS", "MAX_EXPRESSION_DEPTH")
}


def _limit_assignments() -> set[tuple[str, str]]:
    """(module, name) of every module-level `MAX_* = <a number>` outside netdsl/limits.py."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "limits.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and not isinstance(node.value, ast.Name):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.lstrip("_").startswith("MAX_"):
                        found.add((rel, target.id))
    return found


def test_every_limit_is_written_in_netdsl_limits_only():
    assert _limit_assignments() - DISPLAY_ONLY == set()


def test_the_parsers_own_limits_equal_netdsl_limits():
    for _, name in PARSER_OWN:
        assert getattr(parser, name) is getattr(limits, name), name


def test_every_limit_is_in_the_language_guide():
    guide = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    section = guide[guide.index("## 11. Limits") : guide.index("## 12.")]
    shown = {name for name in dir(limits) if name.startswith("MAX_")}
    missing = [name for name in sorted(shown) if f"`{name}`" not in section]
    assert missing == []


# ------------------------------------------------------------------ special files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "pipe.net"
    os.mkfifo(fifo)  # nobody writes to it: reading it would wait forever
    assert main(["check", str(fifo)]) == 1
    assert capsys.readouterr().err == f"{fifo}:1:1: error: is a named pipe (FIFO), not a spec file\n"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_device_is_refused(capsys):
    assert main(["check", "/dev/zero"]) == 1
    assert capsys.readouterr().err == "/dev/zero:1:1: error: is a device, not a spec file\n"


def test_a_directory_is_refused(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"{tmp_path}:1:1: error: is a directory, not a spec file\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_an_imported_fifo_is_refused(tmp_path, capsys):
    os.mkfifo(tmp_path / "lib.net")
    spec = tmp_path / "main.net"
    spec.write_text('import "lib.net"\n')
    assert main(["check", str(spec)]) == 1
    assert capsys.readouterr().err == f"{tmp_path / 'lib.net'}:1:1: error: is a named pipe (FIFO), not a spec file\n"


def test_a_file_growing_past_the_cap_is_cut_at_the_cap(tmp_path):
    """The size is what is read (at most cap + 1 bytes), not what stat() said."""
    from netdsl.syntax.source import read_spec_bytes

    spec = tmp_path / "big.net"
    spec.write_bytes(b"#" * (limits.MAX_FILE_BYTES + 10))
    with pytest.raises(netdsl.SpecError) as info:
        read_spec_bytes(spec, "big.net")
    assert info.value.diagnostics[0].message == (
        "file is too large (2,097,162 bytes); a spec may be at most 2,097,152 bytes"
    )


def test_imports_nested_too_deep(tmp_path, capsys):
    depth = limits.MAX_IMPORT_DEPTH + 2
    for i in range(depth):
        (tmp_path / f"f{i}.net").write_text(f'import "f{i + 1}.net"\n' if i + 1 < depth else "let z = 1\n")
    assert main(["check", str(tmp_path / "f0.net")]) == 1
    line = limits.MAX_IMPORT_DEPTH
    statement = f'import "f{line + 1}.net"'
    assert capsys.readouterr().err == (
        f"{tmp_path / f'f{line}.net'}:1:1: error: imports nested more than {limits.MAX_IMPORT_DEPTH} deep\n"
        f"  {statement}\n  {'^' * len(statement)}\n"
    )


# ------------------------------------------------------------------ the last resort


@pytest.mark.parametrize(
    "error, message",
    [
        (RecursionError, "the spec nests too deeply for netdsl to process it"),
        (MemoryError, "the spec needs more memory than there is for netdsl to process it"),
    ],
)
def test_check_never_raises_what_no_limit_caught(tmp_path, monkeypatch, capsys, error, message):
    spec = tmp_path / "spec.net"
    spec.write_text("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n")

    def explode(*args, **kwargs):
        raise error()

    monkeypatch.setattr("netdsl.semantics.session.analyze", explode)  # the one check under the API and the CLI
    hint = "netdsl's limits should have refused it first: please report this spec"
    assert netdsl.check(str(spec)) == [Diagnostic.for_file(str(spec), message, hint)]
    assert main(["check", str(spec)]) == 1
    assert capsys.readouterr().err == f"{spec}:1:1: error: {message}; {hint}\n"


def test_a_real_recursion_error_is_one_line(tmp_path):
    """Python's stack made small after parsing: the check that follows runs out of it."""
    spec = tmp_path / "spec.net"
    spec.write_text(
        "let k = " + " + ".join(["1"] * 90) + "\nmodel m {\n  input x: (4,)\n  output y = x -> dense(k)\n}\n"
    )
    code = (
        "import sys, netdsl\nprogram = netdsl.parse_file(sys.argv[1])\nsys.setrecursionlimit(120)\n"
        "print(netdsl.check(program)[0].message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "the spec nests too deeply for netdsl to process it\n",
        "",
    )


# ------------------------------------------------------------------ what the limits allow


@pytest.mark.slow
def test_a_model_of_the_most_layers_allowed_checks_clean(tmp_path):
    steps = "".join(f"  h{i} = {'x' if i == 0 else f'h{i - 1}'} -> dense(4) * 9999\n" for i in range(5))
    spec = f"model m {{\n  input x: (4,)\n{steps}  output y = h4 -> dense(1) * 4\n}}\n"
    program = netdsl.parse(spec, filename="big.net")
    assert netdsl.check(program) == []
    from netdsl.semantics.analysis import analyze

    assert len(analyze(program).graphs["m"].nodes) == limits.MAX_LAYERS
    over = spec.replace("dense(1) * 4", "dense(1) * 5")
    assert [d.message for d in netdsl.check(text=over, filename="big.net")] == [
        "the model has more than 50,000 layers after expansion"
    ]


def test_a_failed_constant_is_reported_once_not_at_every_use():
    text = (
        "let bad = 1 / 0\nlet a = bad + 1\nlet b = [bad]\n"
        "model m {\n  input x: (4,)\n  output y = x -> dense(bad + a)\n}\n"
    )
    assert [(d.line, d.message) for d in netdsl.check(text=text, filename="t.net")] == [(1, "division by zero")]


def test_a_failed_block_constant_is_not_called_a_tensor():
    text = (
        "block b() {\n  input x\n  let k = 1 / 0\n  output y = x -> dense(k)\n}\n"
        "model m {\n  input x: (4,)\n  output y = x -> b\n}\n"
    )
    assert [(d.line, d.message) for d in netdsl.check(text=text, filename="t.net")] == [(3, "division by zero")]


def test_a_large_constant_is_cut_in_a_message():
    text = "let w = [1] * 5000\nmodel m {\n  input x: (4,)\n  output y = x -> dense(w)\n}\n"
    shown = "[" + ", ".join(["1"] * 5000)
    assert [d.message for d in netdsl.check(text=text, filename="t.net")] == [
        "parameter 'units' of 'dense' expects an integer, received a list " + shown[: limits.MAX_SHOWN_VALUE] + "..."
    ]


@pytest.mark.slow
def test_a_large_file_pays_for_what_it_writes_out():
    """Over 480 KB, the expansion budget grows with the text (one step per 8 bytes)."""
    models = "".join(
        f"model m{i} {{\n  input x: (4,)\n  output y = x -> relu * 10000 -> relu * 10000\n}}\n" for i in range(4)
    )  # 4 x 20,000 layers and their statements: over 60,000 steps
    refused = netdsl.check(text=models, filename="big.net")
    assert [d.message for d in refused] == ["the spec takes more than 60,000 steps to expand"]
    padded = "# a long comment line to make the file large\n" * 24_000 + models  # about 1.1 MB
    assert netdsl.check(text=padded, filename="big.net") == []
