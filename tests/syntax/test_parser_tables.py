"""The parser: committed LALR tables that match the grammar, no cache, IR as lark shaped it,
syntax-error recovery in one pass over the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netdsl.errors import SpecError
from netdsl.grammar import grammar_text
from netdsl.syntax import parser, syntax_errors, tables
from netdsl.syntax.lexer import lex
from netdsl.syntax.transform import to_ir

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def test_committed_tables_are_what_lark_makes_of_the_grammar():
    committed = tables.TABLES_PATH.read_text(encoding="utf-8")
    assert tables.render(tables.generate(grammar_text())) == committed, (
        "the grammar changed: run scripts/gen_parser_tables.py"
    )
    data = json.loads(committed)
    assert data["grammar_sha256"] == tables.grammar_digest(grammar_text())


def test_tables_that_do_not_match_the_grammar_are_not_used(monkeypatch):
    changed = grammar_text().replace('ARROW: "->"', 'ARROW: "=>"')
    monkeypatch.setattr(tables, "grammar_text", lambda: changed)
    tables.load_tables.cache_clear()
    try:
        flow = to_ir("let f = x => dense(3)\n", "t.net").decls[0].value
        assert [type(item).__name__ for item in flow.items] == ["Name", "Call"]
        with pytest.raises(SpecError):
            to_ir("let f = x -> dense(3)\n", "t.net")
    finally:
        tables.load_tables.cache_clear()


def test_parsing_imports_no_lark_and_writes_nothing(tmp_path):
    """No parser cache anywhere: the tables are package data read as JSON, and
    neither a spec nor one with syntax errors needs lark to be imported."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT / "dsl")}
    code = (
        "import sys\n"
        "from netdsl.errors import SpecError\n"
        "from netdsl.syntax.transform import to_ir\n"
        "to_ir(open(sys.argv[1]).read(), 'resnet50.net')\n"
        "try:\n    to_ir('let a = (1 +\\nlet b = = 2\\n', 'bad.net')\n"
        "except SpecError as exc:\n    assert len(exc.diagnostics) == 2\n"
        "print(sorted(m for m in sys.modules if 'lark' in m))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "specs" / "resnet50.net")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert list(tmp_path.iterdir()) == []


def test_ir_and_spans_are_those_of_the_tree_parser():
    """syntax_coverage.ir.json was written by netdsl 0.1.0, which built lark's parse
    tree with propagated positions and transformed it: the IR built during the parse
    must be the same, spans included (`(a + 1) * 2` starts at its parenthesis)."""
    text = (GOLDEN / "syntax_coverage.net").read_text(encoding="utf-8")
    expected = json.loads((GOLDEN / "syntax_coverage.ir.json").read_text(encoding="utf-8"))
    assert to_ir(text, "syntax_coverage.net").model_dump(mode="json") == expected


def test_the_lexer_gives_lark_basic_lexers_tokens():
    """Every spec and fixture of the repository, bad characters included: the same
    tokens as lark's basic lexer, and a failure at the same place."""
    from lark import Lark
    from lark.exceptions import UnexpectedCharacters

    from netdsl.syntax.lexer import LexFailure

    reference = Lark(grammar_text(), parser="lalr", lexer="basic", maybe_placeholders=True)
    texts = [p.read_bytes().decode("utf-8", "replace") for p in sorted(ROOT.glob("**/*.net")) if ".venv" not in p.parts]
    texts += ['let s = "a\\"b" # c\nlet t = 1.5e3 + .5 - 2E-2;let u=x<=y!=z\r\n', "let a = 1 $ 2\n"]
    loaded = tables.load_tables()
    for text in texts:
        ours, theirs, our_stop, their_stop = [], [], None, None
        try:
            for tok in lex(text, loaded):
                ours.append(tok)
        except LexFailure as exc:
            our_stop = (exc.line, exc.col)
        try:
            for t in reference.lex(text):
                theirs.append((t.type, t.value, t.line, t.column, t.end_line, t.end_column))
        except UnexpectedCharacters as exc:
            their_stop = (exc.line, exc.column)
        assert (ours, our_stop) == (theirs, their_stop)
    assert len(texts) > 50


def _lexed_characters(monkeypatch) -> list[int]:
    sizes: list[int] = []

    def counting_lex(text, *args, **kwargs):
        sizes.append(len(text))
        return lex(text, *args, **kwargs)

    monkeypatch.setattr(syntax_errors, "lex", counting_lex)
    monkeypatch.setattr(parser, "lex", counting_lex)
    return sizes


def test_one_syntax_error_after_thousands_of_declarations_costs_one_pass(monkeypatch):
    lines = [f"let c{i} = {i} + 1" for i in range(4000)] + ["let bad = (1 +", "let after = 2"]
    text = "\n".join(lines) + "\n"
    sizes = _lexed_characters(monkeypatch)
    with pytest.raises(SpecError) as caught:
        to_ir(text, "big.net")
    assert [(d.line, d.col, d.message) for d in caught.value.diagnostics] == [(4001, 14, "missing ')'")]
    assert caught.value.diagnostics[0].hint == "the '(' at line 4001, column 11 is never closed"
    # the IR parse up to the error, each declaration once, the one that fails once more
    assert sum(sizes) <= 2 * len(text) + 100


def test_the_first_error_of_each_declaration_is_reported(monkeypatch):
    text = "".join(f"let c{i} = = {i}\n" for i in range(100))
    sizes = _lexed_characters(monkeypatch)
    with pytest.raises(SpecError) as caught:
        to_ir(text, "many.net")
    found = caught.value.diagnostics
    assert len(found) == syntax_errors.MAX_SYNTAX_ERRORS
    assert [(d.line, d.col) for d in found] == [(i + 1, 10 if i < 10 else 11) for i in range(20)]
    assert {d.message for d in found} == {"expected a value after '=', found '='"}
    assert sum(sizes) <= 2 * len(text)  # 20 declarations parsed twice: then it stops


def test_building_errors_wait_for_syntax_errors():
    """A number too long in one declaration and a syntax error in a later one: the
    syntax error is reported (as when the IR was built after parsing)."""
    text = f"let big = {'9' * 50}\nlet bad = )\n"
    with pytest.raises(SpecError) as caught:
        to_ir(text, "t.net")
    assert [d.message for d in caught.value.diagnostics] == ["expected a value before ')'"]
    with pytest.raises(SpecError) as caught:
        to_ir(f"let big = {'9' * 50}\nlet fine = 1\n", "t.net")
    assert [d.message for d in caught.value.diagnostics] == ["number too long (50 digits; at most 40)"]


@pytest.mark.parametrize(
    "expression",
    [
        " + ".join(["1"] * 250),
        "-" * 250 + "1",
        "f" + "(1)" * 250,
        "x" + ".a" * 250,
        "[" * 60 + " + ".join(["1"] * 160) + "]" * 60,
    ],
)
def test_an_expression_nested_too_deeply_is_one_diagnostic(expression):
    with pytest.raises(SpecError) as caught:
        to_ir(f"let ok = 1\nlet deep = {expression}\n", "t.net")
    (found,) = caught.value.diagnostics
    assert (found.line, found.message) == (2, "expression nested too deeply")
    assert found.hint == f"at most {parser.MAX_EXPRESSION_DEPTH} levels; name a part of it with 'let'"


def test_an_expression_just_within_the_depth_limit_parses():
    deep = " + ".join(["1"] * parser.MAX_EXPRESSION_DEPTH)
    value = to_ir(f"let deep = {deep}\n", "t.net").decls[0].value
    assert value.op == "+"
