"""`netdsl examples [NAME] [-o DIR]`: the example specs that ship with netdsl; NAME copies one out."""

from __future__ import annotations

import argparse

from netdsl.api import options
from netdsl.cli.common import EXIT_OK, add_command, add_options, print_failure
from netdsl.starter import StarterError, copy_example, examples


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = add_command(sub, "examples", summary="list the example specs; NAME copies one into the current folder",
                      description="List the example specs that ship with netdsl, each with its first comment "
                                  "line; with NAME, copy that example (and the files it imports) out.",
                      examples=["netdsl examples", "netdsl examples resnet50 -o specs/"])
    add_options(cmd, options.ExamplesOptions)
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.name is None:
            found = examples()
            width = max(len(name) for name in found)
            for name, about in found.items():
                print(f"{name:<{width}}  {about}")
            return EXIT_OK
        for path in copy_example(args.name, args.out):
            print(f"wrote {path}")
    except (StarterError, OSError) as exc:
        return print_failure("examples", str(getattr(exc, "strerror", None) or exc))
    return EXIT_OK
