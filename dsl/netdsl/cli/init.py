"""`netdsl init [DIR]`: a starter spec and a tiny dataset that trains in seconds, and what to run next."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from netdsl import api
from netdsl.cli.common import EXIT_OK, print_failure
from netdsl.errors import NetdslError


def run(args: argparse.Namespace) -> int:
    try:
        written = api.write_starter(args.folder)
    except (NetdslError, OSError) as exc:  # the starter's own error (StarterError) or the file system's
        return print_failure("init", str(getattr(exc, "strerror", None) or exc))
    for path in written:
        print(f"wrote {path}")
    print("next:")
    if Path(args.folder) != Path("."):
        print(f"  cd {shlex.quote(args.folder)}")
    for command in (
        "netdsl check digits.net",
        "netdsl render digits.net -o digits.svg",
        "netdsl train digits.net --data digits.npz",
        "netdsl evaluate runs/digits-1",
    ):
        print(f"  {command}")
    return EXIT_OK
