"""The library API (docs/api.md): one vocabulary over every function, each one documented."""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import pytest

import netdsl
from netdsl import api

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
SPEC = "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"
FUNCTIONS = [name for name in netdsl.__all__ if inspect.isfunction(getattr(netdsl, name))]
TAKE_A_SPEC = ["check", "format", "build", "build_all", "summary", "render", "train"]
TAKE_A_TRAINED_MODEL = ["evaluate", "predict", "decompile", "fit_kwargs"]


@pytest.mark.parametrize("name", netdsl.__all__)
def test_every_public_name_is_in_the_reference(name):
    assert f"`{name}" in REFERENCE, f"docs/api.md does not describe netdsl.{name}"


@pytest.mark.parametrize("name", netdsl.__all__)
def test_every_public_function_and_class_has_a_docstring(name):
    obj = getattr(netdsl, name)
    if inspect.isfunction(obj) or inspect.isclass(obj):
        own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        assert own and own.strip(), f"netdsl.{name} has no docstring"


def test_every_function_lives_in_the_api_module():
    assert {getattr(netdsl, name).__module__ for name in FUNCTIONS} == {"netdsl.api"}
    assert set(FUNCTIONS) <= set(api.__all__)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_one_positional_argument_then_keywords(name):
    params = list(inspect.signature(getattr(netdsl, name)).parameters.values())
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), name


@pytest.mark.parametrize("name", FUNCTIONS)
def test_no_any_in_public_signatures(name):
    signature = inspect.signature(getattr(netdsl, name))
    annotations = [str(p.annotation) for p in signature.parameters.values()] + [str(signature.return_annotation)]
    assert not [a for a in annotations if re.search(r"\bAny\b", a)], name
    assert inspect.Parameter.empty not in [p.annotation for p in signature.parameters.values()]


def test_the_vocabulary():
    def names(function: str) -> list[str]:
        return list(inspect.signature(getattr(netdsl, function)).parameters)

    for function in TAKE_A_SPEC:
        assert names(function)[:3] == ["spec", "text", "filename"], function
    for function in TAKE_A_TRAINED_MODEL:
        assert names(function)[0] == "trained", function
    for function in FUNCTIONS:  # `model` is a model's name wherever it appears
        if "model" in names(function):
            assert str(inspect.signature(getattr(netdsl, function)).parameters["model"].annotation) == "str | None"


def test_every_error_is_exported_and_a_netdsl_error():
    errors = [name for name in netdsl.__all__ if name.endswith("Error") or name.startswith("Dot")]
    assert sorted(errors) == sorted(
        [
            "NetdslError",
            "SpecError",
            "UsageError",
            "BackendError",
            "BuildError",
            "LayoutError",
            "RenderError",
            "DotNotFound",
            "DotFailed",
            "TrainingError",
            "DataError",
            "RunError",
            "ExportError",
            "LightningError",
            "ReportedError",
        ]
    )
    assert all(issubclass(getattr(netdsl, name), netdsl.NetdslError) for name in errors)
    assert issubclass(netdsl.VerifyFailed, netdsl.ExportError)
    # The one-line family, each named for its cause: an export's error is not a training error, nor data's.
    assert all(
        issubclass(getattr(netdsl, name), netdsl.ReportedError) for name in ("DataError", "RunError", "ExportError")
    )
    assert not issubclass(netdsl.ExportError, (netdsl.DataError, netdsl.RunError))
    assert netdsl.TrainingError is netdsl.ReportedError  # its old name, for one release
    from netdsl.deploy import MissingPackage
    from netdsl.training import UsageError as TrainingUsageError

    # One usage error for every room: training's name is the same class, the export's refusals are kinds of it.
    assert TrainingUsageError is netdsl.UsageError and issubclass(MissingPackage, netdsl.UsageError)
    assert (
        str(netdsl.UsageError("--split takes \x1b[31m", hint="give 0.8,0.2")) == "--split takes \\x1b[31m; give 0.8,0.2"
    )


def test_the_package_is_typed():
    assert (Path(netdsl.__file__).parent / "py.typed").is_file()


# ------------------------------------------------------------------ a spec: path, text or Program


def test_a_spec_as_path_text_or_program_checks_alike(tmp_path):
    path = tmp_path / "m.net"
    path.write_text(SPEC.replace("dense(2)", "dens(2)"))
    by_path = netdsl.check(path)
    assert [(d.line, d.col, d.text) for d in by_path] == [(3, 19, "unknown layer 'dens'; did you mean 'dense'?")]
    assert netdsl.check(str(path)) == by_path
    assert netdsl.check(text=path.read_text(), filename=str(path)) == by_path
    assert netdsl.check(netdsl.parse_file(path)) == by_path
    assert netdsl.check(text=SPEC) == []
    assert netdsl.check(text=SPEC.encode()) == []


def test_spec_text_given_as_a_path_is_refused_with_what_to_do():
    message = (
        "this looks like spec text, not the path of a .net file: pass it as text= "
        '(e.g. netdsl.check(text=source, filename="my.net"))'
    )
    for function in (
        netdsl.check,
        netdsl.format,
        netdsl.build,
        netdsl.build_all,
        netdsl.summary,
        netdsl.render,
        netdsl.train,
    ):
        with pytest.raises(netdsl.UsageError) as info:
            function(SPEC)
        assert str(info.value) == message, function.__name__


def test_a_spec_given_twice_or_not_at_all_is_refused(tmp_path):
    with pytest.raises(netdsl.UsageError, match="give the spec once"):
        netdsl.check(tmp_path / "m.net", text=SPEC)
    with pytest.raises(netdsl.UsageError, match="no spec given"):
        netdsl.render()
    with pytest.raises(netdsl.UsageError, match="filename= names spec text"):
        netdsl.check(tmp_path / "m.net", filename="x.net")


def test_the_old_text_spelling_still_works_with_a_warning():
    with pytest.warns(DeprecationWarning, match=r"netdsl.check\(text, filename=...\) is deprecated"):
        assert netdsl.check(SPEC, filename="t.net") == []
    with pytest.warns(DeprecationWarning, match="format"):
        assert netdsl.format("let  a=1", filename="a.net") == "let a = 1\n"


def test_format_reads_a_path_text_or_program(tmp_path):
    path = tmp_path / "a.net"
    path.write_text("let  a=1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert netdsl.format(path) == netdsl.format(text="let  a=1\n") == "let a = 1\n"
        assert netdsl.format(netdsl.parse_file(path)) == "let a = 1\n"


def test_render_takes_text_and_a_model_name():
    two = SPEC + SPEC.replace("model m", "model n").replace("dense(2)", "dense(3)")
    digraph = netdsl.render(text=two, filename="two.net", model="n", shapes=False)
    assert "units=3" in digraph.source
    with pytest.raises(TypeError):
        netdsl.render(text=two, filename="two.net", shapes=False, depth=0, **{"max_params": 3})
    with pytest.raises(TypeError):
        netdsl.build(netdsl.parse(two), "n")  # keyword-only: the model's name goes in model=


def test_the_cli_shows_a_usage_error_as_one_line(tmp_path, capsys):
    from netdsl.cli import main

    name = "model {x"  # a spec path that looks like text and names no file: still a path for the CLI
    assert main(["check", name]) == 1
    assert capsys.readouterr().err.startswith(f"{name}:1:1: error: ")


@pytest.mark.slow
def test_summary_is_what_summary_json_prints(capsys):
    import json

    from netdsl.cli import main

    spec = ROOT / "specs" / "siamese.net"
    assert main(["summary", str(spec), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert netdsl.summary(spec) == printed
    assert netdsl.summary(text=spec.read_text(), filename=str(spec), model="siamese") == printed
