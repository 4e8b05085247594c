"""Columns as the client counts them.

netdsl's spans count code points (1-based, end exclusive); an LSP client
counts UTF-16 code units unless it negotiated UTF-8 or UTF-32. A line with an
emoji before an error is where the two differ.
"""

from __future__ import annotations

from lsprotocol import types

from netdsl.errors import Span

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(char: str, encoding: str) -> int:
    if encoding == UTF32:
        return 1
    code = ord(char)
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def to_units(line: str, index: int, encoding: str) -> int:
    """The client's column for code-point `index` (0-based) of `line`; past its end, its end
    (a span may point at the line break, which the client does not count in the line)."""
    index = min(index, len(line))
    if encoding == UTF32 or line.isascii():
        return index
    return sum(_units(c, encoding) for c in line[:index])


def from_units(line: str, units: int, encoding: str) -> int:
    """The code-point index (0-based) for the client's column `units` of `line`."""
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    count = 0
    for i, char in enumerate(line):
        if count >= units:
            return i
        count += _units(char, encoding)
    return len(line)


class Lines:
    """A text's lines (split at `\\n`, as the parser counts them) for converting positions."""

    def __init__(self, text: str, encoding: str = UTF16):
        self.lines = text.split("\n")
        self.encoding = encoding

    def line(self, number: int) -> str:
        """Line `number` (1-based), or '' past the end."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else ""

    def position(self, line: int, col: int) -> types.Position:
        """The client position of 1-based (line, code-point column)."""
        line = max(1, min(line, len(self.lines)))
        return types.Position(line=line - 1, character=to_units(self.line(line), max(col - 1, 0), self.encoding))

    def range(self, span: Span) -> types.Range:
        return types.Range(start=self.position(span.line, span.col), end=self.position(span.end_line, span.end_col))

    def point(self, position: types.Position) -> tuple[int, int]:
        """The 1-based (line, code-point column) of a client position."""
        line = position.line + 1
        return line, from_units(self.line(line), position.character, self.encoding) + 1

    def end(self) -> types.Position:
        """The position just past the last character."""
        return types.Position(
            line=len(self.lines) - 1, character=to_units(self.lines[-1], len(self.lines[-1]), self.encoding)
        )
