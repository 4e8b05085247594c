"""The `netdsl` command line.

Exit codes: 0 clean, 1 spec errors (diagnostics printed), 2 usage errors.
`check`, `fmt`, `layers` and `render --no-shapes` never import TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .errors import Diagnostic, SpecError, Sources, render_all

EXIT_OK, EXIT_SPEC, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(args)
    except SpecError as exc:
        print_diagnostics(exc.diagnostics, exc.sources)
        return EXIT_SPEC
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def print_diagnostics(diagnostics: list[Diagnostic], sources: Sources | None, stream: Any = None) -> None:
    stream = stream or sys.stderr
    if diagnostics:
        print(render_all(diagnostics, sources), file=stream)
        errors = sum(1 for d in diagnostics if d.severity == "error")
        if errors > 1:
            print(f"{errors} errors", file=stream)


# ------------------------------------------------------------------ commands


def cmd_check(args: argparse.Namespace) -> int:
    from .check import analyze
    from .loader import load_file

    all_diagnostics: list[Diagnostic] = []
    sources = Sources()
    for path in args.files:
        try:
            program = load_file(path, args.include)
        except SpecError as exc:
            all_diagnostics.extend(exc.diagnostics)
            if exc.sources:
                sources._lines.update(exc.sources._lines)
            continue
        sources._lines.update(program.sources()._lines)
        all_diagnostics.extend(analyze(program).diagnostics)
    if args.format == "json":
        print(json.dumps([d.model_dump() for d in all_diagnostics], indent=2))
    else:
        print_diagnostics(all_diagnostics, sources)
    return EXIT_SPEC if any(d.severity == "error" for d in all_diagnostics) else EXIT_OK


def cmd_layers(args: argparse.Namespace) -> int:
    from . import registry
    from .errors import did_you_mean

    kinds = [args.kind] if args.kind else ["layer", "activation"]
    if args.name:
        entries = [registry.lookup(kind, args.name) for kind in registry.KINDS]
        entries = [e for e in entries if e is not None]
        if not entries:
            pool = [k for kind in registry.KINDS for k in registry.all_keys(kind)]
            hint = did_you_mean(args.name, pool)
            print(f"netdsl: unknown name '{args.name}'" + (f"; {hint}" if hint else ""), file=sys.stderr)
            return EXIT_SPEC
        for entry in entries:
            print(_describe_entry(entry))
        return EXIT_OK
    for kind in kinds:
        print(f"{kind}s:")
        for name in registry.names(kind):
            entry = registry.lookup(kind, name)
            print(f"  {_signature(entry):<60} {entry.description}")
    return EXIT_OK


def _signature(entry: Any) -> str:
    from . import registry
    from .values import describe_value

    parts = []
    for p in entry.params:
        if p.name in ("name", "dtype", "trainable") and entry.kind == "layer":
            continue
        parts.append(p.name if p.default is registry.REQUIRED else f"{p.name}={describe_value(p.default)}")
        if len(parts) >= 4:
            parts.append("...")
            break
    return f"{entry.name}({', '.join(parts)})" if parts else entry.name


def _describe_entry(entry: Any) -> str:
    from . import registry
    from .values import describe_value

    lines = [f"{entry.name} ({entry.kind}, {entry.source}): {entry.description}"]
    for p in entry.params:
        default = "required" if p.default is registry.REQUIRED else f"default {describe_value(p.default)}"
        where = "positional or keyword" if p.positional else "keyword"
        choices = f"; one of {', '.join(p.choices)}" if p.choices else ""
        lines.append(f"  {p.name}: {p.type}, {default}, {where}{choices}")
    return "\n".join(lines)


def cmd_fmt(args: argparse.Namespace) -> int:
    from .formatter import run_fmt

    return run_fmt(args)


def cmd_build(args: argparse.Namespace) -> int:
    from .compile import run_build

    return run_build(args)


def cmd_summary(args: argparse.Namespace) -> int:
    from .compile import run_summary

    return run_summary(args)


def cmd_render(args: argparse.Namespace) -> int:
    from .renderer import run_render

    return run_render(args)


# ------------------------------------------------------------------ parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="netdsl", description="Declarative model-builder: .net specs to Keras "
                                                                "models and Graphviz diagrams.")
    parser.add_argument("--version", action="version", version="netdsl 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="check specs (fast; no TensorFlow)")
    check.add_argument("files", nargs="+", metavar="SPEC")
    check.add_argument("--format", choices=("text", "json"), default="text")
    _include(check)
    check.set_defaults(run=cmd_check)

    fmt = sub.add_parser("fmt", help="format specs canonically, in place")
    fmt.add_argument("files", nargs="+", metavar="SPEC")
    fmt.add_argument("--check", action="store_true", help="only report files that would change (exit 1)")
    fmt.add_argument("--diff", action="store_true", help="print a diff instead of writing")
    fmt.set_defaults(run=cmd_fmt)

    build = sub.add_parser("build", help="build .keras models (and diagrams) from a spec")
    build.add_argument("spec", metavar="SPEC")
    build.add_argument("-o", "--output", default="build", metavar="DIR")
    build.add_argument("--model", metavar="NAME")
    build.add_argument("--plugin", action="append", default=[], metavar="MODULE")
    build.add_argument("--no-diagram", action="store_true")
    build.add_argument("--max-params", type=int, default=None, metavar="N")
    _include(build)
    build.set_defaults(run=cmd_build)

    summary = sub.add_parser("summary", help="print each model's layers, shapes and parameters")
    summary.add_argument("spec", metavar="SPEC")
    summary.add_argument("--model", metavar="NAME")
    summary.add_argument("--json", action="store_true")
    summary.add_argument("--plugin", action="append", default=[], metavar="MODULE")
    _include(summary)
    summary.set_defaults(run=cmd_summary)

    render = sub.add_parser("render", help="draw a model as a Graphviz diagram")
    render.add_argument("spec", metavar="SPEC")
    render.add_argument("-o", "--output", metavar="FILE|DIR")
    render.add_argument("--model", metavar="NAME")
    render.add_argument("--format", choices=("svg", "png", "pdf", "dot"), default=None)
    render.add_argument("--depth", type=int, default=None, metavar="N")
    render.add_argument("--no-shapes", action="store_true", help="topology only: no TensorFlow")
    render.add_argument("--expand-repeats", action="store_true", help="draw every copy of a step repeated * N")
    render.add_argument("--plugin", action="append", default=[], metavar="MODULE")
    _include(render)
    render.set_defaults(run=cmd_render)

    layers = sub.add_parser("layers", help="list what a spec may name (layers, activations, ...)")
    layers.add_argument("name", nargs="?", metavar="NAME")
    layers.add_argument("--kind", choices=("layer", "activation", "initializer", "regularizer", "constraint",
                                           "optimizer", "loss", "metric", "schedule", "callback"))
    layers.set_defaults(run=cmd_layers)
    return parser


def _include(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include", action="append", default=[], metavar="DIR",
                        help="a further folder imports may read from")


if __name__ == "__main__":
    sys.exit(main())
