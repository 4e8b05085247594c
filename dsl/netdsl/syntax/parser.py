"""Text to IR: reading source safely, and parsing it with the committed LALR tables.

The pipeline (each step its own module): `lexer.lex` (text to tokens),
`lexer.layout` (newlines and braces as the grammar wants them), `lalr.run`
(lark's LALR(1) tables, see `tables.py`), building the IR while it reduces
(`transform.IRBuilder`). A file that does not parse goes to
`syntax_errors.diagnose` for messages a person can act on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netdsl.errors import Diagnostic, LayoutError, SpecError, Span
from netdsl.syntax.lalr import Reductions, SyntaxFailure, end_token, run, shaped_reducers
from netdsl.syntax.lexer import MAX_NESTING, LexFailure, layout, lex
from netdsl.syntax.tables import load_tables

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NUMBER_DIGITS = 40
# Deeper expressions are refused while parsing, with their position: the
# checker, the formatter and the Keras expression layers walk expressions
# recursively. 0.1.0 stopped near 490 levels, where its recursive tree
# transform ran out of Python's stack (as "expression nested too deeply" at
# 1:1); 200 is far deeper than a person writes (`a + b + c` is 2 levels) and
# leaves the walkers room inside 48 nested blocks.
MAX_EXPRESSION_DEPTH = 200

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "MAX_NUMBER_DIGITS", "MAX_EXPRESSION_DEPTH",
           "read_source", "decode_source", "parse"]


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


def parse(text: str, display: str, builder: Any, comments: list | None = None) -> Any:
    """Parse text with `builder` (a method per grammar rule, see `lalr.shaped_reducers`).

    Comments are skipped by the grammar; when `comments` is given they are
    collected into it as token tuples (the formatter keeps them). A file that
    does not parse raises SpecError with the first syntax error of each
    top-level declaration.
    """
    tables = load_tables()
    try:
        reductions = Reductions(tables, shaped_reducers(tables, builder))
        return run(tables, layout(lex(text, tables, comments)), reductions, end_token)
    except (LexFailure, LayoutError, SyntaxFailure):
        pass
    from netdsl.syntax.syntax_errors import diagnose  # only a file with syntax errors needs it

    raise SpecError(diagnose(text, display))
