"""The order in which `make test`'s workers take test files: the longest first.

pytest-xdist's `--dist loadfile` hands out whole files in the order it is given them (with
`--no-loadscope-reorder`; by default it puts the files of the most tests first, which leaves the
long files of few tests, journeys and sweeps, to the end: one worker runs them while the other
idles). A file's expected seconds come from FILE_SECONDS, measured on a whole run; a file not in it
is estimated from its marks. The order only decides which worker runs what and when: every test
still runs, each file's tests in their own order.

Refresh the table after a quiet `make test`: `python -m tests.support.schedule build/test-room-times.json`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

FILE_SECONDS = Path(__file__).with_name("file_seconds.json")
SLOW_TEST_S = 20.0  # a test marked slow, in a file the table does not know yet
OTHER_TEST_S = 0.2  # any other test there


def expected_seconds(items: list[pytest.Item], known: dict[str, float]) -> dict[str, float]:
    """Each file's seconds: the table's, or an estimate from the marks of its tests."""
    estimates: dict[str, float] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if path not in known:
            slow = item.get_closest_marker("slow") is not None
            estimates[path] = estimates.get(path, 0.0) + (SLOW_TEST_S if slow else OTHER_TEST_S)
    return {**estimates, **known}


def longest_files_first(items: list[pytest.Item]) -> None:
    """Reorders `items` in place by file, longest first; a file's tests keep their order."""
    try:
        known = json.loads(FILE_SECONDS.read_text())
    except (OSError, ValueError):
        known = {}
    seconds = expected_seconds(items, known)
    first_seen = {path: i for i, path in reversed(list(enumerate(item.nodeid.split("::", 1)[0] for item in items)))}
    items.sort(key=lambda item: (-seconds[item.nodeid.split("::", 1)[0]], first_seen[item.nodeid.split("::", 1)[0]]))


def main(room_times: str) -> None:
    """Writes FILE_SECONDS from a `--room-times` file: each file's wall seconds, to a tenth."""
    files = json.loads(Path(room_times).read_text())["files"]
    table = {path: round(figures[0], 1) for path, figures in sorted(files.items())}
    FILE_SECONDS.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
