"""Text to tokens: the lexer and the layout post-lexer the grammar's header describes.

The lexer is lark's basic lexer, table-driven: the terminals are tried in the
order lark tries them (one alternation, first match wins), a name that spells a
keyword becomes that keyword, whitespace and comments are skipped. Its table is
lark's own (see `tables.py`), so it cannot drift from the grammar.

A token is a plain tuple, `(type, value, line, col, end_line, end_col)` with
1-based lines and columns, end exclusive, as lark numbers them: a parse makes
one per word of the file, and a tuple costs a fraction of an object. The
syntax-error path turns them into lark `Token`s (see `syntax_errors.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from netdsl.errors import LayoutError
from netdsl.limits import MAX_NESTING
from netdsl.syntax.tables import Tables

TokenTuple = tuple[Any, ...]  # (type, value, line, col, end_line, end_col)
TYPE, VALUE, LINE, COL, END_LINE, END_COL = range(6)
COMMENT = "COMMENT"

_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE", "DICT_LBRACE": "DICT_RBRACE"}
_CLOSERS = ("RPAR", "RSQB", "RBRACE")
# Tokens after which a `{` opens a dict rather than a block.
_VALUE_STARTERS = frozenset(
    {
        "EQUAL",
        "LPAR",
        "LSQB",
        "COMMA",
        "COLON",
        "DICT_LBRACE",
        "PLUS",
        "MINUS",
        "STAR",
        "SLASH",
        "DSLASH",
        "PERCENT",
        "AT",
        "POW",
        "COMPARE",
        "ARROW",
        "IF",
        "AND",
        "OR",
        "NOT",
    }
)


class LexFailure(Exception):
    """No terminal matches at `pos` (line and column 1-based)."""

    def __init__(self, pos: int, line: int, col: int):
        super().__init__(f"no token at {line}:{col}")
        self.pos, self.line, self.col = pos, line, col


def lex(text: str, tables: Tables, comments: list[Any] | None = None, line: int = 1) -> Iterator[TokenTuple]:
    """The tokens of `text` (comments go to `comments` when given); lines count from `line`."""
    keywords = tables.keywords
    ignore = tables.ignore
    newline_types = tables.newline_types
    line_start = 0  # offset where the current line begins
    pos = 0
    for match in tables.token_re.finditer(text):
        kind = match.lastgroup
        value = match.group()
        if kind is None:  # the catch-all: no terminal matches here
            raise LexFailure(pos, line, pos - line_start + 1)
        start = pos
        pos += len(value)
        if kind == "_NL" and value == "\n":
            yield (kind, value, line, start - line_start + 1, line + 1, 1)
            line += 1
            line_start = pos
            continue
        if kind in keywords:
            kind = keywords[kind].get(value, kind)
        col = start - line_start + 1
        if kind in newline_types and "\n" in value:  # pragma: no cover - no such token in the grammar today
            first = line
            line += value.count("\n")
            line_start = start + value.rindex("\n") + 1
            token = (kind, value, first, col, line, pos - line_start + 1)
        else:
            token = (kind, value, line, col, line, col + len(value))
        if kind in ignore:
            if kind == COMMENT and comments is not None:
                comments.append(token)
            continue
        yield token


def layout(
    stream: Iterator[TokenTuple], after_newline: TokenTuple | None = None, open_brackets: list[str] | None = None
) -> Iterator[TokenTuple]:
    """The token stream the grammar reads (see the grammar's header):

    - newlines inside ( ), [ ] and dict { } are dropped;
    - a newline followed by `->` (a continued flow) or `else` after `}` is dropped;
    - `;` is a newline; runs of newlines become one;
    - a `{` that starts a dict becomes DICT_LBRACE (its `}` DICT_RBRACE);
    - a newline is ensured before a block's `}` and at the end of the file.

    `after_newline` and `open_brackets` resume the layout of a file from a line start: the
    newline token it passed on last, and the brackets open there (`open_brackets`)."""
    stack: list[str] = list(open_brackets or ())  # the types of the open brackets
    prev: TokenTuple | None = after_newline  # the last token passed on
    before_prev: TokenTuple | None = None
    pending_nl: TokenTuple | None = None
    for tok in stream:
        kind = tok[0]
        if kind == "_NL":
            if stack and stack[-1] != "LBRACE":
                continue  # inside ( [ or a dict
            if prev is None or prev[0] in ("_NL", "LBRACE", "ARROW"):
                continue
            if pending_nl is None:
                pending_nl = tok
            continue
        if pending_nl is not None:
            if kind == "ARROW" or (kind == "ELSE" and prev is not None and prev[0] == "RBRACE"):
                pending_nl = None  # a flow continued on the next line, or `} else`
            else:
                before_prev, prev = prev, pending_nl
                yield pending_nl
                pending_nl = None
        if kind == "LBRACE" and prev is not None and _opens_dict(prev, before_prev):
            tok = ("DICT_LBRACE",) + tok[1:]
            kind = "DICT_LBRACE"
        if kind in _OPENERS:
            stack.append(kind)
            if len(stack) > MAX_NESTING:
                raise LayoutError(tok, f"brackets nested more than {MAX_NESTING} deep")
        elif kind in _CLOSERS:
            if stack and kind == "RBRACE" and stack[-1] == "DICT_LBRACE":
                tok = ("DICT_RBRACE",) + tok[1:]
                kind = "DICT_RBRACE"
            if stack and _OPENERS[stack[-1]] == kind:
                stack.pop()
            if kind == "RBRACE" and prev is not None and prev[0] not in ("_NL", "LBRACE"):
                # An end of statement the user did not write: its text is empty so
                # that a syntax error here is reported as the '}' it stands for.
                nl = ("_NL", "") + tok[2:]
                before_prev, prev = prev, nl
                yield nl
        before_prev, prev = prev, tok
        yield tok
    if prev is not None and prev[0] != "_NL":
        yield pending_nl or ("_NL", "\n") + prev[2:]


def open_brackets(tokens: Iterable[Any]) -> list[str]:
    """The types of the brackets `tokens` (what `layout` passed on, in order) leave open;
    what is not a token tuple is skipped."""
    stack: list[str] = []
    for tok in tokens:
        if type(tok) is not tuple:
            continue
        if tok[0] in _OPENERS:
            stack.append(tok[0])
        elif stack and _OPENERS[stack[-1]] == tok[0]:
            stack.pop()
    return stack


def _opens_dict(prev: TokenTuple, before_prev: TokenTuple | None) -> bool:
    if prev[0] == "ELSE":  # `x if c else {..}` but not `} else {`
        return before_prev is None or before_prev[0] != "RBRACE"
    return prev[0] in _VALUE_STARTERS
