"""Text to parse tree: reading source safely, the layout post-lexer, and
syntax errors that read like a person wrote them.
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path
from typing import Iterator

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from netdsl.grammar import grammar_text
from netdsl.errors import Diagnostic, LayoutError, SpecError, Span

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NESTING = 64
MAX_NUMBER_DIGITS = 40

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE", "DICT_LBRACE": "DICT_RBRACE"}
_CLOSERS = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}
_CLOSING_TEXT = {"LPAR": ")", "LSQB": "]", "DICT_LBRACE": "}", "LBRACE": "}"}
# Tokens after which a `{` opens a dict rather than a block.
_VALUE_STARTERS = {
    "EQUAL", "LPAR", "LSQB", "COMMA", "COLON", "DICT_LBRACE", "PLUS", "MINUS", "STAR",
    "SLASH", "DSLASH", "PERCENT", "AT", "POW", "COMPARE", "ARROW", "IF", "AND", "OR", "NOT",
}


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=True,
        postlex=Layout(),
        lexer_callbacks={"COMMENT": _comment_sink},
        cache=True,  # LALR tables cached in the temp folder, keyed by the grammar's hash
    )


class Layout:
    """Post-lexer: newlines and braces as the grammar wants them (see the grammar's header)."""

    always_accept = ("_NL",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        stack: list[Token] = []  # open brackets
        prev: Token | None = None  # last token given to the parser
        before_prev: Token | None = None
        pending_nl: Token | None = None
        for tok in stream:
            kind = tok.type
            if kind == "_NL":
                if stack and stack[-1].type != "LBRACE":
                    continue  # inside ( [ or a dict
                if prev is None or prev.type in ("_NL", "LBRACE", "ARROW"):
                    continue
                pending_nl = pending_nl or tok
                continue
            if pending_nl is not None:
                if kind == "ARROW" or (kind == "ELSE" and prev is not None and prev.type == "RBRACE"):
                    pending_nl = None  # a flow continued on the next line, or `} else`
                else:
                    before_prev, prev = prev, pending_nl
                    yield pending_nl
                    pending_nl = None
            if kind == "LBRACE" and prev is not None and self._opens_dict(prev, before_prev):
                tok = Token.new_borrow_pos("DICT_LBRACE", tok.value, tok)
            if tok.type in _OPENERS:
                stack.append(tok)
                if len(stack) > MAX_NESTING:
                    raise _nesting_error(tok)
            elif kind in ("RPAR", "RSQB", "RBRACE"):
                if stack and kind == "RBRACE" and stack[-1].type == "DICT_LBRACE":
                    tok = Token.new_borrow_pos("DICT_RBRACE", tok.value, tok)
                if stack and _OPENERS[stack[-1].type] == tok.type:
                    stack.pop()
                if tok.type == "RBRACE" and prev is not None and prev.type not in ("_NL", "LBRACE"):
                    # An end of statement the user did not write: its text is empty so
                    # that a syntax error here is reported as the '}' it stands for.
                    nl = Token.new_borrow_pos("_NL", "", tok)
                    before_prev, prev = prev, nl
                    yield nl
            before_prev, prev = prev, tok
            yield tok
        if prev is not None and prev.type != "_NL":
            end = pending_nl or (Token.new_borrow_pos("_NL", "\n", prev) if prev else None)
            yield end

    @staticmethod
    def _opens_dict(prev: Token, before_prev: Token | None) -> bool:
        if prev.type == "ELSE":  # `x if c else {..}` but not `} else {`
            return before_prev is None or before_prev.type != "RBRACE"
        return prev.type in _VALUE_STARTERS


def _nesting_error(tok: Token) -> LayoutError:
    return LayoutError(tok, f"brackets nested more than {MAX_NESTING} deep")


# ----------------------------------------------------------------- reading


def read_source(path: Path, display: str) -> str:
    """The file's text, refusing what is not a reasonable spec before parsing it."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SpecError(Diagnostic.for_file(
                display, f"file is too large ({size:,} bytes); a spec may be at most {MAX_FILE_BYTES:,} bytes"))
        data = path.read_bytes()
    except SpecError:
        raise
    except IsADirectoryError:
        raise SpecError(Diagnostic.for_file(display, "is a directory, not a spec file")) from None
    except FileNotFoundError:
        raise SpecError(Diagnostic.for_file(display, "no such file")) from None
    except OSError as exc:
        raise SpecError(Diagnostic.for_file(display, f"cannot read file: {exc.strerror or exc}")) from None
    return decode_source(data, display)


def decode_source(data: bytes, display: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(Diagnostic.for_file(
            display, f"file is too large ({len(data):,} bytes); a spec may be at most {MAX_FILE_BYTES:,} bytes"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(Diagnostic.at(
            Span.at(display, line, col), f"invalid UTF-8 byte 0x{data[exc.start]:02x}; a spec must be UTF-8 text"
        )) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# ----------------------------------------------------------------- parsing


def parse_tree(text: str, display: str, comments: list[Token] | None = None) -> Tree:
    """Parse text into a lark tree, or raise SpecError with a readable message.

    Comments are skipped by the grammar; when `comments` is given they are
    collected into it (the formatter keeps them). On a syntax error every
    top-level declaration is parsed on its own as well, so that the first
    syntax error of each one is reported, not only the first of the file.
    """
    _comment_sink.target = comments
    try:
        return _parse_or_diagnose(text, display)
    except SpecError as exc:
        first = exc.diagnostics[0]
    finally:
        _comment_sink.target = None
    raise SpecError(_errors_per_declaration(text, display) or [first])


def _parse_or_diagnose(text: str, display: str) -> Tree:
    try:
        return _parser().parse(text)
    except LayoutError as exc:
        raise SpecError(Diagnostic.at(_token_span(exc.token, display), exc.message)) from None
    except UnexpectedCharacters as exc:
        raise SpecError(_unexpected_character(exc, text, display)) from None
    except UnexpectedInput as exc:
        raise SpecError(describe_syntax_error(exc, text, display)) from None


MAX_SYNTAX_ERRORS = 20
_DECLARATION_START = re.compile(r"^(import|let|model|block|activation|layer)\b", re.M)


def _errors_per_declaration(text: str, display: str) -> list[Diagnostic]:
    """The first syntax error of each top-level declaration (a declaration
    starts at a line that begins with its keyword), in source order."""
    starts = [m.start() for m in _DECLARATION_START.finditer(text)]
    if len(starts) < 2:
        return []
    bounds = [0] + starts[1:] + [len(text)]
    found: list[Diagnostic] = []
    for begin, end in zip(bounds, bounds[1:]):
        # Blank out the other declarations, keeping lines and columns.
        chunk = re.sub(r"[^\n]", " ", text[:begin]) + text[begin:end]
        try:
            _parse_or_diagnose(chunk, display)
        except SpecError as exc:
            found.extend(exc.diagnostics)
        if len(found) >= MAX_SYNTAX_ERRORS:
            break
    return found


class _CommentSink(threading.local):
    target: list[Token] | None = None

    def __call__(self, tok: Token) -> Token:
        if self.target is not None:
            self.target.append(tok)
        return tok


_comment_sink = _CommentSink()


def _token_span(tok: Token, display: str) -> Span:
    length = len(tok.value) if tok.type != "_NL" else 1
    if tok.end_line is not None and tok.end_line != tok.line:
        length = 1
    return Span.at(display, tok.line, tok.column, length)


def _unexpected_character(exc: UnexpectedCharacters, text: str, display: str) -> Diagnostic:
    char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
    span = Span.at(display, exc.line, exc.column)
    if char == '"':
        return Diagnostic.at(span, "unterminated string", 'strings end with " on the same line')
    if char == "'":
        return Diagnostic.at(span, "unexpected character \"'\"", 'strings use double quotes: "same"')
    if char == "\\":
        return Diagnostic.at(span, "unexpected character '\\'", "a statement continues inside ( ) [ ] or when the next line starts with '->'")
    shown = char if char.isprintable() else f"\\x{ord(char):02x}" if ord(char) < 256 else f"\\u{ord(char):04x}"
    return Diagnostic.at(span, f"unexpected character '{shown}'")


_TOKEN_WORDS = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "STRING": "a string",
    "_NL": "end of line", "$END": "end of file", "ARROW": "'->'", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'", "RBRACE": "'}'", "DICT_LBRACE": "'{'",
    "DICT_RBRACE": "'}'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "DOT": "'.'",
}
_CLOSING_TYPES = {"RPAR", "RSQB", "DICT_RBRACE", "COMMA"}
_EXPRESSION_STARTS = {"NAME", "INT", "FLOAT", "STRING", "LPAR", "LSQB", "DICT_LBRACE", "MINUS", "PLUS",
                      "TRUE", "FALSE", "NONE", "NOT"}


def _describe_token(tok: Token) -> str:
    if tok.type == "_NL" and tok.value == "":
        return "'}'"
    if tok.type == "_NL" and tok.value == ";":
        return "';'"
    if tok.type in ("_NL", "$END"):
        return _TOKEN_WORDS[tok.type]
    return f"'{tok.value}'"


def describe_syntax_error(exc: UnexpectedInput, text: str, display: str) -> Diagnostic:
    """Turn lark's raw 'unexpected token' into what a person would say."""
    if isinstance(exc, UnexpectedEOF):
        lines = text.splitlines() or [""]
        return Diagnostic.at(Span.at(display, len(lines), len(lines[-1]) + 1), "unexpected end of file")
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    expected = set(exc.expected)
    interactive = exc.interactive_parser
    before = _previous_token(interactive)
    if tok.type == "$END":
        line = text.count("\n") + 1
        span = Span.at(display, line, len(text.rsplit("\n", 1)[-1]) + 1)
    else:
        span = _token_span(tok, display)
    found = _describe_token(tok)
    open_bracket = _innermost_open(interactive)

    if before is not None and before.type == "ARROW":
        return Diagnostic.at(span, f"expected a step after '->', found {found}")
    if open_bracket is not None and _CLOSING_TEXT[open_bracket.type] and (
        tok.type in ("_NL", "$END", "RBRACE") or (tok.line != open_bracket.line and tok.type not in _CLOSING_TYPES)
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
    if before is not None and before.type in ("MODEL", "BLOCK", "LAYER", "ACTIVATION", "LET", "SHARED", "WEIGHT", "INPUT") and "NAME" in expected:
        return Diagnostic.at(span, f"expected a name after '{before.value}', found {found}")
    if expected == {"_NL"} or ("_NL" in expected and tok.type in ("NAME", "INT", "FLOAT", "STRING")):
        return Diagnostic.at(span, f"unexpected {found}; expected end of statement",
                             "put one statement per line, or separate them with ';'")
    if "RBRACE" in expected and tok.type == "$END":
        return Diagnostic.at(span, "missing '}' at end of file")
    return Diagnostic.at(span, f"unexpected {found}; expected {_describe_expected(expected)}")


def _describe_expected(expected: set[str]) -> str:
    if expected & _EXPRESSION_STARTS and len(expected & _EXPRESSION_STARTS) >= 3:
        words = ["a value"] + sorted(_TOKEN_WORDS[t] for t in expected - _EXPRESSION_STARTS if t in _TOKEN_WORDS)
    else:
        words = sorted({_TOKEN_WORDS.get(t, f"'{t.lower()}'") for t in expected})
    words = words[:6]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _previous_token(interactive) -> Token | None:
    try:
        stack = interactive.parser_state.value_stack
    except AttributeError:
        return None
    for item in reversed(stack):
        if isinstance(item, Token):
            return item
        if isinstance(item, Tree):
            return _last_token(item)
        return None
    return None


def _last_token(tree: Tree) -> Token | None:
    for child in reversed(tree.children):
        if isinstance(child, Token):
            return child
        if isinstance(child, Tree):
            found = _last_token(child)
            if found is not None:
                return found
    return None


def _innermost_open(interactive) -> Token | None:
    """The innermost bracket still open on the parser's stack."""
    try:
        stack = interactive.parser_state.value_stack
    except AttributeError:
        return None
    for item in reversed(stack):
        if isinstance(item, Token) and item.type in _OPENERS:
            return item
    return None
