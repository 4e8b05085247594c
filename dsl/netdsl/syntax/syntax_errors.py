"""Syntax errors that read like a person wrote them, and one per declaration.

Only a file that does not parse comes here. The message looks at what the
parser had read before the bad token (`describe_syntax_error`), so the text is
parsed again with the same lexer, layout and tables, keeping for each rule
only the last token of the tree lark would have built for it. Then each
top-level declaration (a line that begins with its keyword) is parsed on its
own, so that the first syntax error of every declaration is reported, not
only the first of the file: each from its own text with its line numbers
kept, first only to find out whether it parses. The whole costs a pass or two
over the file however many declarations it has.

The declaration the file's parse failed in is not parsed again from its start: that parse's
stacks are those of the parse that describes it up to the last newline below their top item,
so the describing parse resumes there (`_describe_resumed`), reading only the statement the
error is in (a 2 MiB model with an error in its last line was parsed twice, issue 22).
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

from netdsl.errors import Diagnostic, LayoutError, Span
from netdsl.limits import MAX_SYNTAX_ERRORS
from netdsl.syntax.keywords import DECLARATION_KEYWORDS
from netdsl.syntax.lalr import Part, Reductions, SyntaxFailure, end_token, recognizer, run, shaped_reducers
from netdsl.syntax.lexer import LexFailure, layout, lex, open_brackets
from netdsl.syntax.tables import Tables, load_tables

_DECLARATION_START = re.compile(rf"^({'|'.join(DECLARATION_KEYWORDS)})\b", re.M)


def diagnose(
    text: str, display: str, parsed: int = 0, lexed: LexFailure | None = None, failure: SyntaxFailure | None = None
) -> list[Diagnostic]:
    """The syntax errors of a file that does not parse (at least one).

    `parsed`: the offset before which the whole-file parse already read complete top-level
    declarations (`parser._declarations_end`); they are not parsed again, one by one (a 2 MiB
    file of declarations with an error in its last line was parsed twice: 4 s more, issue 22).
    `lexed`: the character no token matched that stopped that parse, the first error of the file.
    `failure`: the token that stopped that parse, with its stacks: the declaration holding it is
    not first parsed only to find out whether it parses, and is described from those stacks."""
    found = _errors_per_declaration(text, display, parsed, failure)
    if found:
        return found
    if lexed is not None:  # the file's parse reached it with no error before: it is the first
        return [_unexpected_character(lexed, text, display)]  # (not parsed again: a 2 MiB model, 4 s)
    first = _describe_resumed(failure, text, display, 1, whole=True) if failure is not None else None
    if first is None:
        first = _describe_first_error(text, display, 1)
    if first is None:  # pragma: no cover - the IR parse failed, so this one fails too
        raise AssertionError(f"{display}: the parser failed but its diagnosis found no syntax error")
    return [first]


def _errors_per_declaration(
    text: str, display: str, parsed: int = 0, failure: SyntaxFailure | None = None
) -> list[Diagnostic]:
    """The first syntax error of each top-level declaration after `parsed`, in source order."""
    starts = [m.start() for m in _DECLARATION_START.finditer(text)]
    if len(starts) < 2:
        return []
    bounds = [0] + starts[1:] + [len(text)]
    found: list[Diagnostic] = []
    line, counted = 1, 0  # the line at offset `counted`
    for begin, end in zip(bounds, bounds[1:]):
        if end <= parsed:  # whole declarations the file's parse read without an error
            continue
        line += text.count("\n", counted, begin)
        counted = begin
        if failure is not None and line <= failure.token[2] <= line + text.count("\n", begin, end):
            # The file's parse failed in this declaration (a model of 110,000 lines with an error
            # in its last: 2 s of a 7 s check): described at once, as it most likely does not parse,
            # from the file's parse where it can be.
            error = _describe_resumed(failure, text[begin:end], display, line, whole=False)
            if error is None:
                error = _describe_first_error(text[begin:end], display, line)
        else:
            error = first_syntax_error(text[begin:end], display, line)
        if error is not None:
            found.append(error)
        if len(found) >= MAX_SYNTAX_ERRORS:
            break
    return found


def first_syntax_error(text: str, display: str, first_line: int = 1) -> Diagnostic | None:
    """The first syntax error of `text` (which starts at line `first_line` of the file), or None."""
    tables = load_tables()
    try:  # most declarations parse: find that out without building anything
        run(tables, layout(lex(text, tables, None, first_line)), recognizer(tables), end_token)
    except (LayoutError, LexFailure, SyntaxFailure):
        return _describe_first_error(text, display, first_line)
    return None


def _describe_first_error(text: str, display: str, first_line: int) -> Diagnostic | None:
    tables = load_tables()
    try:
        run(tables, layout(lex(text, tables, None, first_line)), _last_tokens(tables), end_token)
    except LayoutError as exc:
        return Diagnostic.at(_token_span(_Tok(*exc.token), display), exc.message)
    except LexFailure as exc:
        return _unexpected_character(exc, text, display)
    except SyntaxFailure as exc:
        return describe_syntax_error(exc, text, display, first_line)
    return None


def _describe_resumed(
    failure: SyntaxFailure, text: str, display: str, first_line: int, whole: bool
) -> Diagnostic | None:
    """`_describe_first_error(text, display, first_line)`, from the stacks of the file's parse that
    failed in `text` (all of it when `whole`, else one declaration of it) instead of from its start.

    The parse that describes makes the same moves on the same tokens, only its values differ
    (each rule's last token, not IR), and the message reads the value of the top item only, and
    the brackets still open (tokens, the same in both). So it resumes from the file's stacks cut
    after the last item below the top that ends with a newline (the statements read so far), at
    the start of the next line, its layout after that newline inside the brackets open there.
    None, and the caller parses `text` from its start, where the resumed parse does not end as
    the file's did: at the same token, with the same states."""
    tables = load_tables()
    reductions = _last_tokens(tables)
    states, values = failure.state_stack, failure.value_stack
    if whole:
        base_states: list[int] = [states[0]]
        base_values: list[Any] = []
        common = 0  # the file's items from here on are the describing parse's (in their moves)
    else:
        alone = _declaration_alone(failure, first_line, reductions)
        if alone is None:
            return None
        base_states, base_values, common = alone
    for cut in range(len(values) - 2, common - 1, -1):
        resume_line = _line_after(values[cut])
        if resume_line is not None:
            break
    else:
        return None
    start_values = base_values + values[common : cut + 1]
    offset = 0
    for _ in range(resume_line - first_line):
        offset = text.index("\n", offset) + 1
    tokens = layout(lex(text[offset:], tables, None, resume_line), ("_NL", "\n"), open_brackets(start_values))
    try:
        run(tables, tokens, reductions, end_token, resume=(base_states + states[common + 1 : cut + 2], start_values))
    except SyntaxFailure as again:
        if again.token == failure.token and again.state_stack == base_states + states[common + 1 :]:
            return describe_syntax_error(again, text, display, first_line)
    except (LayoutError, LexFailure):  # pragma: no cover - the file's parse read these tokens
        pass
    return None


def _declaration_alone(
    failure: SyntaxFailure, first_line: int, reductions: Reductions
) -> tuple[list[int], list[Any], int] | None:
    """Where a declaration's parse alone (its text from the keyword at `first_line`, column 1) meets
    the file's failed parse: its stacks once it has read that keyword, and the index of the file's
    item after it; None when the keyword is not on the file's stack or reaches another state there."""
    values = failure.value_stack
    index = next(
        (i for i, value in enumerate(values) if type(value) is tuple and value[2] == first_line and value[3] == 1), None
    )
    if index is None:
        return None
    try:
        run(load_tables(), [values[index]], reductions, end_token)
    except SyntaxFailure as alone:  # a keyword alone never parses: the end of input stops it
        if alone.state_stack[-1] == failure.state_stack[index + 1]:
            return alone.state_stack, alone.value_stack, index + 1
    return None


def _line_after(value: Any) -> int | None:
    """The line after the newline that ends a stack item (None: it does not end with one). A
    newline token is the only token that ends in column 1; a Part's position is its raw tokens'."""
    line: int
    if type(value) is tuple and value[0] == "_NL" and value[1] == "\n":
        line = value[4]
        return line
    if type(value) is Part and value.pos is not None and value.pos[3] == 1:
        line = value.pos[2]
        return line
    return None


class _Last:
    """What a message needs of a rule the parser has reduced: the last token of
    the tree lark would have built for it (its children right to left, depth
    first; anonymous tokens are not in lark's tree), or None."""

    __slots__ = ("token",)

    def __init__(self, token: tuple[Any, ...] | None):
        self.token = token


class _LastTokenBuilder:
    """A builder (see `lalr.shaped_reducers`) that keeps only each rule's last token."""

    containers: dict[int, Any] = {}  # stays empty: no positions are kept

    def __getattr__(self, rule: str) -> Any:
        return _last_of


def _last_of(children: list[Any], pos: None = None) -> _Last:
    for child in reversed(children):
        if type(child) is tuple:
            return _Last(child)
        if type(child) is _Last and child.token is not None:
            return child
        if type(child) is Part:
            found = _last_of(child.items)
            if found.token is not None:
                return found
    return _Last(None)


@functools.lru_cache(maxsize=1)
def _last_tokens(tables: Tables) -> Reductions:
    return Reductions(tables, shaped_reducers(tables, _LastTokenBuilder(), positions=False))


class _Tok(NamedTuple):
    """A token tuple with names, for the messages."""

    type: str
    value: str
    line: int
    column: int
    end_line: int | None
    end_column: int | None


# ----------------------------------------------------------------- messages


def _token_span(tok: Any, display: str) -> Span:
    length = len(tok.value) if tok.type != "_NL" else 1
    if tok.end_line is not None and tok.end_line != tok.line:
        length = 1
    return Span.at(display, tok.line, tok.column, length)


def _unexpected_character(exc: LexFailure, text: str, display: str) -> Diagnostic:
    char = text[exc.pos] if exc.pos < len(text) else ""
    span = Span.at(display, exc.line, exc.col)
    if char == '"':
        return Diagnostic.at(span, "unterminated string", 'strings end with " on the same line')
    if char == "'":
        return Diagnostic.at(span, 'unexpected character "\'"', 'strings use double quotes: "same"')
    if char == "\\":
        hint = "a statement continues inside ( ) [ ] or when the next line starts with '->'"
        return Diagnostic.at(span, "unexpected character '\\'", hint)
    shown = char if char.isprintable() else f"\\x{ord(char):02x}" if ord(char) < 256 else f"\\u{ord(char):04x}"
    return Diagnostic.at(span, f"unexpected character '{shown}'")


_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE", "DICT_LBRACE": "DICT_RBRACE"}
_CLOSING_TEXT = {"LPAR": ")", "LSQB": "]", "DICT_LBRACE": "}", "LBRACE": "}"}
_TOKEN_WORDS = {
    "NAME": "a name",
    "INT": "a number",
    "FLOAT": "a number",
    "STRING": "a string",
    "_NL": "end of line",
    "$END": "end of file",
    "ARROW": "'->'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "DICT_LBRACE": "'{'",
    "DICT_RBRACE": "'}'",
    "COMMA": "','",
    "COLON": "':'",
    "EQUAL": "'='",
    "DOT": "'.'",
}
_CLOSING_TYPES = {"RPAR", "RSQB", "DICT_RBRACE", "COMMA"}
_EXPRESSION_STARTS = {
    "NAME",
    "INT",
    "FLOAT",
    "STRING",
    "LPAR",
    "LSQB",
    "DICT_LBRACE",
    "MINUS",
    "PLUS",
    "TRUE",
    "FALSE",
    "NONE",
    "NOT",
}


def _describe_token(tok: Any) -> str:
    if tok.type == "_NL" and tok.value == "":
        return "'}'"
    if tok.type == "_NL" and tok.value == ";":
        return "';'"
    if tok.type in ("_NL", "$END"):
        return _TOKEN_WORDS[tok.type]
    return f"'{tok.value}'"


def describe_syntax_error(failure: SyntaxFailure, text: str, display: str, first_line: int = 1) -> Diagnostic:
    """Turn the parser's raw 'unexpected token' into what a person would say."""
    tok = _Tok(*failure.token)
    expected = set(failure.expected)
    stack = failure.value_stack
    before = _previous_token(stack)
    if tok.type == "$END":
        line = first_line + text.count("\n")
        span = Span.at(display, line, len(text.rsplit("\n", 1)[-1]) + 1)
    else:
        span = _token_span(tok, display)
    found = _describe_token(tok)
    open_bracket = _innermost_open(stack)

    if before is not None and before.type == "ARROW":
        return Diagnostic.at(span, f"expected a step after '->', found {found}")
    if tok.type == "EQUAL" and "ARROW" in expected and _char_after(tok, text, first_line) == ">":
        return Diagnostic.at(
            Span.at(display, tok.line, tok.column, 2), "unexpected '=>'", "did you mean '->'? (a flow's arrow)"
        )
    if (
        open_bracket is not None
        and _CLOSING_TEXT[open_bracket.type]
        and (
            tok.type in ("_NL", "$END", "RBRACE") or (tok.line != open_bracket.line and tok.type not in _CLOSING_TYPES)
        )
    ):
        closing = _CLOSING_TEXT[open_bracket.type]
        if open_bracket.type != "LBRACE":
            return Diagnostic.at(
                span,
                f"missing '{closing}'",
                f"the '{open_bracket.value}' at line {open_bracket.line}, column {open_bracket.column} is never closed",
            )
    if tok.type in ("RPAR", "RSQB", "DICT_RBRACE") and not (expected & {"RPAR", "RSQB", "DICT_RBRACE"}):
        if expected & _EXPRESSION_STARTS:
            return Diagnostic.at(span, f"expected a value before {found}")
        return Diagnostic.at(span, f"unmatched {found}")
    if before is not None and before.type in ("EQUAL", "COLON", "COMMA") and expected & _EXPRESSION_STARTS:
        return Diagnostic.at(span, f"expected a value after '{before.value}', found {found}")
    declares = ("MODEL", "BLOCK", "LAYER", "ACTIVATION", "LET", "SHARED", "WEIGHT", "INPUT")
    if before is not None and before.type in declares and "NAME" in expected:
        return Diagnostic.at(span, f"expected a name after '{before.value}', found {found}")
    if expected == {"_NL"} or ("_NL" in expected and tok.type in ("NAME", "INT", "FLOAT", "STRING")):
        return Diagnostic.at(
            span,
            f"unexpected {found}; expected end of statement",
            "put one statement per line, or separate them with ';'",
        )
    if "RBRACE" in expected and tok.type == "$END":
        opened = (
            f"the '{{' at line {open_bracket.line}, column {open_bracket.column} is never closed"
            if open_bracket is not None and open_bracket.type == "LBRACE"
            else None
        )
        return Diagnostic.at(span, "missing '}' at end of file", opened)
    return Diagnostic.at(span, f"unexpected {found}; expected {_describe_expected(expected)}")


def _char_after(tok: _Tok, text: str, first_line: int) -> str:
    """The character just after a one-character token, from the text."""
    lines = text.splitlines()
    index = tok.line - first_line
    if not 0 <= index < len(lines):
        return ""
    return lines[index][tok.column : tok.column + 1]


def _describe_expected(expected: set[str]) -> str:
    if expected & _EXPRESSION_STARTS and len(expected & _EXPRESSION_STARTS) >= 3:
        words = ["a value"] + sorted(_TOKEN_WORDS[t] for t in expected - _EXPRESSION_STARTS if t in _TOKEN_WORDS)
    else:
        words = sorted({_TOKEN_WORDS.get(t, f"'{t.lower()}'") for t in expected})
    words = words[:6]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _previous_token(stack: list[Any]) -> _Tok | None:
    """The last token the parser read: the top of its stack, or the last token of that rule."""
    if not stack:
        return None
    top = stack[-1]
    if type(top) is tuple:
        return _Tok(*top)
    if type(top) is Part:
        top = _last_of(top.items)
    if type(top) is _Last and top.token is not None:
        return _Tok(*top.token)
    return None


def _innermost_open(stack: list[Any]) -> _Tok | None:
    """The innermost bracket still open on the parser's stack."""
    for item in reversed(stack):
        if type(item) is tuple and item[0] in _OPENERS:
            return _Tok(*item)
    return None
