"""Writing outputs atomically: a temporary file in the target's folder, then `os.replace`.

A failed or interrupted write leaves the earlier file untouched and no
partial file behind. Every file netdsl writes (models, diagrams, formatted
specs) goes through `replacing`.

Links are never written through. A symbolic link found where the output goes
(planted in a shared build folder, say) is replaced by the new file, and the
file it pointed to is left as it was; `links="refuse"` refuses the write
instead (`netdsl fmt` on a link: the user meant the file, not the link).
No process-wide state is touched: the temporary file is created with mode
0o666 and the kernel applies the umask, so a new output gets exactly the mode
any new file gets, without reading the umask (which only `os.umask` can do,
by changing it for every thread at once).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

__all__ = ["LinkRefused", "replacing", "write_bytes"]

_CREATE = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class LinkRefused(OSError):
    """The target is a symbolic link and the caller asked not to replace links."""

    def __init__(self, target: Path):
        super().__init__(errno.ELOOP, "it is a symbolic link; netdsl does not write through links", str(target))


@contextlib.contextmanager
def replacing(
    target: str | os.PathLike,
    suffix: str = ".tmp",
    links: Literal["replace", "refuse"] = "replace",
    new_mode: int = 0o666,
    mode: int | None = None,
) -> Iterator[Path]:
    """Yield a temporary path beside `target`; when the block succeeds it becomes `target`.

    The result keeps the mode of the regular file it replaces; a new file (or
    one that replaces a link) gets `new_mode` less what the umask takes (a run's
    files: 0o644, so that a umask of 002 leaves no other account able to change them).
    `mode` (0o600: a file that names a secret) is the result's mode whatever was there,
    and the temporary file is then never readable by others while it is written.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    kept = _mode_to_keep(target, links)
    if mode is None:
        mode = kept
    fd, tmp = _create_beside(target, suffix, new_mode if mode is None else 0o600)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode) if hasattr(os, "fchmod") else os.chmod(tmp, mode)
        finally:
            os.close(fd)
        yield tmp
        if links == "refuse" and os.path.islink(target):  # planted while we wrote
            raise LinkRefused(target)
        os.replace(tmp, target)  # replaces a link itself, never the file behind it
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes(
    target: str | os.PathLike,
    data: bytes,
    links: Literal["replace", "refuse"] = "replace",
    new_mode: int = 0o666,
    mode: int | None = None,
) -> None:
    with replacing(target, links=links, new_mode=new_mode, mode=mode) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def _mode_to_keep(target: Path, links: str) -> int | None:
    """The mode of the regular file at `target`; None when there is none (a new file's mode applies)."""
    try:
        info = os.lstat(target)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        if links == "refuse":
            raise LinkRefused(target)
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def _create_beside(target: Path, suffix: str, mode: int = 0o666) -> tuple[int, Path]:
    """A new, empty file in the target's folder, never one that was there before."""
    for _ in range(100):
        tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, _CREATE, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a temporary file", str(target.parent))
