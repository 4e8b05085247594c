"""How fast is `netdsl build`? Whole-model build time against plain Keras, in the same run.

For specs/resnet50.net and specs/mobilenet_v2.net, prints the best (minimum)
time over N interleaved runs — the least disturbed by other work on a shared
machine; the median is printed too — of

  spec   `netdsl.build(path)`: read, parse, check, expand, build every Keras layer
  hand   the same architecture written as hand-written functional Keras
         (tests/support/keras_reference.py: `resnet50_handwritten`, `mobilenet_v2_handwritten`)
  json   `keras.models.model_from_json` of the spec-built model's JSON

as ratios spec/hand (target: at most 1.05) and json/hand, and the front end's
share of a spec build:

  front  parse + check + expand alone (pure Python, no Keras) / spec
         (target: under 5%)
  in-build  the time an instrumented spec build spends outside its Keras
         backend (reading, parsing, checking declarations, the expander,
         garbage collection between calls) / that build

Runs are interleaved (spec, hand, json, spec, ...) so that drift on a shared
machine hits all three alike; Keras' session is cleared between builds.

    python bench/bench_build.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
sys.path.insert(0, str(ROOT / "tests" / "support"))

CASES = [
    ("resnet50", ROOT / "specs" / "resnet50.net", "resnet50_handwritten"),
    ("mobilenet_v2", ROOT / "specs" / "mobilenet_v2.net", "mobilenet_v2_handwritten"),
]


def _timed(fn):
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _clear():
    import keras

    keras.backend.clear_session()
    gc.collect()


class _Clock:
    """Wraps KerasBackend so that the time inside its Keras work is summed."""

    def __init__(self):
        from netdsl.backend.builder import KerasBackend

        clock = self
        self.inside = 0.0

        class Timed(KerasBackend):
            def input(self, node, shape, dtype):
                start = time.perf_counter()
                try:
                    return super().input(node, shape, dtype)
                finally:
                    clock.inside += time.perf_counter() - start

            def apply(self, node, inputs):
                start = time.perf_counter()
                try:
                    return super().apply(node, inputs)
                finally:
                    clock.inside += time.perf_counter() - start

            def finish(self, graph):
                start = time.perf_counter()
                try:
                    return super().finish(graph)
                finally:
                    clock.inside += time.perf_counter() - start

        self.backend_class = Timed


def front_end(path: Path) -> float:
    from netdsl.semantics.analysis import analyze
    from netdsl.syntax.loader import load_file

    start = time.perf_counter()
    analysis = analyze(load_file(path))
    elapsed = time.perf_counter() - start
    assert not analysis.errors, analysis.errors
    return elapsed


def in_build_overhead(path: Path) -> tuple[float, float]:
    """(total, time outside the Keras backend) of one instrumented spec build."""
    import netdsl.backend.builder as backend_module
    import netdsl.backend.compiler as compile_module
    from netdsl.semantics.session import LoadedSpec

    clock = _Clock()
    original = backend_module.KerasBackend
    backend_module.KerasBackend = clock.backend_class
    try:
        gc.collect()
        start = time.perf_counter()
        compile_module.build_one(LoadedSpec.of(path).model(None))  # read, pick, check and build
        total = time.perf_counter() - start
    finally:
        backend_module.KerasBackend = original
    return total, total - clock.inside


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()

    import keras
    import keras_reference as ref

    import netdsl

    netdsl.build(CASES[0][1])  # warm: first Keras use, custom objects, grammar tables
    _clear()
    print(
        f"keras {keras.__version__}, backend {keras.backend.backend()}; best of {args.repeat} interleaved runs "
        f"(median below)\n"
    )
    header = (
        f"{'model':<14}{'spec s':>9}{'hand s':>9}{'json s':>9}{'spec/hand':>11}{'json/hand':>11}"
        f"{'front':>9}{'in-build':>10}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    worst_share = 0.0
    for name, path, hand_name in CASES:
        hand_builder = getattr(ref, hand_name)
        spec_times, hand_times, json_times = [], [], []
        config = netdsl.build(path).to_json()
        _clear()
        for _ in range(args.repeat):
            t, model = _timed(lambda: netdsl.build(path))
            params = model.count_params()
            spec_times.append(t)
            del model
            _clear()
            t, model = _timed(hand_builder)
            assert model.count_params() == params, (model.count_params(), params)
            hand_times.append(t)
            del model
            _clear()
            t, model = _timed(lambda: keras.models.model_from_json(config))
            json_times.append(t)
            del model
            _clear()
        spec, hand, from_json = (min(x) for x in (spec_times, hand_times, json_times))
        medians = [statistics.median(x) for x in (spec_times, hand_times, json_times)]
        fronts = [front_end(path) for _ in range(args.repeat)]
        totals, outsides = [], []
        for _ in range(args.repeat):
            total, outside = in_build_overhead(path)
            totals.append(total)
            outsides.append(outside)
            _clear()
        front = min(fronts) / spec
        in_build = min(outsides) / min(totals)
        worst = max(worst, spec / hand)
        worst_share = max(worst_share, front)
        print(
            f"{name:<14}{spec:>9.3f}{hand:>9.3f}{from_json:>9.3f}{spec / hand:>11.3f}{from_json / hand:>11.3f}"
            f"{front:>8.1%}{in_build:>10.1%}"
        )
        print(
            f"{'  median':<14}{medians[0]:>9.3f}{medians[1]:>9.3f}{medians[2]:>9.3f}"
            f"{medians[0] / medians[1]:>11.3f}{medians[2] / medians[1]:>11.3f}"
        )
    print()
    print(f"spec/hand worst {worst:.3f} (target <= 1.05): {'ok' if worst <= 1.05 else 'OVER'}")
    print(
        f"front end's share (parse + check) worst {worst_share:.1%} (target < 5%): "
        f"{'ok' if worst_share < 0.05 else 'OVER'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
