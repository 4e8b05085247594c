"""How fast is `netdsl check`? Measured against `import tensorflow` in the same run.

Prints:
  1. whole-process time of `netdsl check specs/resnet50.net` vs
     `python -c "import tensorflow"` (target: at most 0.1 of it);
  2. in-process check time of generated specs of 100, 1,000 and 10,000
     layers (target: 10,000 layers under 1 s, growing linearly).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))


def wall(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def generated_spec(layers: int) -> str:
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
    # each unit is 4 layers (dense, layer_norm, add, relu); write them out, no repeats,
    # so parsing scales too
    for i in range((layers - 1) // 4):
        lines.append(f"  x = x -> unit(64)  # unit {i}")
    lines += ["  output y = x -> dense(10)", "}", ""]
    return "\n".join(lines)


def check_time(text: str, repeat: int = 3) -> tuple[float, int]:
    import netdsl
    from netdsl.semantics.analysis import analyze

    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        program = netdsl.parse(text, filename="generated.net")
        analysis = analyze(program)
        best = min(best, time.perf_counter() - start)
        assert not analysis.errors, analysis.errors[:3]
        count = len(analysis.graphs["deep"].nodes)
    return best, count


def main() -> None:
    python = sys.executable
    netdsl_cli = [python, "-m", "netdsl.cli", "check"]
    spec = ROOT / "specs" / "resnet50.net"
    repeat = 5
    tf = wall([python, "-c", "import tensorflow"], repeat)
    check = wall(netdsl_cli + [str(spec)], repeat)
    print(f"process time, median of {repeat}:")
    print(f"  python -c 'import tensorflow'      {tf:7.3f} s")
    print(f"  netdsl check specs/resnet50.net     {check:7.3f} s")
    print(f"  ratio check / import tensorflow     {check / tf:7.3f}   (target <= 0.10)")
    print()
    print("in-process check time of generated specs (parse + check + expand):")
    with tempfile.TemporaryDirectory():
        for layers in (100, 1_000, 10_000):
            seconds, count = check_time(generated_spec(layers))
            print(f"  {count:6,} layers   {seconds:7.3f} s   {seconds / count * 1e6:6.1f} us/layer")
    print("  (target: 10,000 layers under 1 s, growing linearly)")


if __name__ == "__main__":
    main()
