"""An export reads, picks and checks its spec once: the `CheckedModel` its source resolved is what the
compiler builds (no second pick by name, no second check), from the library and from `netdsl export`.

The counts come from the real export, verified in onnxruntime: the checker (`semantics.analysis._analyze`,
under every `analyze`) and the model picks (`syntax.loader.pick_model`, where the handle and `pick_models`
reach it) run as they would, each call recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import netdsl
from netdsl.cli import main
from netdsl.semantics import analysis
from netdsl.semantics import session as spec_session
from netdsl.syntax import loader

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "deploy" / "small.net"  # three models: `mlp` is picked by name


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """ "check" per run of the checker, "pick NAME" per model picked, in order."""
    seen: list[str] = []
    check = analysis._analyze

    def counted_check(program, backend, models, declarations, param_limit):  # type: ignore[no-untyped-def]
        seen.append("check")
        return check(program, backend, models, declarations, param_limit)

    def counting_pick(pick):  # type: ignore[no-untyped-def]
        return lambda program, name: seen.append(f"pick {name}") or pick(program, name)

    monkeypatch.setattr(analysis, "_analyze", counted_check)
    monkeypatch.setattr(spec_session, "pick_model", counting_pick(spec_session.pick_model))
    monkeypatch.setattr(loader, "pick_model", counting_pick(loader.pick_model))
    return seen


def test_the_library_exports_a_spec_checking_it_once(calls: list[str], tmp_path: Path) -> None:
    out = netdsl.export(str(SMALL), format="onnx", model="mlp", out=tmp_path / "mlp.onnx", seed=0)
    assert out.is_file()
    assert calls == ["pick mlp", "check"]  # the build replays the checked graph


def test_netdsl_export_checks_its_spec_once(
    calls: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["export", str(SMALL), "--model", "mlp", "--format", "onnx", "-o", str(tmp_path / "mlp.onnx")])
    assert code == 0, capsys.readouterr().err
    assert calls == ["pick mlp", "check"]
