"""What the measured seconds of each test decide: which tests are `slow`, and the order in which
`make test`'s workers take the files.

TEST_SECONDS holds the CPU seconds of every test that took at least RECORDED_S on a whole run
(`--room-times`: the test process's and its children's, which a busy machine hardly changes).

- A test of SLOW_S or more is marked `slow`, as if it said `@pytest.mark.slow`: `make test-fast`
  leaves it out, `make test` runs it. Tests marked by hand stay marked.
- pytest-xdist's `--dist loadfile` hands out whole files in the order it is given them (with
  `--no-loadscope-reorder`; by default it puts the files of most tests first, which left the long
  files of few tests, journeys and sweeps, to the end: one worker ran them while the other idled).
  The workers order the files by their tests' seconds, longest first; a test not in the table
  counts as SLOW_GUESS_S when marked slow, else nothing. A file's tests keep their order.

Neither changes what runs: every test still runs in `make test`. Refresh the table after a quiet
`make test`: `python -m tests.support.schedule build/test-room-times.json`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

TEST_SECONDS = Path(__file__).with_name("test_seconds.json")
RECORDED_S = 0.25  # a test under this is left out of the table: it counts as nothing
SLOW_S = 1.0  # the edit loop's bound for one test
SLOW_GUESS_S = 20.0  # a test marked slow by hand that the table does not know yet


def measured() -> dict[str, float]:
    try:
        table = json.loads(TEST_SECONDS.read_text())
    except (OSError, ValueError):
        return {}
    return {str(nodeid): float(seconds) for nodeid, seconds in table.items()}


def mark_slow(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """The tests the table measured at SLOW_S or more get the `slow` mark."""
    for item in items:
        if seconds.get(item.nodeid, 0.0) >= SLOW_S and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def longest_files_first(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Reorders `items` in place by file, longest first; a file's tests keep their order."""
    total: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for i, item in enumerate(items):
        guess = SLOW_GUESS_S if item.get_closest_marker("slow") is not None else 0.0
        total[file_of(item)] = total.get(file_of(item), 0.0) + seconds.get(item.nodeid, guess)
        first_seen.setdefault(file_of(item), i)
    items.sort(key=lambda item: (-total[file_of(item)], first_seen[file_of(item)]))


def main(room_times: str) -> None:
    """Writes TEST_SECONDS from a `--room-times` file: each test's CPU seconds, to a hundredth."""
    tests = json.loads(Path(room_times).read_text())["tests"]
    table = {nodeid: round(figures[1], 2) for nodeid, figures in sorted(tests.items()) if figures[1] >= RECORDED_S}
    TEST_SECONDS.write_text(json.dumps(table, indent=0) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
