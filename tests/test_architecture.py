"""The layout's rules, checked on the source: rooms by stage, imports only pointing down.

Every import of every module counts, at the top or inside a function, since
an import that only runs late still ties the two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import netdsl

PACKAGE = Path(netdsl.__file__).resolve().parent

# A room may import only rooms of a lower level (and itself); rooms of one level
# are siblings that know nothing of each other. docs/architecture.md draws this.
LEVELS = {
    "version": 0,
    "errors": 0,
    "atomic": 0,
    "grammar": 0,
    "limits": 0,
    "files": 0,
    "options": 0,  # each command's options, declared once (pure data): api and cli read them
    "syntax": 1,
    "highlight": 1,
    "demo_data": 1,
    "archives": 1,  # demo_data writes through atomic
    "registry": 2,
    "starter": 2,
    "zoo": 2,
    "semantics": 3,
    "scoring": 3,
    "custom": 4,
    "cost": 4,
    "layer_listing": 4,  # layer_listing: `netdsl layers`' text, from the registry  # cost: FLOPs and memory from the checked graph (semantics), pure Python
    "backend": 5,
    "diagram": 5,
    "training": 6,
    "decompiler": 6,
    "pipeline": 6,
    "lightning": 6,
    "lsp": 7,
    "preview": 7,
    "tuning": 7,
    "deploy": 7,
    "tracking": 8,  # reads run folders (training/) and sweep folders (tuning/)
    "trained": 8,
    "model_report": 7,  # what build and summary print and write: pipeline's models, their tables and files  # one door for trained things: a Keras model (training/) or an exported file (deploy/)
    "api": 9,
    "cli": 10,
    "netdsl": 11,  # the package's __init__: the public names
}
# Inside a room split into sub-rooms, the same rule one level down ("": the room's __init__).
SUB_LEVELS = {
    "training": {"errors": 0, "data": 1, "run": 2, "scale": 3, "": 4},
}
HEAVY = ("keras", "tensorflow", "jax", "torch", "lightning")
MAY_IMPORT_HEAVY = {"backend", "custom", "training", "deploy", "lightning"}
API_NAMES = {
    "parse",
    "parse_file",
    "check",
    "format",
    "build",
    "build_all",
    "summary",
    "fit_kwargs",
    "render",
    "train",
    "decompile",
    "export",
    "evaluate",
    "predict",
    "sweep",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "netdsl"


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file, relative ones resolved."""
    is_package = path.name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{target}.{alias.name}"
                out.append((sub if sub in MODULES else target, node.lineno))
    return out


EDGES = {module: _imports(module, path) for module, path in MODULES.items()}


def _typing_only_lines(path: Path) -> set[int]:
    """The lines of the imports under `if TYPE_CHECKING:`: read by type checkers, never run."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            lines |= {
                sub.lineno
                for stmt in node.body
                for sub in ast.walk(stmt)
                if isinstance(sub, (ast.Import, ast.ImportFrom))
            }
    return lines


TYPING_ONLY = {module: _typing_only_lines(path) for module, path in MODULES.items()}


def test_every_room_has_a_level() -> None:
    rooms = {_room(m) for m in MODULES}
    assert rooms <= set(LEVELS), f"rooms without a level in LEVELS: {sorted(rooms - set(LEVELS))}"


def test_imports_only_point_down() -> None:
    upward = []
    for module, imports in EDGES.items():
        for target, line in imports:
            if target not in MODULES or _room(target) == _room(module):
                continue
            if LEVELS[_room(target)] >= LEVELS[_room(module)]:
                upward.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {module} imports {target}")
    assert not upward, "imports that do not point down:\n" + "\n".join(upward)


def _sub_room(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def test_inside_a_room_split_in_sub_rooms_imports_only_point_down() -> None:
    for room, levels in SUB_LEVELS.items():
        inside = [m for m in MODULES if _room(m) == room]
        assert {_sub_room(m) for m in inside} == set(levels), f"{room}/: sub-rooms without a level in SUB_LEVELS"
        upward = [
            f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} imports {target}"
            for m in inside
            for target, line in EDGES[m]
            if target in MODULES
            and _room(target) == room
            and _sub_room(target) != _sub_room(m)
            and levels[_sub_room(target)] >= levels[_sub_room(m)]
        ]
        assert not upward, "imports that do not point down:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    graph = {m: {t for t, _ in EDGES[m] if t in MODULES and t != m} for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def test_keras_tensorflow_and_jax_only_where_models_are_built() -> None:
    offenders = [
        f"{module} imports {target} (line {line})"
        for module, imports in EDGES.items()
        for target, line in imports
        if target.split(".")[0] in HEAVY and _room(module) not in MAY_IMPORT_HEAVY and line not in TYPING_ONLY[module]
    ]
    assert not offenders, offenders


def test_scoring_an_exported_file_uses_the_training_face_alone() -> None:
    """deploy/exported_inference.py reads data and run folders through `netdsl.training`'s face, none of its modules, so
    that the room can move its insides; the face's lazy table and its `__all__` name the same things."""
    import netdsl.training as training

    inside = [
        f"line {line}: {target}"
        for target, line in EDGES["netdsl.deploy.exported_inference"]
        if target.startswith("netdsl.training.")
    ]
    assert not inside, inside
    assert set(training._OUTSIDE) <= set(training.__all__)
    assert all(getattr(training, name) is not None for name in training._OUTSIDE)


def test_no_room_is_named_like_an_api_function() -> None:
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert not rooms & API_NAMES


def test_the_rule_catches_an_upward_import(tmp_path) -> None:
    """The checker itself: an import from syntax up into the backend is found."""
    fake = tmp_path / "parser.py"
    fake.write_text("def f():\n    from netdsl.backend.compiler import compile_program\n")
    ((target, line),) = _imports("netdsl.syntax.parser", fake)
    assert (target, line) == ("netdsl.backend.compiler", 2)
    assert LEVELS[_room(target)] >= LEVELS[_room("netdsl.syntax.parser")]


def test_the_version_is_written_once() -> None:
    root = PACKAGE.parent.parent
    hits = [
        str(p.relative_to(root))
        for p in [root / "pyproject.toml", *PACKAGE.rglob("*.py")]
        if f'"{netdsl.__version__}"' in p.read_text(encoding="utf-8")
    ]
    assert hits == ["dsl/netdsl/version.py"]


# The tests mirror the rooms: tests/<room>/ for dsl/netdsl/<room>/, whole-project checks and the
# tests of level-0 modules at the top, and beside them only these folders.
TESTS = Path(__file__).resolve().parent
NOT_ROOMS = {
    "support": "helpers the tests import as tests.support.NAME, and fixture generators",
    "fixtures": "data files: specs, expected outputs, goldens, saved models",
    "fuzz": "the fuzzing harness (`python -m tests.fuzz`)",
    "editors": "the editor extensions of the repository's editors/ folder",
    "journeys": "end-to-end journeys across commands and rooms (issue 28), one test file each",
}


def test_the_tests_mirror_the_rooms() -> None:
    rooms = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert not folders - rooms - set(NOT_ROOMS), "a tests/ folder that names no room of dsl/netdsl"
    for folder in folders - {"fixtures"}:
        # a package each, so that two rooms may both have a test_hardening.py
        assert (TESTS / folder / "__init__.py").is_file(), f"tests/{folder}/ is not a package"
    helpers = [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("*.py")
        if p.parts[len(TESTS.parts)] not in {"support", "fixtures", "fuzz"}
        and not p.name.startswith("test_")
        and p.name not in {"__init__.py", "conftest.py"}
    ]
    assert not helpers, f"helpers belong in tests/support/: {helpers}"


# The command line is a skin over the library (issue 29.2): `cli/` imports the API, the errors, the
# kernel beneath everything, the servers it starts and the job flags' room (a run of several processes
# is the command line's own), nothing deeper.
CLI_MAY_IMPORT = (
    "netdsl.api",
    "netdsl.errors",
    "netdsl.atomic",
    "netdsl.files",
    "netdsl.version",
    "netdsl.cli",
    "netdsl.lsp.server",
    "netdsl.preview",
    "netdsl.training.scale",
)
# What `cli/` still reaches past the API for, each to move behind it; the list may only shrink (empty since
# build, summary, render, layers and runs went behind the API: issue 29.2).
CLI_STILL_REACHES: dict[str, set[str]] = {}


def _deeper(module: str) -> set[str]:
    return {
        target
        for target, _ in EDGES[module]
        if target.startswith("netdsl.")
        and target != "netdsl"
        and not any(target == allowed or target.startswith(allowed + ".") for allowed in CLI_MAY_IMPORT)
        and not target.endswith(".errors")
    }  # a room's own errors are the errors


def test_the_command_line_imports_only_the_api_errors_and_servers() -> None:
    found = {
        module.removeprefix("netdsl.cli."): sorted(_deeper(module))
        for module in MODULES
        if _room(module) == "cli" and _deeper(module)
    }
    assert found == {name: sorted(targets) for name, targets in CLI_STILL_REACHES.items()}
