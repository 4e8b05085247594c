"""`netdsl check SPEC... [--json]`: every diagnostic of each spec, without TensorFlow."""

from __future__ import annotations

import argparse
import json

from netdsl import api
from netdsl.cli.common import EXIT_OK, EXIT_SPEC, load_plugins, print_diagnostics
from netdsl.errors import Diagnostic, Sources, SpecError


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
        checked = api.check_file(path, include=args.include, defines=defines)
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
