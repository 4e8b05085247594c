"""`netdsl examples [NAME] [-o DIR]`: the example specs that ship with netdsl; NAME copies one out."""

from __future__ import annotations

import argparse
import sys

from netdsl.cli.common import EXIT_OK, EXIT_SPEC
from netdsl.starter import StarterError, copy_example, examples


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser("examples", help="list the example specs; NAME copies one into the current folder",
                         epilog="example: netdsl examples resnet50 && netdsl render resnet50.net --depth 1")
    cmd.add_argument("name", nargs="?", metavar="NAME", help="the example to copy (with the files it imports)")
    cmd.add_argument("-o", "--output", default=".", metavar="DIR", help="where to copy it (default: here)")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.name is None:
            found = examples()
            width = max(len(name) for name in found)
            for name, about in found.items():
                print(f"{name:<{width}}  {about}")
            return EXIT_OK
        for path in copy_example(args.name, args.output):
            print(f"wrote {path}")
    except (StarterError, OSError) as exc:
        print(f"netdsl examples: error: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return EXIT_SPEC
    return EXIT_OK
