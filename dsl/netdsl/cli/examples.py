"""`netdsl examples [NAME] [-o DIR]`: the example specs that ship with netdsl; NAME copies one out."""

from __future__ import annotations

import argparse

from netdsl import api
from netdsl.cli.common import EXIT_OK, print_failure
from netdsl.errors import NetdslError


def run(args: argparse.Namespace) -> int:
    try:
        if args.name is None:
            found = api.example_specs()
            width = max(len(name) for name in found)
            for name, about in found.items():
                print(f"{name:<{width}}  {about}")
            return EXIT_OK
        for path in api.copy_example(args.name, args.out):
            print(f"wrote {path}")
    except (NetdslError, OSError) as exc:  # the starter's own error (StarterError) or the file system's
        return print_failure("examples", str(getattr(exc, "strerror", None) or exc))
    return EXIT_OK
