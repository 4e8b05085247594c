"""`-D NAME=VALUE` and `defines={...}`: a file-level constant replaced before the check, on every
command that reads a spec; unknown names and wrong types are one-line diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.errors import SpecError
from netdsl.pipeline import model_graphs
from netdsl.preview.snapshot import make_snapshot
from netdsl.semantics.defines import apply_defines, parse_defines
from netdsl.semantics.values import SpecName, describe_value
from netdsl.training.errors import RunError

SPEC = """\
let width = 16
let lr = 1e-2
let act = relu
let tag = "base"
let sizes = [4, 2]

model m {
  input x: (6,)
  output y = x -> dense(width, activation=act) -> dense(sizes[0]) -> dense(3)
  train {
    optimizer = adam(learning_rate=lr)
    loss = sparse_categorical_crossentropy(from_logits=true)
    batch_size = 16
    epochs = 1
  }
}
"""


@pytest.fixture
def spec(tmp_path: Path) -> str:
    path = tmp_path / "m.net"
    path.write_text(SPEC)
    return str(path)


def params_of(program) -> int:
    graph = model_graphs(program, ["m"], shapes=True)["m"]
    return sum(node.params or 0 for node in graph.nodes)


def test_a_define_changes_the_model_as_editing_the_file_would(spec, tmp_path):
    program = apply_defines(netdsl.parse_file(spec), {"width": 32, "sizes": [8, 2]})
    edited = tmp_path / "edited.net"
    edited.write_text(SPEC.replace("let width = 16", "let width = 32").replace("[4, 2]", "[8, 2]"))
    assert params_of(program) == params_of(netdsl.parse_file(edited)) == (6 * 32 + 32) + (32 * 8 + 8) + (8 * 3 + 3)
    assert params_of(netdsl.parse_file(spec)) == (6 * 16 + 16) + (16 * 4 + 4) + (4 * 3 + 3)


def test_cli_values_are_spec_literals(spec):
    values = parse_defines(
        ["width=32", "lr=-3e-4", 'tag="a \\"b\\""', "act=gelu", "sizes=[1, 2]", "flag=true", "shape=(2, 3)"]
    )
    assert values == {
        "width": 32,
        "lr": -3e-4,
        "tag": 'a "b"',
        "act": "gelu",
        "sizes": [1, 2],
        "flag": True,
        "shape": (2, 3),
    }
    assert isinstance(values["act"], SpecName)
    # a bare name is a name for a constant holding one, a string for a string constant
    program = apply_defines(netdsl.parse_file(spec), parse_defines(["act=gelu", "tag=other", "lr=1"]))
    lets = {d.name: d.value for d in program.root_file.decls if hasattr(d, "value")}
    assert (lets["act"].kind, lets["act"].id) == ("name", "gelu")
    assert (lets["tag"].kind, lets["tag"].value) == ("string", "other")
    assert lets["lr"].value == 1.0 and isinstance(lets["lr"].value, float)  # an integer where a number is


@pytest.mark.parametrize(
    "value", [32, -3e-4, 1e-12, 'a "b" \\ c', SpecName("gelu"), [1, [2.5, "x"]], (2,), (2, 3), True, False, None]
)
def test_a_value_written_as_spec_text_reads_back_the_same(value):
    # how `netdsl sweep --workers K` hands each worker a trial's values: `-D NAME=TEXT`
    (back,) = parse_defines([f"v={describe_value(value, limit=None)}"]).values()
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("value", ["x\x1b]0:PWNED\x07\x1b[31mred", "two\nlines\tand a tab", ["\x1b[2J", "\u202e"]])
def test_control_characters_are_escaped_when_shown_and_kept_for_a_worker(value):
    shown = describe_value(value)
    assert shown.isprintable() and "\x1b" not in shown  # quoted in a diagnostic or a table
    # `--workers K` hands a worker its -D values as text: read back the same, newline and tab included
    (back,) = parse_defines([f"v={describe_value(value, limit=None, raw_controls=True)}"]).values()
    assert back == value


def test_a_string_value_is_shown_escaped():
    assert describe_value('x\x1b]0;T\x07\\ "q"\n') == '"x\\x1b]0;T\\x07\\\\ \\"q\\"\\n"'


def check(capsys, *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capsys.readouterr().err


def test_unknown_name_gets_a_did_you_mean(spec, capsys):
    assert check(capsys, spec, "-D", "widht=3") == (
        1,
        f"{spec}:1:1: error: -D widht: the spec has no constant 'widht'; did you mean 'width'?\n",
    )


def test_wrong_type_names_both_types_at_the_constant(spec, capsys):
    code, err = check(capsys, spec, "-D", 'width="wide"', "--define", "act=3")
    assert code == 1
    assert err == (
        f"{spec}:1:13: error: -D width: the constant is an integer, received a string 'wide'\n"
        "  let width = 16\n"
        "              ^^\n"
        f"{spec}:3:11: error: -D act: the constant is a name, received an integer 3\n"
        "  let act = relu\n"
        "            ^^^^\n"
        "2 errors\n"
    )


def test_a_value_that_is_not_a_literal_or_not_name_value(spec, capsys):
    assert check(capsys, spec, "-D", "width=2+3") == (
        1,
        f"{spec}:1:1: error: -D width: '2+3' is not a literal; values are integers, numbers, strings in quotes, "
        "true/false, none, names, or lists of them\n",
    )
    assert check(capsys, spec, "-D", "width") == (
        1,
        f"{spec}:1:1: error: -D takes NAME=VALUE, received 'width'; for example: -D width=128 -D lr=3e-4 "
        "-D 'act=\"gelu\"'\n",
    )


def test_an_error_the_new_value_causes_points_at_the_constant(spec, capsys):
    code, err = check(capsys, spec, "-D", "act=nothere")
    assert code == 1 and err.startswith(f"{spec}:3:11: error: unknown activation 'nothere'")


def test_library_check_render_and_preview_take_defines(spec):
    assert netdsl.check(spec, defines={"width": 8}) == []
    [diagnostic] = netdsl.check(spec, defines={"width": "x"})
    assert diagnostic.message == "-D width: the constant is an integer, received a string 'x'"
    [diagnostic] = netdsl.check(spec, defines={"width": None})
    assert diagnostic.message == "-D width: the constant is an integer, received none"  # once, not "none None"
    assert "units=12, activation=relu" in netdsl.render(spec, shapes=False, defines={"width": 12}).source
    snapshot = make_snapshot(spec, None, None, defines={"widht": 1})
    assert "the spec has no constant 'widht'" in snapshot.diagnostics


def test_build_summary_and_train_take_the_defines(spec, tmp_path, capsys):
    model = netdsl.build(spec, defines={"width": 5})
    assert model.count_params() == (6 * 5 + 5) + (5 * 4 + 4) + (4 * 3 + 3)
    assert main(["summary", spec, "--json", "-D", "width=5"]) == 0
    assert json.loads(capsys.readouterr().out)["m"]["params"] == model.count_params()
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 6)).astype("float32"), rng.integers(0, 3, 32)
    run = netdsl.train(spec, data=(x, y), seed=1, out=tmp_path / "runs", defines={"width": 5, "act": SpecName("gelu")})
    config = json.loads((run.dir / "config.json").read_text())
    assert config["defines"] == {"width": 5, "act": "gelu"}
    assert run.model.count_params() == model.count_params()
    with pytest.raises(RunError, match="the -D overrides width=6 differ from this run's width=5 act='gelu'"):
        netdsl.train(spec, data=(x, y), resume=run.dir, defines={"width": 6})
    with pytest.raises(SpecError):
        netdsl.train(spec, data=(x, y), out=tmp_path / "runs", defines={"nope": 1})
