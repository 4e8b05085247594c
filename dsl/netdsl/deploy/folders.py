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

MARKER = "saved_model.pb"  # a folder holding it is a SavedModel
WRITTEN_BY_NETDSL = Path("assets.extra") / "netdsl.json"  # an export replaces only a SavedModel holding this


def replace_folder(target: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)` fills a new folder beside `target`, which then becomes `target`.

    An existing `target` is replaced only when it is a SavedModel netdsl wrote (its metadata file is
    there) in a folder of this user's: a link, a file, any other folder and another tool's or another
    account's SavedModel are refused, and left as they were. What is removed afterwards is only what
    this call renamed: `tmp` (made by `write`) and `old` (the checked target), both under names with
    a fresh random token.
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
    if not target.exists():
        return
    if not (target / MARKER).is_file():
        kind = "folder" if target.is_dir() else "file"
        raise ExportError(
            f"a {kind} that is not a SavedModel is in the way; remove it or choose another -o", file=str(target)
        )
    if not (target / WRITTEN_BY_NETDSL).is_file() or (hasattr(os, "getuid") and target.stat().st_uid != os.getuid()):
        raise ExportError(
            "a SavedModel that netdsl did not write for you is in the way; netdsl replaces only its "
            "own: remove it or choose another -o",
            file=str(target),
        )
