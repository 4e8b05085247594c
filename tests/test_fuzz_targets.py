"""Fuzzed `.keras` files and data files (issue 22), and weights files (issue 27): the Keras -> .net
reader, the data readers and the HDF5 weights reader answer with netdsl's own one-line errors,
never a traceback or a crash, each in the harness's worker under its 1 GB memory limit. The long
campaigns: `python -m tests.fuzz --target keras|data|weights`."""

from __future__ import annotations

import random

import pytest

from tests.fuzz import Bounds, run
from tests.fuzz.targets import DATA_KINDS, make_data, make_keras, make_weights, weights_corpus

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


def test_fuzzed_weights_files_get_one_line_errors_within_the_memory_bound():
    """Valid files of the model, the review's hostile ones, and both mutated and generated afresh
    (external storage, virtual datasets, links, loops, bombs, odd types and filters)."""
    report = run(150, seed=1, bounds=HANG, target="weights")
    assert report.inputs == 150
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []
    assert report.outcomes["diagnostics"] > 75 and report.outcomes["clean"] > 5
    assert report.peak_rss_kb < 2 * 1024 * 1024  # the worker's 1 GB above its imports (TensorFlow's ~0.8 GB)


def test_the_same_seed_makes_the_same_files():
    assert make_keras(random.Random(7), []) == make_keras(random.Random(7), [])
    kinds = {make_data(random.Random(k))[1] for k in range(40)}
    assert kinds == set(DATA_KINDS)
    corpus = weights_corpus()
    assert [make_weights(random.Random(k), corpus) for k in range(20)] == [
        make_weights(random.Random(k), corpus) for k in range(20)]
    assert {make_weights(random.Random(k), corpus)[1] for k in range(40)} == {".weights.h5", ".keras"}
