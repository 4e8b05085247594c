"""Every command's flags, as a user meets them, frozen (issue 29.2): the option set of `netdsl CMD --help`
(flags, dest, default, choices, metavar, type, group), each `--help` text and the completion script.
The parsers are generated from one declaration of each command's options (netdsl/options.py); a change
to what a user types or reads shows here first. `NETDSL_REGEN=1` rewrites the goldens on purpose."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from netdsl.cli.app import _parser
from netdsl.cli.completion import script

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
REGEN = os.environ.get("NETDSL_REGEN") == "1"


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _value(value: object) -> object:
    """A default or const as JSON can hold it (argparse.SUPPRESS and types by name)."""
    if value is argparse.SUPPRESS:
        return "==SUPPRESS=="
    if isinstance(value, type) or callable(value):  # int, or a parser's own type (cli/common._TYPES)
        return value.__name__
    if isinstance(value, tuple):
        return list(value)
    return value


def _group_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    for index, group in enumerate(parser._mutually_exclusive_groups):
        if action in group._group_actions:
            return f"exclusive {index}"
    for group in parser._action_groups:
        if action in group._group_actions:
            return group.title or ""
    return ""


def option_set(parser: argparse.ArgumentParser) -> list[dict[str, object]]:
    """What a user can type and what each choice gives: one entry per argparse action, in order."""
    return [
        {
            "flags": list(action.option_strings),
            "dest": action.dest,
            "action": type(action).__name__,
            "default": _value(action.default),
            "const": _value(action.const),
            "nargs": action.nargs,
            "choices": list(action.choices) if action.choices is not None else None,
            "metavar": action.metavar,
            "type": _value(action.type),
            "required": action.required,
            "shown": action.help is not argparse.SUPPRESS,
            "group": _group_of(parser, action),
        }
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
    ]


def _frozen(name: str, found: str) -> str:
    path = GOLDEN / name
    if REGEN:
        path.write_text(found, encoding="utf-8")
    return path.read_text(encoding="utf-8")


PARSER = _parser()
COMMANDS = sorted(_commands(PARSER))


def test_the_commands_are_the_frozen_ones():
    assert _frozen("commands.json", json.dumps(COMMANDS, indent=1) + "\n") == json.dumps(COMMANDS, indent=1) + "\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_the_option_set_of_each_command_is_unchanged(command):
    found = json.dumps(option_set(_commands(PARSER)[command]), indent=1) + "\n"
    assert found == _frozen(f"{command}.options.json", found)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_each_help_text_is_unchanged(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to the terminal's width
    parser = _commands(_parser())[command] if command else _parser()
    found = parser.format_help()
    assert found == _frozen(f"{command or 'netdsl'}.help.txt", found)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_completion_script_is_unchanged(shell):
    found = script(_parser(), shell)
    assert found == _frozen(f"completion.{shell}", found)
