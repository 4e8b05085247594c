"""`netdsl layers [NAME] [--kind KIND]`: what a spec may name, with each entry's parameters."""

from __future__ import annotations

import argparse

from netdsl import api
from netdsl.cli.common import EXIT_OK


def run(args: argparse.Namespace) -> int:
    lines = api.layer_entry(args.name) if args.name else api.layer_listing(args.kind)
    print("\n".join(lines))
    return EXIT_OK
