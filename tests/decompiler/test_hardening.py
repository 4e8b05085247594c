"""Keras -> .net on crafted `.keras` files (issue 22, security review 2026-12 findings 2 and 6):
linear work whatever the order of the layers, zip bombs and FIFOs refused before any parsing."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from netdsl.cli import main
from netdsl.decompiler import graph


def _chain(path: Path, n: int, reverse: bool) -> Path:
    """The review's probe: a functional model of n chained Dense layers, listed in order or reversed."""

    def tensor(src: str) -> dict:
        return {
            "class_name": "__keras_tensor__",
            "config": {"shape": [None, 4], "dtype": "float32", "keras_history": [src, 0, 0]},
        }

    layers = [
        {
            "module": "keras.layers",
            "class_name": "InputLayer",
            "name": "x",
            "registered_name": None,
            "config": {"batch_shape": [None, 4], "dtype": "float32", "sparse": False, "name": "x"},
            "inbound_nodes": [],
        }
    ]
    dense = [
        {
            "module": "keras.layers",
            "class_name": "Dense",
            "name": f"d{k}",
            "registered_name": None,
            "config": {"name": f"d{k}", "units": 4, "activation": "relu", "use_bias": True},
            "inbound_nodes": [{"args": [tensor("x" if k == 0 else f"d{k - 1}")], "kwargs": {}}],
        }
        for k in range(n)
    ]
    layers += dense[::-1] if reverse else dense
    config = {
        "module": "keras",
        "class_name": "Functional",
        "registered_name": "Functional",
        "config": {
            "name": "m",
            "layers": layers,
            "input_layers": [["x", 0, 0]],
            "output_layers": [[f"d{n - 1}", 0, 0]],
        },
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", json.dumps(config))
    return path


def _export(capsys, path: Path) -> tuple[int, str, str]:
    code = main(["decompile", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_reverse_ordered_config_is_read_with_the_work_of_a_forward_one(tmp_path, capsys, monkeypatch):
    walks = []
    real = graph._histories
    monkeypatch.setattr(graph, "_histories", lambda node: walks.append(1) or real(node))
    forward = _export(capsys, _chain(tmp_path / "fwd.keras", 300, reverse=False))
    forward_walks, walks[:] = len(walks), []
    backward = _export(capsys, _chain(tmp_path / "rev.keras", 300, reverse=True))
    assert backward == forward and forward[0] == 0 and "dense(4, activation=relu)" in forward[1]
    assert len(walks) == forward_walks <= 2 * 300  # the passes walked 300 * 301 / 2 nodes


def test_the_reviews_zip_bomb_is_refused_before_it_is_parsed(tmp_path, capsys):
    n = (64 * 1024 * 1024 - 2) // 3
    with zipfile.ZipFile(tmp_path / "bomb.keras", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("config.json", b"[" + b"{}," * (n - 1) + b"{}]")
    packed = zipfile.ZipFile(tmp_path / "bomb.keras").getinfo("config.json").compress_size
    code, out, err = _export(capsys, tmp_path / "bomb.keras")
    assert (code, out) == (1, "")
    assert err == (
        f"{tmp_path}/bomb.keras:1:1: error: config.json expands from {packed:,} bytes to more than "
        f"100x that; a model's config expands less (a zip bomb?)\n"
    )


def test_a_fifo_named_like_a_keras_file_is_refused_without_blocking(tmp_path, capsys):
    os.mkfifo(tmp_path / "m.keras")
    assert _export(capsys, tmp_path / "m.keras") == (
        1,
        "",
        f"{tmp_path}/m.keras:1:1: error: is a named pipe (FIFO), not a .keras file\n",
    )


def test_a_model_over_the_layer_limit_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(graph, "MAX_LAYERS", 50)
    code, out, err = _export(capsys, _chain(tmp_path / "big.keras", 60, reverse=False))
    assert (code, out) == (1, "")
    assert "model 'm' has 61 layers; a spec may have at most 50" in err


def test_problems_of_many_layers_are_collected_without_comparing_them_all(tmp_path, capsys, monkeypatch):
    # found by the .keras fuzz target: 3,000 layers, each with a problem, took 20 s (a list searched per problem)
    from netdsl.errors import Diagnostic

    compared = []
    real = Diagnostic.__eq__
    monkeypatch.setattr(Diagnostic, "__eq__", lambda self, other: compared.append(1) or real(self, other))
    path = _chain(tmp_path / "unknown.keras", 300, reverse=True)
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    for layer in config["config"]["layers"][1:]:
        layer["class_name"] = "Unknown"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(config))
    code, out, err = _export(capsys, path)
    assert (code, out) == (1, "") and len(err.splitlines()) == 301 and compared == []
    assert err.splitlines()[-1] == "300 errors"
    assert err.splitlines()[0] == (
        f"{path}:1:1: error: layer 'd0' (Unknown) is not a layer netdsl knows (module "
        f"keras.layers); declare it in the spec (layer NAME(...) {{ ... }}) or register a "
        f"plugin for it (netdsl.register_layer, then --plugin MODULE)"
    )


def test_a_corrupt_deflate_stream_is_one_line(tmp_path, capsys):
    # found by the .keras fuzz target (seed 1, input 22): zlib.error escaped as a traceback
    path = _chain(tmp_path / "m.keras", 20, reverse=False)
    data = bytearray(path.read_bytes())
    start = data.index(b"config.json") + len("config.json")  # the member's compressed bytes follow its name
    data[start + 10 : start + 40] = b"\xff" * 30
    path.write_bytes(bytes(data))
    code, out, err = _export(capsys, path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:1:1: error: cannot read config.json (Error -3 while decompressing data: ")
    assert len(err.splitlines()) == 1


def test_a_zip_directory_of_an_unknown_version_is_one_line(tmp_path, capsys):
    # found by the data fuzz target in an .npz (seed 98, input 202, tests/fixtures/data_errors/npz_zip_version.npz):
    # zipfile raises NotImplementedError when a directory entry needs a newer version to extract
    path = _chain(tmp_path / "m.keras", 2, reverse=False)
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02")  # the central directory entry; its "version needed" at +6
    data[entry + 6 : entry + 8] = (135).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    code, out, err = _export(capsys, path)
    assert (code, out, err) == (1, "", f"{path}:1:1: error: not a readable .keras file (zip file version 13.5)\n")


def test_a_nested_object_of_another_module_is_refused_before_keras_sees_it(tmp_path, capsys):
    # review finding 5: initializers were matched by class name alone; Keras < 3.9 imported the module named
    path = _chain(tmp_path / "m.keras", 1, reverse=False)
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    config["config"]["layers"][1]["config"]["kernel_initializer"] = {
        "module": "evil.initializers",
        "class_name": "GlorotUniform",
        "config": {"seed": None},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(config))
    code, out, err = _export(capsys, path)
    assert (code, out) == (1, "")
    assert err == (
        f"{path}:1:1: error: layer 'd0' (Dense) cannot be written in a spec: its kernel_initializer "
        f"names the module 'evil.initializers'; export reads Keras' and netdsl's objects only\n"
    )


def test_printable_escapes_what_could_move_or_retitle_a_terminal():
    from netdsl.errors import printable

    assert printable("plain é text") == "plain é text"
    assert printable("t\x1b]0;PWNED\x07\x1b[2J\n\r\t\u202e") == "t\\x1b]0;PWNED\\x07\\x1b[2J\\n\\r\\t\\u202e"


def test_an_output_index_of_two_to_the_63_is_refused_without_building_that_many(tmp_path, capsys):
    # found by the .keras fuzz target (seed 22, input 17503: a mutation of operation.json): the graph
    # held one entry per output up to the index named, so 2**63 never finished
    config = json.loads((Path(__file__).parents[1] / "fixtures" / "decompile" / "operation.json").read_text())
    config["config"]["output_layers"][2] = 2**63
    with zipfile.ZipFile(tmp_path / "m.keras", "w") as archive:
        archive.writestr("config.json", json.dumps(config))
    code, out, err = _export(capsys, tmp_path / "m.keras")
    assert (code, out) == (1, "")
    assert err == (
        f"{tmp_path}/m.keras:1:1: error: model 'operation' names an output it does not compute: "
        f"['add', 0, 9223372036854775808]\n"
    )
    config["config"]["output_layers"][2] = 0
    config["config"]["layers"][2]["inbound_nodes"][0]["args"][0]["config"]["keras_history"][2] = 1024
    with zipfile.ZipFile(tmp_path / "m.keras", "w") as archive:
        archive.writestr("config.json", json.dumps(config))
    code, out, err = _export(capsys, tmp_path / "m.keras")
    assert (code, out) == (1, "") and "is called on a tensor the model does not compute" in err


def test_a_call_without_its_arguments_is_one_line(tmp_path, capsys):
    # found by the .keras fuzz campaign (seed 22, input 77836: "args" mutated to "ar{s"), an IndexError before
    config = json.loads((Path(__file__).parents[1] / "fixtures" / "decompile" / "operation.json").read_text())
    node = config["config"]["layers"][1]["inbound_nodes"][0]
    node["ar{s"] = node.pop("args")
    with zipfile.ZipFile(tmp_path / "m.keras", "w") as archive:
        archive.writestr("config.json", json.dumps(config))
    code, out, err = _export(capsys, tmp_path / "m.keras")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"{tmp_path}/m.keras:1:1: error: layer 'dense' (Dense) is called on no tensor"


def test_a_member_name_flagged_utf8_that_is_not_is_one_line(tmp_path, capsys):
    # found by the .keras fuzz campaign (seed 22, input 98689): zipfile raised UnicodeDecodeError
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", "{}")
    data = bytearray(path.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    data[central + 8 : central + 10] = (0x0800).to_bytes(2, "little")  # flag bit 11: the name is UTF-8
    name = central + 46
    data[name : name + 2] = b"\xc5\x28"  # not UTF-8
    path.write_bytes(bytes(data))
    code, out, err = _export(capsys, path)
    assert (code, out) == (1, "")
    assert err == (
        f"{path}:1:1: error: not a readable .keras file ('utf-8' codec can't decode byte 0xc5 in "
        f"position 0: invalid continuation byte)\n"
    )
