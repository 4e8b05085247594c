"""What the exported-metadata fuzz campaigns found (issue 27, item 7; tests/fuzz/exported.py), kept as fixtures:
each reader answers a damaged file with no metadata or one line, never a traceback or another printout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from netdsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPORTED = ROOT / "tests" / "fixtures" / "exported"


def test_a_saved_model_naming_two_functions_alike_has_the_ops_of_both_refused(tmp_path):
    """Seed 1, input 8989 of the saved_model campaign: the scanner kept one function per name, so the
    ops of a second function of the same name (MatchingFiles, ReadFile) went unseen."""
    from netdsl.deploy.saved_model_ops import read_graph_ops

    folder = tmp_path / "sm"
    folder.mkdir()
    (folder / "saved_model.pb").write_bytes(
        (EXPORTED / "findings" / "saved_model_seed1_8989_two_functions_one_name.pb").read_bytes()
    )
    assert {"MatchingFiles", "ReadFile"} <= set(read_graph_ops(folder).refused())


def test_a_damaged_tflite_metadata_table_is_no_metadata():
    """Seed 1, input 16 of the .tflite campaign: a flipped byte made an offset flatbuffers refuses with
    TypeError ('bad number ... for type uint32'), which escaped `read_metadata`."""
    from netdsl.deploy.litert_format import read_metadata

    damaged = (EXPORTED / "findings" / "tflite_seed1_16_damaged_table.tflite").read_bytes()
    assert read_metadata(damaged) == {}
    assert read_metadata((EXPORTED / "classifier.tflite").read_bytes())["netdsl_model"] == "classifier"


@pytest.mark.parametrize(("others", "found"), [(2, True), (1023, True), (1024, False)])
def test_a_tflite_metadata_table_is_looked_through_for_1024_entries(others, found):
    """The review's 'millions of entries, walked whole': netdsl's entry is looked for among the first
    MAX_EXPORT_METADATA_ENTRIES (the converter writes two before it)."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    from netdsl.deploy.litert_format import read_metadata, with_entry
    from netdsl.limits import MAX_EXPORT_METADATA_ENTRIES

    assert MAX_EXPORT_METADATA_ENTRIES == 1024
    flatbuffer = (EXPORTED / "classifier.tflite").read_bytes()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    model.metadata = [entry for entry in model.metadata if entry.name != b"netdsl"]
    filler = model.metadata[0]
    model.metadata = [filler] * others
    builder = flatbuffers.Builder(len(flatbuffer) + 64 * others)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    crowded = with_entry(bytes(builder.Output()), b'{"netdsl_model": "classifier"}')
    assert read_metadata(crowded) == ({"netdsl_model": "classifier"} if found else {})


def test_an_onnx_file_whose_error_onnxruntime_cannot_decode_is_one_line_and_nothing_on_stdout(tmp_path, capsys):
    """Seed 1, input 0 of the ONNX campaign: bytes that are not UTF-8 in what onnxruntime's error quotes made its
    Python side print four lines to stdout ('*** EP Error ***', 'Falling back to [...] and retrying.') and load
    the file again, before the error netdsl prints as one line."""
    bad = tmp_path / "undecodable.onnx"
    bad.write_bytes((EXPORTED / "findings" / "onnx_seed1_0_undecodable_error.onnx").read_bytes())
    np.savez(tmp_path / "x.npz", features=np.zeros((2, 12), "float32"))
    code = main(["predict", str(bad), "--data", str(tmp_path / "x.npz"), "-o", str(tmp_path / "p.npz")])
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    head = f"{bad}: error: onnxruntime cannot load it ('utf-8' codec can't decode byte 0xdd in position "
    assert captured.err.startswith(head) and captured.err.endswith(": invalid continuation byte)\n")
    assert captured.err.count("\n") == 1
