"""The docs are true (issue 28, item 7): every `netdsl ...` command line in README.md and docs/ parses
with the real command line's parser, every `netdsl.NAME` they give exists, every table renders as one
table, and no page sends a pip user to a repository file a wheel lacks.

Nothing here runs a command (tests/test_way_in.py runs the quickstart, block by block); a command line
that parses but cannot work is caught where its page is run.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dsl" / "netdsl"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# Pages for the people who build netdsl, where a repository path is the point.
CONTRIBUTOR_PAGES = {"architecture.md", "editors.md", "examples.md", "export.md"}

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
PLACEHOLDER = re.compile(r"\.\.\.|…|\|")  # `netdsl evaluate RUN [--json] ...`: a synopsis, not a command line


def command_lines() -> list[tuple[str, str]]:
    """(page, line) of every `netdsl ...` line of a sh/console/bash block (continuations joined)."""
    found = []
    for page in PAGES:
        for lang, block in FENCE.findall(page.read_text(encoding="utf-8")):
            if lang not in ("sh", "bash", "console", "shell", ""):
                continue
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                if lang == "console" and not line.startswith("$ "):
                    continue  # what a command printed
                line = line.strip().removeprefix("$ ")
                line = re.sub(r"^(\w+=\S+\s+)+", "", line)  # OMP_NUM_THREADS=1 netdsl train ...
                for command in re.split(r"\s&&\s|;\s", line.split(" #")[0]):  # init demo && cd demo
                    command = command.strip()
                    if command.startswith("netdsl ") and not PLACEHOLDER.search(command):
                        found.append((page.name, command))
    return found


COMMANDS = command_lines()


def test_the_docs_have_command_lines():
    assert len(COMMANDS) > 40


@pytest.mark.parametrize("page, command", COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_every_command_line_in_the_docs_parses(page, command):
    from netdsl.cli.app import _parser

    try:
        words = shlex.split(re.sub(r"\$\{?[A-Z_]+\}?", "1", command))  # --seed "$SLURM_ARRAY_TASK_ID"
    except ValueError as exc:
        pytest.fail(f"{page}: {command}: {exc}")
    if len(words) > 1 and words[1] in ("--help", "-h", "--version"):
        return
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        try:
            _parser().parse_args(words[1:])
        except SystemExit as exit_:
            assert exit_.code == 0, f"{page}: `{command}` does not parse: {errors.getvalue().strip()}"


NAME = re.compile(r"`[^`\n]*?\b(netdsl(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
FILE_SUFFIXES = {"lark", "json", "py", "net", "md", "svg", "keras", "onnx", "tflite"}
ENTRY_POINT_GROUPS = {"netdsl.layers"}  # registry/plugins.py: packages register layers under it


def documented_names() -> list[tuple[str, str]]:
    found = set()
    for page in PAGES:
        for name in NAME.findall(page.read_text(encoding="utf-8")):
            last = name.rsplit(".", 1)[1]
            if last not in FILE_SUFFIXES and not name.endswith(".tmLanguage"):
                found.add((page.name, name))
    return sorted(found)


def editor_settings() -> set[str]:
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    return set(package["contributes"]["configuration"]["properties"])


def module_names(path: Path) -> set[str]:
    """The names a module defines at its top level (and in `__all__`), read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                with contextlib.suppress(ValueError):
                    names.update(ast.literal_eval(node.value))
    return names


def resolves(name: str) -> bool:
    """Whether `netdsl.a.b.C` names a module of the package, or a name one of them defines (what
    follows that name: its attributes, not checked)."""
    parts = name.split(".")[1:]
    folder, module = PACKAGE, PACKAGE / "__init__.py"
    for index, part in enumerate(parts):
        if (folder / part / "__init__.py").is_file():
            folder, module = folder / part, folder / part / "__init__.py"
            continue
        if (folder / f"{part}.py").is_file():
            rest = parts[index + 1 :]
            return not rest or rest[0] in module_names(folder / f"{part}.py")
        return part in module_names(module)
    return True


@pytest.mark.parametrize("page, name", documented_names(), ids=[f"{p}:{n}" for p, n in documented_names()])
def test_every_name_the_docs_give_exists(page, name):
    if name.startswith(("netdsl.server", "netdsl.trace")):
        assert any(setting == name or setting.startswith(name + ".") for setting in editor_settings()), (
            f"{page}: the editor has no setting {name}"
        )
        return
    if name in ENTRY_POINT_GROUPS:
        assert f'"{name}"' in (PACKAGE / "registry" / "plugins.py").read_text(encoding="utf-8")
        return
    assert resolves(name), f"{page}: {name} does not exist"


def test_netdsl_names_in_the_api_guide_are_public():
    """Every top-level `netdsl.NAME` that docs/api.md documents is in `netdsl.__all__`."""
    import netdsl

    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    top = {m.split(".")[1] for m in NAME.findall(api) if m.count(".") == 1 and "__" not in m}
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    groups = {group.split(".", 1)[1] for group in ENTRY_POINT_GROUPS}
    assert sorted(n for n in top - modules - groups if n not in netdsl.__all__) == []


def tables(text: str) -> list[list[str]]:
    """Each run of consecutive lines starting with `|`, outside fenced blocks."""
    text = FENCE.sub("", text)
    runs, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_table_renders_as_one_table(page):
    for rows in tables(page.read_text(encoding="utf-8")):
        assert len(rows) >= 2 and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", rows[1].strip()), (
            f"{page.name}: rows that are no table (a header and a |---| line must come first): {rows[0][:80]}"
        )
        widths = {len(re.findall(r"(?<!\\)\|", row.strip().replace("`|`", ""))) for row in rows}
        assert len(widths) == 1, f"{page.name}: rows of different widths in the table starting {rows[0][:80]}"


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in CONTRIBUTOR_PAGES], ids=lambda p: p.name)
def test_no_user_page_needs_the_repository(page):
    """A pip user has the wheel, not `scripts/`, `tests/` or `specs/`: pages for users name commands."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    used = re.findall(r"(?:python |\.venv/bin/python )(scripts|tests|bench)/\w+", text)
    assert used == [], f"{page.name} runs repository files: {used}"
