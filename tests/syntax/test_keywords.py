"""The keywords written once in `netdsl.syntax.keywords` are exactly the grammar's, and everyone uses them."""

from __future__ import annotations

from lark import Lark

from netdsl.grammar import grammar_text
from netdsl.highlight.vocabulary import vocabulary
from netdsl.syntax import keywords


def _grammar() -> Lark:
    return Lark(grammar_text(), parser="earley", lexer="basic")


def test_the_keywords_are_the_grammars_name_shaped_literals():
    assert len(set(keywords.KEYWORDS)) == len(keywords.KEYWORDS)
    assert set(keywords.KEYWORDS) == set(vocabulary().keywords)
    assert keywords.SOFT_KEYWORDS == set(vocabulary().soft_keywords)


def test_the_declaration_keywords_start_the_grammars_declarations():
    grammar = _grammar()
    terminals = {t.name: t.pattern.value for t in grammar.terminals}
    declarations = {rule.expansion[0].name for rule in grammar.rules if rule.origin.name == "_decl"}
    starts = {terminals[rule.expansion[0].name] for rule in grammar.rules if rule.origin.name in declarations}
    assert starts == set(keywords.DECLARATION_KEYWORDS)


def test_every_user_reads_the_one_list():
    from netdsl import registry
    from netdsl.decompiler import naming
    from netdsl.lsp import completion
    from netdsl.syntax import syntax_errors

    assert registry.table._KEYWORDS == set(keywords.KEYWORDS)
    assert naming.KEYWORDS == set(keywords.KEYWORDS)
    assert completion.KEYWORDS is keywords.KEYWORDS
    assert all(syntax_errors._DECLARATION_START.match(k) for k in keywords.DECLARATION_KEYWORDS)
    assert not syntax_errors._DECLARATION_START.match("input")
