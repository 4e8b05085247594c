"""A member of a zip archive someone else made (a `.keras` file), read bounded before it is expanded.

A member's header says how large it is and how much it takes in the file; both can
lie, and a deflated member of zeros expands a thousandfold (a 65 KB file holds 64 MiB
of `[{},{},...]`, a 1 MB one a 1 GiB `model.weights.h5`). `read_member` refuses a
member whose declared size is over its limit or out of proportion to what it takes in
the file, then reads it in chunks, checking the same as it grows, and never past the
limit. The decompiler (a `.keras` file's config.json) and the weights reader
(`backend/fine_tuning.py`: config.json and model.weights.h5) read through here.
A refusal is a `Refused` holding the one-line reason, without the file's name.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

from netdsl.files import ZIP_ERRORS, Refused, open_regular
from netdsl.limits import MAX_CONFIG_BYTES, MAX_CONFIG_PLAIN_EXPANSION, MAX_CONFIG_RATIO

__all__ = ["CONFIG_MEMBER", "Bound", "NotAZip", "open_zip", "read_config_json", "read_member"]

CONFIG_MEMBER = "config.json"


class NotAZip(Refused):
    """The file is not a zip archive at all (a caller may add how to make one)."""


@dataclass(frozen=True)
class Bound:
    """How large a member may be: at most `limit` bytes, and above `plain` bytes at most `ratio`
    times what it takes in the file."""

    limit: int
    ratio: int
    plain: int


@contextlib.contextmanager
def open_zip(path: str | os.PathLike, what: str) -> Iterator[tuple[zipfile.ZipFile, int]]:
    """The archive at `path` (a regular file: a FIFO or a device is refused, never opened blocking)
    and the file's size in bytes, or `Refused`."""
    with open_regular(path, what) as fd:
        handle = os.fdopen(os.dup(fd), "rb")
    with handle:
        try:
            archive = zipfile.ZipFile(handle)
        except zipfile.BadZipFile:
            raise NotAZip(f"not a {what} (not a zip archive)") from None
        except OSError as exc:
            raise Refused(f"cannot read file: {exc.strerror or exc}") from None
        except ZIP_ERRORS as exc:  # a zip directory Python cannot read ("zip file version 13.5")
            raise Refused(f"not a readable {what} ({exc})") from None
        with archive:
            yield archive, os.fstat(handle.fileno()).st_size


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file_size: int, bound: Bound) -> bytes:
    """The bytes of member `info` of an archive of `file_size` bytes, within `bound`, or `Refused`."""
    name = info.filename
    if info.file_size > bound.limit:
        raise Refused(f"{name} is too large ({info.file_size:,} bytes; at most {bound.limit:,})")
    packed = min(info.compress_size, file_size)  # the header's word, never more than the file
    _refuse_a_bomb(name, info.file_size, packed, bound)
    chunks, total = [], 0
    try:
        with archive.open(info) as member:
            while total <= bound.limit:  # at most one byte past the limit: the header's sizes can lie
                chunk = member.read(min(1 << 20, bound.limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                _refuse_a_bomb(name, total, packed, bound)
    except ZIP_ERRORS as exc:
        raise Refused(f"cannot read {name} ({exc or type(exc).__name__})") from None
    if total > bound.limit:
        raise Refused(f"{name} is too large (more than {bound.limit:,} bytes)")
    return b"".join(chunks)


def read_config_json(
    archive: zipfile.ZipFile, file_size: int, what: str = ".keras file", limit: int = MAX_CONFIG_BYTES
) -> bytes:
    """A `.keras` file's config.json, of at most `limit` bytes (and `MAX_CONFIG_RATIO`), refused before
    parsing when it is large and not a JSON object (64 MiB of `[{},{},...]` parses into 22 million dicts)."""
    try:
        info = archive.getinfo(CONFIG_MEMBER)
    except KeyError:
        raise Refused(f"not a {what} (it has no {CONFIG_MEMBER})") from None
    data = read_member(archive, info, file_size, Bound(limit, MAX_CONFIG_RATIO, MAX_CONFIG_PLAIN_EXPANSION))
    if len(data) > MAX_CONFIG_PLAIN_EXPANSION and not data.lstrip(b" \t\r\n").startswith(b"{"):
        raise Refused(f"{CONFIG_MEMBER} does not describe a model (expected a JSON object)")
    return data


def _refuse_a_bomb(name: str, size: int, packed: int, bound: Bound) -> None:
    if size > bound.plain and size > bound.ratio * max(packed, 1):
        raise Refused(
            f"{name} expands from {packed:,} bytes to more than {bound.ratio}x that; "
            f"{_expands_less(name)} (a zip bomb?)"
        )


def _expands_less(name: str) -> str:
    return "a model's config expands less" if name == CONFIG_MEMBER else "a model's weights expand less"
