"""`netdsl zoo list|show NAME|fetch NAME`: the keras.applications backbones netdsl knows, and their
published ImageNet weights, fetched once into Keras' cache and checked by the hash Keras pins."""

from __future__ import annotations

import argparse
import sys

from netdsl import api
from netdsl.cli.common import EXIT_OK, print_failure
from netdsl.errors import NetdslError


def run(args: argparse.Namespace) -> int:
    if args.action != "list" and args.name is None:
        return print_failure("zoo", f"`netdsl zoo {args.action}` needs a NAME; `netdsl zoo list` lists them")
    try:
        if args.action == "list":
            lines = api.zoo_listing()
        elif args.action == "show":
            lines = api.zoo_description(args.name)
        else:
            lines = [api.zoo_fetch(args.name, include_top=args.top, source=args.source, progress=sys.stderr)]
    except NetdslError as exc:
        return print_failure("zoo", str(exc))
    for line in lines:
        print(line)
    return EXIT_OK
