"""docs/architecture.md names every room and every module of dsl/netdsl, as test_limits does for every MAX_*.

A module counts as named when the document writes its path inside the package
(`semantics/values.py`) or, for a file name no other module has, the bare file
name (`consts.py`); a room (a sub-package) when it writes `room/`. A new module
fails here until the map says where it sits and what it is for.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import netdsl

PACKAGE = Path(netdsl.__file__).resolve().parent
DOC = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
MODULES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))
FILE_NAMES = Counter(Path(m).name for m in MODULES if not m.endswith("__init__.py"))


def _named(module: str) -> bool:
    if module.endswith("__init__.py"):
        room = module[: -len("__init__.py")]
        return room == "" or f"{room}" in DOC
    if module in DOC:
        return True
    name = Path(module).name
    return FILE_NAMES[name] == 1 and re.search(r"(?<![\w/.])" + re.escape(name), DOC) is not None


def test_every_module_and_room_is_named_in_the_architecture_doc():
    missing = [m for m in MODULES if not _named(m)]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_the_doc_names_no_module_that_is_gone():
    written = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)", DOC))
    gone = sorted(w for w in written if not (PACKAGE / w).exists() and not (PACKAGE.parents[1] / w).exists())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"
