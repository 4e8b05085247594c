"""Each command's options are declared once (netdsl/options.py, issue 29.2): its parser is generated
from the declaration, and the library function of the same name takes the same keywords, with the
same defaults. A new option is one field there and one keyword in netdsl/api.py, or this test fails."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from typing import get_args

import pytest

from netdsl import api, options
from netdsl.cli.app import _parser

# The library's keywords that are no flag, each with why.
LIBRARY_ONLY = {
    "check": {"text": "spec text instead of a path", "filename": "the name spec text is shown by"},
    "format": {"text": "spec text instead of a path", "filename": "the name spec text is shown by"},
    "build": {"text": "spec text", "filename": "its name"},
    "summary": {
        "text": "spec text",
        "filename": "its name",
        "param_limit": "netdsl summary counts parameters and refuses none (build's --param-limit)",
    },
    "render": {"text": "spec text", "filename": "its name"},
    "decompile": {},
    "export": {"last": "the CLI's --last, a hidden earlier spelling of --checkpoint last"},
    "train": {
        "text": "spec text",
        "filename": "its name",
        "callbacks": "Keras callback objects",
        "on_start": "told the run folder (the CLI prints it)",
    },
    "sweep": {"echo": "the CLI always echoes each trial's line"},
    "evaluate": {},
    "predict": {},
}
# The command of each library function (the same name but for `format`, which is `netdsl fmt`).
COMMAND_OF = {"format": "fmt"}
PARSER = _parser()
COMMANDS = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices


def _keywords(declaration: type) -> dict[str, dataclasses.Field]:
    """The library keyword of each field that has one."""
    found = {}
    for declared in dataclasses.fields(declaration):
        flag = declared.metadata[options.FLAG]
        if not flag.cli_only:
            found[flag.keyword or declared.name] = declared
    return found


@pytest.mark.parametrize("function", sorted(LIBRARY_ONLY))
def test_the_library_takes_the_keywords_its_command_declares(function):
    declared = _keywords(options.COMMAND_OPTIONS[COMMAND_OF.get(function, function)])
    parameters = inspect.signature(getattr(api, function)).parameters
    assert sorted(parameters) == sorted({*declared, *LIBRARY_ONLY[function]})


@pytest.mark.parametrize("function", sorted(LIBRARY_ONLY))
def test_a_keyword_and_its_flag_have_one_default(function):
    declared = _keywords(options.COMMAND_OPTIONS[COMMAND_OF.get(function, function)])
    parameters = inspect.signature(getattr(api, function)).parameters
    differ = {
        name: (field.default, parameters[name].default)
        for name, field in declared.items()
        if name == field.name
        and parameters[name].default is not inspect.Parameter.empty
        and field.default != parameters[name].default
    }
    assert not differ, differ


def test_every_command_is_declared_and_generated_from_its_declaration():
    assert set(options.COMMAND_OPTIONS) == set(COMMANDS)
    for name, parser in COMMANDS.items():
        dests = [
            a.dest
            for a in parser._actions
            if a.option_strings != ["-h", "--help"] and a.default is not argparse.SUPPRESS
        ]
        assert dests == [f.name for f in dataclasses.fields(options.COMMAND_OPTIONS[name])], name


def test_a_flags_library_default_is_its_commands_unless_declared_otherwise():
    parser = COMMANDS["train"]
    progress = next(a for a in parser._actions if a.dest == "progress")
    assert (progress.default, options.TrainOptions().progress) == ("auto", "none")


def test_the_name_lists_are_their_rooms():
    from netdsl import diagram, registry
    from netdsl.backend import profiles
    from netdsl.deploy import formats
    from netdsl.training.run import runs, settings

    assert options.BACKENDS == profiles.NAMES
    assert options.PROGRESS == settings.PROGRESS == get_args(api.Progress)
    assert options.IMAGE_FORMATS == diagram.FORMATS
    assert list(options.EXPORT_FORMATS) == list(formats.FORMATS) == list(get_args(api.ExportFormat))
    assert options.REGISTRY_KINDS == registry.KINDS
    assert options.CHECKPOINTS == tuple(runs.CHECKPOINTS) == get_args(api.Checkpoint)
