"""The parser of every command and the dispatch: what `netdsl.cli.main` runs once it has loaded."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

from netdsl import api
from netdsl.api import options
from netdsl.cli.about import VersionAction
from netdsl.cli.common import (
    EXIT_OK,
    EXIT_SPEC,
    EXIT_STOPPED,
    EXIT_USAGE,
    HelpFormatter,
    Parser,
    add_command,
    add_options,
    print_diagnostics,
    print_error,
    warning_line,
)
from netdsl.errors import RESOURCE_ERRORS, BackendError, SpecError, UsageError, out_of_resources
from netdsl.training.errors import DataWarning, TrainingError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # `--processes` runs it again, N times
    args.parser = parser  # `completion` writes its script from it
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(args.command, warnings.showwarning)
            return args.run(args)
    except SpecError as exc:
        print_diagnostics(exc.diagnostics, exc.sources)
        return EXIT_SPEC
    except (TrainingError, UsageError, BackendError) as exc:  # bad data, a request that cannot work, a backend
        return print_error(exc, args.command)  # that cannot load here: one line each
    except RESOURCE_ERRORS as exc:  # the last resort: netdsl.limits should stop such a spec first
        print_diagnostics([out_of_resources(exc, _spec_of(args))], None)
        return EXIT_SPEC
    except (KeyboardInterrupt, api.Stopped):  # a Ctrl-C between the places a run handles it itself
        return EXIT_STOPPED
    except BrokenPipeError:
        return EXIT_OK


def _one_line_warnings(command: str, show: Any) -> Any:
    """netdsl's warnings about the user's data as `netdsl COMMAND: warning: ...` (one line); anyone else's
    as Python shows them."""

    def shown(message: Any, category: type, *rest: Any, **kwargs: Any) -> None:
        if issubclass(category, DataWarning):
            print(warning_line(command, str(message)), file=sys.stderr, flush=True)
        else:
            show(message, category, *rest, **kwargs)

    return shown


def _spec_of(args: argparse.Namespace) -> str:
    """The spec a command was working on, for a diagnostic that knows nothing more."""
    current = getattr(args, "current_spec", None)
    files = getattr(args, "files", None) or [getattr(args, "spec", None) or "netdsl"]
    return current or files[0]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="netdsl",
        formatter_class=HelpFormatter,
        description="Declarative model-builder: .net specs to Keras models and Graphviz diagrams.",
        epilog="examples:\n  netdsl check specs/lightning_mlp.net\n  netdsl build specs/lightning_mlp.net\n"
        "  netdsl COMMAND --help      (each command's options and defaults)",
    )
    parser.add_argument(
        "--version",
        action=VersionAction,
        help="print the versions of netdsl, Python, Keras, its backends and Graphviz, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in options.COMMANDS.items():  # each generated from its declaration (netdsl/options.py)
        cmd = add_command(
            sub, name, summary=command.summary, description=command.description, examples=list(command.examples)
        )
        add_options(cmd, command.options)
        cmd.set_defaults(run=_Run(*RUNS[name]))
    return parser


# What each command runs: a function of its module (`build` and `summary` share cli/build.py), imported
# when the command runs: `netdsl check` does not load the preview server, NumPy or the training room.
RUNS: dict[str, tuple[str, str]] = {
    "check": ("check", "run"),
    "fmt": ("fmt", "run"),
    "build": ("build", "run_build"),
    "summary": ("build", "run_summary"),
    "render": ("render", "run"),
    "layers": ("layers", "run"),
    "preview": ("preview", "run"),
    "decompile": ("decompile", "run"),
    "export": ("export", "run"),
    "lsp": ("lsp", "run"),
    "train": ("train", "run"),
    "sweep": ("sweep", "run"),
    "runs": ("runs", "run"),
    "evaluate": ("evaluate", "run"),
    "predict": ("predict", "run"),
    "completion": ("completion", "run"),
    "init": ("init", "run"),
    "examples": ("examples", "run"),
    "zoo": ("zoo", "run"),
}


class _Run:
    """A command's function, imported from its module of netdsl.cli (a fixed name of this table, never one
    from the command line) when the command runs."""

    def __init__(self, module: str, function: str) -> None:
        self.module, self.function = module, function

    def __call__(self, args: argparse.Namespace) -> int:
        run: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f"netdsl.cli.{self.module}"), self.function
        )
        return run(args)
