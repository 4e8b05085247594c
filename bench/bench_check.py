"""How fast is `netdsl check`? Measured against `import tensorflow` in the same run.

    .venv/bin/python bench/bench_check.py [--repeat N]

Prints:
  1. whole-process time of `netdsl check` (median of N runs, interleaved with
     `python -c "import tensorflow"`): on specs/resnet50.net (target: at most
     0.1 of the import), on every example spec at once, and on flat specs of
     1,000, 10,000 and 60,000 statements written out one by one
     (`h2 = h1 -> dense(16)`, generated here; the 60,000 one is two models,
     1.7 MB, under the 2 MiB cap). Targets: 10,000 statements at most 0.45 of
     the import; 60,000 at most 7 times the 10,000; peak memory under 1 GB.
     Then the CPU time of `netdsl check` of a fine-tuning spec (keras.io's
     EfficientNetB0 example, `import "zoo:efficientnet_b0"`; issue 32 asks
     0.1 s) and of `netdsl summary --cost` of the 10,000 statements against
     their check (issue 31 asks at most 1.2 times);
  2. in-process time of the same flat specs (median of N, warm, as a language
     server re-checks): the parse and the check apart, the parse's share, the
     cost per statement (target: 1,000 statements within 100 ms);
  3. in-process time of generated specs of 100, 1,000 and 10,000 layers made
     by a block used over and over (10,000 layers under 1 s, growing linearly);
  4. the CPU time of `netdsl check` on 2 MiB of `let` lines (the bound of
     netdsl.limits: 10 s; issue 22's fuzz finding: one line repeated 130,739
     times and a syntax error in the last line took 11.6 s; one line repeated
     130,730 times, each a second declaration of its name, 5-7 s; a model of one
     line repeated with a syntax error in its last lines, 9.3 s);
  5. the CPU time of `netdsl check` on small files that spend the budgets of
     `let` functions (the bound: 2 s for a file up to 64 KB; issue 22's fuzz
     findings took 2.06-2.09 s): the margin asked is 70% of each bound.

Processes run with bytecode caching on (as an installed netdsl has it), after
one warm-up run. The machine is shared: the medians of interleaved runs are
what to compare, and the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))

FLAT_SIZES = (1_000, 10_000, 60_000)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def flat_spec(statements: int, models: int = 1) -> str:
    """`statements` statements written out one by one, in `models` models."""
    lines = []
    per_model = statements // models
    for m in range(models):
        lines += [f"model flat{m} {{", "  input h0: (32,)"]
        lines += [f"  h{i} = h{i - 1} -> dense(16)" for i in range(1, per_model + 1)]
        lines += [f"  output y = h{per_model}", "}", ""]
    return "\n".join(lines)


# keras.io's "Image classification via fine-tuning with EfficientNet" as a spec (tests/zoo/test_keras_io_guides.py)
FINE_TUNING = """\
import "zoo:efficientnet_b0"

model dogs {
  input image: (224, 224, 3)
  f = image -> efficientnet_b0 -> global_average_pooling2d -> batch_norm
  output pred = f -> dropout(0.2) -> dense(120, activation=softmax)
  train {
    optimizer = adam(1e-2)
    loss = categorical_crossentropy
    metrics = [accuracy]
    init = {"efficientnet_b0": "zoo:efficientnet_b0"}
    freeze = ["efficientnet_b0"]
    unfreeze = ["efficientnet_b0.block7a_*", "efficientnet_b0.top_*"]
    unfreeze_after = 25
    unfreeze_learning_rate = 1e-5
  }
}
"""


def let_specs(size: int = 2 * 1024 * 1024 - 4096) -> dict[str, str]:
    """2 MiB specs of `let` lines: distinct ones; one repeated (errors: it is declared again and
    again) with a syntax error in the last line (issue 22, seed 22 input 2421 of the campaign)."""
    distinct = "".join(f"let c{i} = {i} * 2 + 1\n" for i in range(size // 20))[:size]
    repeated = "let a67 = [a66]\n" * (size // 16)
    chain = "".join(f"let a{i} = [a{i - 1}]\n" for i in range(1, 67))
    use = "model m {\n  input x: (4,)\n  output y = x -> dense(1, kernel_initializer=a67)\n}\n"
    return {
        "distinct let lines": distinct[: distinct.rindex("\n") + 1],
        "one let line repeated, then `let (`": repeated + "let (\n",
        # seed 22 input 71668: every repeat a second declaration of a67, reported and checked
        "one let line declared again and again": "let a0 = [1]\n" + chain + repeated[: size - 4096] + use,
        # seed 22 input 20411: one model's line repeated, a syntax error in its last lines
        "one model line repeated, an error last": "model m {\n"
        + "  input x: (10, 8)\n" * (size // 19)
        + "  y = (-> x\n  output y = x\n}\n",
    }


def budget_specs() -> dict[str, str]:
    """Small files that spend the budgets of `let` functions (tests/fixtures/errors/budget_*.net)."""
    fixtures = ROOT / "tests" / "fixtures" / "errors"
    names = ["budget_let_functions", "budget_function_in_blocks", "budget_compare_lists", "budget_min_max"]
    return {name: (fixtures / f"{name}.net").read_text(encoding="utf-8") for name in names}


def process_cpu(cmd: list[str]) -> float:
    """User + system CPU seconds of one process."""
    process = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def interleaved_cpu(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    """Median CPU seconds of each command, the commands taking turns after a warm-up: on a shared
    machine CPU time moves less than wall time, and the ratios are what to compare."""
    for cmd in commands.values():
        process_cpu(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            times[name].append(process_cpu(cmd))
    return {name: statistics.median(times[name]) for name in commands}


def run_process(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak resident memory (bytes) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss * 1024


def interleaved(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, int]]:
    """Median wall time and largest peak memory of each command, the commands taking turns."""
    for cmd in commands.values():  # warm-up: bytecode written, files in the page cache
        run_process(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, int] = {name: 0 for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            seconds, peak = run_process(cmd)
            times[name].append(seconds)
            peaks[name] = max(peaks[name], peak)
    return {name: (statistics.median(times[name]), peaks[name]) for name in commands}


IN_PROCESS = """
import gc, json, resource, statistics, sys, time
from netdsl.semantics.analysis import analyze
from netdsl.syntax.loader import load_text
text = open(sys.argv[1], encoding="utf-8").read()
parse, check = [], []
for _ in range(int(sys.argv[2])):
    program = analysis = None  # the previous result goes first, as a language server replaces it
    gc.collect()
    start = time.perf_counter()
    program = load_text(text, "flat.net")
    middle = time.perf_counter()
    analysis = analyze(program)
    parse.append(middle - start)
    check.append(time.perf_counter() - middle)
    assert not analysis.errors, analysis.errors[:3]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"parse": statistics.median(parse), "check": statistics.median(check), "peak": peak}))
"""


def in_process(path: Path, repeat: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(path), str(repeat)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def block_spec(layers: int) -> str:
    """A deep MLP-and-block spec with `layers` layers after expansion."""
    lines = [
        "block unit(width) {",
        "  input x",
        "  h = x -> dense(width) -> layer_norm",
        "  output y = (h + x) -> relu",
        "}",
        "",
        "model deep {",
        "  input x: (64,)",
    ]
    # each unit is 4 layers (dense, layer_norm, add, relu); written out, no repeats
    lines += [f"  x = x -> unit(64)  # unit {i}" for i in range((layers - 1) // 4)]
    lines += ["  output y = x -> dense(10)", "}", ""]
    return "\n".join(lines)


def block_check_time(text: str, repeat: int = 3) -> tuple[float, int]:
    from netdsl.semantics.analysis import analyze
    from netdsl.syntax.loader import load_text

    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        analysis = analyze(load_text(text, "generated.net"))
        best = min(best, time.perf_counter() - start)
        assert not analysis.errors, analysis.errors[:3]
        count = len(analysis.graphs["deep"].nodes)
    return best, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--budgets-only", action="store_true", help="only parts 4 and 5 (the bounds of issue 22)")
    args = parser.parse_args()
    python = sys.executable
    check = [python, "-m", "netdsl.cli", "check"]
    if not args.budgets_only:
        speed(args, check)
    budgets(args, check)


def speed(args: argparse.Namespace, check: list[str]) -> None:
    """Parts 1 to 3: against `import tensorflow`, in-process, generated block specs."""
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        flat = {}
        for n in FLAT_SIZES:
            flat[n] = Path(tmp) / f"flat{n}.net"
            flat[n].write_text(flat_spec(n, models=2 if n > 30_000 else 1), encoding="utf-8")
        fine_tuning = Path(tmp) / "fine_tuning.net"
        fine_tuning.write_text(FINE_TUNING, encoding="utf-8")
        commands = {
            "tf": [python, "-c", "import tensorflow"],
            "resnet50": check + ["specs/resnet50.net"],
            "examples": check + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "specs").glob("*.net")),
            **{n: check + [str(flat[n])] for n in FLAT_SIZES},
        }
        results = interleaved(commands, args.repeat)
        tf = results["tf"][0]
        print(f"process time, median of {args.repeat} interleaved runs (peak memory):")
        print(f"  python -c 'import tensorflow'           {tf:7.3f} s")
        rows = [
            ("resnet50", "netdsl check specs/resnet50.net", "(target <= 0.10)"),
            ("examples", "netdsl check specs/*.net", ""),
        ]
        rows += [
            (n, f"netdsl check, {n:,} flat statements", "(target <= 0.45)" if n == 10_000 else "") for n in FLAT_SIZES
        ]
        for key, label, target in rows:
            seconds, peak = results[key]
            print(
                f"  {label:38s}  {seconds:7.3f} s  {seconds / tf:5.2f} x import tensorflow  "
                f"{peak / 2**20:6.0f} MiB  {target}"
            )
        big, small = results[60_000][0], results[10_000][0]
        size = flat[60_000].stat().st_size
        print(
            f"  60,000 / 10,000 statements: {big / small:.2f} x the time ({size / 1e6:.2f} MB; target <= 7, "
            f"peak memory <= 1 GB)"
        )
        cpu = interleaved_cpu(
            {
                "fine_tuning": check + [str(fine_tuning)],
                "check": check + [str(flat[10_000])],
                "cost": [python, "-m", "netdsl.cli", "summary", "--cost", str(flat[10_000])],
            },
            args.repeat,
        )
        print()
        print(f"process CPU time (user + system), median of {args.repeat} interleaved runs:")
        print(f"  netdsl check, a zoo fine-tuning spec      {cpu['fine_tuning']:7.3f} s  (target <= 0.1 s, issue 32)")
        print(
            f"  netdsl summary --cost, 10,000 statements  {cpu['cost']:7.3f} s  {cpu['cost'] / cpu['check']:5.2f} x "
            f"its check's {cpu['check']:.3f} s  (target <= 1.2, issue 31)"
        )
        print()
        print(f"in-process, median of {args.repeat} (warm: parse + check of the text, as a language server):")
        for n in FLAT_SIZES:
            got = in_process(flat[n], args.repeat if n < 60_000 else max(2, args.repeat // 2))
            total = got["parse"] + got["check"]
            print(
                f"  {n:6,} statements  {total * 1e3:8.1f} ms  (parse {got['parse'] * 1e3:7.1f} ms, "
                f"{got['parse'] / total:4.0%} of it; check {got['check'] * 1e3:7.1f} ms)  "
                f"{total / n * 1e6:5.1f} us/statement  peak {got['peak'] / 2**20:5.0f} MiB"
            )
        print("  (target: 1,000 statements within 100 ms)")
    print()
    print("in-process check time of specs made of one block used over and over (parse + check + expand):")
    for layers in (100, 1_000, 10_000):
        seconds, count = block_check_time(block_spec(layers))
        print(f"  {count:6,} layers   {seconds:7.3f} s   {seconds / count * 1e6:6.1f} us/layer")
    print("  (target: 10,000 layers under 1 s, growing linearly)")


def budgets(args: argparse.Namespace, check: list[str]) -> None:
    """Parts 4 and 5: CPU time against the bounds of tests/fuzz/runner.py."""
    print()
    print(
        f"CPU time of `netdsl check` on 2 MiB of `let` lines, median of {args.repeat} (bound 10 s; "
        f"target <= {MARGIN:.0%} of it):"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in let_specs().items():
            path = Path(tmp) / "lets.net"
            path.write_text(text, encoding="utf-8")
            cpu = statistics.median(process_cpu(check + [str(path)]) for _ in range(args.repeat))
            print(f"  {name:38s}  {cpu:6.2f} s  {cpu / LARGE_BOUND:4.0%} of the bound")
    print()
    print(
        f"CPU time of checking small files that spend the budgets of `let` functions, in-process, warm, median of "
        f"{args.repeat} (bound {SMALL_BOUND:.0f} s; target <= {MARGIN:.0%} of it):"
    )
    for name, text in budget_specs().items():
        cpu = statistics.median(warm_check_cpu(text) for _ in range(args.repeat))
        print(f"  {name:38s}  {cpu:6.2f} s  {cpu / SMALL_BOUND:4.0%} of the bound")


LARGE_BOUND, SMALL_BOUND, MARGIN = 10.0, 2.0, 0.7  # seconds of CPU (tests/fuzz/runner.py's Bounds)


def warm_check_cpu(text: str) -> float:
    """CPU seconds of `netdsl.check` on `text` in this process (imports done, as in a fuzz worker)."""
    import netdsl

    netdsl.check(text="let a = 1\n", filename="warm.net")
    start = time.process_time()
    netdsl.check(text=text, filename="budget.net")
    return time.process_time() - start


if __name__ == "__main__":
    main()
