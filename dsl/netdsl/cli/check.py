"""`netdsl check SPEC... [--format json]`: every diagnostic of each spec, without TensorFlow."""

from __future__ import annotations

import argparse
import json

from netdsl.cli.common import (
    EXIT_OK,
    EXIT_SPEC,
    add_define,
    add_include,
    add_plugin,
    load_plugins,
    load_spec,
    print_diagnostics,
)
from netdsl.errors import Diagnostic, Sources, SpecError
from netdsl.semantics.analysis import analyze


def add_parser(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser("check", help="check specs (fast; no TensorFlow)")
    check.add_argument("files", nargs="+", metavar="SPEC")
    check.add_argument("--format", choices=("text", "json"), default="text")
    add_plugin(check)
    add_include(check)
    add_define(check)
    check.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin, args.files[0])
    all_diagnostics: list[Diagnostic] = []
    sources = Sources()
    for path in args.files:
        args.current_spec = path  # for the last-resort diagnostic of cli.main
        try:
            program = load_spec(path, args)
        except SpecError as exc:
            all_diagnostics.extend(exc.diagnostics)
            sources.update(exc.sources)
            continue
        sources.update(program.sources())
        all_diagnostics.extend(analyze(program).diagnostics)
    if args.format == "json":
        print(json.dumps([d.model_dump() for d in all_diagnostics], indent=2))
    else:
        print_diagnostics(all_diagnostics, sources)
    return EXIT_SPEC if any(d.severity == "error" for d in all_diagnostics) else EXIT_OK
