"""`netdsl runs [DIR] [--json]`, `netdsl runs compare RUN RUN ... [--out FILE]` and
`netdsl runs push DIR|RUN ... --to URI`: run folders side by side and in tracking servers (docs/runs.md).

`runs` reads files only (no backend, no Optuna): a folder of twenty runs lists in well under a
second. A folder named `compare` or `push` is listed as `./compare`.

Exit codes: 0 done (folders passed over are warnings), 1 a folder or file that cannot be read, or a
server that refused, 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from netdsl import api
from netdsl.cli.common import EXIT_OK, warning_line
from netdsl.errors import UsageError, printable

ACTIONS = ("compare", "push")


def run(args: argparse.Namespace) -> int:
    action = args.words[0] if args.words and args.words[0] in ACTIONS else None
    paths = args.words[1:] if action else args.words
    if action != "compare" and args.out:
        raise UsageError("--out draws the curves of `netdsl runs compare`")
    if action != "push" and args.to:
        raise UsageError("--to names where `netdsl runs push` sends runs")
    if action == "compare":
        return _compare(paths, args)
    if action == "push":
        return _push(paths, args)
    if len(paths) > 1:
        raise UsageError("runs lists one folder; `netdsl runs compare RUN RUN ...` compares runs")
    return _list(paths[0] if paths else ".", args)


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(warning_line("runs", line), file=sys.stderr)


def _list(folder: str, args: argparse.Namespace) -> int:
    listing = api.runs_listing(folder)
    _warn(listing.warnings)
    if args.json:
        print(json.dumps(listing.json, indent=2))
    elif listing.table:
        print("\n".join(listing.table))
    else:
        print(f"no runs under {printable(folder)}", file=sys.stderr)
    return EXIT_OK


def _compare(paths: list[str], args: argparse.Namespace) -> int:
    if len(paths) < 2:
        raise UsageError("compare takes two run folders or more")
    compared = api.runs_compared(paths)
    if args.json:
        print(json.dumps(compared.json, indent=2))
    else:
        print("\n".join(compared.table))
    if args.out:
        written = compared.plot(args.out)
        print(f"wrote {printable(written)}", file=sys.stderr)
    return EXIT_OK


def _push(paths: Sequence[str], args: argparse.Namespace) -> int:
    if not paths:
        raise UsageError("push takes the run folders, sweep folders or folders of them to send")
    if not args.to:
        raise UsageError("push needs --to mlflow:<tracking URI> or --to tensorboard:<folder>")
    count, shown = api.push_runs(paths, args.to, args.experiment)
    _warn(count.warnings)
    print(
        f"{printable(shown)}: {count.created} created, {count.updated} updated, "
        f"{count.unchanged} unchanged; {count.metric_values} metric values, {count.artifacts} files "
        f"({count.seconds:.1f} s)"
    )
    return EXIT_OK
