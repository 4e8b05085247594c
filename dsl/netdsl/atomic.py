"""Writing outputs atomically: a temporary file in the target's folder, then `os.replace`.

A failed or interrupted write leaves the earlier file untouched and no
partial file behind. Every file netdsl writes (models, diagrams, formatted
specs) goes through `replacing`.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def replacing(target: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside `target`; when the block succeeds it becomes `target`.

    The result keeps the mode of the file it replaces (a new file gets the
    umask's default), and replacing a symlink replaces the file it points to.
    """
    target = Path(os.path.realpath(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes(target: str | os.PathLike, data: bytes) -> None:
    with replacing(target) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
