"""`netdsl render`: a model's diagram written as SVG, PNG, PDF or DOT."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from netdsl import api
from netdsl.api import options
from netdsl.cli.common import load_plugins, load_spec, print_failure
from netdsl.errors import Diagnostic, RenderError, SpecError, UsageError


def run(args: argparse.Namespace) -> int:
    """`netdsl render SPEC [-o FILE|DIR] [--model NAME] [--image-format F] [--depth N] [--no-shapes]
    [--no-collapse]`.

    Writes `<model>.<fmt>` (in the current folder, or in DIR) for every model
    of the spec, or the one `--model` names; `-o FILE` names the file of a
    single model and gives the format by its suffix. Spec errors raise
    `SpecError`. Exit status 0; 1 when `dot` is missing or fails (the `.dot`
    source is written instead, with a one-line hint); 2 for a bad option.
    """
    depth = args.depth
    if depth is not None and depth < 0:
        raise UsageError(f"--depth must be 0 or more, received {depth}")
    program = load_spec(args.spec, args)
    names = api.model_names(program, args.model)
    try:
        fmt, bases = _outputs(args.out, args.image_format, names)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    shapes = not args.no_shapes
    if args.cost and not shapes:
        raise UsageError("--cost needs the shapes: leave out --no-shapes")
    load_plugins(args.plugin, program.root)
    # The CLI's stderr is for diagnostics, not TensorFlow's start-up notices (when it is needed at all).
    diagrams = api.diagrams(
        program,
        names,
        shapes=shapes,
        depth=depth,
        collapse_repeats=args.collapse_repeats,
        cost=args.cost,
        batch=args.batch,
        mute_tensorflow=True,
    )
    status = 0
    for name in names:
        try:
            path = api.write_diagram(diagrams[name], bases[name], fmt)
        except RenderError as exc:
            status = print_failure("render", str(exc))
            continue
        except OSError as exc:
            raise SpecError(
                Diagnostic.for_file(program.root, f"cannot write the diagram of '{name}': {exc.strerror or exc}")
            ) from None
        print(f"wrote {path}")
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
    if suffix and suffix not in options.IMAGE_FORMATS:
        raise ValueError(f"cannot tell the format of '{output}' (use .svg, .png, .pdf or .dot, or --image-format)")
    if fmt and suffix and suffix != fmt:
        raise ValueError(f"the output '{output}' ends in .{suffix} but --image-format is {fmt}")
    if len(names) > 1:
        raise ValueError(
            f"the spec has {len(names)} models ({', '.join(names)}) and -o names one file; "
            "pick one with --model NAME, or give a folder: -o DIR/"
        )
    fmt = fmt or suffix or "svg"
    base = str(path.with_suffix("")) if suffix else output
    return fmt, {names[0]: base}
