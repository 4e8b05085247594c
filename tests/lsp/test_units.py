"""The language server's pieces on their own: columns in each encoding, the completion
context read from the text before the cursor, and no TensorFlow anywhere in the server."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from netdsl.lsp.completion import context_at
from netdsl.lsp.positions import UTF8, UTF16, UTF32, Lines, from_units, to_units
from tests.support.lsp_harness import ROOT


@pytest.mark.parametrize("encoding, expected", [(UTF16, 7), (UTF8, 11), (UTF32, 5)])
def test_columns_past_emoji_in_each_encoding(encoding, expected):
    line = 'a="🙂🙂" b'  # the b is code point 7 (0-based); 5 code points in, each emoji 2 UTF-16 units, 4 UTF-8 bytes
    index = line.index("b")
    assert to_units(line, index - 2, encoding) == expected
    assert from_units(line, expected, encoding) == index - 2
    lines = Lines("x\n" + line, encoding)
    assert lines.point(lines.position(2, index + 1)) == (2, index + 1)


@pytest.mark.parametrize(
    "before, kind, callee, argument, keyword",
    [
        ("  y = x -> ", "step", None, 0, None),
        ("  y = x -> den", "step", None, 0, None),
        ("  y = x\n    -> ", "step", None, 0, None),
        ("  y = x -> dense(", "argument", "dense", 0, None),
        ("  y = x -> dense(64, ", "argument", "dense", 1, None),
        ("  y = x -> dense(64, activation=", "value", "dense", 1, "activation"),
        ("  y = x -> dense(64, activation=re", "value", "dense", 1, "activation"),
        ("  y = x -> conv2d(8, (3, 3), ", "argument", "conv2d", 2, None),
        ("  y = x -> lib.stage(", "argument", "lib.stage", 0, None),
        ("  y = x -> dense(64)\n  ", "general", None, 0, None),
        ("  y = x -> dense(64)  # -> ", "none", None, 0, None),
        ('  y = x -> conv2d(8, 3, padding="sa', "none", None, 0, None),
    ],
)
def test_completion_context_from_the_text_before_the_cursor(before, kind, callee, argument, keyword):
    context = context_at(before)
    assert (context.kind, context.callee, context.argument, context.keyword) == (kind, callee, argument, keyword)


def test_the_server_never_imports_tensorflow():
    """Checking, hovering and completing every example spec leaves TensorFlow and Keras unimported."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from netdsl.lsp import server, completion, hover
        from netdsl.lsp.checking import add_names, check_text
        from netdsl.lsp.symbols import inlay_hints
        from netdsl.lsp.positions import Lines
        for path in sorted(Path("specs").glob("*.net")):
            text = path.read_text()
            snap = add_names(check_text(text, 1, str(path), path.resolve(), {}.get))
            assert not snap.diagnostics, snap.diagnostics
            inlay_hints(snap, Lines(text), 1, 10_000)
            for n, line in enumerate(text.split("\\n"), 1):
                hover.hover_text(snap, "", line, str(path), n, len(line) // 2 + 1)
                completion.completions(completion.context_at(line), snap, str(path), n, len(line) + 1)
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "jax"))
        print(heavy)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_lsp_extra_the_command_says_how_to_install_it():
    script = (
        "import sys\n"
        "sys.modules['pygls'] = None  # as if netdsl[lsp] were not installed\n"
        "from netdsl.cli import main\n"
        "sys.exit(main(['lsp']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        "netdsl lsp: the language server needs pygls (pygls is missing); install it with: pip install 'netdsl[lsp]'\n"
    )


def test_an_open_buffer_never_lets_an_import_leave_the_folder(tmp_path):
    """The overlay replaces what is read, not the import rules: escaping and absolute paths stay refused."""
    from netdsl.errors import SpecError
    from netdsl.syntax.loader import load_text

    root = tmp_path / "project"
    root.mkdir()
    outside = (tmp_path / "outside.net").resolve()
    buffers = {outside: "let secret = 1\n", (root / "lib.net").resolve(): "let width = 8\n"}
    text = 'import "../outside.net"\nimport "lib.net"\nlet w = width\n'
    with pytest.raises(SpecError) as caught:
        load_text(text, str(root / "main.net"), overlay=buffers.get)
    assert [d.message for d in caught.value.diagnostics] == ["import '../outside.net' leaves the spec's folder"]
    program = load_text('import "lib.net"\nlet w = width\n', str(root / "main.net"), overlay=buffers.get)
    assert program.texts[str(root / "lib.net")] == "let width = 8\n"  # read from the buffer: no file on disk
