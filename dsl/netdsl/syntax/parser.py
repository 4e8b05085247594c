"""Text to IR: reading source safely, and parsing it with the committed LALR tables.

The pipeline (each step its own module): `lexer.lex` (text to tokens),
`lexer.layout` (newlines and braces as the grammar wants them), `lalr.run`
(lark's LALR(1) tables, see `tables.py`), building the IR while it reduces
(`transform.IRBuilder`). A file that does not parse goes to
`syntax_errors.diagnose` for messages a person can act on.
"""

from __future__ import annotations

from typing import Any

from netdsl.errors import Diagnostic, LayoutError, Span, SpecError
from netdsl.limits import MAX_EXPRESSION_DEPTH, MAX_FILE_BYTES, MAX_NESTING, MAX_NUMBER_DIGITS
from netdsl.syntax.lalr import Part, Reductions, SyntaxFailure, end_token, run, shaped_reducers
from netdsl.syntax.lexer import LexFailure, layout, lex
from netdsl.syntax.tables import load_tables

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "MAX_NUMBER_DIGITS", "MAX_EXPRESSION_DEPTH", "decode_source", "parse"]


# ----------------------------------------------------------------- reading


def decode_source(data: bytes, display: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(
            Diagnostic.for_file(
                display, f"file is too large ({len(data):,} bytes); a spec may be at most {MAX_FILE_BYTES:,} bytes"
            )
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(
            Diagnostic.at(
                Span.at(display, line, col), f"invalid UTF-8 byte 0x{data[exc.start]:02x}; a spec must be UTF-8 text"
            )
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# ----------------------------------------------------------------- parsing


def parse(text: str, display: str, builder: Any, comments: list[Any] | None = None) -> Any:
    """Parse text with `builder` (a method per grammar rule, see `lalr.shaped_reducers`).

    Comments are skipped by the grammar; when `comments` is given they are
    collected into it as token tuples (the formatter keeps them). A file that
    does not parse raises SpecError with the first syntax error of each
    top-level declaration.
    """
    tables = load_tables()
    parsed = 0  # the offset before which the text is known to be whole top-level declarations
    lexed: LexFailure | None = None  # a character no token matches, reached with no error before it
    failure: SyntaxFailure | None = None  # the parser had no action for a token
    try:
        reductions = Reductions(tables, shaped_reducers(tables, builder))
        return run(tables, layout(lex(text, tables, comments)), reductions, end_token)
    except SyntaxFailure as exc:
        parsed = _declarations_end(text, exc.value_stack)
        failure = exc
    except LexFailure as exc:
        lexed = exc
    except LayoutError:
        pass
    from netdsl.syntax.syntax_errors import diagnose  # only a file with syntax errors needs it

    raise SpecError(diagnose(text, display, parsed, lexed, failure))


def _declarations_end(text: str, value_stack: list[Any]) -> int:
    """Where the top-level declarations the parser completed before it failed end (0 if none).

    `start: (_decl _NL)*` keeps the completed ones in one Part at the bottom of the stack,
    its position running to the end of the last one's newline. Every declaration begins with
    a keyword token, so a Part there is that list."""
    if not value_stack or type(value_stack[0]) is not Part or value_stack[0].pos is None:
        return 0
    end_line: int
    end_col: int
    _, _, end_line, end_col = value_stack[0].pos
    offset = 0
    for _ in range(end_line - 1):
        offset = text.find("\n", offset) + 1
        if offset == 0:
            return 0  # pragma: no cover - a position past the text
    return offset + end_col - 1
