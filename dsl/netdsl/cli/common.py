"""What every command shares: its parser (help, defaults, did-you-mean), exit codes, printing
diagnostics, the shared flags, loading plugins."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from netdsl import api
from netdsl.api import options
from netdsl.errors import (
    BackendError,
    Diagnostic,
    FileRefused,
    Sources,
    UsageError,
    did_you_mean,
    printable,
    render_all,
)
from netdsl.training.errors import TrainingError

EXIT_OK, EXIT_SPEC, EXIT_USAGE = 0, 1, 2
EXIT_STOPPED = api.EXIT_STOPPED  # 130: a run stopped, resumable


def print_diagnostics(diagnostics: list[Diagnostic], sources: Sources | None, stream: Any = None) -> None:
    stream = stream or sys.stderr
    if diagnostics:
        print(render_all(diagnostics, sources), file=stream)
        errors = sum(1 for d in diagnostics if d.severity == "error")
        if errors > 1:
            print(f"{errors} errors", file=stream)


def print_error(exc: TrainingError | UsageError | BackendError, command: str) -> int:
    """A command's one-line error; its exit code. An error in a file names it
    (`train.csv:7:3: error: ...`); any other starts as argparse's own do
    (`netdsl train: error: ...`), so every command's errors have one shape.

    A run that failed after its folder was made says where that folder is.
    """
    if isinstance(exc, TrainingError):
        line = exc.text if exc.file is not None else f"netdsl {command}: {exc.text}"
    elif isinstance(exc, FileRefused):  # a file's own error names the file, as a data file's does
        line = f"{printable(exc.file)}: error: {exc}"
    else:  # a usage error's str() is escaped already; a backend's message is netdsl's own
        line = error_line(command, str(exc))
    print(line, file=sys.stderr)
    if exc.run_dir is not None:
        print(f"run folder: {printable(exc.run_dir)} (status: failed)", file=sys.stderr)
    return exc.exit_code if isinstance(exc, (TrainingError, UsageError)) else EXIT_USAGE


def error_line(command: str, message: str) -> str:
    """`netdsl COMMAND: error: MESSAGE`, the message escaped: the shape of every command's one-line error."""
    return f"netdsl {command}: error: {printable(message)}"


def warning_line(command: str, message: str) -> str:
    """`netdsl COMMAND: warning: MESSAGE`, escaped: what a command found wanting and went on despite."""
    return f"netdsl {command}: warning: {printable(message)}"


def print_failure(command: str, message: str) -> int:
    """A command that ran and found the user's input wanting (not a usage error): its one line on
    stderr, in the shape of every other error; exit 1."""
    print(error_line(command, message), file=sys.stderr)
    return EXIT_SPEC


# ------------------------------------------------------------------ parsers


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped, example lines (indented) kept as written, and "(default: X)"
    after an option's help where X says something."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            keep = line.startswith("  ") or not line.strip()
            lines.append(
                indent + line if keep else textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)
            )
        return "\n".join(lines)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default:" in text
            or not action.option_strings
            or default in (None, False, [], argparse.SUPPRESS)
        ):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse with a did-you-mean for a mistyped command, option or choice."""

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            hint = did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
            message += f"; {hint}" if hint else ""
        super().error(message)

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(parsed)
            hint = next((h for h in (command.suggest_option(x) for x in extras) if h), None)
            command.error(f"unrecognized arguments: {' '.join(extras)}" + (f"; {hint}" if hint else ""))
        return parsed

    def suggest_option(self, typed: str) -> str | None:
        if not typed.startswith("--"):
            return None
        options = [
            o
            for action in self._actions
            for o in action.option_strings
            if o.startswith("--") and action.help is not argparse.SUPPRESS
        ]
        return did_you_mean(typed.split("=", 1)[0], options)

    def _command_parser(self, parsed: argparse.Namespace) -> Parser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                found = action.choices.get(getattr(parsed, "command", None) or "")
                if isinstance(found, Parser):
                    return found
        return self


def add_command(
    sub: argparse._SubParsersAction, name: str, *, summary: str, description: str, examples: list[str]
) -> argparse.ArgumentParser:
    """A command's parser: `summary` in `netdsl --help`, the description and examples in `netdsl NAME --help`."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    return sub.add_parser(name, help=summary, description=description, epilog=epilog, formatter_class=HelpFormatter)


def add_options(parser: argparse.ArgumentParser, declaration: type) -> None:
    """The arguments of a command, generated from its declaration (netdsl/options.py), in field order."""
    groups: dict[str, Any] = {}
    for declared in dataclasses.fields(declaration):
        flag: options.Flag = declared.metadata[options.FLAG]
        target = (
            parser
            if flag.group is None
            else groups.get(flag.group)
            or groups.setdefault(
                flag.group,
                parser.add_mutually_exclusive_group()
                if flag.group == "exclusive"
                else parser.add_argument_group(flag.group),
            )
        )
        default: Any = declared.default if flag.cli_default is options.SAME else flag.cli_default
        kind = _TYPES.get(flag.type, flag.type)
        how: dict[str, Any] = _given(
            metavar=flag.metavar,
            type=kind,
            choices=flag.choices,
            nargs=flag.nargs,
            action=_ACTIONS.get(flag.action, flag.action),
            required=flag.required or None,
        )
        shown = argparse.SUPPRESS if flag.hidden else flag.help
        if flag.flags:
            target.add_argument(*flag.flags, dest=declared.name, default=default, help=shown, **how)
        else:
            target.add_argument(declared.name, help=shown, **how, **({} if default is None else {"default": default}))
        for alias in flag.aliases:
            add_alias(
                parser,
                *alias.flags,
                dest=alias.dest or declared.name,
                **_given(
                    action=alias.action,
                    const=alias.const,
                    type=alias.type,
                    metavar=alias.metavar,
                    choices=alias.choices,
                ),
            )


_ACTIONS: dict[Any, Any] = {"BooleanOptionalAction": argparse.BooleanOptionalAction}


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, received {printable(text)}")
    return value


def _memory(text: str) -> int:
    try:
        return api.memory_bytes(text) or 0
    except UsageError:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 12GiB or 800MB, received {printable(text)}"
        ) from None


# The argument types a declaration names (options.py is pure data: it names them, the parser has them).
_TYPES: dict[Any, Any] = {"positive": _positive, "memory": _memory}


def _given(**kwargs: Any) -> dict[str, Any]:
    """The keywords that say something (argparse refuses a metavar for a store_true flag)."""
    return {key: value for key, value in kwargs.items() if value is not None}


def add_alias(parser: argparse.ArgumentParser, *flags: str, dest: str, **kwargs: Any) -> None:
    """An earlier spelling of a flag, still accepted and not shown in --help (CHANGELOG lists them)."""
    parser.add_argument(*flags, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def print_weights(line: str | None) -> None:
    """Which weights of a run folder the command uses, one line on stderr (nothing for a file): the line
    and the file are `RunFolder.weights`', the one choice every command reading a run makes."""
    if line is not None:
        print(printable(line), file=sys.stderr, flush=True)


def load_spec(path: str, args: argparse.Namespace) -> Any:
    """The spec at `path` with the imports and `-D` overrides its command was given (a Program)."""
    return api.load_spec(path, include=args.include, defines=api.parse_defines(args.defines, path))


# ------------------------------------------------------------------ data flags (train, sweep)


def check_data_flags(args: argparse.Namespace) -> None:
    """The data flags that only go together; UsageError for a pair that does not."""
    if (args.val or args.test) and not args.train:
        raise UsageError("--val and --test go with --train (with --data, --split cuts the data)")
    if args.split and not args.data:
        raise UsageError("--split cuts --data; with --train, give --val and --test")


def data_keywords(args: argparse.Namespace, own: Callable[[Any], Any] = lambda path: path) -> dict[str, Any]:
    """The data flags as netdsl.train's (and .sweep's) keywords; `own` turns each path into this process's
    own file. The flags' own errors name the flags (`--features`, not `features=`)."""
    features, drop = api.column_flags(args.features, args.drop)
    return dict(
        data=own(args.data),
        split=api.split_flag(args.split) if args.split else None,
        train=own(args.train),
        val=own(args.val),
        test=own(args.test),
        targets=parse_targets(args.targets),
        features=features,
        drop=drop,
    )


def parse_targets(items: list[str]) -> dict[str, str]:
    """`--targets probs=label` (repeatable, or comma-separated) as {output: column}."""
    targets = {}
    for item in items:
        for pair in item.split(","):
            output, sep, column = pair.partition("=")
            if not sep or not output.strip() or not column.strip():
                raise UsageError(f"--targets takes OUTPUT=COLUMN pairs, like probs=label; received {pair!r}")
            targets[output.strip()] = column.strip()
    return targets


def load_plugins(modules: list[str], spec: str) -> None:
    """The installed plugins and the `--plugin` modules (`netdsl.api.load_plugins`): a plugin that cannot
    load is a one-line error about `spec` (exit 1), whatever the command."""
    api.load_plugins(modules, spec=spec)
