"""Editor support: the TextMate grammar, run by the engine VS Code uses
(vscode-textmate + vscode-oniguruma under Node.js), gives the expected scopes
and agrees with the Pygments lexer on every `.net` text of the project; the
committed grammar is the generated one; the VS Code extension's manifest,
language configuration and client hang together."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from netdsl.highlight.pygments_lexer import NetdslLexer
from netdsl.highlight.textmate import grammar_json
from tests.support.highlight_corpus import ROOT, texts

VSCODE = ROOT / "editors" / "vscode"
GRAMMAR = ROOT / "editors" / "textmate" / "netdsl.tmLanguage.json"
NODE = shutil.which("node")

needs_node = pytest.mark.skipif(
    NODE is None,
    reason="Node.js is not installed (make test installs it with apt-get where it can); the TextMate engine runs on it",
)


def node(script: str, *args: str, stdin: str = "") -> str:
    if not (VSCODE / "node_modules" / "vscode-textmate").is_dir():
        pytest.fail("editors/vscode/node_modules is missing: run `make editors` (make test does)")
    result = subprocess.run(
        [NODE, str(VSCODE / "test" / script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=VSCODE,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def scopes_of(sources: list[str]) -> list[list[list[tuple[str, list[str]]]]]:
    """For each source, for each line, its (text, scopes) tokens."""
    out = node("tokenize.js", str(GRAMMAR), stdin=json.dumps(sources))
    return [[[(t, s) for t, s in line] for line in lines] for lines in json.loads(out)]


def scope_of(line: str, word: str, nth: int = 0) -> str:
    """The innermost scope of the `nth` token whose text is `word` on `line`."""
    ((tokens,),) = scopes_of([line])
    found = [scopes[-1] for text, scopes in tokens if text == word]
    assert len(found) > nth, f"{word!r} is not a token of {line!r}: {tokens}"
    return found[nth]


# --------------------------------------------------------------------------
# The grammar files


def test_the_committed_grammars_are_the_generated_one():
    generated = grammar_json()
    for path in (GRAMMAR, VSCODE / "syntaxes" / "netdsl.tmLanguage.json"):
        assert path.read_text(encoding="utf-8") == generated, (
            f"{path.relative_to(ROOT)} is stale: run scripts/gen_textmate.py"
        )


def test_gen_textmate_check_reports_a_stale_copy(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_textmate
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    stale = tmp_path / "netdsl.tmLanguage.json"
    stale.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(gen_textmate, "TARGETS", (GRAMMAR, stale))
    monkeypatch.setattr(gen_textmate, "ROOT", Path("/"))
    assert gen_textmate.main(["--check"]) == 1
    assert gen_textmate.main([]) == 0
    assert stale.read_text(encoding="utf-8") == grammar_json()
    assert gen_textmate.main(["--check"]) == 0


# --------------------------------------------------------------------------
# Scopes on representative lines (the real engine)

SCOPES = [
    ('import "lib/blocks.net" as lib', "import", "keyword.control.import.import.netdsl"),
    ('import "lib/blocks.net" as lib', "lib/blocks.net", "string.quoted.double.netdsl"),
    ("let width = 64  # channels", "let", "storage.type.let.netdsl"),
    ("let width = 64  # channels", "width", "variable.other.constant.netdsl"),
    ("let width = 64  # channels", "64", "constant.numeric.integer.netdsl"),
    ("let width = 64  # channels", "# channels", "comment.line.number-sign.netdsl"),
    ("let width = 64  # channels", "=", "keyword.operator.assignment.netdsl"),
    ("let half(v, d=2) = v // d", "half", "entity.name.function.let.netdsl"),
    ("let half(v, d=2) = v // d", "d", "variable.parameter.netdsl"),
    ("let half(v, d=2) = v // d", "//", "keyword.operator.arithmetic.netdsl"),
    ("model mnist {", "model", "storage.type.model.netdsl"),
    ("model mnist {", "mnist", "entity.name.type.model.netdsl"),
    ("model mnist {", "{", "punctuation.section.braces.begin.netdsl"),
    ("block conv_bn(filters, activation=relu) {", "conv_bn", "entity.name.type.block.netdsl"),
    ("block conv_bn(filters, activation=relu) {", "activation", "variable.parameter.netdsl"),
    ("block conv_bn(filters, activation=relu) {", "relu", "support.function.builtin.netdsl"),
    ("layer my_linear(units=32) {", "my_linear", "entity.name.type.layer.netdsl"),
    ("activation mish(x) = x * tanh(x)", "mish", "entity.name.function.activation.netdsl"),
    ("activation mish(x) = x * tanh(x)", "tanh", "support.function.builtin.netdsl"),
    ("activation mish(x) = x * tanh(x)", "*", "keyword.operator.arithmetic.netdsl"),
    ("  weight kernel: (x.shape[-1], units) init=glorot_uniform", "weight", "keyword.other.weight.netdsl"),
    ("  weight kernel: (x.shape[-1], units) init=glorot_uniform", "kernel", "variable.other.weight.netdsl"),
    ("  weight kernel: (x.shape[-1], units) init=glorot_uniform", "glorot_uniform", "support.function.builtin.netdsl"),
    ("  input image: (28, 28, 1)", "input", "keyword.other.input.netdsl"),
    ("  input image: (28, 28, 1)", "image", "variable.other.netdsl"),
    ("  input image: (28, 28, 1)", ",", "punctuation.separator.comma.netdsl"),
    ("  h = image -> conv_bn(32) -> dense(10) -> lib.bottleneck", "->", "keyword.operator.arrow.netdsl"),
    ("  h = image -> conv_bn(32) -> dense(10) -> lib.bottleneck", "conv_bn", "entity.name.function.step.netdsl"),
    ("  h = image -> conv_bn(32) -> dense(10) -> lib.bottleneck", "dense", "support.function.builtin.netdsl"),
    ("  h = image -> conv_bn(32) -> dense(10) -> lib.bottleneck", "lib", "entity.name.namespace.netdsl"),
    ("  h = image -> conv_bn(32) -> dense(10) -> lib.bottleneck", "bottleneck", "entity.name.function.step.netdsl"),
    ('  y = x -> conv2d(8, 3, padding="sa\\"me")', '\\"', "constant.character.escape.netdsl"),
    ('  y = x -> conv2d(8, 3, padding="sa\\"me")', "padding", "variable.parameter.netdsl"),
    ("  optimizer = adam(learning_rate=1e-3)", "1e-3", "constant.numeric.float.netdsl"),
    ("  optimizer = adam(learning_rate=1e-3)", "adam", "support.function.builtin.netdsl"),
    ("  z = a if b > 0 and not c else none", "if", "keyword.control.conditional.if.netdsl"),
    ("  z = a if b > 0 and not c else none", ">", "keyword.operator.comparison.netdsl"),
    ("  z = a if b > 0 and not c else none", "and", "keyword.operator.logical.and.netdsl"),
    ("  z = a if b > 0 and not c else none", "none", "constant.language.none.netdsl"),
    ("  train {", "train", "keyword.other.train.netdsl"),
    ("sweep mnist {", "sweep", "storage.type.sweep.netdsl"),
    ("sweep mnist {", "mnist", "entity.name.type.model.netdsl"),
    ('  x -> activation("relu")', "activation", "support.function.builtin.netdsl"),
    ("  output x @ kernel", "@", "keyword.operator.matrix.netdsl"),
    ("  h = x $ 2", "$", "invalid.illegal.character.netdsl"),
    ('  p = "unclosed', '"', "invalid.illegal.unclosed-string.netdsl"),
]


@needs_node
def test_scopes_of_representative_lines():
    sources = [line for line, _, _ in SCOPES]
    results = scopes_of(sources)
    wrong = []
    for (line, word, scope), (tokens,) in zip(SCOPES, results):
        found = [scopes for text, scopes in tokens if text == word]
        if not found or scope not in found[0]:
            wrong.append((line, word, scope, found))
    assert wrong == []


@needs_node
def test_a_call_spanning_lines_keeps_its_argument_scopes():
    ((first, second, third),) = scopes_of(['y = x -> conv2d(\n  32,\n  padding="same")'])
    assert [s[-1] for t, s in third if t == "padding"] == ["variable.parameter.netdsl"]
    assert "meta.group.netdsl" in [s for t, s in second if t == "32"][0]


# --------------------------------------------------------------------------
# The same meaning as the Pygments lexer, on every text of the project

PYGMENTS_TO_SCOPE = [  # most specific first
    (Keyword.Declaration, "storage.type."),
    (Keyword.Namespace, "keyword.control.import."),
    (Keyword.Constant, "constant.language."),
    (Operator.Word, "keyword.operator.logical."),
    (Keyword, "keyword."),
    (Number.Integer, "constant.numeric.integer."),
    (Number.Float, "constant.numeric.float."),
    (String.Escape, "constant.character.escape."),
    (String, "string.quoted.double."),
    (Comment, "comment.line."),
    (Operator, "keyword.operator."),
    (Punctuation, "punctuation."),
    (Name.Builtin, "support.function.builtin."),
    (Name.Class, "entity.name.type."),
    (Name.Function, "entity.name.function."),
    (Name.Constant, "variable.other.constant."),
    (Name.Attribute, "variable.parameter."),
    (Name.Namespace, "entity.name.namespace."),
    (Name.Variable, "variable.other."),
    (Name, "variable.other."),
]


def _expected_scope(ttype) -> str:
    return next(prefix for kind, prefix in PYGMENTS_TO_SCOPE if ttype in kind)


def _char_scopes(lines) -> list[list[str]]:
    out = []
    for tokens in lines:
        for text, scopes in tokens:
            out.extend([scopes] * len(text))
        out.append(["\n"])
    return out


@needs_node
def test_textmate_and_pygments_agree_on_every_text_of_the_project():
    corpus = texts()
    lexer = NetdslLexer()
    disagreements = []
    for (ident, text), lines in zip(corpus, scopes_of([t for _, t in corpus])):
        chars = _char_scopes(lines)
        for pos, ttype, value in lexer.get_tokens_unprocessed(text):
            if ttype in Whitespace or ttype is Error:
                continue
            want = _expected_scope(ttype)
            if not all(any(s.startswith(want) for s in chars[pos + i]) for i in range(len(value))):
                disagreements.append((ident, value, str(ttype), chars[pos][-1]))
    assert len(corpus) > 50
    assert disagreements == []


# --------------------------------------------------------------------------
# The VS Code extension

PACKAGE = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))


def test_the_manifest_ties_language_grammar_and_client_together():
    (language,) = PACKAGE["contributes"]["languages"]
    (grammar,) = PACKAGE["contributes"]["grammars"]
    assert language["id"] == grammar["language"] == "netdsl"
    assert language["extensions"] == [".net"]
    assert (VSCODE / language["configuration"]).is_file()
    assert json.loads((VSCODE / grammar["path"]).read_text())["scopeName"] == grammar["scopeName"]
    assert (VSCODE / PACKAGE["main"]).is_file()
    assert "vscode-languageclient" in PACKAGE["dependencies"]
    assert set(PACKAGE["devDependencies"]) == {"vscode-textmate", "vscode-oniguruma"}
    lock = json.loads((VSCODE / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["dependencies"] == PACKAGE["dependencies"]
    assert "resolved" not in json.dumps(lock)  # no registry host recorded (see .npmrc)


LANGUAGE_CONFIGURATION = json.loads((VSCODE / "language-configuration.json").read_text("utf-8"))


def test_language_configuration_matches_the_language():
    conf = LANGUAGE_CONFIGURATION
    assert conf["comments"] == {"lineComment": "#"}
    assert conf["brackets"] == [["{", "}"], ["[", "]"], ["(", ")"]]
    assert [(p["open"], p["close"]) for p in conf["autoClosingPairs"]] == [
        ("{", "}"),
        ("[", "]"),
        ("(", ")"),
        ('"', '"'),
    ]
    word = re.compile(conf["wordPattern"])
    assert word.fullmatch("global_average_pooling2d") and word.fullmatch("1e-3")


@pytest.mark.parametrize(
    "line,indents",
    [
        ("model m {", True),
        ("  h = x -> conv2d(", True),
        ("  metrics = [", True),
        ("model m {  # a comment", True),
        ('  p = "{"', False),
        ("  h = x -> dense(8)", False),
        ('  f("(", {', True),
        ("# model m {", False),
    ],
)
def test_indentation_rules_open_a_level_after_an_open_bracket(line, indents):
    # The patterns are JavaScript regular expressions; these features read the same in Python.
    pattern = re.compile(LANGUAGE_CONFIGURATION["indentationRules"]["increaseIndentPattern"])
    assert bool(pattern.search(line)) is indents


@pytest.mark.parametrize("line,dedents", [("}", True), ("  )", True), ("  ] + x", True), ("  h = x", False)])
def test_indentation_rules_close_a_level_on_a_closing_bracket(line, dedents):
    pattern = re.compile(LANGUAGE_CONFIGURATION["indentationRules"]["decreaseIndentPattern"])
    assert bool(pattern.search(line)) is dedents


def test_every_setting_the_client_reads_is_declared():
    declared = set(PACKAGE["contributes"]["configuration"]["properties"])
    source = (VSCODE / "extension.js").read_text(encoding="utf-8")
    read = {f"netdsl.{key}" for key in re.findall(r'config\.get\("([\w.]+)"', source)}
    assert read and read <= declared
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    assert set(re.findall(r'registerCommand\("([\w.]+)"', source)) == commands


def _activate(settings: dict) -> list:
    return json.loads(node("activate.js", json.dumps(settings), "/work/space"))


@needs_node
def test_the_client_starts_netdsl_lsp_over_stdio_with_the_configured_executable():
    events = _activate({"server.path": "${workspaceFolder}/.venv/bin/netdsl", "server.args": ["--plugin", "my_layers"]})
    assert events[0] == ["resolved", "node_modules/vscode-languageclient/node.js"]
    clients = [e for e in events if e[0] == "client"]
    _, ident, _, server, client = clients[0]
    assert ident == "netdsl"
    # No transport: the client then neither adds --stdio nor uses sockets.
    assert server == {"command": "/work/space/.venv/bin/netdsl", "args": ["lsp", "--plugin", "my_layers"]}
    assert {"scheme": "file", "language": "netdsl"} in client["documentSelector"]
    assert client["synchronize"]["fileEvents"] == {"glob": "**/*.net"}
    # A settings change of netdsl.server restarts it; other settings do not; deactivate stops it.
    kinds = [e[0] for e in events]
    assert kinds == [
        "resolved",
        "command",
        "client",
        "start",
        "subscriptions",
        "configuration changed",
        "configuration changed",
        "stop",
        "client",
        "start",
        "stop",
    ]


@needs_node
def test_the_client_defaults_to_netdsl_on_path_and_reports_a_failed_start():
    events = _activate({"test.failStart": True})
    _, _, _, server, _ = next(e for e in events if e[0] == "client")
    assert server == {"command": "netdsl", "args": ["lsp"]}
    errors = [e[1] for e in events if e[0] == "error"]
    assert errors and "could not start 'netdsl lsp'" in errors[0]
    assert "netdsl.server.path" in errors[0]
    assert events[-1][0] != "stop"  # nothing left running to stop
