"""`scripts/regen.py --check`: every generated file with a check mode is up to date.

Only the generators that import no Keras run here (`--cheap`); the registry's check is
tests/registry/test_registry.py's, and the outputs without a check mode are compared by the tests
that `scripts/regen.py --list` names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGEN = ROOT / "scripts" / "regen.py"


def _regen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REGEN), *args],
        cwd=ROOT.parent,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_cheap_generated_files_are_up_to_date():
    result = _regen("--check", "--cheap")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "regen: gallery: up to date"
    for name in ("parser-tables", "textmate", "gallery"):
        assert f"regen: {name}: up to date" in result.stdout


def test_a_stale_output_is_named_and_fails_the_check(tmp_path):
    # A generator whose check answers "stale" (exit 1): regen names its outputs and fails; the
    # generators' own comparisons are tested with them (syntax/test_parser_tables, highlight/test_textmate, test_way_in).
    script = tmp_path / "check_stale.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'scripts')!r})\n"
        "import regen\n"
        "regen.GENERATORS = (regen.Generator('textmate', ('-c', 'import sys; sys.exit(1)'), 'the grammar',"
        " checks=True),)\n"
        "sys.exit(regen.main(['--check']))\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, str(script)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert "regen: textmate: STALE: the grammar (run scripts/regen.py --only textmate)" in result.stderr


def test_every_generator_is_listed_with_its_outputs():
    result = _regen("--list")
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == [
        "parser-tables",
        "registry",
        "textmate",
        "error-fixtures",
        "data-error-data",
        "data-error-fixtures",
        "decompile-configs",
        "decompile-outputs",
        "render-goldens",
        "gallery",
    ]
