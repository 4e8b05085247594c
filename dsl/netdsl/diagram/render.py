"""Architecture diagrams: a model's graph drawn with Graphviz (`netdsl.render`, `netdsl render`).

    digraph = render_graph(graph, depth=1)          # a graphviz.Digraph (shows inline in Jupyter)
    write_diagram(digraph, "out/resnet50", "png")    # out/resnet50.png, written atomically

(`netdsl.render(spec)` in `api.py` loads, checks or builds the spec and calls
`render_graph`; this room only draws graphs it is given.)

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

Everything here is pure Python plus the `graphviz` package; only the API's
`render(..., shapes=True)` imports Keras (through the compiler).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import graphviz

from netdsl.atomic import write_bytes
from netdsl.cost.model import ModelCost
from netdsl.diagram import FORMATS
from netdsl.diagram.dot import to_digraph
from netdsl.diagram.view import build_view
from netdsl.errors import DotFailed, DotNotFound, RenderError
from netdsl.semantics.graph import Graph

INSTALL_HINT = (
    "install Graphviz to get images (apt-get install graphviz, brew install graphviz, "
    "conda install graphviz, or https://graphviz.org/download/)"
)


# ------------------------------------------------------------------ API


def render_graph(
    graph: Graph,
    *,
    shapes: bool = True,
    depth: int | None = None,
    collapse_repeats: bool = True,
    cost: ModelCost | None = None,
) -> graphviz.Digraph:
    """The diagram of an expanded graph (from `semantics.analysis.analyze` or the compiler).

    `shapes=False` leaves shapes and parameter counts out (topology only).
    `depth`: fold block instances nested deeper than this (0: every block is
    one box). `collapse_repeats`: draw `STEP * N` as one box marked xN where
    each copy is one identical layer or folded block (False: every copy).
    `cost` (`render --cost`, netdsl.cost): each box's FLOPs and memory, its fill by its FLOPs.
    """
    view = build_view(graph, depth=depth, collapse_repeats=collapse_repeats)
    return to_digraph(view, shapes, cost)


def write_diagram(graph: graphviz.Digraph | Graph, path_without_suffix: str | os.PathLike, fmt: str = "svg") -> Path:
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
        data = pipe_image(graph, fmt)
    except RenderError as exc:
        dot_path = Path(f"{base}.dot")
        write_bytes(dot_path, source)
        if isinstance(exc, DotNotFound):
            raise DotNotFound(
                f"{exc}, so {target.name} was not made; wrote {dot_path} instead; {INSTALL_HINT}", dot_path
            ) from None
        raise DotFailed(f"{exc}; wrote {dot_path} instead", dot_path) from None
    write_bytes(target, data)
    return target


def pipe_image(digraph: graphviz.Digraph, fmt: str) -> bytes:
    """The diagram drawn by Graphviz's `dot` as `fmt` (svg, png, pdf) bytes.

    `DotNotFound` ("Graphviz's 'dot' program was not found") when `dot` is
    missing, `DotFailed` ("Graphviz's 'dot' failed on this diagram (why)")
    when it fails; their `.path` is None (nothing was written)."""
    try:
        return digraph.pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        raise DotNotFound("Graphviz's 'dot' program was not found", None) from None
    except graphviz.CalledProcessError as exc:
        detail = _first_line(exc.stderr) or f"exit status {exc.returncode}"
        raise DotFailed(f"Graphviz's 'dot' failed on this diagram ({detail})", None) from None


def _first_line(data: Any) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    lines = [line.strip() for line in (data or "").splitlines() if line.strip()]
    return lines[0] if lines else ""
