"""`python -m tests.fuzz [--count N] [--seed S] [--report DIR] ...`: fuzz `netdsl.check`.

Prints a line of figures every 1,000 inputs and a JSON summary at the end
(also written to DIR/summary.json with every finding's input as DIR/*.net).
Exit status 1 when anything was found. Run it niced on a shared machine:
`nice -n 10 python -m tests.fuzz --count 100000 --seed 1 --report "$(mktemp -d)"`.
DIR is made if missing; one that is there must be a folder of yours that no
other account may write to (not a fixed name in /tmp that anyone could have
made first), and every file goes in atomically (`netdsl.atomic`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from netdsl.atomic import write_bytes
from netdsl.errors import printable

from .exported import EXPORTED_TARGETS
from .runner import Bounds, Report, report_folder, run
from .targets import TARGETS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--target",
        choices=(*TARGETS, *EXPORTED_TARGETS),
        default="spec",
        help="spec: netdsl.check; keras: the Keras -> .net reader; data: the training data readers; "
        "saved_model, onnx, tflite: what netdsl reads of an exported file (tests/fuzz/exported.py)",
    )
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first input")
    parser.add_argument("--only", type=int, nargs="+", help="make and check only these inputs")
    parser.add_argument("--generated", type=float, default=0.4, help="share of inputs derived from the grammar")
    parser.add_argument("--big", type=float, default=0.01, help="share of mutations grown to 64 KB .. 2 MiB")
    parser.add_argument("--report", type=Path, help="folder for summary.json and the findings' inputs")
    parser.add_argument(
        "--max-seconds",
        type=float,
        help="stop after this much wall time (a campaign on a shared machine: the figures say how many inputs ran)",
    )
    parser.add_argument("--print", dest="show", action="store_true", help="print the inputs of --only and stop")
    args = parser.parse_args(argv)
    if args.show:
        from .mutate import load_corpus
        from .runner import make_input

        corpus = load_corpus()
        for index in args.only or []:
            source, text = make_input(args.seed, index, corpus, args.generated, args.big)
            print(f"# input {index} of seed {args.seed}: {source}\n{text}")
        return 0
    refusal = report_folder(args.report) if args.report is not None else None
    if refusal is not None:
        print(f"{printable(str(args.report))}: error: {refusal}", file=sys.stderr)
        return 1
    report = run(
        args.count,
        args.seed,
        Bounds(),
        start=args.start,
        only=args.only,
        generated_share=args.generated,
        big=args.big,
        save_dir=args.report,
        progress=lambda r: _progress(r, args.report),
        target=args.target,
        max_seconds=args.max_seconds,
    )
    print(_write_summary(report, args.report))
    return 1 if report.findings else 0


def _write_summary(report: Report, folder: Path | None) -> str:
    text = json.dumps(report.summary(), indent=2)
    if folder is not None:
        write_bytes(folder / "summary.json", (text + "\n").encode("utf-8"))
    return text


def _progress(report: Report, folder: Path | None) -> None:
    """A line of figures, and the summary so far (a campaign stopped early keeps its figures)."""
    _write_summary(report, folder)
    slowest = report.slowest[0] if report.slowest else (0.0, 0, "", 0)
    print(
        f"{report.inputs:,} inputs, {len(report.findings)} findings, {dict(report.outcomes)}, "
        f"slowest {slowest[0]:.2f} s ({slowest[1]:,} bytes, input {slowest[3]}), "
        f"peak RSS {report.peak_rss_kb / 1024:.0f} MB, {report.wall_seconds or 0:.0f} s",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
