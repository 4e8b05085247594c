"""The backend profiles (backend/profiles.py): the one place that names what each backend needs and does.

Outside the profile table and the modules written for one backend, no code compares a backend's name:
it asks the profile, so a fourth backend is one entry (plus its strategy for several devices).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import tomllib

import netdsl
from netdsl.backend import profiles
from netdsl.training.scale import distribute

PACKAGE = Path(netdsl.__file__).resolve().parent
ROOT = PACKAGE.parent.parent
# The modules allowed to name a backend in a comparison: the table, and those written for one backend.
ONE_BACKEND = {"backend/profiles.py", "backend/torch_names.py", "backend/torch_limits.py"}
NAMES = {"tensorflow", "jax", "torch", *profiles.NAMES}


def _names_in(node: ast.AST) -> list[str]:
    """The backend names a comparison's operand spells: a string, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value.strip().lower() in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _names_in(element)]
    return []


def backend_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, name) of every comparison, `match` case or membership test against a backend's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            found += [(node.lineno, name) for operand in (node.left, *node.comparators) for name in _names_in(operand)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, name) for name in _names_in(node.value)]
    return found


def test_no_backend_name_is_compared_outside_its_profile() -> None:
    offenders = [
        f"dsl/netdsl/{path.relative_to(PACKAGE)}:{line}: compares with {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ONE_BACKEND
        for line, name in backend_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "ask backend.profiles instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source",
    [
        'if keras.backend.backend() == "torch":\n    pass\n',
        'ok = backend != "jax"\n',
        'ok = name in ("tensorflow", "tensorflow-cpu")\n',
        'match name:\n    case "jax":\n        pass\n',
    ],
)
def test_the_walk_finds_a_comparison(source: str) -> None:
    """The checker itself: each way of comparing a name is found."""
    assert backend_comparisons(source)


def test_the_walk_leaves_calls_and_keys_alone() -> None:
    assert backend_comparisons('init_backend("jax")\nversions = {"tensorflow": 1}\n') == []


def test_every_profile_installs_from_its_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for profile in profiles.PROFILES.values():
        required = {re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in extras[profile.extra]}
        assert required & set(profile.packages), (
            f"{profile.name}: netdsl[{profile.extra}] installs none of {profile.packages}"
        )
        assert profile.install_hint == f"install it with `pip install 'netdsl[{profile.extra}]'`"


def test_every_profile_can_run_its_defaults() -> None:
    """A default the backend refuses would fail every spec that says nothing."""
    for profile in profiles.PROFILES.values():
        assert profile.steps_per_execution >= 1
        if profile.train_limits:  # backend/torch_limits.py: more than one step is refused
            assert profile.steps_per_execution == 1, profile.name
        if profile.strategy is not None:
            assert profile.strategy in distribute._STRATEGIES, profile.name
        else:
            assert profile.several_devices is not None, f"{profile.name}: no strategy, yet --devices N allowed"


def test_the_default_and_an_unknown_name() -> None:
    assert profiles.chosen(None, {}) == profiles.DEFAULT == "tensorflow"
    assert profiles.chosen(None, {"KERAS_BACKEND": "jax"}) == "jax"
    assert profiles.chosen("torch", {"KERAS_BACKEND": "jax"}) == "torch"
    assert profiles.get("numpy") is None
    assert profiles.multi_process_refusal("jax") is None
    assert profiles.multi_process_refusal("numpy") == profiles.TF_MULTI_PROCESS
    assert profiles.multi_process_refusal("torch") == profiles.TORCH_DISTRIBUTED
