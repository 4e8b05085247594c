"""Architecture diagrams: a model's graph drawn with Graphviz (`netdsl.render`, `netdsl render`).

(The module is `renderer`, not `render`: importing a submodule named `render`
would rebind the package attribute `netdsl.render`, the API function.)

    digraph = render_model("spec.net", depth=1)     # a graphviz.Digraph (shows inline in Jupyter)
    write_diagram(digraph, "out/resnet50", "png")    # out/resnet50.png, written atomically

What a diagram shows (see docs/render.md):

- each layer as a box: its kind (bold), name, key arguments (the registry's
  per-kind `key_args`), output shape (batch axis left out, `?` unknown) and
  parameter count; inputs green, outputs orange, activations grey;
- each block instance as a labelled cluster (block, instance name,
  arguments, total parameters); nested blocks nest; with `depth=N` the
  instances nested deeper than N are folded into one box each (a tab-shaped
  box with its total parameters and input -> output shapes);
- a step repeated `* N` whose copies are single identical layers (or folded
  blocks) as one 3-D box marked xN, by default; `collapse_repeats=False`
  (CLI `--expand-repeats`) draws every copy;
- a shared instance (and a nested model) once, with an edge for each call,
  numbered `#k` when it is called more than once;
- an edge labelled with the tensor's shape where the layer it leaves changed it.

Determinism: node ids come from graph positions (`n<k>`, `b<k>`, `out<k>`),
clusters are numbered in graph order, no timestamps: the same spec gives the
same DOT bytes in every process. Safety: every label is an HTML-like label
built from escaped text, and nothing taken from a spec reaches DOT outside
one, so quotes, `<`, `>`, `&`, braces, backslashes and newlines in names or
string arguments are shown, never interpreted.

Only `render_model(..., shapes=True)` imports Keras (through the compiler);
everything else here is pure Python plus the `graphviz` package.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import graphviz

from .atomic import write_bytes
from .graph import Graph
from .render_dot import to_digraph
from .render_view import build_view

FORMATS = ("svg", "png", "pdf", "dot")
INSTALL_HINT = ("install Graphviz to get images (apt-get install graphviz, brew install graphviz, "
                "conda install graphviz, or https://graphviz.org/download/)")


class RenderError(Exception):
    """A diagram could not be made as an image. `.path`: the `.dot` source written instead."""

    def __init__(self, message: str, path: Path):
        super().__init__(message)
        self.path = path


class DotNotFound(RenderError):
    """Graphviz's `dot` program is not installed; the `.dot` source was written instead."""


class DotFailed(RenderError):
    """`dot` ran but failed on this graph; the `.dot` source was written instead."""


# ------------------------------------------------------------------ API


def render_graph(graph: Graph, *, shapes: bool = True, depth: int | None = None,
                 collapse_repeats: bool = True) -> graphviz.Digraph:
    """The diagram of an expanded graph (from `check.analyze` or the compiler).

    `shapes=False` leaves shapes and parameter counts out (topology only).
    `depth`: fold block instances nested deeper than this (0: every block is
    one box). `collapse_repeats`: draw `STEP * N` as one box marked xN where
    each copy is one identical layer or folded block (False: every copy).
    """
    view = build_view(graph, depth=depth, collapse_repeats=collapse_repeats)
    return to_digraph(view, shapes)


def render_model(source: Any, model: str | None = None, *, shapes: bool = True, depth: int | None = None,
                 collapse_repeats: bool = True, include: list = ()) -> graphviz.Digraph:
    """The diagram of one model of a spec (`source`: a spec path or a `Program`).

    `shapes=True` builds the model with Keras for its real shapes and
    parameter counts; `shapes=False` draws the checked topology and never
    imports TensorFlow. Raises `SpecError` when the spec has errors.
    """
    from .api import _program, pick_model

    if depth is not None and depth < 0:
        raise ValueError(f"Expected a depth of 0 or more, received: {depth}")
    program = _program(source, None, include)
    name = pick_model(program, model)
    graphs = model_graphs(program, [name], shapes)
    return render_graph(graphs[name], shapes=shapes, depth=depth, collapse_repeats=collapse_repeats)


def model_graphs(program: Any, names: list[str], shapes: bool) -> dict[str, Graph]:
    """The expanded graphs of `names`: built with Keras (shapes) or only checked."""
    from .errors import SpecError

    if shapes:
        from .compile import compile_program

        analysis, _ = compile_program(program, models=names)
    else:
        from .check import analyze

        analysis = analyze(program, models=names)
    if analysis.errors:
        raise SpecError(analysis.errors, program.sources())
    return analysis.graphs


def write_diagram(graph: graphviz.Digraph | Graph, path_without_suffix: str | os.PathLike,
                  fmt: str = "svg") -> Path:
    """Write a diagram as `<path_without_suffix>.<fmt>` and return that path.

    `graph`: a `graphviz.Digraph` (from `render_graph`/`render_model`) or an
    expanded `Graph` (drawn with the defaults). `fmt`: svg, png, pdf or dot.
    The file is written atomically (a temporary file in the same folder,
    then `os.replace`); folders are created as needed.

    When Graphviz's `dot` program is missing, the DOT source is written to
    `<path_without_suffix>.dot` and `DotNotFound` is raised; when `dot` fails
    on the graph, the same with `DotFailed`. Both are `RenderError`s whose
    `str()` is one line for the user and whose `.path` is the `.dot` file.
    """
    if fmt not in FORMATS:
        raise ValueError(f"Expected a format among {', '.join(FORMATS)}, received: {fmt!r}")
    if isinstance(graph, Graph):
        graph = render_graph(graph)
    base = os.fspath(path_without_suffix)
    target = Path(f"{base}.{fmt}")
    source = graph.source.encode("utf-8")
    if fmt == "dot":
        write_bytes(target, source)
        return target
    try:
        data = graph.pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        dot_path = Path(f"{base}.dot")
        write_bytes(dot_path, source)
        raise DotNotFound(f"Graphviz's 'dot' program was not found, so {target.name} was not made; wrote "
                          f"{dot_path} instead; {INSTALL_HINT}", dot_path) from None
    except graphviz.CalledProcessError as exc:
        dot_path = Path(f"{base}.dot")
        write_bytes(dot_path, source)
        detail = _first_line(exc.stderr) or f"exit status {exc.returncode}"
        raise DotFailed(f"Graphviz's 'dot' failed on this diagram ({detail}); wrote {dot_path} instead",
                        dot_path) from None
    write_bytes(target, data)
    return target


def _first_line(data: Any) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    lines = [line.strip() for line in (data or "").splitlines() if line.strip()]
    return lines[0] if lines else ""


# ------------------------------------------------------------------ CLI


def run_render(args: Any) -> int:
    """`netdsl render SPEC [-o FILE|DIR] [--model NAME] [--format F] [--depth N] [--no-shapes]
    [--expand-repeats]`.

    Writes `<model>.<fmt>` (in the current folder, or in DIR) for every model
    of the spec, or the one `--model` names; `-o FILE` names the file of a
    single model and gives the format by its suffix. Spec errors raise
    `SpecError`. Exit status 0; 1 when `dot` is missing or fails (the `.dot`
    source is written instead, with a one-line hint); 2 for a bad option.
    """
    from .api import pick_model
    from .errors import Diagnostic, SpecError
    from .loader import load_file

    depth = args.depth
    if depth is not None and depth < 0:
        print(f"netdsl render: --depth must be 0 or more, received {depth}", file=sys.stderr)
        return 2
    if args.plugin:
        from .plugins import load_plugins

        try:
            load_plugins(args.plugin)
        except ImportError as exc:
            print(f"netdsl render: cannot import plugin: {exc}", file=sys.stderr)
            return 2
    program = load_file(args.spec, args.include)
    if args.model:
        names = [pick_model(program, args.model)]
    else:
        names = program.model_names
        if not names:
            raise SpecError(Diagnostic.for_file(program.root, "the spec declares no model"))
    try:
        fmt, bases = _outputs(args.output, args.format, names)
    except ValueError as exc:
        print(f"netdsl render: {exc}", file=sys.stderr)
        return 2
    shapes = not args.no_shapes
    if shapes:
        from .compile import quiet_tensorflow

        quiet_tensorflow()  # the CLI's stderr is for diagnostics, not TensorFlow's start-up notices
    graphs = model_graphs(program, names, shapes)
    status = 0
    for name in names:
        digraph = render_graph(graphs[name], shapes=shapes, depth=depth, collapse_repeats=not args.expand_repeats)
        try:
            path = write_diagram(digraph, bases[name], fmt)
        except RenderError as exc:
            print(f"netdsl render: {exc}", file=sys.stderr)
            status = 1
            continue
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

