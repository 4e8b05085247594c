"""`netdsl render`: a model's diagram written as SVG, PNG, PDF or DOT."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from netdsl.cli.common import add_define, add_include, add_plugin, load_plugins, load_spec
from netdsl.diagram import FORMATS
from netdsl.errors import Diagnostic, RenderError, SpecError
from netdsl.syntax.loader import pick_models


def add_parser(sub: argparse._SubParsersAction) -> None:
    render = sub.add_parser("render", help="draw a model as a Graphviz diagram")
    render.add_argument("spec", metavar="SPEC")
    render.add_argument("-o", "--output", metavar="FILE|DIR")
    render.add_argument("--model", metavar="NAME")
    render.add_argument("--format", choices=FORMATS, default=None)
    render.add_argument("--depth", type=int, default=None, metavar="N")
    render.add_argument("--no-shapes", action="store_true", help="topology only: no TensorFlow")
    render.add_argument("--expand-repeats", action="store_true", help="draw every copy of a step repeated * N")
    add_plugin(render)
    add_include(render)
    add_define(render)
    render.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """`netdsl render SPEC [-o FILE|DIR] [--model NAME] [--format F] [--depth N] [--no-shapes]
    [--expand-repeats]`.

    Writes `<model>.<fmt>` (in the current folder, or in DIR) for every model
    of the spec, or the one `--model` names; `-o FILE` names the file of a
    single model and gives the format by its suffix. Spec errors raise
    `SpecError`. Exit status 0; 1 when `dot` is missing or fails (the `.dot`
    source is written instead, with a one-line hint); 2 for a bad option.
    """
    from netdsl.api import model_graphs
    from netdsl.diagram.render import render_graph, write_diagram  # graphviz: only when drawing

    depth = args.depth
    if depth is not None and depth < 0:
        print(f"netdsl render: --depth must be 0 or more, received {depth}", file=sys.stderr)
        return 2
    program = load_spec(args.spec, args)
    names = pick_models(program, args.model)
    try:
        fmt, bases = _outputs(args.output, args.format, names)
    except ValueError as exc:
        print(f"netdsl render: {exc}", file=sys.stderr)
        return 2
    shapes = not args.no_shapes
    load_plugins(args.plugin, program.root)
    # The CLI's stderr is for diagnostics, not TensorFlow's start-up notices (when it is needed at all).
    graphs = model_graphs(program, names, shapes, mute_tensorflow=True)
    status = 0
    for name in names:
        digraph = render_graph(graphs[name], shapes=shapes, depth=depth, collapse_repeats=not args.expand_repeats)
        try:
            path = write_diagram(digraph, bases[name], fmt)
        except RenderError as exc:
            print(f"netdsl render: {exc}", file=sys.stderr)
            status = 1
            continue
        except OSError as exc:
            raise SpecError(Diagnostic.for_file(program.root, f"cannot write the diagram of '{name}': "
                                                              f"{exc.strerror or exc}")) from None
        print(path)
    return status


def _outputs(output: str | None, fmt: str | None, names: list[str]) -> tuple[str, dict[str, str]]:
    """The format and the path (without suffix) of each model's diagram."""
    if output is None:
        fmt = fmt or "svg"
        return fmt, {name: name for name in names}
    path = Path(output)
    if path.is_dir() or output.endswith(("/", os.sep)):
        fmt = fmt or "svg"
        return fmt, {name: os.path.join(output, name) for name in names}
    suffix = path.suffix.lower().lstrip(".")
    if suffix == "gv":
        suffix = "dot"
    if suffix and suffix not in FORMATS:
        raise ValueError(f"cannot tell the format of '{output}' (use .svg, .png, .pdf or .dot, or --format)")
    if fmt and suffix and suffix != fmt:
        raise ValueError(f"the output '{output}' ends in .{suffix} but --format is {fmt}")
    if len(names) > 1:
        raise ValueError(f"the spec has {len(names)} models ({', '.join(names)}) and -o names one file; "
                         "pick one with --model, or give a folder: -o DIR/")
    fmt = fmt or suffix or "svg"
    base = str(path.with_suffix("")) if suffix else output
    return fmt, {names[0]: base}
