"""The `netdsl` command line: one module per command, each with `add_parser` and `run`.

Exit codes: 0 clean, 1 spec errors (diagnostics printed), 2 usage errors.
`check`, `fmt`, `layers` and `render --no-shapes` never import TensorFlow.
"""

from __future__ import annotations

import argparse
import sys

from netdsl.cli import build, check, fmt, layers, render
from netdsl.cli.common import EXIT_OK, EXIT_SPEC, EXIT_USAGE, print_diagnostics
from netdsl.errors import RESOURCE_ERRORS, SpecError, out_of_resources
from netdsl.version import __version__

__all__ = ["main", "print_diagnostics"]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(args)
    except SpecError as exc:
        print_diagnostics(exc.diagnostics, exc.sources)
        return EXIT_SPEC
    except RESOURCE_ERRORS as exc:  # the last resort: netdsl.limits should stop such a spec first
        print_diagnostics([out_of_resources(exc, _spec_of(args))], None)
        return EXIT_SPEC
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _spec_of(args: argparse.Namespace) -> str:
    """The spec a command was working on, for a diagnostic that knows nothing more."""
    current = getattr(args, "current_spec", None)
    files = getattr(args, "files", None) or [getattr(args, "spec", None) or "netdsl"]
    return current or files[0]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="netdsl", description="Declarative model-builder: .net specs to Keras "
                                                                "models and Graphviz diagrams.")
    parser.add_argument("--version", action="version", version=f"netdsl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check.add_parser(sub)
    fmt.add_parser(sub)
    build.add_parsers(sub)
    render.add_parser(sub)
    layers.add_parser(sub)
    return parser
