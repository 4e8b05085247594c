"""What happens before a command runs: `import netdsl` loads nothing heavy, and a Ctrl-C while
the command line is still loading its modules stops it like a Ctrl-C anywhere else (exit code
130, no traceback) — CI once saw a Ctrl-C land in pydantic's import and print 40 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import netdsl

ROOT = Path(__file__).resolve().parents[2]
ENV_PATH = str(ROOT / "dsl")


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ENV_PATH},
    )


def test_import_netdsl_loads_none_of_its_rooms(tmp_path):
    code = (
        "import sys\nimport netdsl\n"
        "print(sorted(m for m in ('netdsl.api', 'pydantic', 'lark', 'keras', 'netdsl.deploy') if m in sys.modules))\n"
        "netdsl.parse\nprint('netdsl.api' in sys.modules, 'keras' in sys.modules)\n"
    )
    done = _python(code, tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "[]\nTrue False\n")


def test_every_public_name_is_there_and_listed():
    assert sorted(netdsl.__all__) == sorted(set(netdsl.__all__))
    for name in netdsl.__all__:
        assert getattr(netdsl, name) is not None, name
    assert set(netdsl.__all__) <= set(dir(netdsl))


def test_an_unknown_name_is_an_attribute_error():
    try:
        netdsl.biuld  # noqa: B018
    except AttributeError as exc:
        assert str(exc) == "module 'netdsl' has no attribute 'biuld'"
    else:
        raise AssertionError("netdsl.biuld exists")


def test_ctrl_c_while_the_command_line_loads_is_a_clean_stop(tmp_path):
    # The Ctrl-C is raised by the import of pydantic itself (a finder that answers for it), the
    # moment a real one would land in CI: deterministic, and through netdsl's real entry point.
    (tmp_path / "mlp.net").write_text("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n")
    code = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pydantic':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "from netdsl.cli import main\n"
        "sys.exit(main(['check', 'mlp.net']))\n"
    )
    done = _python(code, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_check_loads_its_own_command_and_not_numpy(tmp_path):
    """`netdsl check` imports the check's modules, not every command's: no NumPy (predictions), no preview
    server, no sweep records, no Keras; the other commands' modules load when they run."""
    (tmp_path / "mlp.net").write_text("model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n")
    code = (
        "import sys\n"
        "from netdsl.cli import main\n"
        "code = main(['check', 'mlp.net'])\n"
        "heavy = ('numpy', 'keras', 'netdsl.preview.server', 'netdsl.tuning', 'netdsl.cli.train', 'netdsl.cli.render')\n"
        "print(code, sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = _python(code, tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "mlp.net: no problems found\n0 []\n")


def test_a_public_type_of_a_room_check_leaves_out_is_there_when_asked_for():
    from netdsl import api
    from netdsl.training.run.predictions import Predictions
    from netdsl.tuning import SweepResult, TrialRecord

    assert (api.Predictions, api.SweepResult, api.TrialRecord) == (Predictions, SweepResult, TrialRecord)
    assert (netdsl.Predictions, netdsl.SweepResult) == (Predictions, SweepResult)
