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
from pathlib import Path

from netdsl.cli.common import EXIT_OK, warning_line
from netdsl.errors import UsageError, printable
from netdsl.tracking import compare, listing
from netdsl.tracking.found import find
from netdsl.training.run.record import open_run

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
    found = find(folder)
    _warn(found.warnings)
    entries = listing.entries(found, Path(folder))
    if args.json:
        print(json.dumps([entry.as_json() for entry in entries], indent=2))
    elif entries:
        print("\n".join(listing.table(entries)))
    else:
        print(f"no runs under {printable(folder)}", file=sys.stderr)
    return EXIT_OK


def _compare(paths: list[str], args: argparse.Namespace) -> int:
    if len(paths) < 2:
        raise UsageError("compare takes two run folders or more")
    runs = [open_run(path) for path in paths]
    if args.json:
        print(json.dumps({"runs": [str(run.dir) for run in runs], "differ": compare.differing(runs),
                          "settings": {run.name: compare.settings(run) for run in runs},
                          "metrics": {run.name: compare.metrics(run) for run in runs}}, indent=2))
    else:
        print("\n".join(compare.table(runs)))
    if args.out:
        written = compare.plot(runs, Path(args.out))
        print(f"wrote {printable(written)}", file=sys.stderr)
    return EXIT_OK


def _push(paths: Sequence[str], args: argparse.Namespace) -> int:
    from netdsl.tracking.push import push
    from netdsl.tracking.pushed import shown_uri

    if not paths:
        raise UsageError("push takes the run folders, sweep folders or folders of them to send")
    if not args.to:
        raise UsageError("push needs --to mlflow:<tracking URI> or --to tensorboard:<folder>")
    count = push(list(paths), args.to, args.experiment)
    _warn(count.warnings)
    print(f"{printable(shown_uri(args.to))}: {count.created} created, {count.updated} updated, "
          f"{count.unchanged} unchanged; {count.metric_values} metric values, {count.artifacts} files "
          f"({count.seconds:.1f} s)")
    return EXIT_OK
