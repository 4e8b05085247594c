"""Render times of the ResNet-50 and MobileNetV2 specs against `keras.utils.plot_model`.

    .venv/bin/python bench/bench_render.py [--repeat 3]

First, whole commands in fresh processes (median of --repeat, the three
variants interleaved), for ResNet-50 and the U-Net:

- `netdsl render SPEC -o X.svg`: shapes and parameter counts from the
  pure-Python inference (no TensorFlow import: checked and reported);
- the same diagram with shapes from a Keras build, as `render` made it before
  the inference was trusted (import TensorFlow, build, draw);
- `netdsl render SPEC --no-shapes -o X.svg`: topology only.

The target is at most 1 s for `netdsl render specs/resnet50.net` with shapes.

Then, for each architecture, in one run (best of --repeat, wall clock):

- netdsl, topology only (`netdsl render --no-shapes`, no TensorFlow): parse +
  check + draw + `dot`, to SVG and to PNG, every layer drawn (no --depth), and at --depth 1;
- netdsl with Keras shapes: the diagram of the already-compiled graph
  (`render_graph` + `dot`), the same work `plot_model` does on a built model;
- `keras.utils.plot_model(model, show_shapes=True)` on
  `keras.applications.ResNet50(weights=None)` / `MobileNetV2(weights=None)`, to PNG and SVG
  (it needs `pydot`: `pip install pydot`; a failure is reported as the figure).

The target is under 1 s per diagram with `dot`. Ratios are plot_model / netdsl
(above 1: netdsl is faster). Building the Keras models is not timed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dsl"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CASES = [("resnet50", "ResNet50"), ("mobilenet_v2", "MobileNetV2")]
COMMAND_CASES = ["resnet50", "unet"]

# One process: the diagram with shapes from a Keras build (the render before pure-Python shapes).
_KERAS_RENDER = """
import sys
from netdsl.backend.runtime import quiet_tensorflow
quiet_tensorflow()
import netdsl
from netdsl.backend.compiler import compile_program
from netdsl.diagram.render import render_graph, write_diagram
analysis, _ = compile_program(netdsl.parse_file(sys.argv[1]), models=[sys.argv[2]])
write_diagram(render_graph(analysis.graphs[sys.argv[2]]), sys.argv[3], "svg")
"""
# One process: `netdsl render` with shapes, then which heavy modules it imported.
_PURE_RENDER = """
import sys
from netdsl.cli import main
code = main(["render", sys.argv[1], "-o", sys.argv[2] + ".svg"])
print(code, sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "jax")))
"""


def commands(repeat: int) -> int:
    """Whole `render` commands in fresh processes, interleaved; medians. Returns 1 when one failed."""
    python = sys.executable
    times: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}  # user + sys of the command and its `dot`
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            for name in COMMAND_CASES:
                spec, out = str(ROOT / "specs" / f"{name}.net"), os.path.join(tmp, name)
                variants = {
                    "pure": [python, "-c", _PURE_RENDER, spec, out],
                    "keras": [python, "-c", _KERAS_RENDER, spec, name, out],
                    "topology": [python, "-m", "netdsl.cli", "render", spec, "--no-shapes", "-o", out + ".svg"],
                }
                for variant, argv in variants.items():
                    before, start = _children_cpu(), time.perf_counter()
                    done = subprocess.run(
                        argv,
                        capture_output=True,
                        text=True,
                        timeout=600,
                        cwd=ROOT,
                        env={**os.environ, "PYTHONPATH": str(ROOT / "dsl")},
                    )
                    times.setdefault((name, variant), []).append(time.perf_counter() - start)
                    cpu.setdefault((name, variant), []).append(_children_cpu() - before)
                    if done.returncode != 0 or (variant == "pure" and done.stdout.split()[-2:] != ["0", "[]"]):
                        print(
                            f"{name} {variant}: failed or imported TensorFlow: {done.stdout[-200:]}{done.stderr[-400:]}"
                        )
                        status = 1
    print(
        f"whole render commands, fresh processes, median of {repeat} (s): wall clock | CPU (user+sys, "
        "with dot: what the machine's load barely changes)"
    )
    print(f"{'':44}" + "".join(f"{name:>20}" for name in COMMAND_CASES))
    rows = [
        ("pure", "render, shapes from pure Python (no TF)"),
        ("keras", "render, shapes from a Keras build"),
        ("topology", "render --no-shapes"),
    ]
    med = {key: statistics.median(values) for key, values in times.items()}
    med_cpu = {key: statistics.median(values) for key, values in cpu.items()}
    for variant, label in rows:
        print(
            f"{label:44}" + "".join(f"{med[(n, variant)]:>11.3f} | {med_cpu[(n, variant)]:5.3f}" for n in COMMAND_CASES)
        )
    print(
        f"{'ratio keras / pure':44}"
        + "".join(
            f"{med[(n, 'keras')] / med[(n, 'pure')]:>10.1f}x | {med_cpu[(n, 'keras')] / med_cpu[(n, 'pure')]:4.1f}x"
            for n in COMMAND_CASES
        )
    )
    resnet, resnet_cpu = med[("resnet50", "pure")], med_cpu[("resnet50", "pure")]
    print(
        f"target: netdsl render specs/resnet50.net with shapes <= 1 s: {resnet:.3f} s wall, {resnet_cpu:.3f} s CPU, "
        + (
            "met"
            if resnet <= 1.0
            else "MISSED on the wall clock" + (" (met in CPU time: a loaded machine)" if resnet_cpu <= 1.0 else "")
        )
    )
    print()
    return status


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commands-only", action="store_true", help="only the whole-command figures")
    args = parser.parse_args()

    status = commands(args.repeat)
    if args.commands_only:
        return status

    import netdsl
    from netdsl.diagram.render import render_graph
    from netdsl.semantics.analysis import analyze

    rows: dict[str, dict[str, float | str]] = {name: {} for name, _ in CASES}

    # 1. topology only, before anything imports TensorFlow
    for name, _ in CASES:
        spec = ROOT / "specs" / f"{name}.net"

        def topology(fmt: str, depth=None, spec=spec, name=name) -> bytes:
            graph = analyze(netdsl.parse_file(spec)).graphs[name]
            return render_graph(graph, shapes=False, depth=depth).pipe(format=fmt)

        rows[name]["topo_svg"] = best(lambda: topology("svg"), args.repeat)
        rows[name]["topo_png"] = best(lambda: topology("png"), args.repeat)
        rows[name]["topo_svg_d1"] = best(lambda: topology("svg", 1), args.repeat)
    assert "tensorflow" not in sys.modules

    # 2. with Keras: our diagram of the compiled graph, and plot_model of keras.applications
    from netdsl.backend.compiler import compile_program
    from netdsl.backend.runtime import quiet_tensorflow

    quiet_tensorflow()
    import keras

    for name, app in CASES:
        spec = ROOT / "specs" / f"{name}.net"
        analysis, _ = compile_program(netdsl.parse_file(spec), models=[name])
        graph = analysis.graphs[name]
        rows[name]["nodes"] = len(graph.nodes)
        rows[name]["shapes_svg"] = best(lambda: render_graph(graph).pipe(format="svg"), args.repeat)
        rows[name]["shapes_png"] = best(lambda: render_graph(graph).pipe(format="png"), args.repeat)
        rows[name]["shapes_svg_d1"] = best(lambda: render_graph(graph, depth=1).pipe(format="svg"), args.repeat)
        model = getattr(keras.applications, app)(weights=None)
        with tempfile.TemporaryDirectory() as tmp:
            for fmt in ("png", "svg"):
                target = os.path.join(tmp, f"{name}.{fmt}")
                try:
                    rows[name][f"plot_{fmt}"] = best(
                        lambda: keras.utils.plot_model(model, to_file=target, show_shapes=True), args.repeat
                    )
                except Exception as exc:  # reported as the figure
                    rows[name][f"plot_{fmt}"] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"

    print(f"render times, best of {args.repeat} (s); ratio = plot_model / netdsl")
    header = f"{'':34}" + "".join(f"{name:>16}" for name, _ in CASES)
    print(header)
    labels = [
        ("nodes", "layers in the spec's graph"),
        ("topo_svg", "netdsl --no-shapes, svg (all)"),
        ("topo_png", "netdsl --no-shapes, png (all)"),
        ("topo_svg_d1", "netdsl --no-shapes, svg, depth 1"),
        ("shapes_svg", "netdsl with Keras shapes, svg"),
        ("shapes_png", "netdsl with Keras shapes, png"),
        ("shapes_svg_d1", "netdsl with shapes, svg, depth 1"),
        ("plot_svg", "keras plot_model, svg"),
        ("plot_png", "keras plot_model, png"),
    ]
    for key, label in labels:
        print(f"{label:34}" + "".join(f"{_fmt(rows[name].get(key)):>16}" for name, _ in CASES))
    for fmt in ("svg", "png"):
        cells = []
        for name, _ in CASES:
            plot, ours = rows[name].get(f"plot_{fmt}"), rows[name][f"shapes_{fmt}"]
            cells.append(f"{plot / ours:.2f}x" if isinstance(plot, float) else "n/a")
        print(f"{'ratio plot_model / netdsl, ' + fmt:34}" + "".join(f"{c:>16}" for c in cells))
    for name, _ in CASES:
        for key in ("plot_svg", "plot_png"):
            if isinstance(rows[name].get(key), str):
                print(f"{name} {key}: {rows[name][key]}")
    slow = [
        f"{name} {key}"
        for name, _ in CASES
        for key in ("topo_svg", "topo_png", "shapes_svg", "shapes_png")
        if rows[name][key] >= 1.0
    ]
    print("target < 1 s per diagram: " + ("met" if not slow else "MISSED: " + ", ".join(slow)))
    return status


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int):
        return str(value)
    return "failed" if value else "-"


if __name__ == "__main__":
    sys.exit(main())
