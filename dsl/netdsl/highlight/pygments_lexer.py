"""A Pygments lexer for `.net` specs: `pygmentize -l netdsl spec.net`.

Registered under the `pygments.lexers` entry point (names `netdsl` and `net`,
files `*.net`, mimetype `text/x-netdsl`). Its token patterns, keywords and
operators are the grammar's own (see `vocabulary.py`), so the lexer accepts
exactly what the parser's lexer accepts: an Error token marks a character the
parser would reject, and nothing else does.

What each token becomes:
- keywords by role: `model block layer activation let` declare
  (Keyword.Declaration), `import as` (Keyword.Namespace), `true false none`
  (Keyword.Constant), `and or not` (Operator.Word), the rest Keyword;
- the name a declaration introduces: models, blocks and layers Name.Class,
  activations and constant functions Name.Function, constants Name.Constant,
  weights and shared instances Name.Variable;
- a step after `->`: Name.Builtin when the registry has that layer or
  activation, else Name.Function (a block, declared layer or model); an
  import prefix (`lib.` in `-> lib.bottleneck`) Name.Namespace;
- elsewhere a registry name (`relu`, `he_normal`, `adam`) Name.Builtin, a call
  of any other name Name.Function, a keyword argument Name.Attribute;
- the soft keywords (`activation`, `layer`, ...) are keywords only where they
  start a declaration: `dense(8, activation=relu)` names an argument.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, default
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from .vocabulary import Vocabulary, vocabulary

__all__ = ["NetdslLexer"]

KEYWORD_TOKENS = {
    "namespace": Keyword.Namespace,
    "declaration": Keyword.Declaration,
    "statement": Keyword,
    "control": Keyword,
    "constant": Keyword.Constant,
    "word_operator": Operator.Word,
    "other": Keyword,
}

# The token of the name that follows each declaring keyword.
DECLARED_NAME = {
    "model": Name.Class,
    "block": Name.Class,
    "layer": Name.Class,
    "activation": Name.Function,
    "weight": Name.Variable,
    "shared": Name.Variable,
    "sweep": Name.Class,  # the model a sweep searches
}

_ESCAPE = re.compile(r"\\[^\n]|[^\\]+")


def _keyword_token(vocab: Vocabulary, word: str):
    return KEYWORD_TOKENS[vocab.role(word)]


def _name(vocab: Vocabulary, *, call: bool = False, step: bool = False):
    """A callback for a NAME-shaped word: keyword, builtin or plain name,
    decided the way the parser's lexer does (the whole word, then a lookup)."""
    hard = set(vocab.keywords) - set(vocab.soft_keywords)
    builtins = vocab.step_builtins if step else vocab.builtins

    def callback(lexer, match):
        word = match.group()
        if word in hard:
            token = _keyword_token(vocab, word)
        elif word in builtins:
            token = Name.Builtin
        elif call or step:
            token = Name.Function
        else:
            token = Name
        yield match.start(), token, word

    return callback


def _string(lexer, match):
    """A whole string, with its escapes (`\\"`, `\\\\`) set apart."""
    for part in _ESCAPE.finditer(match.group()):
        token = String.Escape if part.group().startswith("\\") else String.Double
        yield match.start() + part.start(), token, part.group()


def _import_prefix(lexer, match):
    """`lib.` in `-> lib.bottleneck` (named groups: the grammar's FLOAT has its own)."""
    yield match.start(), Name.Namespace, match.group("prefix")
    yield match.end("prefix"), Punctuation, "."


def _separator(lexer, match):
    """`;` ends a statement like a newline does."""
    yield match.start(), Punctuation if match.group() == ";" else Whitespace, match.group()


def _declarations(vocab: Vocabulary, ws: str, name: str) -> list:
    """`model NAME`, `let NAME(`...: the keyword and the name it introduces
    (never a hard keyword: `model if` is a keyword after a keyword)."""
    hard = [w for w in vocab.keywords if w not in vocab.soft_keywords]
    name = rf"(?!(?:{'|'.join(hard)})(?!{vocab.name_char})){name}"
    rules = []
    for word in vocab.soft_keywords + ("let",):
        if word not in vocab.keywords:
            continue
        kw = _keyword_token(vocab, word)
        if word == "let":
            rules.append((rf"(let)({ws})({name})(?=(?:{ws})?\()", bygroups(kw, Whitespace, Name.Function)))
            rules.append((rf"(let)({ws})({name})", bygroups(kw, Whitespace, Name.Constant)))
        elif word in DECLARED_NAME:
            rules.append((rf"({word})({ws})({name})", bygroups(kw, Whitespace, DECLARED_NAME[word])))
        else:  # `train {` and any soft keyword added later: a keyword before `{`
            rules.append((rf"({word})(?=(?:{ws})?\{{)", kw))
    return rules


def _token_rules(vocab: Vocabulary) -> dict:
    p = vocab.patterns
    ws, name = p["WS"], p["NAME"]
    blank = [(p["COMMENT"], Comment.Single), (ws, Whitespace)]
    operators = "|".join(re.escape(s) for s in vocab.operators if s != "->")
    common = blank + [
        (p["_NL"], _separator),
        (p["STRING"], _string),
        (p["FLOAT"], Number.Float),
        (p["INT"], Number.Integer),
        *_declarations(vocab, ws, name),
        (p["ARROW"], Operator, "step"),
        (r"[(\[]", Punctuation, "group"),
        (r"[)\]]", Punctuation, "#pop"),
        (rf"{name}(?=(?:{ws})?\()", _name(vocab, call=True)),
        (name, _name(vocab)),
        (operators, Operator),
        ("|".join(re.escape(s) for s in vocab.punctuation), Punctuation),
    ]
    return {
        "root": common,
        # Inside ( ) and [ ]: `key=value` names an argument (a keyword may too).
        "group": [(rf"({name})({ws})?(=)(?!=)", bygroups(Name.Attribute, Whitespace, Operator))] + common,
        # After `->`, across blank lines and comments: the step's name.
        "step": blank
        + [
            (r"\n", Whitespace),
            # `lib.` before a step from an import (a `.5` after a name is a number)
            (rf"(?P<prefix>{name})(?!{p['FLOAT']})\.", _import_prefix),
            (name, _name(vocab, step=True), "#pop"),
            default("#pop"),
        ],
    }


class NetdslLexer(RegexLexer):
    """netdsl `.net` model specs."""

    name = "netdsl"
    aliases = ["netdsl", "net"]
    filenames = ["*.net"]
    mimetypes = ["text/x-netdsl"]

    tokens = _token_rules(vocabulary())

    def __init__(self, **options):
        # Keep leading blank lines: highlighted line numbers then match the
        # `file:line:col` of netdsl's diagnostics.
        options.setdefault("stripnl", False)
        super().__init__(**options)
