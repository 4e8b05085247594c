"""A SavedModel is a folder: written beside its target, then swapped in, never through a link."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from netdsl.atomic import LinkRefused
from netdsl.deploy.errors import ExportError

MARKER = "saved_model.pb"  # a folder holding it is a SavedModel, which an export may replace


def replace_folder(target: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)` fills a new folder beside `target`, which then becomes `target`.

    An existing `target` is replaced only when it is a SavedModel itself: a link, a
    file or any other folder there is refused, and left as it was.
    """
    check_folder_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(6)
    tmp, old = (target.parent / f".{target.name}.{token}.{end}" for end in ("tmp", "old"))
    try:
        write(tmp)
        check_folder_target(target)  # planted while we wrote
        if target.exists():
            os.rename(target, old)
        os.rename(tmp, target)
    finally:
        for leftover in (tmp, old):
            with contextlib.suppress(OSError):
                shutil.rmtree(leftover)


def check_folder_target(target: Path) -> None:
    if target.is_symlink():
        raise LinkRefused(target)
    if target.exists() and not (target / MARKER).is_file():
        kind = "folder" if target.is_dir() else "file"
        raise ExportError(f"a {kind} that is not a SavedModel is in the way; remove it or choose another -o",
                          file=str(target))
