"""The parser of every command and the dispatch: what `netdsl.cli.main` runs once it has loaded."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from netdsl.cli import (
    build,
    check,
    completion,
    decompile,
    evaluate,
    examples,
    export,
    fmt,
    init,
    layers,
    lsp,
    predict,
    preview,
    render,
    runs,
    sweep,
    train,
)
from netdsl.cli.about import VersionAction
from netdsl.cli.common import (
    EXIT_OK,
    EXIT_SPEC,
    EXIT_STOPPED,
    EXIT_USAGE,
    HelpFormatter,
    Parser,
    print_diagnostics,
    print_error,
    warning_line,
)
from netdsl.errors import RESOURCE_ERRORS, BackendError, SpecError, UsageError, out_of_resources
from netdsl.training.errors import DataWarning, TrainingError
from netdsl.training.run.signals import Stopped

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
        return print_error(exc, args.command)                  # that cannot load here: one line each
    except RESOURCE_ERRORS as exc:  # the last resort: netdsl.limits should stop such a spec first
        print_diagnostics([out_of_resources(exc, _spec_of(args))], None)
        return EXIT_SPEC
    except (KeyboardInterrupt, Stopped):  # a Ctrl-C between the places a run handles it itself
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
    parser = Parser(prog="netdsl", formatter_class=HelpFormatter,
                    description="Declarative model-builder: .net specs to Keras models and Graphviz diagrams.",
                    epilog="examples:\n  netdsl check specs/lightning_mlp.net\n  netdsl build specs/lightning_mlp.net\n"
                           "  netdsl COMMAND --help      (each command's options and defaults)")
    parser.add_argument("--version", action=VersionAction,
                        help="print the versions of netdsl, Python, Keras, its backends and Graphviz, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check.add_parser(sub)
    fmt.add_parser(sub)
    build.add_parsers(sub)
    render.add_parser(sub)
    layers.add_parser(sub)
    preview.add_parser(sub)
    decompile.add_parser(sub)
    export.add_parser(sub)
    lsp.add_parser(sub)
    train.add_parser(sub)
    sweep.add_parser(sub)
    runs.add_parser(sub)
    evaluate.add_parser(sub)
    predict.add_parser(sub)
    completion.add_parser(sub)
    init.add_parser(sub)
    examples.add_parser(sub)
    return parser
