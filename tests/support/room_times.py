"""Seconds per room, printed at the end of a pytest run: where the suite's time goes.

A room is a folder of tests/ (tests/training/ -> "training"); the files directly in tests/ are
"(whole project)". Two figures per test, each its setup, call and teardown summed: wall seconds as
the worker measured them (with `-n 2` they sum to about twice the wall time), and CPU seconds: the
worker's own and those of the processes it started and waited for (forked_cli's commands
among them), which a busy machine hardly changes.
`--room-times FILE` adds this run's figures to FILE (JSON) and prints the sums: `make test` runs in
stages and prints the whole suite's table after its last one.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.support import forked_cli

WHOLE_PROJECT = "(whole project)"
CPU = "cpu_s"  # the name of the user property that carries a phase's CPU seconds to the controller


def cpu_seconds() -> float:
    """This process's CPU seconds, all threads, plus those of its children that ended and were waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + forked_cli.children_cpu_seconds()


class PhaseCpu:
    """On the process that runs the tests: each phase's CPU seconds, put on its report."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def _measure(self, item: pytest.Item, when: str) -> Iterator[None]:
        start = cpu_seconds()
        try:
            yield
        finally:
            self.spent[item.nodeid + when] = cpu_seconds() - start

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._measure(item, "setup"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._measure(item, "call"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._measure(item, "teardown"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        spent = self.spent.pop(item.nodeid + call.when, None)
        if spent is not None:
            report.user_properties.append((CPU, spent))
        return report


def room_of(nodeid: str) -> str:
    """`tests/training/test_engine.py::test_x` -> "training" (nodeids are relative to the rootdir)."""
    parts = nodeid.split("::", 1)[0].split("/")
    if "tests" in parts:
        parts = parts[parts.index("tests") + 1 :]
    return parts[0] if len(parts) > 1 else WHOLE_PROJECT


Figures = dict[str, list[float]]  # by room, file or test: [wall seconds, CPU seconds, tests]


class RoomTimes:
    """Collects every test report the run sees (the controller's, under xdist) by room, file and test."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.figures: dict[str, Figures] = {"rooms": {}, "files": {}, "tests": {}}
        self.seen: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cpu = 0.0
        for name, value in report.user_properties:  # pairs (lists, once xdist has carried them)
            if name == CPU and isinstance(value, float):
                cpu += value
        new = report.nodeid not in self.seen
        self.seen.add(report.nodeid)
        for kind, key in (
            ("rooms", room_of(report.nodeid)),
            ("files", report.nodeid.split("::", 1)[0]),
            ("tests", report.nodeid),
        ):
            figures = self.figures[kind].setdefault(key, [0.0, 0.0, 0.0])
            figures[0] += report.duration
            figures[1] += cpu
            figures[2] += new

    def totals(self) -> dict[str, Figures]:
        """This run's figures, plus what earlier stages left in the file (then written back)."""
        if self.path is None:
            return self.figures
        try:
            earlier = json.loads(self.path.read_text())
        except (OSError, ValueError):
            earlier = {}
        totals = {
            kind: {key: list(figures) for key, figures in by_key.items()} for kind, by_key in self.figures.items()
        }
        for kind, by_key in earlier.items():
            for key, figures in by_key.items():
                now = totals.setdefault(kind, {}).setdefault(key, [0.0, 0.0, 0.0])
                for i, figure in enumerate(figures):
                    now[i] += figure
        temporary = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(totals, indent=1, sort_keys=True))
        os.replace(temporary, self.path)
        return totals

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        rooms = self.totals()["rooms"]
        if not rooms:
            return
        title = "seconds per room" + (f" (all stages so far, {self.path})" if self.path else "")
        terminalreporter.write_sep("=", title)
        width = max(len(room) for room in [*rooms, "total"])
        terminalreporter.write_line(f"{'room':<{width}}  {'wall s':>8}  {'CPU s':>8}  {'tests':>5}")
        for room, (wall, cpu, count) in sorted(rooms.items(), key=lambda item: -item[1][0]):
            terminalreporter.write_line(f"{room:<{width}}  {wall:8.1f}  {cpu:8.1f}  {int(count):5d}")
        wall, cpu, count = (sum(value[i] for value in rooms.values()) for i in range(3))
        terminalreporter.write_line(f"{'total':<{width}}  {wall:8.1f}  {cpu:8.1f}  {int(count):5d}")


def addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--room-times",
        metavar="FILE",
        default=None,
        help="add this run's seconds per room of tests/ to FILE (JSON) and print the sum",
    )


def register(config: pytest.Config) -> None:
    """CPU seconds where tests run (xdist's controller runs none); the table only where the reports meet:
    the lone process, or the controller (not its workers)."""
    config.pluginmanager.register(PhaseCpu(), "netdsl-phase-cpu")
    if hasattr(config, "workerinput"):
        return
    option = config.getoption("--room-times")
    config.pluginmanager.register(RoomTimes(Path(option) if option else None), "netdsl-room-times")
