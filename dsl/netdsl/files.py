"""Opening a file that someone else may have put there: only a regular file, never more than a cap.

A path may name anything: a FIFO that blocks until someone writes to it,
`/dev/zero` that never ends, a directory, a link planted to send a read
elsewhere. Every reader of outside files (specs, data files, run files,
the preview's watcher, the language server) opens through here: without
blocking, the kind read from the open descriptor (not from a name that
could be swapped in between), at most `limit + 1` bytes read whatever
`stat()` says. A refusal is a `Refused` holding the one-line reason, which
each caller turns into its own error type (SpecError, DataError, RunError).

    data = read_regular("runs/m-1/report.json", limit=1 << 20, what="run file", follow_links=False)
"""

from __future__ import annotations

import contextlib
import os
import stat
import zipfile
import zlib
from collections.abc import Iterator

__all__ = ["ZIP_ERRORS", "Refused", "kind_refusal", "open_regular", "read_at_most", "read_regular"]

# Every way the standard zipfile module reports an archive (.npz, .keras) it cannot read:
# BadZipFile for a damaged directory, NotImplementedError for a version or a compression it
# lacks ("zip file version 13.5": found by the fuzzer, issue 22), RuntimeError for an encrypted
# member, zlib.error and EOFError for a damaged stream, OSError for the file itself,
# UnicodeDecodeError for a member name flagged UTF-8 that is not (the .keras fuzz campaign, seed 22).
ZIP_ERRORS = (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, zlib.error, OSError, UnicodeDecodeError)

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_KINDS = [  # (test of st_mode, what the file is) for everything but a regular file
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a named pipe (FIFO)"),
    (stat.S_ISCHR, "is a device"),
    (stat.S_ISBLK, "is a device"),
    (stat.S_ISSOCK, "is a socket"),
    (stat.S_ISLNK, "is a symbolic link"),
]


class Refused(Exception):
    """A file that is not read; `str()` is the reason, one line, without the file's name."""


def kind_refusal(mode: int, what: str) -> str | None:
    """Why a file of this `st_mode` is not read as a `what` ("is a device, not a spec file"), or None."""
    if stat.S_ISREG(mode):
        return None
    kind = next((text for test, text in _KINDS if test(mode)), "is not a regular file")
    return f"{kind}, not a {what}"


@contextlib.contextmanager
def open_regular(path: str | os.PathLike, what: str, follow_links: bool = True, own: bool = False) -> Iterator[int]:
    """A descriptor of the regular file at `path` (read-only, blocking reads restored), or `Refused`.
    With `follow_links=False` a link at `path` itself is refused (O_NOFOLLOW); with `own=True` a
    file another account owns or may write to is refused (read from the open descriptor: a run's files)."""
    flags = _OPEN_FLAGS | (0 if follow_links else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Refused("no such file") from None
    except IsADirectoryError:
        raise Refused(f"is a directory, not a {what}") from None
    except OSError as exc:
        if not follow_links and os.path.islink(path):
            raise Refused(f"is a symbolic link, not a {what}; netdsl does not read through links here") from None
        raise Refused(f"cannot read file: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        reason = kind_refusal(info.st_mode, what)
        if reason is None and own:
            reason = _not_own(info, what)
        if reason is not None:
            raise Refused(reason)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a regular file: reads never wait anyway
        yield fd
    finally:
        os.close(fd)


def _not_own(info: os.stat_result, what: str) -> str | None:
    """Why a file is not this user's alone: another account owns it, or may write to it."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"belongs to another account (uid {info.st_uid}); netdsl reads only {what}s you made"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "its group" if not info.st_mode & stat.S_IWOTH else "every account"
        return f"{who} may write to it (mode {stat.S_IMODE(info.st_mode):o}); `chmod go-w` it if you trust its content"
    return None


def read_regular(path: str | os.PathLike, limit: int, what: str, follow_links: bool = True, own: bool = False) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, or `Refused` saying why not."""
    with open_regular(path, what, follow_links, own) as fd:
        try:
            size = os.fstat(fd).st_size
            data = read_at_most(fd, limit + 1)
        except OSError as exc:
            raise Refused(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > limit:
        shown = f"{size:,} bytes" if size > limit else f"more than {limit:,} bytes"
        raise Refused(f"file is too large ({shown}); a {what} may be at most {limit:,} bytes")
    return data


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes from `fd`, in chunks of at most 1 MiB."""
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
