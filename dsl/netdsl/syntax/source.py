"""Reading a spec file: only a regular file, never more than the size cap.

A path may name anything: a FIFO that blocks until someone writes to it,
`/dev/zero` that never ends, a directory. The file is opened without blocking,
its kind is read from the open descriptor (not from a name that could be
swapped in between), and at most `MAX_FILE_BYTES + 1` bytes are read whatever
`stat()` says its size is (`netdsl.files`, shared by every reader of outside files).
"""

from __future__ import annotations

import os

from netdsl.errors import Diagnostic, SpecError
from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_FILE_BYTES
from netdsl.syntax.parser import decode_source

__all__ = ["read_source", "read_spec_bytes"]


def read_source(path: str | os.PathLike[str], display: str) -> str:
    """The text of a spec file (UTF-8, a leading BOM dropped), or a SpecError saying why not."""
    return decode_source(read_spec_bytes(path, display), display)


def read_spec_bytes(path: str | os.PathLike[str], display: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES, or a one-line SpecError."""
    try:
        return read_regular(path, MAX_FILE_BYTES, "spec file")
    except Refused as exc:
        raise SpecError(Diagnostic.for_file(display, str(exc).replace("a spec file may", "a spec may"))) from None
