"""Architecture diagrams: a model's graph drawn with Graphviz.

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
import tempfile
import types
from pathlib import Path
from typing import Any

import graphviz

from .graph import Graph
from .render_view import ClusterView, Edge, Item, View, build_view
from .values import UNKNOWN, Resolved, describe_value

FORMATS = ("svg", "png", "pdf", "dot")
FONT = "Helvetica,Arial,sans-serif"
INSTALL_HINT = ("install Graphviz to get images (apt-get install graphviz, brew install graphviz, "
                "conda install graphviz, or https://graphviz.org/download/)")

MAX_VALUE = 32  # characters of one argument value shown
LINE = 44  # characters of arguments on one line of a label
TITLE_LINE = 28  # the same, in a cluster's title

_STYLE = {
    "input": {"shape": "box", "style": "rounded,filled", "fillcolor": "#d3f0dc", "color": "#2b8a3e",
              "penwidth": "1.5"},
    "output": {"shape": "box", "style": "rounded,filled", "fillcolor": "#ffe3c2", "color": "#d9480f",
               "penwidth": "1.5"},
    "layer": {"shape": "box", "style": "filled", "fillcolor": "#e7effb", "color": "#4c6e9e"},
    "activation": {"shape": "box", "style": "rounded,filled", "fillcolor": "#f1f3f5", "color": "#868e96"},
    "model": {"shape": "component", "style": "filled", "fillcolor": "#fff3bf", "color": "#b08900"},
    "block": {"shape": "tab", "style": "filled", "fillcolor": "#ece2fb", "color": "#6741d9", "penwidth": "1.3"},
}
_CLUSTER_FILL = ("#f6f8fc", "#edf1f8")
_MUTED = "#5c6570"


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
    return _digraph(view, shapes)


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
        _write_atomic(target, source)
        return target
    try:
        data = graph.pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        dot_path = Path(f"{base}.dot")
        _write_atomic(dot_path, source)
        raise DotNotFound(f"Graphviz's 'dot' program was not found, so {target.name} was not made; wrote "
                          f"{dot_path} instead; {INSTALL_HINT}", dot_path) from None
    except graphviz.CalledProcessError as exc:
        dot_path = Path(f"{base}.dot")
        _write_atomic(dot_path, source)
        detail = _first_line(exc.stderr) or f"exit status {exc.returncode}"
        raise DotFailed(f"Graphviz's 'dot' failed on this diagram ({detail}); wrote {dot_path} instead",
                        dot_path) from None
    _write_atomic(target, data)
    return target


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _first_line(data: Any) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    lines = [line.strip() for line in (data or "").splitlines() if line.strip()]
    return lines[0] if lines else ""


# ------------------------------------------------------------------ DOT


def _digraph(view: View, shapes: bool) -> graphviz.Digraph:
    title = f"<B>{_esc(view.name)}</B>"
    if shapes:
        title += f"  {_esc(_params_text(view.params, view.params_complete, 'parameters'))}"
    dot = graphviz.Digraph(
        name=view.name,
        graph_attr={"rankdir": "TB", "fontname": FONT, "fontsize": "12", "label": f"<{title}>",
                    "labelloc": "t", "nodesep": "0.25", "ranksep": "0.32", "newrank": "true",
                    "outputorder": "edgesfirst", "bgcolor": "white"},
        node_attr={"fontname": FONT, "fontsize": "10", "margin": "0.12,0.05", "height": "0.3"},
        edge_attr={"fontname": FONT, "fontsize": "8", "fontcolor": _MUTED, "color": "#6c757d",
                   "arrowsize": "0.6"},
    )
    children: dict[tuple, list[ClusterView]] = {}
    for cluster in view.clusters:
        children.setdefault(cluster.path[:-1], []).append(cluster)
    placed: dict[tuple, list[Item]] = {}
    for item in view.items:
        placed.setdefault(item.cluster, []).append(item)
    numbers = {cluster.path: k for k, cluster in enumerate(view.clusters)}

    entries = _entries(view)

    def fill(container: graphviz.Digraph, path: tuple) -> None:
        for item in placed.get(path, []):
            container.node(item.key, label=_node_label(item, path, shapes), **_node_style(item))
        for cluster in children.get(path, []):
            k = numbers[cluster.path]
            with container.subgraph(name=f"cluster_{k}") as sub:
                sub.attr(label="", style="rounded,filled", fillcolor=_CLUSTER_FILL[(len(cluster.path) - 1) % 2],
                         color="#8a9bb8", margin="8")
                # The title is a node beside the cluster's first layer (same rank, to its
                # left), so no edge entering the cluster crosses it.
                sub.node(f"t{k}", label=_cluster_label(cluster, shapes), shape="plaintext", margin="0.04,0.02")
                first = entries.get(cluster.path, [None])[0]
                if first is not None:
                    with sub.subgraph() as rank:
                        rank.attr(rank="same")
                        rank.edge(f"t{k}", first, style="invis")
                fill(sub, cluster.path)

    fill(dot, ())
    inputs = [item.key for item in view.items if item.role == "input" and not item.cluster]
    if len(inputs) > 1:
        with dot.subgraph() as top:  # every input on the first row
            top.attr(rank="min")
            for key in inputs:
                top.node(key)
    for edge in view.edges:
        label = _edge_label(edge, shapes)
        attrs = {"label": label} if label else {}
        dot.edge(edge.src, edge.dst, **attrs)
    return dot


def _entries(view: View) -> dict[tuple, list[str]]:
    """For each cluster, its items that no edge from inside the same cluster enters."""
    where = {item.key: item.cluster for item in view.items}
    fed_from: dict[str, list[tuple]] = {}
    for edge in view.edges:
        if edge.src in where and edge.src != edge.dst:
            fed_from.setdefault(edge.dst, []).append(where[edge.src])
    entries: dict[tuple, list[str]] = {}
    for cluster in view.clusters:
        path = cluster.path
        for item in view.items:
            if item.cluster[:len(path)] != path:
                continue
            if not any(src[:len(path)] == path for src in fed_from.get(item.key, [])):
                entries.setdefault(path, []).append(item.key)
    return entries


def _node_style(item: Item) -> dict[str, str]:
    style = dict(_STYLE[item.role])
    if item.count > 1:
        style["shape"] = "box3d"
    if item.calls > 1:
        style["peripheries"] = "2"
    return style


def _node_label(item: Item, cluster: tuple, shapes: bool) -> str:
    head = f"<B>{_esc(item.title)}</B>"
    if item.count > 1:
        head += f" \u00d7{item.count}"
    if item.calls > 1:
        head += f' <FONT COLOR="{_MUTED}">shared, {item.calls} calls</FONT>'
    rows = [head]
    name = _relative(item.name, cluster)
    if item.count > 1 and item.last_name:
        name += " \u2026 " + _relative(item.last_name, cluster)
    if name:
        rows.append(f'<FONT POINT-SIZE="9" COLOR="{_MUTED}">{_esc(name)}</FONT>')
    rows.extend(_esc(line) for line in _wrap([f"{k}={_value_text(v)}" for k, v in item.args]))
    if item.dtype and item.dtype != "float32":
        rows.append(_esc(item.dtype))
    if shapes:
        facts = []
        if item.role == "block":
            facts.append(f"{_shapes_text(item.in_shapes)} \u2192 {_shapes_text(item.out_shapes)}")
        else:
            facts.append(_shapes_text(item.out_shapes))
        if item.params:
            facts.append(_params_text(item.params, item.params_complete, "params"))
        rows.append(_esc("  \u00b7  ".join(facts)))
    return "<" + "<BR/>".join(rows) + ">"


def _cluster_label(cluster: ClusterView, shapes: bool) -> str:
    rows = [f'<B>{_esc(cluster.block)}</B>  <FONT COLOR="{_MUTED}">{_esc(cluster.path[-1])}</FONT>']
    rows.extend(_esc(line) for line in _wrap([f"{k}={_value_text(v)}" for k, v in cluster.args.items()], TITLE_LINE))
    if shapes and cluster.params:
        rows.append(f'<FONT COLOR="{_MUTED}">{_esc(_params_text(cluster.params, cluster.params_complete, "params"))}'
                    "</FONT>")
    return "<" + "<BR/>".join(rows) + ">"


def _edge_label(edge: Edge, shapes: bool) -> str | None:
    parts = []
    if edge.call is not None:
        parts.append(f"#{edge.call}")
    if edge.index is not None:
        parts.append(f"[{edge.index}]")
    if shapes and edge.shape is not None:
        parts.append(_shape_text(edge.shape))
    return "<" + _esc(" ".join(parts)) + ">" if parts else None


def _relative(name: str, cluster: tuple) -> str:
    prefix = ".".join(cluster) + "."
    return name[len(prefix):] if cluster and name.startswith(prefix) else name


def _wrap(parts: list[str], width: int = LINE) -> list[str]:
    lines, line = [], ""
    for part in parts:
        if line and len(line) + 2 + len(part) > width:
            lines.append(line)
            line = part
        else:
            line = f"{line}, {part}" if line else part
    if line:
        lines.append(line)
    return lines


def _value_text(value: Any) -> str:
    if isinstance(value, Resolved):
        text = value.name
    elif (isinstance(value, tuple) and len(value) > 1
          and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        text = "\u00d7".join(str(v) for v in value)
    else:
        text = describe_value(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "\u2026"


def _shape_text(shape: Any) -> str:
    if shape is UNKNOWN or not isinstance(shape, tuple):
        return "?"
    dims = ["?" if d is None or d is UNKNOWN else str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _shapes_text(shapes: list) -> str:
    if not shapes:
        return "?"
    return " | ".join(_shape_text(s) for s in shapes)


def _params_text(count: int, complete: bool, word: str) -> str:
    return f"{count:,}{'' if complete else '+'} {word}"


def _esc(text: str) -> str:
    """Text for an HTML-like label, shown as is.

    Markup characters become entities; control characters are shown as
    escapes (a newline as the two characters \\n); a backslash is doubled,
    because Graphviz applies its escString substitutions (\\N, \\G, \\\\) to the
    text of HTML-like labels too (after decoding entities, so &#92; is no way out).
    """
    out = []
    for ch in text:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch == '"':
            out.append("&quot;")
        elif ch == "'":
            out.append("&#39;")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\\\n")
        elif ch == "\t":
            out.append("\\\\t")
        elif not ch.isprintable():
            out.append(f"\\\\u{ord(ch):04x}" if ord(ch) > 0xFF else f"\\\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


# ------------------------------------------------------------------ CLI


def run_render(args: Any) -> int:
    """`netdsl render SPEC [-o FILE|DIR] [--model NAME] [--format F] [--depth N] [--no-shapes]`.

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
    graphs = model_graphs(program, names, shapes)
    status = 0
    for name in names:
        digraph = render_graph(graphs[name], shapes=shapes, depth=depth,
                               collapse_repeats=not getattr(args, "expand_repeats", False))
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


# ------------------------------------------------------------------ `netdsl.render` stays callable


class _CallableModule(types.ModuleType):
    """Importing this module binds it as the package attribute `netdsl.render`, which
    shadows the API function of the same name (`api.render`). Calling the module calls
    that function, so `netdsl.render(source, ...)` keeps working either way."""

    def __call__(self, source: Any, model: str | None = None, *, shapes: bool = True,
                 depth: int | None = None) -> graphviz.Digraph:
        return render_model(source, model, shapes=shapes, depth=depth)


sys.modules[__name__].__class__ = _CallableModule
