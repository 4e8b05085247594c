"""Data with names (issue 28, items 1 and 2): CSV labels that are class names, the input's columns by
--features / --drop, the identifier warning, images found for predict, and the predictions file."""

from __future__ import annotations

import csv
import json
import os
import warnings

import numpy as np
import pytest

from netdsl.errors import UsageError
from netdsl.limits import MAX_IMAGE_FOLDER_DEPTH
from netdsl.training.data.image_files import list_images
from netdsl.training.data.request import DataNames, DataRequest, check_columns
from netdsl.training.data.signature import Signature, TensorSpec
from netdsl.training.data.source import check_data, check_layout, open_source
from netdsl.training.errors import DataError, DataWarning
from netdsl.training.run.predictions import Predictions, class_names

TABLE = Signature((TensorSpec("x", (2,), "float32"),), (TensorSpec("kind", (3,), "float32"),))
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + (4).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00"


def table(path, rows: list[str]) -> str:
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def labels(source) -> list[int]:
    return source.take(np.arange(source.n))[1]["kind"].tolist()


def test_a_label_column_of_names_is_the_names_sorted_and_recorded(tmp_path):
    path = table(tmp_path / "t.csv", ["a,b,kind", "1,2,mid", "3,4,low", "", "5,6,high", "7,8,mid"])
    source = open_source(path, TABLE)
    assert source.classes == {"kind": ("high", "low", "mid")}
    assert labels(source) == [2, 1, 0, 2]
    assert source.row_names(np.arange(4)) == ["2", "3", "5", "6"]  # each row's line (the blank line skipped)
    assert source.columns == {"x": ("a", "b")}
    # evaluated by a run that trained on other classes: its names index the labels
    known = open_source(path, TABLE, names=DataNames(classes={"kind": ("mid", "low", "high", "none")}))
    assert labels(known) == [0, 1, 2, 0]


def test_a_name_the_run_never_saw_is_an_error_at_its_cell(tmp_path):
    path = table(tmp_path / "t.csv", ["a,b,kind", "1,2,mid", '3,4,"huge"'])
    with pytest.raises(DataError) as caught:
        open_source(path, TABLE, names=DataNames(classes={"kind": ("high", "low", "mid")}))
    assert str(caught.value) == (
        f"{path}:3:5: error: 'huge' is not one of the classes the model was trained on (high, low, mid) (column 'kind')"
    )
    empty = table(tmp_path / "e.csv", ["a,b,kind", "1,2,mid", "3,4, "])
    with pytest.raises(DataError, match=r"e.csv:3:5: error: an empty cell where a class name belongs"):
        open_source(empty, TABLE)


def test_features_and_drop_pick_the_input_columns_by_name(tmp_path):
    path = table(tmp_path / "t.csv", ["id,c,b,a,kind", "9,1,2,3,0", "8,4,5,6,1"])
    chosen = open_source(path, TABLE, names=DataNames(features=("a", "c")))
    assert chosen.take(np.arange(2))[0]["x"].tolist() == [[3, 1], [6, 4]] and chosen.columns == {"x": ("a", "c")}
    dropped = open_source(path, TABLE, names=DataNames(drop=("id", "b")))
    assert dropped.take(np.arange(2))[0]["x"].tolist() == [[1, 3], [4, 6]]
    # new rows without the label column, their columns in another order: read by the run's names
    new = table(tmp_path / "new.csv", ["a,id,c", "7,1,5"])
    assert open_source(new, TABLE, need_targets=False, names=DataNames(features=("a", "c"))).take(
        np.arange(1), with_targets=False
    )[0]["x"].tolist() == [[7, 5]]
    with pytest.raises(DataError) as caught:
        open_source(path, TABLE, names=DataNames(features=("a", "z")))
    assert str(caught.value) == f"{path}:1:1: error: no column 'z' (named by --features); columns: id, c, b, a, kind"


def test_feature_and_drop_flags_are_checked_as_names():
    assert check_columns(["a", "b"], None) == (("a", "b"), ())
    assert check_columns("a, b", None, ("--features", "--drop")) == (("a", "b"), ())
    assert check_columns(None, "id", ("--features", "--drop")) == (None, ("id",))
    with pytest.raises(UsageError, match="give the input's columns with features= or leave some out with drop="):
        check_columns(["a"], ["id"])
    with pytest.raises(UsageError, match="--drop names the column 'id' twice"):
        check_columns(None, "id,id", ("--features", "--drop"))
    with pytest.raises(UsageError, match="features= takes column names separated by commas"):
        check_columns("a,,b", None)


def test_an_input_column_with_a_different_integer_on_every_row_is_named_in_a_warning(tmp_path):
    rows = ["row,a,kind"] + [f"{100 + i},{(i * 7) % 3}.5,{i % 3}" for i in range(25)]
    path = table(tmp_path / "ids.csv", rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        open_source(path, TABLE)
    assert [str(w.message) for w in caught if w.category is DataWarning] == [
        f"{path}: column 'row' holds a different integer on every row, like an identifier, and is part of input "
        "'x'; leave it out with --drop row (or name the input's columns with --features)"
    ]
    with warnings.catch_warnings(record=True) as caught:  # named on purpose: no warning
        warnings.simplefilter("always")
        open_source(path, TABLE, names=DataNames(features=("row", "a")))
    assert caught == []
    few = table(tmp_path / "few.csv", rows[:10])  # ten rows may hold distinct integers by chance
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        open_source(few, TABLE)
    assert caught == []
    # a count that differs on every row (msft.csv's traded Volume) spans far more than the rows: a feature
    counts = table(
        tmp_path / "counts.csv",
        ["volume,a,kind"] + [f"{92433800 - 1234567 * i + i * i},{i % 3}.5,{i % 3}" for i in range(25)],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        open_source(counts, TABLE)
    assert caught == []


def test_a_csv_is_read_whole_before_tensorflow_and_the_validation_file_names_as_the_training_one(tmp_path):
    train = table(tmp_path / "train.csv", ["a,b,kind", "1,2,mid", "3,4,low", "5,6,high"])
    val = table(tmp_path / "val.csv", ["a,b,kind", "1,2,mid", "3,4,nope"])
    with pytest.raises(
        DataError,
        match=r"val.csv:3:5: error: 'nope' is not one of the classes the model was "
        r"trained on \(high, low, mid\)",
    ):
        check_data(DataRequest(train=train, val=val), TABLE)


def test_images_for_predict_are_found_in_sub_folders_and_named_by_their_path(tmp_path):
    (tmp_path / "new" / "b" / "c").mkdir(parents=True)
    for name in ("z.png", "b/c/y.png", "b/x.PNG", "b/notes.txt", ".hidden.png"):
        (tmp_path / "new" / name).write_bytes(PNG if name.lower().endswith(".png") else b"text")
    found = list_images(str(tmp_path / "new"))
    assert [os.path.relpath(p, tmp_path / "new") for p in found] == ["b/c/y.png", "b/x.PNG", "z.png"]
    (tmp_path / "outside.png").write_bytes(PNG)
    (tmp_path / "new" / "link.png").symlink_to(tmp_path / "outside.png")
    with pytest.raises(DataError, match="link.png: error: is a link to outside the image folder"):
        list_images(str(tmp_path / "new"))


def test_images_nested_deeper_than_the_bound_are_refused(tmp_path):
    deep = tmp_path / "deep"
    folder = deep.joinpath(*["d"] * (MAX_IMAGE_FOLDER_DEPTH + 1))
    folder.mkdir(parents=True)
    (folder / "a.png").write_bytes(PNG)
    with pytest.raises(DataError, match=f"folders nested more than {MAX_IMAGE_FOLDER_DEPTH} deep"):
        list_images(str(deep))


def test_what_cannot_be_data_is_told_without_the_model(tmp_path):
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.png").write_bytes(PNG)
    check_layout(str(tmp_path / "loose"), need_targets=False)  # predict takes it
    with pytest.raises(DataError) as caught:
        check_layout(str(tmp_path / "loose"), need_targets=True)
    assert str(caught.value) == (
        f"{tmp_path / 'loose'}: error: an image lies outside class sub-folders, with no "
        "label ('a.png'): an image folder to train or evaluate on holds one sub-folder per "
        "class with .png or .jpg files; predict takes any folder of images"
    )
    with pytest.raises(DataError, match="one image holds no label"):
        check_layout(str(tmp_path / "loose" / "a.png"), need_targets=True)


def test_class_names_come_from_the_data_else_number_the_units_of_a_class_loss():
    units = {"probs": 3, "price": 1, "yes": 1}
    losses = {"probs": "sparse_categorical_crossentropy", "price": "mean_squared_error", "yes": "binary_crossentropy"}
    assert class_names(units, losses, {}) == {"probs": ("0", "1", "2"), "yes": ("0", "1")}
    assert class_names(units, losses, {"probs": ("cat", "dog")}) == {"probs": ("cat", "dog", "2"), "yes": ("0", "1")}


def test_predictions_are_written_with_names_as_csv_npz_and_json(tmp_path):
    result = Predictions(
        {
            "probs": np.float32([[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]]),
            "yes": np.float32([[0.9], [0.2]]),
            "price": np.float32([[1.5, 2.0], [3.0, 4.0]]),
        },
        ["a/1.png", "2.png"],
        {"probs": ("cat", "dog", "eel"), "yes": ("no", "yes")},
    )
    assert result.predicted("probs").tolist() == ["dog", "cat"] and result.predicted("yes").tolist() == ["yes", "no"]
    result.write(tmp_path / "p.csv")
    with (tmp_path / "p.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows == [
        [
            "source",
            "probs_class",
            "probs_cat",
            "probs_dog",
            "probs_eel",
            "yes_class",
            "yes_no",
            "yes_yes",
            "price_0",
            "price_1",
        ],
        ["a/1.png", "dog", "0.1", "0.7", "0.2", "yes", "0.1", "0.9", "1.5", "2"],
        ["2.png", "cat", "0.8", "0.1", "0.1", "no", "0.8", "0.2", "3", "4"],
    ]
    result.write(tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz", allow_pickle=False) as arrays:
        assert arrays.files == [
            "source",
            "probs",
            "probs_class",
            "probs_classes",
            "yes",
            "yes_class",
            "yes_classes",
            "price",
        ]
        assert arrays["source"].dtype.kind == "U" and arrays["probs_classes"].tolist() == ["cat", "dog", "eel"]
    result.write(tmp_path / "p.json")
    document = json.loads((tmp_path / "p.json").read_text())
    assert document["classes"] == {"probs": ["cat", "dog", "eel"], "yes": ["no", "yes"]}
    assert document["predictions"][1]["probs_class"] == "cat" and document["predictions"][1]["price_1"] == 4.0
    with pytest.raises(UsageError, match="-o takes a .csv, .npz or .json file"):
        result.write(tmp_path / "p.txt")


def test_one_classifier_output_gives_class_and_a_column_per_class_and_a_printable_table():
    result = Predictions(
        {"kind": np.float32([[0.2, 0.8]] * 12)}, [f"x\x1b{i}.png" for i in range(12)], {"kind": ("bad", "good")}
    )
    assert list(result.columns()) == ["source", "class", "bad", "good"] and result.labels.tolist() == ["good"] * 12
    lines = result.table().splitlines()
    assert lines[0].split() == ["source", "class", "bad", "good"]
    assert lines[1].split() == ["x\\x1b0.png", "good", "0.2", "0.8"]  # a file name from outside, escaped
    assert lines[-1] == "... (2 more rows in the file)" and len(lines) == 12


def test_the_early_checks_reading_of_a_csv_is_the_readers(tmp_path, monkeypatch):
    from netdsl.training.data import csv_table
    from netdsl.training.data.plan import plan_data

    reads = []
    real = csv_table._from_csv
    monkeypatch.setattr(csv_table, "_from_csv", lambda *args: reads.append(args[0]) or real(*args))
    train = table(tmp_path / "train.csv", ["a,b,kind", "1,2,mid", "3,4,low", "5,6,high", "7,8,low"])
    val = table(tmp_path / "val.csv", ["a,b,kind", "1,2,mid", "3,4,low"])
    request = DataRequest(train=train, val=val)
    check_data(request, TABLE)
    plan = plan_data(request, TABLE, seed=0)
    assert reads == [train, val]  # once each: the check's readings, taken by the reader
    assert plan.val is not None and labels(plan.val.source) == [2, 1]  # named as the training file names them
    table(tmp_path / "train.csv", ["a,b,kind", "1,2,mid", "3,4,low", "5,6,high", "7,8,low", "9,9,mid"])
    check_data(request, TABLE)  # the file changed since: read again
    assert reads[2:] == [train, val]
