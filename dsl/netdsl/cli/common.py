"""What every command shares: its parser (help, defaults, did-you-mean), exit codes, printing
diagnostics, the shared flags, loading plugins."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from netdsl.errors import (
    BackendError,
    Diagnostic,
    FileRefused,
    Sources,
    SpecError,
    UsageError,
    did_you_mean,
    printable,
    render_all,
)
from netdsl.training.data.request import DataRequest, check_columns, parse_split
from netdsl.training.errors import TrainingError
from netdsl.training.run.signals import EXIT_STOPPED as EXIT_STOPPED  # 130: a run stopped, resumable

EXIT_OK, EXIT_SPEC, EXIT_USAGE = 0, 1, 2


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
            lines.append(indent + line if keep else textwrap.fill(line, width, initial_indent=indent,
                                                                     subsequent_indent=indent))
        return "\n".join(lines)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or "default:" in text or not action.option_strings
                or default in (None, False, [], argparse.SUPPRESS)):
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
        options = [o for action in self._actions for o in action.option_strings if o.startswith("--")
                   and action.help is not argparse.SUPPRESS]
        return did_you_mean(typed.split("=", 1)[0], options)

    def _command_parser(self, parsed: argparse.Namespace) -> Parser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                found = action.choices.get(getattr(parsed, "command", None) or "")
                if isinstance(found, Parser):
                    return found
        return self


def add_command(sub: argparse._SubParsersAction, name: str, *, summary: str, description: str,
                examples: list[str]) -> argparse.ArgumentParser:
    """A command's parser: `summary` in `netdsl --help`, the description and examples in `netdsl NAME --help`."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    return sub.add_parser(name, help=summary, description=description, epilog=epilog, formatter_class=HelpFormatter)


def add_alias(parser: argparse.ArgumentParser, *flags: str, dest: str, **kwargs: Any) -> None:
    """An earlier spelling of a flag, still accepted and not shown in --help (CHANGELOG lists them)."""
    parser.add_argument(*flags, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def add_checkpoint(parser: argparse.ArgumentParser) -> None:
    """`--checkpoint best|last`: which of a run folder's two sets of weights (training/run/runs.CHECKPOINTS)."""
    parser.add_argument("--checkpoint", choices=("best", "last"), default=None,
                        help="a run folder's best epoch (best.keras) or its last (model.keras); default: best "
                             "when the run had validation data, else last")


def print_weights(trained: Any, checkpoint: str | None) -> None:
    """Which weights of a run folder the command uses, one line on stderr (nothing for a file): the line
    and the file are `RunFolder.weights`', the one choice every command reading a run makes."""
    from netdsl.training.run.runs import RunFolder, is_run_folder

    if not is_run_folder(trained):
        return
    print(printable(RunFolder.existing(trained).weights(checkpoint).line), file=sys.stderr, flush=True)


def add_spec(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="the .net spec file")


def add_model(parser: argparse.ArgumentParser, default: str = "every model of the spec") -> None:
    parser.add_argument("--model", metavar="NAME", help=f"the model of the spec to use (default: {default})")


def add_json(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON (for scripts and editors)")


def add_include(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="a further folder imports may read from (repeatable; default: only the spec's folder)")


def add_define(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE", dest="define",
                        help="replace a file-level constant of the spec: -D width=128 (repeatable)")


def load_spec(path: str, args: argparse.Namespace) -> Any:
    """The spec at `path` with the imports and `-D` overrides its command was given (a Program)."""
    from netdsl import pipeline
    from netdsl.semantics.defines import parse_defines

    defines = parse_defines(args.define, path)
    return pipeline.load(pipeline.TypedPath(path), include=args.include, defines=defines)


def add_backend(parser: argparse.ArgumentParser) -> None:
    from netdsl.backend import profiles  # the table alone (pure Python): the parser loads no backend

    others = [p for p in profiles.PROFILES.values() if p.name != profiles.DEFAULT]
    extras = ", ".join(f"{p.name} {'needs ' if i == 0 else ''}netdsl[{p.extra}]" for i, p in enumerate(others))
    parser.add_argument("--backend", choices=profiles.NAMES, default=None,
                        help=f"the Keras backend (default: KERAS_BACKEND, else {profiles.DEFAULT}); {extras}")


# ------------------------------------------------------------------ data flags (train, sweep)

DATA_HELP = {
    "--data": "one source (.npz, .csv, .tfrecord, image folder), split by --split",
    "--train": "the training source (with --val, --test)",
    "--split": "train,validation[,test] fractions of --data (default: 0.8,0.1,0.1)",
    "--val": "the validation source (with --train)",
    "--test": "the test source, scored once at the end (with --train)",
}


def add_data_flags(parser: argparse.ArgumentParser, helps: Mapping[str, str] | None = None) -> None:
    """`--data SRC [--split A,B[,C]]` or `--train SRC [--val SRC] [--test SRC]`, and `--targets`;
    `helps` words a flag's help for one command."""
    text = {**DATA_HELP, **(helps or {})}
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--data", metavar="SRC", help=text["--data"])
    source.add_argument("--train", metavar="SRC", help=text["--train"])
    parser.add_argument("--split", metavar="A,B[,C]", help=text["--split"])
    parser.add_argument("--val", metavar="SRC", help=text["--val"])
    parser.add_argument("--test", metavar="SRC", help=text["--test"])
    add_targets(parser)
    parser.add_argument("--features", metavar="COL,...",
                        help="a CSV file's columns that form the input, in this order (default: every numeric "
                             "column that holds no targets); recorded in the run folder")
    parser.add_argument("--drop", metavar="COL,...", help="CSV columns left out of the input (an id, a row number)")


def check_data_flags(args: argparse.Namespace) -> None:
    """The data flags that only go together; UsageError for a pair that does not."""
    if (args.val or args.test) and not args.train:
        raise UsageError("--val and --test go with --train (with --data, --split cuts the data)")
    if args.split and not args.data:
        raise UsageError("--split cuts --data; with --train, give --val and --test")


def data_request(args: argparse.Namespace, own: Callable[[Any], Any] = lambda path: path) -> DataRequest:
    """The data flags as a DataRequest; `own` turns each path into this process's own file."""
    features, drop = check_columns(args.features, args.drop, ("--features", "--drop"))
    return DataRequest(data=own(args.data), train=own(args.train), val=own(args.val), test=own(args.test),
                       split=parse_split(args.split) if args.split else None, targets=parse_targets(args.targets),
                       features=features, drop=drop)


def add_targets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--targets", action="append", default=[], metavar="OUT=COLUMN",
                        help="the CSV column holding an output's targets (repeatable)")


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


def add_device_flags(parser: argparse.ArgumentParser) -> None:
    """Where a command runs in this process: --backend, --devices (training/scale/processes.py reads them)."""
    add_backend(parser)
    parser.add_argument("--devices", type=int, metavar="N",
                        help="train on N devices of this process (GPUs, or the CPU split in N)")


def add_job_flags(parser: argparse.ArgumentParser) -> None:
    """The processes of a job: --processes, or --coordinator/--num-processes/--process-id."""
    job = parser.add_argument_group("several processes (JAX)")
    job.add_argument("--processes", type=int, metavar="N", help="start N processes of one job on this machine")
    job.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's address and a free port")
    job.add_argument("--num-processes", type=int, metavar="N", help="the number of processes of the job")
    job.add_argument("--process-id", type=int, metavar="I", help="this process's number, 0 to N-1")


def add_plugin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="a Python module that registers layers or activations (repeatable)")


def load_plugins(modules: list[str], spec: str) -> None:
    """Load the installed plugins (the `netdsl.layers` entry points) and the `--plugin` modules.

    A plugin that cannot be imported, or that registers a name it may not take,
    is a one-line error about `spec` (exit 1), whatever the command.
    """
    from netdsl.backend.runtime import muted_stderr  # imports nothing heavy
    from netdsl.registry.plugins import load_entry_points
    from netdsl.registry.plugins import load_plugins as load_modules

    for what, load in [("installed plugins", load_entry_points)] + [
            (f"plugin '{module}'", lambda module=module: load_modules([module])) for module in modules]:
        try:
            with muted_stderr():  # a plugin imports Keras: TensorFlow's start-up lines are not ours to print
                load()
        except Exception as exc:  # a missing module, a plugin's own error, or a name refused
            message = str(exc).splitlines()[0] if str(exc) else ""
            raise SpecError(Diagnostic.for_file(spec, f"cannot load {what}: {type(exc).__name__}: {message}")) from None
