"""Diagrams without Keras: golden DOT, determinism, escaping, folding, repeats, sharing, files, CLI.

Graphs come from `check.analyze` (shapes inferred in pure Python), so nothing
here imports TensorFlow; `diagram/test_render_keras.py` renders with real Keras shapes.
Regenerate the golden files deliberately with `NETDSL_UPDATE_GOLDEN=1 pytest tests/diagram/test_render.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import graphviz
import pytest

import netdsl
from netdsl import render as render_model
from netdsl.cli import main
from netdsl.diagram.render import render_graph, write_diagram
from netdsl.diagram.view import build_view
from netdsl.errors import DotFailed, DotNotFound
from netdsl.semantics.analysis import analyze

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
SMALL = GOLDEN / "render_small.net"
SPECS = ROOT / "specs"
SPEC_FILES = sorted(SPECS.glob("*.net"))
HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot is not installed")


def graph_of(source, model=None, text=False):
    program = netdsl.parse(source, filename="spec.net") if text else netdsl.parse_file(source)
    analysis = analyze(program)
    assert not analysis.errors, analysis.errors
    return analysis.graphs[model or program.model_names[0]]


def dot_json(digraph: graphviz.Digraph) -> dict:
    return json.loads(digraph.pipe(format="json0").decode("utf-8"))


# ====================================================================== golden DOT


@pytest.mark.parametrize("depth", [None, 0], ids=["full", "depth0"])
def test_golden_dot(depth):
    source = render_graph(graph_of(SMALL), depth=depth).source
    golden = GOLDEN / ("render_small.dot" if depth is None else f"render_small_depth{depth}.dot")
    if os.environ.get("NETDSL_UPDATE_GOLDEN"):
        golden.write_bytes(source.encode("utf-8"))
    assert source.encode("utf-8") == golden.read_bytes()


def test_golden_shows_block_repeat_and_shared():
    source = (GOLDEN / "render_small_depth0.dot").read_text(encoding="utf-8")
    assert "<B>res</B> \u00d72" in source and "shape=box3d" in source  # res(16) * 2 folded into one box
    assert "<B>dense</B> \u00d73" in source  # dense(16) * 3
    assert "shared, 2 calls" in source and "peripheries=2" in source
    full = (GOLDEN / "render_small.dot").read_text(encoding="utf-8")
    assert full.count("subgraph cluster_") == 7  # conv_bn, 2 x (res, 2 x conv_bn)


# ====================================================================== determinism

_DUMP = """
import sys, netdsl
from netdsl.semantics.analysis import analyze
from netdsl.diagram.render import render_graph
for path, depth in [(sys.argv[1], None), (sys.argv[2], 1), (sys.argv[2], None)]:
    program = netdsl.parse_file(path)
    graph = analyze(program).graphs[program.model_names[0]]
    sys.stdout.write(render_graph(graph, depth=depth).source)
"""


def test_dot_is_identical_across_processes():
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _DUMP, str(SMALL), str(SPECS / "resnet50.net")],
            capture_output=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    here = render_graph(graph_of(SMALL)).source.encode("utf-8")
    assert outputs[0].startswith(here)
    assert b"0x" not in outputs[0]  # no memory addresses


# ====================================================================== escaping

# A string with every troublesome character, as spec text; a label shows it as the spec wrote it.
# `\\N` and `\\G` would be Graphviz's node and graph names if a backslash reached dot unescaped.
# It shows in 32 characters, a label's MAX_VALUE (its newline and tab are written `\n`, `\t`, two each).
NASTY = r"""a\"<b>&{}\\n\n]];x->y'\t\\N\\G"""
NASTY_SHOWN = f'"{NASTY}"'

ESCAPE_SPEC = f"""
block subgraph(n, tag="x") {{
  input node
  output edge = node -> einsum_dense(equation="{NASTY}", output_shape=n) -> dropout(0.1)
}}
model digraph {{
  input graph: (4,)
  shared strict = dense(4)
  node = graph -> subgraph(8, tag="{NASTY}") -> strict
  output edge = node -> dense(4) -> strict
}}
"""


@pytest.mark.parametrize("depth", [None, 0])
def test_labels_cannot_break_or_inject_into_dot(depth):
    graph = graph_of(ESCAPE_SPEC, text=True)
    digraph = render_graph(graph, depth=depth)
    source = digraph.source
    in_dot = (
        NASTY_SHOWN.replace("\\", "\\\\")
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )
    # in the block's title (or its folded box), and on einsum_dense unless folded away
    assert source.count(in_dot) == (2 if depth is None else 1)
    if not HAVE_DOT:
        return
    done = subprocess.run(["dot", "-Tjson0"], input=source.encode("utf-8"), capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
    layout = json.loads(done.stdout)
    # exactly the nodes and edges the view has: nothing injected, nothing lost
    view = build_view(graph, depth=depth)
    titles = len(view.clusters)
    names = sorted(o["name"] for o in layout["objects"] if "nodes" not in o)
    assert names == sorted([i.key for i in view.items] + [f"t{k}" for k in range(titles)])
    visible = [e for e in layout.get("edges", []) if e.get("style") != "invis"]
    assert len(visible) == len(view.edges)
    svg = digraph.pipe(format="svg").decode("utf-8")
    texts = _svg_texts(svg)
    assert any(NASTY_SHOWN in t for t in texts), texts


def _svg_texts(svg: str) -> list[str]:
    import html
    import re

    lines = []
    for group in re.findall(r'<g id="(?:node|clust|edge)\d+" class="(?:node|cluster|edge)">(.*?)</g>', svg, re.S):
        lines.append("".join(html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", group, re.S)))
    return lines


def test_dot_keywords_as_names_are_quoted():
    source = render_graph(graph_of(ESCAPE_SPEC, text=True)).source
    assert source.startswith('digraph "digraph" {')


# ====================================================================== views


def test_depth_folds_clusters_and_keeps_edges():
    graph = graph_of(SPECS / "resnet50.net")
    counts = {}
    for depth in (None, 2, 1, 0):
        view = build_view(graph, depth=depth, collapse_repeats=False)
        counts[depth] = len(view.items)
        _assert_edges_follow_the_graph(graph, view)
    assert counts[0] < counts[1] < counts[2] < counts[None]
    assert counts[None] == len(graph.nodes) + len(graph.outputs)


def _assert_edges_follow_the_graph(graph, view):
    """Every tensor edge of the graph is an edge of the view between the items holding its ends."""
    holder = {m: item.key for item in view.items for m in item.members}
    folded = {item.key for item in view.items if item.role == "block"}
    expected = set()
    for node in graph.nodes:
        for ref in node.inputs:
            src, dst = holder[ref.node], holder[node.id]
            if src != dst or (node.shared and dst not in folded):  # a shared layer fed by itself: a loop
                expected.add((src, dst))
    expected |= {(holder[ref.node], f"out{k}") for k, (_, ref) in enumerate(graph.outputs)}
    assert {(e.src, e.dst) for e in view.edges} == expected


def test_folded_block_shows_params_and_shapes():
    graph = graph_of(SPECS / "resnet50.net")
    view = build_view(graph, depth=0)
    stages = [i for i in view.items if i.role == "block" and i.title == "stage"]
    assert len(stages) == 4
    assert stages[0].in_shapes == [(56, 56, 64)] and stages[0].out_shapes == [(56, 56, 256)]
    assert sum(i.params for i in view.items if i.params) == view.params == 25_636_712


def test_repeats_collapse_by_default_and_expand_on_request():
    graph = graph_of(SMALL)
    collapsed = build_view(graph)
    dense = [i for i in collapsed.items if i.title == "dense" and i.count == 3]
    assert len(dense) == 1 and dense[0].params == 3 * (16 * 16 + 16)
    full = build_view(graph, collapse_repeats=False)
    assert len(full.items) == len(collapsed.items) + 2
    assert all(i.count == 1 for i in full.items)
    folded = build_view(graph, depth=0)
    assert [i.count for i in folded.items if i.title == "res"] == [2]
    assert "\u00d7" not in render_graph(graph, collapse_repeats=False).source


def test_repeats_that_differ_are_not_collapsed():
    # inverted_residual(96) * 3: the first copy has no residual add, the others do
    view = build_view(graph_of(SPECS / "mobilenet_v2.net"), depth=0)
    counts = [i.count for i in view.items if i.title == "inverted_residual"]
    assert counts == [1, 1, 1, 1, 2, 1, 3, 1, 1, 1, 1, 2, 1]


def test_shared_layer_is_one_node_with_numbered_calls():
    view = build_view(graph_of(SMALL))
    shared = [i for i in view.items if i.calls > 1]
    assert len(shared) == 1 and shared[0].calls == 2 and shared[0].params == 16 * 16 + 16
    into = [e for e in view.edges if e.dst == shared[0].key]
    assert sorted(e.in_call for e in into) == [1, 2]
    assert view.params == 11_483  # the shared layer counted once


def test_shared_block_and_siamese_towers():
    view = build_view(graph_of(SPECS / "siamese.net"))
    towers = [i for i in view.items if i.role == "model"]
    assert len(towers) == 1 and towers[0].calls == 2
    assert len([e for e in view.edges if e.dst == towers[0].key]) == 2


def test_no_shapes_means_topology_only():
    source = render_graph(graph_of(SMALL), shapes=False).source
    assert "(16, 16, 16)" not in source and "params" not in source and "parameters" not in source
    assert "filters=16" in source


def test_bad_depth_is_an_error():
    with pytest.raises(ValueError, match="depth of 0 or more"):
        render_graph(graph_of(SMALL), depth=-1)


# ====================================================================== API


def test_api_render_returns_a_digraph_that_shows_in_jupyter():
    import netdsl.diagram.render  # noqa: F401 - the module must not shadow the API function

    digraph = netdsl.render(SMALL, shapes=False, depth=1)
    assert isinstance(digraph, graphviz.Digraph)
    if HAVE_DOT:
        bundle = digraph._repr_mimebundle_()
        assert bundle["image/svg+xml"].lstrip().startswith("<?xml")


def test_render_model_picks_the_model_and_reports_spec_errors(tmp_path):
    two = tmp_path / "two.net"
    two.write_text(
        "model a {\n  input x: (2,)\n  output y = x -> dense(1)\n}\n"
        "model b {\n  input x: (2,)\n  output y = x -> dense(3)\n}\n"
    )
    assert "units=3" in render_model(two, model="b", shapes=False).source
    with pytest.raises(netdsl.SpecError, match="pick one"):
        render_model(two, shapes=False)
    bad = tmp_path / "bad.net"
    bad.write_text("model m {\n  input x: (2,)\n  output y = x -> dens(1)\n}\n")
    with pytest.raises(netdsl.SpecError, match="unknown layer 'dens'"):
        render_model(bad, shapes=False)


_NO_TF = """
import sys
from netdsl.cli import main
code = main(["render", sys.argv[1], "--no-shapes", "-o", sys.argv[2], "--depth", "1"])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras", "jax", "torch"))
print(code, heavy)
"""


def test_no_shapes_never_imports_tensorflow(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", _NO_TF, str(SPECS / "resnet50.net"), str(tmp_path / "r.dot")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr
    assert (tmp_path / "r.dot").read_text().startswith("digraph resnet50 {")


# ====================================================================== files


@needs_dot
@pytest.mark.parametrize("fmt,magic", [("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF"), ("dot", b"digraph")])
def test_write_diagram_formats(tmp_path, fmt, magic):
    path = write_diagram(render_graph(graph_of(SMALL)), tmp_path / "sub" / "small", fmt)
    assert path == tmp_path / "sub" / f"small.{fmt}"
    assert path.read_bytes().startswith(magic)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left
    assert path.stat().st_mode & 0o777 != 0o600  # not the temporary file's private mode


def test_write_diagram_accepts_a_graph(tmp_path):
    path = write_diagram(graph_of(SMALL), tmp_path / "g", "dot")
    assert path.read_text(encoding="utf-8") == render_graph(graph_of(SMALL)).source


def test_write_diagram_without_dot_writes_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    digraph = render_graph(graph_of(SMALL))
    with pytest.raises(DotNotFound) as info:
        write_diagram(digraph, tmp_path / "small", "svg")
    assert info.value.path == tmp_path / "small.dot"
    assert info.value.path.read_text(encoding="utf-8") == digraph.source
    assert not (tmp_path / "small.svg").exists()
    message = str(info.value)
    assert "\n" not in message and "apt-get install graphviz" in message and "brew install graphviz" in message


def test_a_failing_dot_leaves_the_old_file(tmp_path, monkeypatch):
    old = tmp_path / "small.svg"
    old.write_text("old")
    digraph = render_graph(graph_of(SMALL))

    def fail(*args, **kwargs):
        raise graphviz.CalledProcessError(1, ["dot"], stderr=b"Error: trouble in layout\nmore\n")

    monkeypatch.setattr(digraph, "pipe", fail)
    with pytest.raises(DotFailed, match="trouble in layout"):
        write_diagram(digraph, tmp_path / "small", "svg")
    assert old.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.dot", "small.svg"]


def test_unknown_format_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="svg, png, pdf, dot"):
        write_diagram(render_graph(graph_of(SMALL)), tmp_path / "x", "jpg")


# ====================================================================== every spec


@needs_dot
@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: p.name)
def test_every_spec_renders_to_svg_and_png(path, tmp_path):
    program = netdsl.parse_file(path)
    analysis = analyze(program)
    assert not analysis.errors
    for name in program.model_names:
        for depth in (None, 1):
            digraph = render_graph(analysis.graphs[name], depth=depth)
            for fmt, magic in (("svg", b"<?xml"), ("png", b"\x89PNG")):
                out = write_diagram(digraph, tmp_path / f"{name}_{depth}", fmt)
                assert out.read_bytes().startswith(magic)


# ====================================================================== CLI


def run_cli(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return main(["render", *args])
    finally:
        os.chdir(old)


TWO = (
    "model first {\n  input x: (2,)\n  output y = x -> dense(1)\n}\n"
    "model second {\n  input x: (2,)\n  output y = x -> dense(3)\n}\n"
)


@pytest.fixture
def two_models(tmp_path):
    spec = tmp_path / "two.net"
    spec.write_text(TWO)
    return spec


def test_cli_writes_one_file_per_model_in_the_current_folder(tmp_path, two_models, capsys):
    assert run_cli([str(two_models), "--no-shapes", "--format", "dot"], tmp_path) == 0
    assert (tmp_path / "first.dot").exists() and (tmp_path / "second.dot").exists()
    assert capsys.readouterr().out.splitlines() == ["wrote first.dot", "wrote second.dot"]


def test_cli_output_folder_and_model(tmp_path, two_models):
    assert (
        run_cli([str(two_models), "--no-shapes", "--format", "dot", "-o", "out/", "--model", "second"], tmp_path) == 0
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["second.dot"]
    (tmp_path / "existing").mkdir()
    assert run_cli([str(two_models), "--no-shapes", "--format", "dot", "-o", "existing"], tmp_path) == 0
    assert sorted(p.name for p in (tmp_path / "existing").iterdir()) == ["first.dot", "second.dot"]


def test_cli_format_from_the_output_suffix(tmp_path, two_models):
    assert run_cli([str(two_models), "--no-shapes", "--model", "first", "-o", "pic.gv"], tmp_path) == 0
    assert (tmp_path / "pic.dot").read_text().startswith("digraph first {")
    assert (
        run_cli([str(two_models), "--no-shapes", "--model", "first", "-o", "plain", "--format", "dot"], tmp_path) == 0
    )
    assert (tmp_path / "plain.dot").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["-o", "one.dot"], "pick one with --model NAME, or give a folder: -o DIR/"),
        (["--model", "first", "-o", "x.png", "--format", "svg"], "ends in .png but --image-format is svg"),
        (["--model", "first", "-o", "x.jpg"], "cannot tell the format"),
        (["--depth", "-2"], "--depth must be 0 or more"),
    ],
)
def test_cli_usage_errors(tmp_path, two_models, capsys, args, message):
    assert run_cli([str(two_models), "--no-shapes", *args], tmp_path) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_spec_errors_are_diagnostics(tmp_path, two_models, capsys):
    bad = tmp_path / "bad.net"
    bad.write_text("model m {\n  input x: (2,)\n  output y = x -> dens(1)\n}\n")
    assert run_cli([str(bad), "--no-shapes"], tmp_path) == 1
    err = capsys.readouterr().err
    assert "bad.net:3:19: error: unknown layer 'dens'; did you mean 'dense'?" in err
    assert run_cli([str(two_models), "--no-shapes", "--model", "nope"], tmp_path) == 1
    assert "no model named 'nope'" in capsys.readouterr().err


def test_cli_without_dot_writes_dot_source_and_one_line_hint(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "nowhere"))
    done = subprocess.run(
        [sys.executable, "-m", "netdsl.cli", "render", str(SMALL), "--no-shapes", "-o", str(tmp_path / "small.png")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("netdsl render: error: ")  # the shape of every command's errors
    assert "'dot' program was not found" in done.stderr and "apt-get install graphviz" in done.stderr
    assert (tmp_path / "small.dot").read_text().startswith("digraph small {")
    assert not (tmp_path / "small.png").exists()


def test_cli_expand_repeats(tmp_path):
    assert run_cli([str(SMALL), "--no-shapes", "-o", "collapsed.dot"], tmp_path) == 0
    assert run_cli([str(SMALL), "--no-shapes", "-o", "full.dot", "--expand-repeats"], tmp_path) == 0
    collapsed, full = (tmp_path / "collapsed.dot").read_text(), (tmp_path / "full.dot").read_text()
    assert "\u00d73" in collapsed and "\u00d7" not in full
    assert full.count("<B>dense</B>") == collapsed.count("<B>dense</B>") + 2


EDGES_SPEC = """
model enc {
  input x: (8,)
  output e = x -> dense(4)
}
block twice(n) {
  input x
  shared d = dense(n)
  output y = x -> d -> d
}
model top {
  input a: (8,)
  input s: (5, 8)
  shared lin = dense(8)
  p = a -> enc
  q = a -> dense(8) -> enc
  r = a -> lin * 3
  t = a -> (dense(8) -> relu) * 2
  u = t -> twice(8)
  seq, h, c = s -> lstm(8, return_state=true)
  output z = (p, q) -> concatenate
  output w = (r, u, h, c) -> concatenate
}
"""


def test_nested_models_shared_chains_groups_and_multi_output_layers():
    graph = graph_of(EDGES_SPEC, "top", text=True)
    view = build_view(graph)
    by_title = {}
    for item in view.items:
        by_title.setdefault(item.title, []).append(item)
    (enc,) = by_title["enc"]  # a nested model used twice: one node, two calls
    assert enc.role == "model" and enc.calls == 2 and enc.params == 36
    lin = next(i for i in by_title["dense"] if i.calls == 3)  # `-> lin * 3`: one layer called 3 times
    loops = [(e.out_call, e.in_call) for e in view.edges if e.src == e.dst == lin.key]
    assert loops == [(1, 2), (2, 3)]
    assert [i.count for i in by_title["relu"]] == [1, 1]  # a repeated group of two steps stays expanded
    (lstm,) = by_title["lstm"]
    assert sorted(e.index for e in view.edges if e.src == lstm.key) == [1, 2]
    source = render_graph(graph).source
    assert "#1\u2192#2" in source and "[1] (8,)" in source
    folded = build_view(graph, depth=0)
    (twice,) = [i for i in folded.items if i.role == "block"]
    assert twice.params == 72 and twice.out_shapes == [(8,)]  # the shared layer counted once
    _assert_edges_follow_the_graph(graph, folded)
    assert view.params == folded.params == 36 + 72 + 72 + 2 * 72 + 72 + 544


def test_long_repeats_collapse():
    spec = """
block unit(n) {
  input x
  output y = x -> dense(n) -> relu
}
model long {
  input x: (8,)
  output y = x -> dense(8) * 3000 -> unit(8) * 2000
}
"""
    graph = graph_of(spec, text=True)
    assert len(graph.nodes) == 1 + 3000 + 2 * 2000
    counts = sorted(i.count for i in build_view(graph, depth=0).items)
    assert counts == [1, 1, 2000, 3000]
    assert sorted(i.count for i in build_view(graph).items)[-1] == 3000  # open clusters: units stay drawn


_PLUGIN = '''
import netdsl

@netdsl.register_layer("twin_dense")
class TwinDense:
    """Two dense layers side by side (a plugin; never built here)."""

    def __init__(self, units, gate=False, **kwargs):
        pass
'''


def test_cli_plugins(tmp_path):
    (tmp_path / "my_plugin.py").write_text(_PLUGIN)
    spec = tmp_path / "p.net"
    spec.write_text("model p {\n  input x: (4,)\n  output y = x -> twin_dense(7)\n}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    command = [
        sys.executable,
        "-m",
        "netdsl.cli",
        "render",
        str(spec),
        "--no-shapes",
        "--format",
        "dot",
        "-o",
        str(tmp_path) + "/",
    ]
    done = subprocess.run(command + ["--plugin", "my_plugin"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "<B>twin_dense</B>" in (tmp_path / "p.dot").read_text() and "units=7" in (tmp_path / "p.dot").read_text()
    done = subprocess.run(
        command + ["--plugin", "no_such_plugin"], capture_output=True, text=True, env=env, timeout=120
    )
    # the same one-line error as build, summary and check give (exit 1)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        done.stderr == f"{spec}:1:1: error: cannot load plugin 'no_such_plugin': ModuleNotFoundError: "
        "No module named 'no_such_plugin'\n"
    )


def test_a_tensor_given_to_a_call_by_keyword_is_an_edge_named_by_its_keyword():
    """Issue 30: the encoder's states reach the decoder by `initial_state=[h, c]`; the diagram draws
    them as its edges, each labelled with the keyword, which output of the encoder, and its shape."""
    spec = (
        "model s2s {\n  input enc: (none, 12)\n  input dec: (none, 14)\n"
        "  seq, h, c = enc -> lstm(16, return_state=true)\n"
        "  output y = dec -> lstm(16, initial_state=[h, c]) -> dense(4)\n}\n"
    )
    view = build_view(graph_of(spec, "s2s", text=True))
    labelled = sorted((e.keyword, e.index) for e in view.edges if e.keyword is not None)
    assert labelled == [("initial_state", 1), ("initial_state", 2)]
    source = render_graph(graph_of(spec, "s2s", text=True)).source
    assert source.count("label=<initial_state [1] (16,)>") == 1 and "label=<initial_state [2] (16,)>" in source
