"""`netdsl fmt`: exact canonical output, identity, idempotence, meaning and comments kept.

Fixtures (tests/fixtures/fmt/): `NAME.in.net` must format to exactly `NAME.out.net`;
`identity.net` is canonical already and must come back byte for byte (the
formatter's version of sqlglot's identity fixtures). The properties run over every
fixture, every spec in specs/ (globbed at test time) and every code block of the
language reference.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl.cli import main
from netdsl.cli.fmt import run as run_fmt
from netdsl.errors import SpecError
from netdsl.syntax.formatter import LINE_LENGTH, format_text
from netdsl.syntax.transform import to_ir
from tests.support.reference_examples import examples

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "fmt"

PAIRS = sorted(p.name[: -len(".in.net")] for p in FIXTURES.glob("*.in.net"))
SPECS = sorted(ROOT.glob("specs/**/*.net"))


def corpus() -> list[tuple[str, str]]:
    """(id, text) of every fixture file and every spec."""
    files = sorted(FIXTURES.glob("*.net")) + SPECS
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in files]


def reference_blocks() -> list[tuple[str, str]]:
    # ../shared/LANGUAGE.md, or the copy in docs/reference (see tests/support/reference_examples.py)
    return [(f"LANGUAGE.md#{i}", code) for i, lang, code in examples() if lang != "text"]


def plain(value):
    """A model_dump() without spans, numbers tagged with their type (1 and 1.0 differ)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "span"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (type(value).__name__, value)
    return value


def assert_properties(text: str) -> str:
    """Idempotent, same IR (spans aside), every comment kept in order; returns the formatted text."""
    before = to_ir(text, "<string>")
    once = format_text(text)
    after = to_ir(once, "<string>")
    assert format_text(once) == once, "not idempotent"
    assert [plain(d.model_dump()) for d in after.decls] == [plain(d.model_dump()) for d in before.decls], (
        "meaning changed"
    )
    assert [c.text for c in after.comments] == [c.text for c in before.comments], "comments lost, split or reordered"
    return once


# ------------------------------------------------------------------ fixtures


def test_fixtures_exist():
    assert len(PAIRS) >= 9
    for name in PAIRS:
        assert (FIXTURES / f"{name}.out.net").is_file(), f"{name}.in.net has no {name}.out.net"


@pytest.mark.parametrize("name", PAIRS)
def test_fixture_formats_exactly(name):
    source = (FIXTURES / f"{name}.in.net").read_text(encoding="utf-8")
    expected = (FIXTURES / f"{name}.out.net").read_text(encoding="utf-8")
    assert format_text(source) == expected


@pytest.mark.parametrize("name", PAIRS)
def test_fixture_output_is_canonical(name):
    expected = (FIXTURES / f"{name}.out.net").read_text(encoding="utf-8")
    assert format_text(expected) == expected


def test_identity_fixture_is_unchanged():
    text = (FIXTURES / "identity.net").read_text(encoding="utf-8")
    assert format_text(text) == text


def test_identity_fixture_covers_the_language():
    text = (FIXTURES / "identity.net").read_text(encoding="utf-8")
    for construct in (
        "import ",
        " as lib",
        "let ",
        "activation ",
        "layer ",
        "weight ",
        "block ",
        "model ",
        "} else if ",
        "} else {",
        "shared ",
        "train {",
        "input ",
        "output ",
        "  # ",
        "\n        -> ",
        " * 2",
        "a, b = ",
        '\\"',
        "{}",
        "(1,)",
    ):
        assert construct in text, construct


# ------------------------------------------------------------------ properties


@pytest.mark.parametrize("name,text", corpus(), ids=[i for i, _ in corpus()])
def test_properties_over_fixtures_and_specs(name, text):
    assert_properties(text)


def test_specs_are_found():
    assert SPECS, "specs/ holds no .net file"


def test_properties_over_the_language_reference():
    blocks = reference_blocks()
    assert len(blocks) >= 7
    for name, code in blocks:
        try:
            assert_properties(code)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


def _with_comments(text: str, rng: random.Random) -> str:
    """The text with comments added at line ends and on lines of their own (always still valid)."""
    out, n = [], 0
    for line in text.split("\n"):
        if rng.random() < 0.3:
            out.append(" " * rng.randint(0, 5) + f"# own {n}")
            n += 1
        if line.strip() and rng.random() < 0.3:
            line += f"  # trailing {n}"
            n += 1
        out.append(line)
    return "\n".join(out)


def test_comments_anywhere_keep_the_properties():
    rng = random.Random(20240611)
    texts = [t for _, t in corpus()]
    for text in texts:
        for _ in range(2):
            assert_properties(_with_comments(text, rng))


def _random_expr(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(["a", "b", "1", "2.5", "1e-3", '"s"', "true", "none", "(1,)", "[a, b]", "{k: 1}"])
    sub = lambda: _random_expr(rng, depth - 1)  # noqa: E731
    kind = rng.randrange(9)
    if kind == 0:
        text = f"{sub()} {rng.choice(['+', '-', '*', '/', '//', '%', '@', '**', '->'])} {sub()}"
    elif kind == 1:
        text = f"{sub()} {rng.choice(['==', '!=', '<', '<=', '>', '>='])} {sub()}"
    elif kind == 2:
        text = f"{sub()} {rng.choice(['and', 'or'])} {sub()}"
    elif kind == 3:
        text = f"{rng.choice(['-', '+', 'not '])}{sub()}"
    elif kind == 4:
        text = f"{sub()} if {sub()} else {sub()}"
    elif kind == 5:
        text = f"f({sub()}, k={sub()})"
    elif kind == 6:
        text = f"({sub()}, {sub()})[{sub()}]"
    elif kind == 7:
        text = f"{sub()} -> {sub()} -> {sub()}"
    else:
        text = f"{sub()}.shape"
    return f"({text})" if rng.random() < 0.7 else text


def test_parentheses_exactly_where_precedence_needs_them():
    """Random expressions with random parentheses keep their IR (and stay idempotent) through fmt."""
    rng = random.Random(7)
    checked = 0
    for _ in range(250):
        source = f"let v = {_random_expr(rng, 4)}\n"
        try:
            to_ir(source, "<string>")
        except SpecError:
            continue  # dropped parentheses made it invalid (a comparison chain, ...)
        assert_properties(source)
        checked += 1
    assert checked > 150


@pytest.mark.parametrize(
    "source,expected",
    [
        ("let v = (conv2d(64, 3) -> relu) * 2", "let v = (conv2d(64, 3) -> relu) * 2"),
        ("let v = (y + x) -> relu", "let v = (y + x) -> relu"),
        ("let v = (a -> f) + (b -> g)", "let v = a -> f + b -> g"),
        ("let v = ((1 + 2)) * 3", "let v = (1 + 2) * 3"),
        ("let v = 1 - (2 - 3)", "let v = 1 - (2 - 3)"),
        ("let v = (1 - 2) - 3", "let v = 1 - 2 - 3"),
        ("let v = 2 ** (3 ** 2)", "let v = 2 ** 3 ** 2"),
        ("let v = (2 ** 3) ** 2", "let v = (2 ** 3) ** 2"),
        ("let v = (-2) ** 2", "let v = (-2) ** 2"),
        ("let v = -(2 ** 2)", "let v = -2 ** 2"),
        ("let v = -(-1)", "let v = - -1"),
        ("let v = not (a and b)", "let v = not (a and b)"),
        ("let v = (not a) and b", "let v = not a and b"),
        ("let v = (a < b) == c", "let v = (a < b) == c"),
        ("let v = (a if b else c) if d else e", "let v = (a if b else c) if d else e"),
        ("let v = a if b else (c if d else e)", "let v = a if b else c if d else e"),
        ("let v = (1).shape", "let v = (1).shape"),
        ("let v = (x.shape)[-1]", "let v = x.shape[-1]"),
        ("let v = x[ 1 : ]", "let v = x[1:]"),
        ("let v = x[:,:256]", "let v = x[:, :256]"),
        ("let v = x[ ... , 1 : : 2 ]", "let v = x[..., 1::2]"),
        ("let v = x[::, -1, none, ]", "let v = x[:, -1, none]"),
        ("let v = x[(1, 2)]", "let v = x[1, 2]"),
        ("let v = x[1,]", "let v = x[1,]"),
        ("let v = x[a:b:c][:, 0]", "let v = x[a:b:c][:, 0]"),
        ("let v = ( 1 , )", "let v = (1,)"),
        ("let v = 1e-3 + 1E3 + .5 + 1. + 007", "let v = 1e-3 + 1E3 + .5 + 1. + 007"),
        ('let v = "a\\"b\\\\c\\td\\ne"', 'let v = "a\\"b\\\\c\\td\\ne"'),
        ("model m {\n  output ({a: 1})\n}", "model m {\n  output ({a: 1})\n}"),
    ],
)
def test_single_constructs(source, expected):
    assert format_text(source + "\n") == expected + "\n"


def test_expression_printer_without_source_prints_numbers_by_value():
    from netdsl.syntax.format_expr import ExprPrinter

    (decl,) = to_ir("let v = 1e-3 * (2 + 007)", "<string>").decls
    assert ExprPrinter().expr(decl.value) == "0.001 * (2 + 7)"


def test_layout_rules():
    assert format_text("") == ""
    assert format_text("\n\n  \n") == ""
    assert format_text("let a = 1\r\nlet b = 2  # c\r\n") == "let a = 1\nlet b = 2  # c\n"
    assert format_text("\ufefflet a=1") == "let a = 1\n"
    assert format_text("let a = 1; let b = 2  # both") == "let a = 1\nlet b = 2  # both\n"
    assert format_text("model m {}\nmodel n {\n\n}") == "model m {}\n\nmodel n {}\n"
    assert format_text("model m { input x: (1,); output x }  # c") == (
        "model m {\n  input x: (1,)\n  output x\n}  # c\n"
    )
    # Blank lines: kept (as one) between one-line declarations and inside bodies, never after `{`.
    assert format_text("let a = 1\n\n\n\nlet b = 2\nlet c = 3\n") == "let a = 1\n\nlet b = 2\nlet c = 3\n"
    assert format_text("model m {\n\n  input x\n\n\n  output x\n\n}\n") == "model m {\n  input x\n\n  output x\n}\n"


def test_long_lines_break_and_short_ones_join():
    steps = " -> ".join(f"dense({n}, activation=relu)" for n in range(100, 106))
    text = format_text(f"model m {{\n  input x: (8,)\n  y = x -> {steps}\n  output y\n}}\n")
    lines = text.splitlines()
    assert all(len(line) <= LINE_LENGTH for line in lines)
    assert lines[2].startswith("  y = x -> dense(100") and lines[3].startswith("        -> dense(")
    joined = format_text("model m {\n  y = x\n    -> dense(8)\n    -> relu\n}\n")
    assert joined == "model m {\n  y = x -> dense(8) -> relu\n}\n"
    listed = format_text("let v = [" + ", ".join(f'"item number {i}"' for i in range(8)) + "]\n")
    assert listed.splitlines()[0] == "let v = [" and listed.splitlines()[1] == '  "item number 0",'
    assert listed.endswith('  "item number 7",\n]\n')


def test_syntax_errors_propagate():
    with pytest.raises(SpecError) as info:
        format_text("model m {\n  y = x ->\n}\n", "bad.net")
    (d,) = info.value.diagnostics
    assert (d.file, d.line) == ("bad.net", 3)
    assert "expected a step after '->'" in d.message


def test_library_api():
    import netdsl.syntax.formatter  # noqa: F401 - the module must not shadow the API function

    assert netdsl.format(text="let  a=1") == "let a = 1\n"
    assert netdsl.format(text="let  a=1", filename="a.net") == "let a = 1\n"
    assert netdsl.api.format(text="let  a=1") == "let a = 1\n"


# ------------------------------------------------------------------ run_fmt and the CLI


class Args:
    def __init__(self, files, check=False, diff=False):
        self.files, self.check, self.diff = [str(f) for f in files], check, diff


UGLY = "model m{\n  input x:(8,)   # keep me\n  output y=x->dense(4)\n}\n"
PRETTY = "model m {\n  input x: (8,)  # keep me\n  output y = x -> dense(4)\n}\n"


def test_run_fmt_check(tmp_path, capsys):
    ugly, pretty = tmp_path / "ugly.net", tmp_path / "pretty.net"
    ugly.write_text(UGLY)
    pretty.write_text(PRETTY)
    assert run_fmt(Args([ugly, pretty], check=True)) == 1
    assert capsys.readouterr().out == f"would reformat {ugly}\n"
    assert ugly.read_text() == UGLY  # --check writes nothing
    assert run_fmt(Args([pretty], check=True)) == 0
    assert capsys.readouterr().out == ""


def test_run_fmt_diff(tmp_path, capsys):
    ugly = tmp_path / "ugly.net"
    ugly.write_text(UGLY)
    assert run_fmt(Args([ugly], diff=True)) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"--- {ugly}\n+++ {ugly}\n@@ ")
    assert "-model m{\n" in out and "+model m {\n" in out and "+  input x: (8,)  # keep me\n" in out
    assert ugly.read_text() == UGLY  # --diff writes nothing
    assert run_fmt(Args([ugly], diff=True, check=True)) == 1
    assert "would reformat" in capsys.readouterr().out


def test_run_fmt_diff_marks_a_missing_final_newline(tmp_path, capsys):
    spec = tmp_path / "a.net"
    spec.write_text("let a = 1")
    run_fmt(Args([spec], diff=True))
    assert "-let a = 1\n\\ No newline at end of file\n+let a = 1\n" in capsys.readouterr().out


def test_run_fmt_rewrites_atomically(tmp_path, capsys):
    ugly, pretty = tmp_path / "ugly.net", tmp_path / "pretty.net"
    ugly.write_text(UGLY)
    pretty.write_text(PRETTY)
    os.chmod(ugly, 0o640)
    before = pretty.stat().st_mtime_ns
    assert run_fmt(Args([ugly, pretty])) == 0
    assert capsys.readouterr().out == f"reformatted {ugly}\n"
    assert ugly.read_text() == PRETTY
    assert (ugly.stat().st_mode & 0o777) == 0o640
    assert pretty.stat().st_mtime_ns == before  # unchanged files are not rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pretty.net", "ugly.net"]  # no temp files left


def test_run_fmt_rewrites_a_bom_and_crlf(tmp_path):
    spec = tmp_path / "a.net"
    spec.write_bytes(b"\xef\xbb\xbflet a = 1\r\n")
    run_fmt(Args([spec]))
    assert spec.read_bytes() == b"let a = 1\n"


def test_run_fmt_reports_every_files_errors(tmp_path, capsys):
    bad1, good, bad2 = tmp_path / "bad1.net", tmp_path / "good.net", tmp_path / "bad2.net"
    bad1.write_text("model m {\n  y = x ->\n}\n")
    good.write_text(UGLY)
    bad2.write_bytes(b"let a = \xff\n")
    missing = tmp_path / "missing.net"
    with pytest.raises(SpecError) as info:
        run_fmt(Args([bad1, good, bad2, missing]))
    files = [d.file for d in info.value.diagnostics]
    assert files == [str(bad1), str(bad2), str(missing)]
    assert good.read_text() == PRETTY  # the good file is still formatted
    assert bad1.read_text() == "model m {\n  y = x ->\n}\n"
    assert info.value.sources.line(str(bad1), 3) == "}"


def test_cli_fmt_exit_codes(tmp_path, capsys):
    ugly = tmp_path / "ugly.net"
    ugly.write_text(UGLY)
    assert main(["fmt", "--check", str(ugly)]) == 1
    assert main(["fmt", str(ugly)]) == 0
    assert main(["fmt", "--check", str(ugly)]) == 0
    assert ugly.read_text() == PRETTY
    capsys.readouterr()
    bad1, bad2 = tmp_path / "bad1.net", tmp_path / "bad2.net"
    bad1.write_text("let a = (1,\n")
    bad2.write_text("model m {\n  y = x -> \n}\n")
    assert main(["fmt", str(bad1), str(bad2)]) == 1
    err = capsys.readouterr().err
    assert f"{bad1}:" in err and f"{bad2}:" in err
    assert "\n  let a = (1,\n" in err and "\n  }\n  ^\n" in err  # source lines and carets are shown
    assert "2 errors" in err
    with pytest.raises(SystemExit) as usage:
        main(["fmt"])
    assert usage.value.code == 2


def test_fmt_does_not_import_tensorflow(tmp_path):
    spec = tmp_path / "a.net"
    spec.write_text(UGLY)
    code = (
        "import sys\n"
        "from netdsl.cli import main\n"
        f"assert main(['fmt', '--check', {str(spec)!r}]) == 1\n"
        f"assert main(['fmt', {str(spec)!r}]) == 0\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras'))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


WIDE = """\
block stage(filters, filters2, kernel=1, strides=1, padding="same", kernel2=3, strides2=1, padding2="same") {
  input x
  output y = x -> conv2d(filters, kernel, strides=strides, padding=padding, use_bias=false, name="first_conv")
}

model m {
  input q: (4, 8)
  input kv: (6, 8)
  out, weights = (q, kv) -> multi_head_attention(num_heads=2, key_dim=4, return_attention_scores=true)
  h = out -> dense(8) -> stage(16, 32, kernel=3, strides=1, padding="same", kernel2=3) -> global_average_pooling1d
  s = out -> conv1d(512, 3, padding="same", activation=relu, kernel_initializer=he_normal) * 3
  output y = softmax(out @ transpose(kv -> dense(8), (0, 2, 1)) / sqrt(8.0), axis=-1) @ (kv -> dense(8))
  output h, s, weights
}
"""


def test_no_line_is_wider_than_the_rule_when_it_can_break():
    """Long calls in flows (alone on a line, repeated, first in an operator expression) and long
    parameter lists of blocks break one item per line (issue 30: `fmt` wrote 108-125 columns)."""
    formatted = assert_properties(WIDE)
    assert max(len(line) for line in formatted.splitlines()) <= LINE_LENGTH, formatted
    assert "block stage(\n  filters,\n" in formatted and '  padding2="same",\n) {\n' in formatted
    assert "out, weights = (q, kv) -> multi_head_attention(\n    num_heads=2,\n" in formatted
    assert "  ) * 3\n" in formatted and "  output y = softmax(\n" in formatted


SHIPPED = sorted([*(ROOT / "specs").rglob("*.net"), *(ROOT / "dsl" / "netdsl" / "zoo" / "specs").glob("*.net")])


def test_the_shipped_specs_are_formatted_and_fit_the_width():
    """specs/ and the zoo's specs (written by the decompiler) are in `fmt` form, every line within 88."""
    unformatted, wide = [], []
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        unformatted += [path.name] if format_text(text) != text else []
        wide += [f"{path.name}: {line}" for line in text.splitlines() if len(line) > LINE_LENGTH and "#" not in line]
    assert not unformatted and not wide
