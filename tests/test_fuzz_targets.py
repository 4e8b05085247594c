"""Fuzzed `.keras` files and data files (issue 22), and weights files (issue 27): the Keras -> .net
reader, the data readers and the HDF5 weights reader answer with netdsl's own one-line errors,
never a traceback or a crash, each in the harness's worker under its 1 GB memory limit. The long
campaigns: `python -m tests.fuzz --target keras|data|weights`."""

from __future__ import annotations

import random

import pytest

from tests.fuzz import Bounds, run
from tests.fuzz.targets import DATA_KINDS, make_data, make_keras, make_sweep, make_weights, weights_corpus

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


def test_fuzzed_sweep_folders_get_one_line_errors_not_tracebacks():
    """sweep.json and study.db edited (issue 27): `netdsl sweep --show` answers one escaped line or a table."""
    report = run(40, seed=1, bounds=HANG, target="sweep")
    assert report.inputs == 40
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []
    assert report.outcomes["diagnostics"] > 10


def test_the_same_seed_makes_the_same_sweep_folder():
    assert make_sweep(random.Random(7)) == make_sweep(random.Random(7))


@pytest.mark.parametrize("target", ["onnx", "tflite", pytest.param("saved_model", marks=pytest.mark.slow)])
def test_fuzzed_exported_files_get_no_metadata_or_one_line_not_tracebacks(target):
    """Issue 27, item 7: what netdsl reads of an exported file (tests/fuzz/exported.py); the saved_model target
    also holds the op scanner to the allow-list's promise (every op outside it refused, wherever it sits)."""
    report = run(40, seed=1, bounds=HANG, target=target)
    assert report.inputs == 40
    assert [(f.kind, f.index, f.source, f.detail) for f in report.findings] == []
    # refusals: a damaged .tflite is no metadata, not an error; half the saved_model inputs are netdsl.json
    assert report.outcomes["diagnostics"] >= {"onnx": 20, "saved_model": 3, "tflite": 0}[target]


def test_the_same_seed_makes_the_same_exported_files():
    from tests.fuzz.exported import EXPORTED_TARGETS, make_exported

    for target in EXPORTED_TARGETS:
        made = [make_exported(target, random.Random(k)) for k in range(6)]
        assert made == [make_exported(target, random.Random(k)) for k in range(6)]
        assert len({data for _, _, data in made}) > 1


def test_the_same_seed_makes_the_same_weights_files():
    corpus = weights_corpus()
    assert [make_weights(random.Random(k), corpus) for k in range(20)] == [
        make_weights(random.Random(k), corpus) for k in range(20)
    ]
    assert {make_weights(random.Random(k), corpus)[1] for k in range(40)} == {".weights.h5", ".keras"}
