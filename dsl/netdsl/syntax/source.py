"""Reading a spec file: only a regular file, never more than the size cap.

A path may name anything: a FIFO that blocks until someone writes to it,
`/dev/zero` that never ends, a directory. The file is opened without blocking,
its kind is read from the open descriptor (not from a name that could be
swapped in between), and at most `MAX_FILE_BYTES + 1` bytes are read whatever
`stat()` says its size is.
"""

from __future__ import annotations

import os
import stat

from netdsl.errors import Diagnostic, SpecError
from netdsl.limits import MAX_FILE_BYTES
from netdsl.syntax.parser import decode_source

__all__ = ["read_source", "read_spec_bytes"]

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))

_KINDS = [  # (test of st_mode, what the file is) for everything but a regular file
    (stat.S_ISDIR, "is a directory, not a spec file"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a spec file"),
    (stat.S_ISCHR, "is a device, not a spec file"),
    (stat.S_ISBLK, "is a device, not a spec file"),
    (stat.S_ISSOCK, "is a socket, not a spec file"),
]


def read_source(path: str | os.PathLike[str], display: str) -> str:
    """The text of a spec file (UTF-8, a leading BOM dropped), or a SpecError saying why not."""
    return decode_source(read_spec_bytes(path, display), display)


def read_spec_bytes(path: str | os.PathLike[str], display: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES, or a one-line SpecError."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise _refused(display, "no such file") from None
    except IsADirectoryError:
        raise _refused(display, "is a directory, not a spec file") from None
    except OSError as exc:
        raise _refused(display, f"cannot read file: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(display, next((what for test, what in _KINDS if test(info.st_mode)),
                                         "is not a regular file, not a spec file"))
        data = _read_at_most(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _refused(display, f"cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        size = f"{info.st_size:,} bytes" if info.st_size > MAX_FILE_BYTES else f"more than {MAX_FILE_BYTES:,} bytes"
        raise _refused(display, f"file is too large ({size}); a spec may be at most {MAX_FILE_BYTES:,} bytes")
    return data


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _refused(display: str, message: str) -> SpecError:
    return SpecError(Diagnostic.for_file(display, message))

