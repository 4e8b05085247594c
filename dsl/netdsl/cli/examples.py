"""`netdsl examples [NAME] [-o DIR]`: the example specs that ship with netdsl; NAME copies one out."""

from __future__ import annotations

import argparse

from netdsl.cli.common import EXIT_OK, print_failure
from netdsl.starter import StarterError, copy_example, examples


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
