"""The TextMate grammar of `.net` specs (VS Code, Sublime, TextMate, GitHub-style
highlighters), generated from the same vocabulary as the Pygments lexer.

`scripts/gen_textmate.py` writes it to `editors/textmate/netdsl.tmLanguage.json`
and `editors/vscode/syntaxes/`; the tests regenerate it and compare, so the
committed grammar never misses a keyword, operator or registry name.

Scopes follow the common TextMate conventions, so any colour theme applies:
declaring keywords `storage.type.*`, declared names `entity.name.type.*` /
`entity.name.function.*` / `variable.other.*`, registry names
`support.function.builtin.netdsl`, steps after `->` `entity.name.function.step`,
keyword arguments `variable.parameter`, `constant.numeric.*`, `string.quoted.double`
with `constant.character.escape`, `comment.line.number-sign`, `keyword.operator.*`.
"""

from __future__ import annotations

import json
import re

from .vocabulary import Vocabulary, vocabulary

SCOPE = "source.netdsl"

KEYWORD_SCOPES = {
    "namespace": "keyword.control.import.{word}.netdsl",
    "declaration": "storage.type.{word}.netdsl",
    "statement": "keyword.other.{word}.netdsl",
    "control": "keyword.control.conditional.{word}.netdsl",
    "constant": "constant.language.{word}.netdsl",
    "word_operator": "keyword.operator.logical.{word}.netdsl",
    "other": "keyword.other.{word}.netdsl",
}
DECLARED_SCOPES = {
    "model": "entity.name.type.model.netdsl",
    "block": "entity.name.type.block.netdsl",
    "layer": "entity.name.type.layer.netdsl",
    "activation": "entity.name.function.activation.netdsl",
    "weight": "variable.other.weight.netdsl",
    "shared": "variable.other.shared.netdsl",
    "sweep": "entity.name.type.model.netdsl",  # the model a sweep searches
}
OPERATOR_SCOPES = {
    "->": "keyword.operator.arrow.netdsl",
    "=": "keyword.operator.assignment.netdsl",
    "==": "keyword.operator.comparison.netdsl",
    "!=": "keyword.operator.comparison.netdsl",
    "<": "keyword.operator.comparison.netdsl",
    ">": "keyword.operator.comparison.netdsl",
    "<=": "keyword.operator.comparison.netdsl",
    ">=": "keyword.operator.comparison.netdsl",
    "@": "keyword.operator.matrix.netdsl",
}
ARITHMETIC = "keyword.operator.arithmetic.netdsl"
PUNCTUATION_SCOPES = {
    ",": "punctuation.separator.comma.netdsl",
    ":": "punctuation.separator.colon.netdsl",
    ".": "punctuation.accessor.netdsl",
    ";": "punctuation.terminator.statement.netdsl",
    "{": "punctuation.section.braces.begin.netdsl",
    "}": "punctuation.section.braces.end.netdsl",
}
BUILTIN = "support.function.builtin.netdsl"


def _words(words) -> str:
    # Longest first: Oniguruma takes the first alternative that fits.
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


def _keyword_rules(v: Vocabulary, end: str) -> list[dict]:
    """The keywords that are always keywords (the soft ones only declare)."""
    hard = sorted((w for w in v.keywords if w not in v.soft_keywords), key=lambda w: (-len(w), w))
    return [
        {"match": f"{re.escape(word)}{end}", "name": KEYWORD_SCOPES[v.role(word)].format(word=word)} for word in hard
    ]


def _declaration_rules(v: Vocabulary, ws: str, name: str) -> list[dict]:
    # No leading `\b`: the scanner takes the leftmost match, so a rule only
    # ever starts where a whole word starts (as in the parser's lexer). The
    # declared name is never a hard keyword (`model if` is two keywords).
    hard = [w for w in v.keywords if w not in v.soft_keywords]
    name = rf"(?!(?:{_words(hard)})(?!{v.name_char})){name}"
    rules = []
    for word in v.soft_keywords + ("let",):
        if word not in v.keywords:
            continue
        kw = KEYWORD_SCOPES[v.role(word)].format(word=word)
        if word == "let":
            for follow, scope in (
                (rf"(?=(?:{ws})?\()", "entity.name.function.let.netdsl"),
                ("", "variable.other.constant.netdsl"),
            ):
                rules.append(
                    {"match": rf"(let)({ws})({name}){follow}", "captures": {"1": {"name": kw}, "3": {"name": scope}}}
                )
        elif word in DECLARED_SCOPES:
            rules.append(
                {
                    "match": rf"({word})({ws})({name})",
                    "captures": {"1": {"name": kw}, "3": {"name": DECLARED_SCOPES[word]}},
                }
            )
        else:  # `train {`
            rules.append({"match": rf"{word}(?=(?:{ws})?\{{)", "name": kw})
    return rules


def _operator_rules(v: Vocabulary) -> list[dict]:
    rules: list[dict] = []
    for op in v.operators:  # longest first already
        if op == "->":
            continue  # the step rule owns it
        scope = OPERATOR_SCOPES.get(op, ARITHMETIC)
        rules.append({"match": re.escape(op), "name": scope})
    return rules


def _invalid_character(v: Vocabulary) -> str:
    """A character no token of the grammar can start with (outside strings and comments)."""
    starts = {s[0] for s in v.operators + v.punctuation} | {";", '"', "#"}
    return "[^\\sA-Za-z0-9_" + "".join(re.escape(c) for c in sorted(starts)) + "]"


def _capture_names(words, fallback: str) -> dict:
    """Patterns for a captured name: a registry name, else `fallback`. The
    capture is scanned from its start to its end, so the registry name must
    end the capture to count."""
    return {"patterns": [{"match": rf"(?:{_words(words)})$", "name": BUILTIN}, {"match": ".+", "name": fallback}]}


def _repository(v: Vocabulary) -> dict:
    p = v.patterns
    ws, name = p["WS"], p["NAME"]
    end = f"(?!{v.name_char})"  # a whole word ends here
    hard = [w for w in v.keywords if w not in v.soft_keywords]
    string_body = p["STRING"][1:-1]  # the grammar's STRING is `"BODY*"`
    return {
        "code": {
            "patterns": [
                {"include": f"#{rule}"}
                for rule in (
                    "comment",
                    "string",
                    "number",
                    "declaration",
                    "step",
                    "keyword",
                    "group",
                    "call",
                    "builtin",
                    "name",
                    "operator",
                    "punctuation",
                    "invalid",
                )
            ]
        },
        "comment": {"match": p["COMMENT"], "name": "comment.line.number-sign.netdsl"},
        "string": {
            "patterns": [
                {
                    "begin": f'"(?={string_body}")',
                    "end": '"',
                    "name": "string.quoted.double.netdsl",
                    "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.netdsl"}},
                    "endCaptures": {"0": {"name": "punctuation.definition.string.end.netdsl"}},
                    "patterns": [{"match": r"\\[^\n]", "name": "constant.character.escape.netdsl"}],
                },
                {"match": '"', "name": "invalid.illegal.unclosed-string.netdsl"},
            ]
        },
        "number": {
            "patterns": [
                {"match": p["FLOAT"], "name": "constant.numeric.float.netdsl"},
                {"match": p["INT"], "name": "constant.numeric.integer.netdsl"},
            ]
        },
        "declaration": {"patterns": _declaration_rules(v, ws, name)},
        "step": {
            "match": rf"(->)(?:({ws})?(?:({name})(\.))?(?!(?:{_words(hard)}){end})({name}))?",
            "captures": {
                "1": {"name": OPERATOR_SCOPES["->"]},
                "3": {"name": "entity.name.namespace.netdsl"},
                "4": {"name": PUNCTUATION_SCOPES["."]},
                "5": _capture_names(v.step_builtins, "entity.name.function.step.netdsl"),
            },
        },
        "keyword": {"patterns": _keyword_rules(v, end)},
        "group": {
            "patterns": [
                _group(r"\(", r"\)", "meta.group.netdsl", "punctuation.parenthesis"),
                _group(r"\[", r"\]", "meta.brackets.netdsl", "punctuation.section.brackets"),
            ]
        },
        "argument": {
            "match": rf"({name})(?:{ws})?(=)(?!=)",
            "captures": {"1": {"name": "variable.parameter.netdsl"}, "2": {"name": OPERATOR_SCOPES["="]}},
        },
        "call": {
            "match": rf"({name})(?=(?:{ws})?\()",
            "captures": {"1": _capture_names(v.builtins, "entity.name.function.call.netdsl")},
        },
        "builtin": {"match": rf"(?:{_words(v.builtins)}){end}", "name": BUILTIN},
        "name": {"match": name, "name": "variable.other.netdsl"},
        "operator": {"patterns": _operator_rules(v)},
        "punctuation": {
            "patterns": [
                {"match": re.escape(s), "name": PUNCTUATION_SCOPES[s]}
                for s in v.punctuation + (";",)
                if s in PUNCTUATION_SCOPES
            ]
        },
        "invalid": {"match": _invalid_character(v), "name": "invalid.illegal.character.netdsl"},
    }


def _group(begin: str, end: str, meta: str, punctuation: str) -> dict:
    """( ) and [ ]: across lines, and `key=value` inside names an argument."""
    return {
        "begin": begin,
        "end": end,
        "name": meta,
        "beginCaptures": {"0": {"name": f"{punctuation}.begin.netdsl"}},
        "endCaptures": {"0": {"name": f"{punctuation}.end.netdsl"}},
        "patterns": [{"include": "#argument"}, {"include": "#code"}],
    }


def grammar(v: Vocabulary | None = None) -> dict:
    v = v or vocabulary()
    return {
        "name": "netdsl",
        "scopeName": SCOPE,
        "fileTypes": ["net"],
        "comment": "Generated by scripts/gen_textmate.py from grammar/netdsl.lark and the "
        "registry; do not edit by hand.",
        "patterns": [{"include": "#code"}],
        "repository": _repository(v),
    }


def grammar_json(v: Vocabulary | None = None) -> str:
    """The grammar as the committed file holds it (stable key order, final newline)."""
    return json.dumps(grammar(v), indent=2, ensure_ascii=True) + "\n"
