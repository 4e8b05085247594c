"""`netdsl check SPEC... [--json]`: every diagnostic of each spec, without TensorFlow."""

from __future__ import annotations

import argparse
import json

from netdsl import api, pipeline
from netdsl.api import options
from netdsl.cli.common import EXIT_OK, EXIT_SPEC, add_command, add_options, load_plugins, print_diagnostics
from netdsl.errors import Diagnostic, Sources, SpecError


def add_parser(sub: argparse._SubParsersAction) -> None:
    check = add_command(sub, "check", summary="check specs for errors (fast; no TensorFlow)",
                        description="Parse and check each spec, and every file it imports: every error at "
                                    "file:line:col with the source line and a did-you-mean. Exit 0 when clean, "
                                    "1 when a spec has errors.",
                        examples=["netdsl check specs/lightning_mlp.net",
                                  "netdsl check specs/*.net --json     # the diagnostics as a JSON list"])
    add_options(check, options.CheckOptions)
    check.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    load_plugins(args.plugin, args.files[0])
    all_diagnostics: list[Diagnostic] = []
    sources = Sources()
    for path in args.files:
        args.current_spec = path  # for the last-resort diagnostic of cli.main
        try:
            defines = api.parse_defines(args.defines, path)
        except SpecError as exc:  # a -D that is no NAME=VALUE
            all_diagnostics.extend(exc.diagnostics)
            continue
        checked = pipeline.check(pipeline.TypedPath(path), include=args.include, defines=defines)
        all_diagnostics.extend(checked.diagnostics)
        sources.update(checked.sources)
    errors = sum(1 for d in all_diagnostics if d.severity == "error")
    if args.json or getattr(args, "format", "text") == "json":
        print(json.dumps([d.model_dump() for d in all_diagnostics], indent=2))
    else:
        print_diagnostics(all_diagnostics, sources)
        if not errors:
            print(_all_clear(args.files, len(all_diagnostics)))
    return EXIT_SPEC if errors else EXIT_OK


def _all_clear(files: list[str], warnings: int) -> str:
    """The one line a clean check prints (as ruff's "All checks passed!")."""
    what = files[0] if len(files) == 1 else f"{len(files)} specs"
    if warnings:
        return f"{what}: no errors ({warnings} warning{'s' if warnings > 1 else ''})"
    return f"{what}: no problems found"
