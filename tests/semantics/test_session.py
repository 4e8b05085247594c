"""The one handle for a spec (`semantics/session.py`): read once, each model picked once, checked once."""

from __future__ import annotations

from pathlib import Path

import pytest

from netdsl.errors import SpecError
from netdsl.semantics import analysis
from netdsl.semantics.session import LoadedSpec

TWO_MODELS = """\
let lr = 0.1
model first {
  input x: (4,)
  output y = x -> dense(2)
  train { optimizer = adam; loss = mse }
}
sweep first { lr = choice(0.1, 0.01); objective = minimize(val_loss) }
model second {
  input x: (4,)
  output y = x -> dense(3)
}
"""


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[list[str] | None]:
    """The models each run of the checker expanded, in order (every caller of `analyze` goes through it)."""
    seen: list[list[str] | None] = []
    original = analysis._analyze

    def counted(program, backend, models, declarations, param_limit):  # type: ignore[no-untyped-def]
        seen.append(models)
        return original(program, backend, models, declarations, param_limit)

    monkeypatch.setattr(analysis, "_analyze", counted)
    return seen


def test_a_model_is_picked_now_and_checked_once_when_first_asked(tmp_path: Path, checks: list) -> None:
    spec = tmp_path / "two.net"
    spec.write_text(TWO_MODELS)
    model = LoadedSpec.of(str(spec)).model("first")
    assert (model.name, checks) == ("first", [])  # picked: nothing checked yet
    assert model.graph.output_names == ["y"]
    assert model.train is not None and model.train.loss is not None
    assert model.sweep is not None and [p.name for p in model.sweep.params] == ["lr"]
    assert LoadedSpec.of(str(spec)).model("second").sweep is None
    assert checks == [["first"], ["second"]]  # once per model, however often it is asked


def test_a_name_the_spec_lacks_is_the_pick_error_it_always_was(tmp_path: Path, checks: list) -> None:
    spec = tmp_path / "two.net"
    spec.write_text(TWO_MODELS)
    with pytest.raises(SpecError) as raised:
        LoadedSpec.of(str(spec)).model("frist")
    assert str(raised.value) == f"{spec}:1:1: error: no model named 'frist'; did you mean 'first'?"
    with pytest.raises(SpecError) as raised:
        LoadedSpec.of(str(spec)).model(None)
    assert str(raised.value) == (
        f"{spec}:1:1: error: the spec declares 2 models; pick one with --model NAME "
        "(model=NAME in the library); models: first, second"
    )
    assert checks == []


def test_errors_are_raised_with_every_diagnostic_and_the_check_never_raises(tmp_path: Path) -> None:
    spec = tmp_path / "bad.net"
    spec.write_text("model m {\n  input x: (4,)\n  output y = x -> dense(units)\n}\n")
    loaded = LoadedSpec.of(str(spec))
    model = loaded.model(None)
    assert [d.text for d in model.errors] == ["unknown name 'units'"]
    with pytest.raises(SpecError) as raised:
        model.graph  # noqa: B018
    assert raised.value.diagnostics == model.errors
    assert [d.text for d in loaded.check().diagnostics] == ["unknown name 'units'"]


def test_a_second_build_of_one_handle_gets_its_own_graphs(tmp_path: Path, checks: list) -> None:
    """A build writes Keras objects into the graphs it replays: the first build takes the handle's
    own check, a second one a fresh check (two builds never share a layer)."""
    spec = tmp_path / "two.net"
    spec.write_text(TWO_MODELS)
    models = LoadedSpec.of(str(spec)).models()
    assert models.names == ["first", "second"]
    first = models.to_build()
    assert first is models.analysis and checks == [["first", "second"]]
    second = models.to_build()
    assert second is not first and checks == [["first", "second"], ["first", "second"]]


def test_defines_are_applied_once_read(tmp_path: Path) -> None:
    spec = tmp_path / "wide.net"
    spec.write_text("let width = 2\nmodel m {\n  input x: (4,)\n  output y = x -> dense(width)\n}\n")
    graph = LoadedSpec.of(str(spec), defines={"width": 5}).model(None).graph
    assert graph.node_of(graph.outputs[0][1]).output_shapes == [(5,)]
