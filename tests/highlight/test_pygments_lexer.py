"""The Pygments lexer: every `.net` text the project holds lexes with no error
token and an exact round trip; its tokens line up with the parser's own lexer
(same grammar, same boundaries, an error exactly where the parser's lexer
fails); tokens carry meaning; and the built wheel registers it with Pygments."""

from __future__ import annotations

import functools
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lark import Lark
from lark.exceptions import UnexpectedCharacters
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename, get_lexer_for_mimetype
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from netdsl import registry
from netdsl.grammar import grammar_text
from netdsl.highlight.pygments_lexer import NetdslLexer
from netdsl.highlight.vocabulary import vocabulary
from tests.support.highlight_corpus import ROOT, non_utf8_files, spec_files, texts

TEXTS = texts()
LEXER = NetdslLexer()


def lex(text: str) -> list[tuple[int, object, str]]:
    return list(LEXER.get_tokens_unprocessed(text))


def visible(text: str) -> list[tuple[str, object]]:
    return [(v, t) for _, t, v in lex(text) if t is not Whitespace]


@functools.lru_cache(maxsize=1)
def parser_lexer() -> Lark:
    """The parser's lexer, built from the same grammar file (without the layout
    post-lexer, which only rearranges newlines and braces)."""
    return Lark(grammar_text(), parser="lalr", lexer="basic")


# --------------------------------------------------------------------------
# The corpus


def test_the_corpus_holds_every_spec_fixture_and_fence():
    ids = [ident for ident, _ in TEXTS]
    assert len([i for i in ids if i.startswith("specs/")]) >= 10
    assert len([i for i in ids if i.startswith("tests/fixtures/errors/")]) >= 20
    assert len([i for i in ids if i.startswith("tests/fixtures/fmt/")]) >= 15
    assert len([i for i in ids if i.startswith("README.md#")]) >= 1
    assert len([i for i in ids if i.startswith("docs/")]) >= 10
    assert len([i for i in ids if i.startswith("LANGUAGE.md#")]) >= 7
    # Only files that are not UTF-8 text are left out, and they are tested below.
    assert len(spec_files()) == len([i for i in ids if i.endswith(".net")]) + len(non_utf8_files())


@pytest.mark.parametrize("ident,text", TEXTS, ids=[i for i, _ in TEXTS])
def test_lexes_with_no_error_and_an_exact_round_trip(ident, text):
    tokens = lex(text)
    assert [(i, v) for i, t, v in tokens if t is Error] == []
    assert "".join(v for _, _, v in tokens) == text
    # The public path formatters use (newline handling included) gives the same text.
    assert "".join(v for _, v in LEXER.get_tokens(text)) == text


@pytest.mark.parametrize("ident,text", TEXTS, ids=[i for i, _ in TEXTS])
def test_tokens_line_up_with_the_parsers_lexer(ident, text):
    assert_lines_up(text)


def test_a_file_that_is_not_text_shows_errors_where_the_parser_stops():
    (path,) = non_utf8_files()  # tests/fixtures/errors/binary_garbage.net
    text = path.read_bytes().decode("latin-1")  # what pygmentize falls back to
    tokens = lex(text)
    assert "".join(v for _, _, v in tokens) == text
    errors = [i for i, t, _ in tokens if t is Error]
    with pytest.raises(UnexpectedCharacters) as failure:
        list(parser_lexer().lex(text, dont_ignore=True))
    assert errors and errors[0] == failure.value.pos_in_stream


# --------------------------------------------------------------------------
# Agreement with the parser's lexer, on the corpus and on mutated text


def _allowed(kind: str, value: str, types: list) -> bool:
    vocab = vocabulary()
    first = types[0]
    if kind == "STRING":
        return all(t in String for t in types)
    if len(types) != 1:
        return False
    if value in vocab.keywords:
        if value in vocab.soft_keywords:  # a keyword where it declares, else a name
            return first in Keyword or first in Name
        return first in Keyword or first is Operator.Word or first is Name.Attribute
    return {
        "NAME": lambda: first in Name,
        "INT": lambda: first is Number.Integer,
        "FLOAT": lambda: first is Number.Float,
        "COMMENT": lambda: first is Comment.Single,
        "WS": lambda: first is Whitespace,
        "_NL": lambda: first is (Punctuation if value == ";" else Whitespace),
    }.get(kind, lambda: first is (Punctuation if value in vocab.punctuation else Operator))()


def assert_lines_up(text: str):
    """Each token of the parser's lexer is exactly one of ours (a string may be
    several: text and escapes), of the matching kind."""
    ours = lex(text)
    at = {pos: k for k, (pos, _, _) in enumerate(ours)}
    for tok in parser_lexer().lex(text, dont_ignore=True):
        assert tok.start_pos in at, f"no token of ours starts at {tok!r}"
        k = at[tok.start_pos]
        types, end = [], tok.start_pos
        while end < tok.end_pos:
            pos, ttype, value = ours[k]
            types.append(ttype)
            end, k = pos + len(value), k + 1
        assert end == tok.end_pos, f"our tokens overrun {tok!r}"
        assert _allowed(tok.type, tok.value, types), f"{tok.type} {tok.value!r} lexed as {types}"


INSERTS = [
    "$",
    "?",
    "!",
    "&",
    "|",
    "\\",
    "'",
    "^",
    "~",
    "`",
    "é",
    "™",
    "\v",
    '"',
    '"a\\"b',
    '\\"',
    "->",
    "#",
    "\n",
    ";",
    "1.e5",
    ".5",
    "1e",
    "0x1",
    "if",
    "activation",
    "train {",
    "model m",
    "model if",
    "let else",
    "(",
    ")",
    "]",
    "{",
    "==",
    "=",
    "**",
    "// 2",
    "\t",
    "x.5",
]


def _mutations(count: int, seed: int = 12):
    rng = random.Random(seed)
    for _ in range(count):
        _, text = rng.choice(TEXTS)
        start = rng.randrange(max(1, len(text) - 300))
        window = text[start : start + 300]
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(window) + 1)
            if rng.random() < 0.7:
                window = window[:at] + rng.choice(INSERTS) + window[at:]
            else:
                window = window[:at] + window[at + rng.randint(1, 6) :]
        yield window


def test_mutated_text_errors_exactly_where_the_parsers_lexer_fails():
    failures = 0
    for text in _mutations(600):
        tokens = lex(text)
        assert "".join(v for _, _, v in tokens) == text
        errors = [i for i, t, _ in tokens if t is Error]
        try:
            list(parser_lexer().lex(text, dont_ignore=True))
        except UnexpectedCharacters as failure:
            failures += 1
            assert errors and errors[0] == failure.pos_in_stream, repr(text)
        else:
            assert errors == [], repr(text)
            assert_lines_up(text)
    assert 100 < failures < 550  # both sides of the property were exercised


# --------------------------------------------------------------------------
# Derived from the grammar and the registry


def grammar_literals() -> set[str]:
    """The quoted literals of the grammar file, read without lark: comments and
    /regular expressions/ removed, then every "..." left."""
    lines = [line for line in grammar_text().splitlines() if not line.lstrip().startswith("//")]
    text = "\n".join(re.sub(r"/(?:[^/\\\n]|\\.)+/", "", line) for line in lines)
    return set(re.findall(r'"([^"\n]+)"', text))


def test_every_word_literal_of_the_grammar_is_a_keyword_and_the_references_are_too():
    words = {w for w in grammar_literals() if re.fullmatch(r"[A-Za-z_]\w*", w)}
    assert set(vocabulary().keywords) == words
    reference = (ROOT / "docs" / "reference" / "LANGUAGE.md").read_text(encoding="utf-8")
    listed = re.search(r"Keywords: `([^`]*)`", reference)
    assert set(" ".join(listed.groups()).split()) <= words
    for word in words - set(vocabulary().soft_keywords):
        ((value, ttype),) = visible(word)
        assert value == word and (ttype in Keyword or ttype is Operator.Word)


def test_every_symbol_of_the_grammar_is_one_operator_or_punctuation_token():
    symbols = {s for s in grammar_literals() if not re.fullmatch(r"[A-Za-z_]\w*", s)}
    assert {"->", "**", "//", "==", "<=", "=", "(", "{", ","} <= symbols
    for symbol in symbols:
        assert visible(symbol) in ([(symbol, Operator)], [(symbol, Punctuation)]), symbol


def test_builtins_are_the_registry_names():
    def keys(kind):
        return {k for n in registry.names(kind) for k in (n, *registry.lookup(kind, n).aliases)}

    vocab = vocabulary()
    assert vocab.step_builtins == keys("layer") | keys("activation")
    assert vocab.builtins == set().union(*(keys(kind) for kind in registry.KINDS))
    assert {"dense", "Conv2D", "batch_norm", "relu", "smooth_relu", "he_normal", "adam"} <= vocab.builtins


# --------------------------------------------------------------------------
# What the tokens mean

SAMPLE = """\
import "lib/blocks.net" as lib
let width = 64; let half(v, d=2) = max(1, v // d)
activation mish(x) = x * tanh(smooth_relu(x))
layer my_linear(units=32) {
  input x
  weight kernel: (x.shape[-1], units) init=glorot_uniform
  output x @ kernel
}
block conv(filters, activation=relu) {
  input x
  output y = x -> conv2d(filters, 3, padding="sa\\"me") -> lib.bottleneck(64)
    -> my_linear  # a comment
}
model m {
  input image: (28, 28, 1)
  shared enc = conv(8)
  h = image -> enc -> dense(10, activation=softmax) * 2 if true and not false else none
  train {
    optimizer = adam(learning_rate=1e-3)
  }
}
"""


def test_tokens_say_what_each_word_is():
    expected = [
        ("import", Keyword.Namespace),
        ('"lib/blocks.net"', String.Double),
        ("as", Keyword),
        ("let", Keyword.Declaration),
        ("width", Name.Constant),
        ("=", Operator),
        ("64", Number.Integer),
        (";", Punctuation),
        ("let", Keyword.Declaration),
        ("half", Name.Function),
        ("d", Name.Attribute),
        ("max", Name.Function),
        ("//", Operator),
        ("activation", Keyword.Declaration),
        ("mish", Name.Function),
        ("tanh", Name.Builtin),
        ("smooth_relu", Name.Builtin),
        ("layer", Keyword.Declaration),
        ("my_linear", Name.Class),
        ("units", Name.Attribute),
        ("input", Keyword),
        ("weight", Keyword),
        ("kernel", Name.Variable),
        (":", Punctuation),
        (".", Punctuation),
        ("shape", Name),
        ("glorot_uniform", Name.Builtin),
        ("output", Keyword),
        ("@", Operator),
        ("block", Keyword.Declaration),
        ("conv", Name.Class),
        ("activation", Name.Attribute),
        ("relu", Name.Builtin),
        ("->", Operator),
        ("conv2d", Name.Builtin),
        ("padding", Name.Attribute),
        ('"sa', String.Double),
        ('\\"', String.Escape),
        ('me"', String.Double),
        ("->", Operator),
        ("lib", Name.Namespace),
        (".", Punctuation),
        ("bottleneck", Name.Function),
        ("->", Operator),
        ("my_linear", Name.Function),
        ("# a comment", Comment.Single),
        ("model", Keyword.Declaration),
        ("m", Name.Class),
        ("shared", Keyword),
        ("enc", Name.Variable),
        ("conv", Name.Function),
        ("->", Operator),
        ("enc", Name.Function),
        ("dense", Name.Builtin),
        ("activation", Name.Attribute),
        ("softmax", Name.Builtin),
        ("*", Operator),
        ("if", Keyword),
        ("true", Keyword.Constant),
        ("and", Operator.Word),
        ("not", Operator.Word),
        ("false", Keyword.Constant),
        ("else", Keyword),
        ("none", Keyword.Constant),
        ("train", Keyword),
        ("optimizer", Name),
        ("adam", Name.Builtin),
        ("learning_rate", Name.Attribute),
        ("1e-3", Number.Float),
    ]
    tokens = iter(visible(SAMPLE))
    for want in expected:  # in order, each one somewhere after the previous one
        assert want in tokens, f"{want} not found in order"


def test_soft_keywords_name_things_where_no_declaration_starts():
    assert visible('x -> activation("relu")\n')[2] == ("activation", Name.Builtin)
    assert visible("layer = x -> dense(2)\n")[0] == ("layer", Name)
    assert visible("f(model=1)\n")[2] == ("model", Name.Attribute)
    assert visible("f(input=1)\n")[2] == ("input", Name.Attribute)  # a hard keyword as kwarg


def test_a_step_on_the_next_line_after_an_arrow_and_a_comment():
    assert visible("y = x ->  # why\n\n  my_block\n")[-1] == ("my_block", Name.Function)


def test_unclosed_string_is_an_error_at_its_quote_like_the_parser():
    tokens = visible('padding = "same\n')
    assert tokens[2] == ('"', Error)
    assert tokens[3] == ("same", Name)


def test_leading_blank_lines_are_kept_so_line_numbers_match_diagnostics():
    text = "\n\nmodel m {\n}\n"
    assert "".join(v for _, v in LEXER.get_tokens(text)) == text
    html = highlight(text, get_lexer_by_name("net"), HtmlFormatter(linenos="inline"))
    assert re.search(r'3</span>.*<span class="kd">model</span>', html)


def test_found_by_name_alias_file_and_mimetype_in_this_environment():
    for lexer in (
        get_lexer_by_name("netdsl"),
        get_lexer_by_name("net"),
        get_lexer_for_filename("specs/resnet50.net"),
        get_lexer_for_mimetype("text/x-netdsl"),
    ):
        assert type(lexer).__name__ == "NetdslLexer"


def _doc_blocks(lang: str) -> list[str]:
    text = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_the_pygmentize_commands_of_the_editors_guide_do_what_it_says(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "resnet50.net").write_bytes((ROOT / "specs" / "resnet50.net").read_bytes())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    block = next(b for b in _doc_blocks("sh") if "pygmentize" in b)
    outputs = []
    for line in block.splitlines():
        command = line.split("#")[0].strip()
        result = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (command, result.stderr)
        outputs.append(result.stdout)
    assert len(outputs) == 3
    assert "\x1b[" in outputs[0] and "resnet50" in outputs[0]  # coloured for the terminal
    assert '<span class="kd">model</span>' in (tmp_path / "resnet50.html").read_text("utf-8")
    assert outputs[2].strip() == "netdsl"


def test_the_python_example_of_the_editors_guide_runs(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "resnet50.net").write_bytes((ROOT / "specs" / "resnet50.net").read_bytes())
    monkeypatch.chdir(tmp_path)
    (code,) = _doc_blocks("python")
    namespace: dict = {}
    exec(compile(code, "docs/editors.md", "exec"), namespace)
    assert '<span class="nb">dense</span>' in namespace["html"]


# --------------------------------------------------------------------------
# Installed from the wheel, in a clean virtual environment

WHEEL_CHECK = r"""
import json, sys
import pygments.lexers as pl
from pygments.token import Error, Name
import netdsl
spec = open(sys.argv[1], encoding="utf-8").read()
found = [pl.get_lexer_by_name("netdsl"), pl.get_lexer_by_name("net"),
         pl.get_lexer_for_filename("x.net"), pl.get_lexer_for_mimetype("text/x-netdsl")]
tokens = list(found[0].get_tokens_unprocessed(spec))
print(json.dumps({
    "classes": [type(l).__module__ + "." + type(l).__name__ for l in found],
    "netdsl": netdsl.__file__,
    "errors": sum(t is Error for _, t, _ in tokens),
    "round_trip": "".join(v for _, _, v in tokens) == spec,
    "dense": [str(t) for _, t, v in tokens if v == "dense"][:1],
}))
"""

# Reports the outer environment's third-party modules the lexer's import needs,
# so the clean environment gets exactly those and nothing else.
NEEDED_MODULES = r"""
import json, sys
before = set(sys.modules)
import netdsl.highlight.pygments_lexer
tops = {m.split(".")[0] for m in set(sys.modules) - before}
paths = {}
for top in sorted(tops - set(sys.stdlib_module_names) - {"netdsl"}):
    f = getattr(sys.modules.get(top), "__file__", None)
    if f:
        paths[top] = f.rsplit("/__init__.py", 1)[0] if f.endswith("/__init__.py") else f
print(json.dumps(paths))
"""


def _run(cmd, timeout, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert result.returncode == 0, f"{cmd}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.slow
def test_the_wheel_registers_the_lexer_in_a_clean_environment(tmp_path):
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "dist"), str(ROOT)],
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("netdsl-*.whl")
    env_dir = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], timeout=120)
    python = env_dir / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)], timeout=120)
    # pygments, lark, pydantic...: linked from this environment, one by one.
    deps = tmp_path / "deps"
    deps.mkdir()
    for _module, path in json.loads(_run([sys.executable, "-c", NEEDED_MODULES], timeout=120)).items():
        (deps / Path(path).name).symlink_to(path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], timeout=60).strip())
    (site / "outer_deps.pth").write_text(f"{deps}\n", encoding="utf-8")

    spec = ROOT / "specs" / "resnet50.net"
    report = json.loads(
        _run(
            [str(python), "-I", "-c", WHEEL_CHECK, str(spec)],
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": ""},
        )
    )
    assert report["classes"] == ["netdsl.highlight.pygments_lexer.NetdslLexer"] * 4
    assert report["netdsl"].startswith(str(site))  # the wheel's copy, not the source tree
    assert report["errors"] == 0 and report["round_trip"]
    assert report["dense"] == ["Token.Name.Builtin"]  # the registry data shipped too
    # pygmentize itself, from the installed entry point
    html = _run(
        [str(env_dir / "bin" / "python"), "-I", "-m", "pygments", "-f", "html", str(spec)], timeout=120, cwd=tmp_path
    )
    assert '<span class="kd">model</span>' in html
    assert _run([str(python), "-I", "-m", "pygments", "-N", "x.net"], timeout=60).strip() == "netdsl"
