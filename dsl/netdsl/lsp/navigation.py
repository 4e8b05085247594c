"""Go to definition, find references and rename, over the name index.

A name is followed into the files its document imports (open buffers or
disk), and other open documents that read the same file are searched too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types

from netdsl.errors import Span
from netdsl.lsp.checking import Snapshot, real_of
from netdsl.lsp.names import Occurrence, Symbol
from netdsl.lsp.positions import Lines
from netdsl.syntax.keywords import KEYWORDS

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Places:
    """Turns spans of any file of a snapshot into client locations."""

    def __init__(self, texts_by_real: dict[Path, str], encoding: str):
        self.texts = texts_by_real  # open buffers; other files are read from their program's texts
        self.encoding = encoding
        self._lines: dict[Path, Lines] = {}

    def location(self, snapshot: Snapshot, root_real: Path, span: Span) -> types.Location:
        real = real_of(span.file, snapshot.display, root_real)
        return types.Location(uri=real.as_uri(), range=self.lines(real, snapshot, span.file).range(span))

    def lines(self, real: Path, snapshot: Snapshot, file: str) -> Lines:
        if real not in self._lines:
            text = self.texts.get(real)
            if text is None:
                text = snapshot.program.texts.get(file, "") if snapshot.program else ""
            self._lines[real] = Lines(text, self.encoding)
        return self._lines[real]


def occurrence_at(snapshot: Snapshot | None, line: int, col: int) -> Occurrence | None:
    if snapshot is None or snapshot.index is None:
        return None
    return snapshot.index.at(snapshot.display, line, col)


def definition(snapshot: Snapshot, root_real: Path, places: Places, line: int, col: int) -> list[types.Location]:
    occ = occurrence_at(snapshot, line, col)
    target = snapshot.index.definition(occ) if occ is not None and snapshot.index is not None else None
    return [places.location(snapshot, root_real, target.span)] if target is not None else []


def references(
    snapshot: Snapshot,
    root_real: Path,
    places: Places,
    line: int,
    col: int,
    include_declaration: bool,
    others: Sequence[tuple[Snapshot, Path]] = (),
) -> list[types.Location]:
    occ = occurrence_at(snapshot, line, col)
    if occ is None:
        return []
    found, seen = [], set()
    for snap, real, occurrence in _everywhere(snapshot, root_real, occ.symbol, others):
        if occurrence.definition and not include_declaration:
            continue
        location = places.location(snap, real, occurrence.span)
        key = (location.uri, location.range.start.line, location.range.start.character)
        if key not in seen:
            seen.add(key)
            found.append(location)
    return found


def prepare_rename(snapshot: Snapshot | None, line: int, col: int) -> Span | None:
    occ = occurrence_at(snapshot, line, col)
    return occ.span if occ is not None else None


def rename(
    snapshot: Snapshot,
    root_real: Path,
    places: Places,
    line: int,
    col: int,
    new_name: str,
    others: Sequence[tuple[Snapshot, Path]] = (),
) -> types.WorkspaceEdit | None:
    """Every occurrence of the symbol at the cursor, renamed; ValueError for a name the language refuses."""
    if not NAME.match(new_name) or new_name in KEYWORDS:
        raise ValueError(f"'{new_name}' is not a name netdsl accepts (letters, digits and _, not a keyword)")
    occ = occurrence_at(snapshot, line, col)
    if occ is None:
        return None
    changes: dict[str, list[types.TextEdit]] = {}
    seen = set()
    for snap, real, occurrence in _everywhere(snapshot, root_real, occ.symbol, others):
        location = places.location(snap, real, occurrence.span)
        key = (location.uri, location.range.start.line, location.range.start.character)
        if key in seen:
            continue
        seen.add(key)
        changes.setdefault(location.uri, []).append(types.TextEdit(range=location.range, new_text=new_name))
    return types.WorkspaceEdit(changes=changes)


def _everywhere(snapshot: Snapshot, root_real: Path, symbol: Symbol, others):
    """(snapshot, its root's path, occurrence) for the symbol in this program and in other open documents'."""
    if snapshot.index is not None:  # (it is: the symbol was found in it)
        for occurrence in snapshot.index.references(symbol):
            yield snapshot, root_real, occurrence
    if symbol.kind == "local" and symbol.file == snapshot.display:
        return  # a local of this file: no other file can name it
    defining = real_of(symbol.file, snapshot.display, root_real)
    for other, other_real in others:
        if other.index is None or other is snapshot:
            continue
        display = next((f for f in other.program.files if real_of(f, other.display, other_real) == defining), None)
        if display is None:
            continue
        same = Symbol(symbol.kind, display, symbol.owner, symbol.name)
        for occurrence in other.index.references(same):
            yield other, other_real, occurrence
