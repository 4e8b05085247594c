"""Fuzzed `.keras` files and data files (issue 22): the Keras -> .net reader and the data readers
answer with netdsl's own one-line errors, never a traceback or a crash, each in the harness's
worker under its 1 GB memory limit. The long campaigns: `python -m tests.fuzz --target keras|data`."""

from __future__ import annotations

import random

import pytest

from tests.fuzz import Bounds, run
from tests.fuzz.targets import DATA_KINDS, make_data, make_keras, make_sweep

HANG = Bounds(small_seconds=20.0, large_seconds=60.0, slack=1.5)


def test_fuzzed_keras_files_get_one_line_errors_not_tracebacks():
    report = run(60, seed=1, bounds=HANG, target="keras")
    assert report.inputs == 60
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []
    assert report.outcomes["diagnostics"] > 30


@pytest.mark.slow
def test_fuzzed_data_files_get_one_line_errors_not_tracebacks():
    report = run(40, seed=1, bounds=HANG, target="data")
    assert report.inputs == 40
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []


def test_the_same_seed_makes_the_same_files():
    assert make_keras(random.Random(7), []) == make_keras(random.Random(7), [])
    kinds = {make_data(random.Random(k))[1] for k in range(40)}
    assert kinds == set(DATA_KINDS)


def test_fuzzed_sweep_folders_get_one_line_errors_not_tracebacks():
    """sweep.json and study.db edited (issue 27): `netdsl sweep --show` answers one escaped line or a table."""
    report = run(40, seed=1, bounds=HANG, target="sweep")
    assert report.inputs == 40
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []
    assert report.outcomes["diagnostics"] > 10


def test_the_same_seed_makes_the_same_sweep_folder():
    assert make_sweep(random.Random(7)) == make_sweep(random.Random(7))
