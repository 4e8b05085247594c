"""Deleting is the rarest thing netdsl does: every place in the package that removes a file or a folder
is listed here with the proof that netdsl made what it removes (security review 2026-12b, N1).

A new `rmtree`, `unlink`, `remove` or `rmdir` anywhere in `dsl/netdsl` fails this test until it is added
to `DELETIONS` with its proof, and a listed place that no longer deletes fails it too. A proof never
rests on a path read from outside (a study, a JSON file, a database, a link): only on a name netdsl
chose itself, in a folder it made or checked, under this user's account.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dsl" / "netdsl"

DELETING_CALLS = {"rmtree", "unlink", "remove", "rmdir", "removedirs", "TemporaryDirectory", "mkdtemp"}


def _deletes(node: ast.Call) -> bool:
    """A call that removes a file or folder (`list.remove` and a protobuf field's `remove` do not)."""
    if isinstance(node.func, ast.Attribute):
        if node.func.attr == "remove":
            return isinstance(node.func.value, ast.Name) and node.func.value.id == "os"
        return node.func.attr in DELETING_CALLS
    return isinstance(node.func, ast.Name) and node.func.id in DELETING_CALLS


# (module, function) -> how many deleting calls it makes, and why each removes only what netdsl made.
DELETIONS: dict[tuple[str, str], tuple[int, str]] = {
    ("atomic.py", "replacing"): (
        1,
        "the temporary file this call created itself, with O_EXCL|O_NOFOLLOW under a random name beside "
        "the target, removed when the write failed",
    ),
    ("deploy/folders.py", "replace_folder"): (
        1,
        "the two folders this call named with a fresh random token: `tmp`, which the export filled, and "
        "`old`, the target it renamed away after check_folder_target proved it a SavedModel netdsl wrote "
        "(its netdsl.json) in this user's folder; rmtree never follows a link",
    ),
    ("deploy/litert_format.py", "litert_bytes"): (
        1,
        "tempfile.TemporaryDirectory: a 0700 folder of a fresh random name that removes itself",
    ),
    ("tracking/pushed.py", "staged"): (
        1,
        "tempfile.TemporaryDirectory: a 0700 folder of a fresh random name holding the copies push made of "
        "a run's files and the diagram it drew (tracking/drawing.py writes only there), removed with what "
        "this call wrote into it",
    ),
    ("tuning/folder.py", "clear_unstarted"): (
        2,
        "a trial's own trials/<k> of this sweep folder (never a path from the study), opened without "
        "following links, of this user, holding nothing but the .lock and config.json's temporary file a "
        "run writes first; each file unlinked by name through the folder's descriptor, then rmdir, which "
        "fails on anything that appeared meanwhile",
    ),
}


class _Deletions(ast.NodeVisitor):
    """Counts deleting calls by the innermost function that makes them."""

    def __init__(self, module: str):
        self.module, self.functions, self.found = module, ["<module>"], {}  # type: ignore[var-annotated]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        if _deletes(node):
            key = (self.module, self.functions[-1])
            self.found[key] = self.found.get(key, 0) + 1
        self.generic_visit(node)


def deleting_calls() -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        visitor = _Deletions(path.relative_to(PACKAGE).as_posix())
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        found.update(visitor.found)
    return found


def test_every_deletion_in_the_package_is_listed_with_its_proof():
    listed = {key: count for key, (count, _) in DELETIONS.items()}
    assert deleting_calls() == listed  # ("<module>", ...) would be a deletion at import: never
