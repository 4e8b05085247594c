"""Regenerate every generated file of the repository, in dependency order (run from anywhere).

    python scripts/regen.py                 # run every generator (review the diff before committing)
    python scripts/regen.py --check         # write nothing; exit 1 naming every stale output
    python scripts/regen.py --check --cheap # the same, without the generators that import Keras
    python scripts/regen.py --list          # the generators, their outputs and what they need
    make regen / make regen-check           # the first two, with the project's .venv

Adding a generated file = adding one `Generator(...)` line to GENERATORS below, after
the generators whose outputs it reads. Each generator is its own command (a script
with `--check`, or a test run with its regeneration switch), run as a subprocess
from the repository root with this interpreter and `dsl/` first on the path.

`--check` runs only the generators that have a check mode (compare in memory, write
nothing): the parser tables, the registry, the TextMate grammar and the gallery page.
The others write their outputs and have no check mode; their outputs are checked
byte for byte by the tests named in their `checked_by` instead (for example
tests/test_diagnostics.py for tests/fixtures/errors/*.expected).

Which generators need Keras/TensorFlow (`heavy`, skipped by `--cheap`): gen_registry
(reads the installed Keras' layer signatures), the data-error fixtures (they train),
the decompile configs (they save Keras models) and the decompile outputs (a test run
that imports Keras). Only gen_registry of these has a check mode: tests/test_regen.py
runs `--check --cheap` (no Keras), and tests/registry/test_registry.py's
`test_regenerating_gives_the_committed_file` is the registry's check.

Not regenerated here, on purpose: tests/fixtures/golden/syntax_coverage.ir.json and
tests/fixtures/compat/* were written by netdsl 0.1.0 and pin that version's behaviour; the
CSV/text fixtures of tests/fixtures/data_errors and the spec fixtures
(tests/fixtures/errors/*.net, tests/fixtures/fmt/*) are written by hand.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTEST = ("-m", "pytest", "-q", "-p", "no:cacheprovider")


@dataclass(frozen=True)
class Generator:
    """One generator: the command that writes `outputs`, and whether it can check instead of writing."""

    name: str
    command: tuple[str, ...]  # arguments to this Python interpreter, run in the repository root
    outputs: str  # what it writes, for the messages
    checks: bool = False  # the command takes `--check`: exit 1 when an output would change, writing nothing
    heavy: bool = False  # imports Keras/TensorFlow (skipped by --cheap)
    env: dict[str, str] = field(default_factory=dict)  # set while writing (a test's regeneration switch)
    checked_by: str = ""  # without a check mode: which test compares (or reads) the outputs


# In dependency order: the grammar's tables and the registry first (the checker reads both),
# then what is derived from the grammar, the registry or the checker's messages.
GENERATORS: tuple[Generator, ...] = (
    Generator("parser-tables", ("scripts/gen_parser_tables.py",), "dsl/netdsl/syntax/netdsl_tables.json", checks=True),
    Generator("registry", ("scripts/gen_registry.py",), "dsl/netdsl/registry/data.json", checks=True, heavy=True),
    Generator(
        "textmate",
        ("scripts/gen_textmate.py",),
        "editors/textmate/netdsl.tmLanguage.json, editors/vscode/syntaxes/netdsl.tmLanguage.json",
        checks=True,
    ),
    Generator(
        "error-fixtures",
        ("tests/support/regen_error_fixtures.py",),
        "tests/fixtures/errors/*.expected",
        checked_by="compared by tests/test_diagnostics.py",
    ),
    Generator(
        "data-error-data",
        ("tests/fixtures/data_errors/make_data.py",),
        "tests/fixtures/data_errors/*.npz, images_*/",
        checked_by="read by tests/training/test_data_errors.py",
    ),
    Generator(
        "data-error-fixtures",
        ("tests/support/regen_data_error_fixtures.py",),
        "tests/fixtures/data_errors/*.expected",
        heavy=True,
        checked_by="compared by tests/training/test_data_errors.py",
    ),
    Generator(
        "decompile-configs",
        ("tests/fixtures/decompile/make_fixtures.py",),
        "tests/fixtures/decompile/*.json",
        heavy=True,
        checked_by="no test: the inputs of tests/decompiler/test_*.py",
    ),
    Generator(
        "decompile-outputs",
        (*PYTEST, "tests/decompiler/test_decompile.py", "-k", "test_fixture_decompiles"),
        "tests/fixtures/decompile/*.net, tests/fixtures/decompile/*.expected",
        heavy=True,
        env={"REGEN_DECOMPILE": "1"},
        checked_by="compared by tests/decompiler/test_decompile.py",
    ),
    Generator(
        "render-goldens",
        (*PYTEST, "tests/diagram/test_render.py", "-k", "test_golden_dot"),
        "tests/fixtures/golden/render_small*.dot",
        env={"NETDSL_UPDATE_GOLDEN": "1"},
        checked_by="compared by tests/diagram/test_render.py",
    ),
    Generator("gallery", ("scripts/gen_gallery.py",), "docs/examples.md, docs/gallery/*.svg", checks=True),
)


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "dsl"), env.get("PYTHONPATH", "")) if p)
    return env


def run(generator: Generator, check: bool) -> subprocess.CompletedProcess[str]:
    """Run one generator in the repository root; its output is captured (printed by the caller)."""
    command = [sys.executable, *generator.command, *(["--check"] if check else [])]
    return subprocess.run(
        command,
        cwd=ROOT,
        env=_environment({} if check else generator.env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def selected(cheap: bool, only: list[str] | None, check: bool) -> list[Generator]:
    """The generators to run, in order."""
    return [
        g for g in GENERATORS if (not check or g.checks) and not (cheap and g.heavy) and (not only or g.name in only)
    ]


def _describe(generator: Generator) -> str:
    mode = "--check" if generator.checks else generator.checked_by
    return f"{generator.name:20} {generator.outputs}  [{mode}{'; needs Keras' if generator.heavy else ''}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every stale output")
    parser.add_argument("--cheap", action="store_true", help="skip the generators that import Keras/TensorFlow")
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        choices=[g.name for g in GENERATORS],
        help="run only these generators (still in dependency order)",
    )
    parser.add_argument("--list", action="store_true", help="list the generators and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(_describe(g) for g in GENERATORS))
        return 0
    stale, failed = [], []
    for generator in selected(args.cheap, args.only, args.check):
        result = run(generator, args.check)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        if result.returncode == 0:
            print(f"regen: {generator.name}: {'up to date' if args.check else 'done'}")
        elif args.check and result.returncode == 1:
            stale.append(generator)
        else:
            failed.append(generator)
            if not args.check:
                break  # the generators after it may read what it failed to write
    for generator in stale:
        print(
            f"regen: {generator.name}: STALE: {generator.outputs} (run scripts/regen.py --only {generator.name})",
            file=sys.stderr,
        )
    for generator in failed:
        print(f"regen: {generator.name}: FAILED ({' '.join(generator.command)})", file=sys.stderr)
    return 1 if stale or failed else 0


if __name__ == "__main__":
    sys.exit(main())
