"""A SavedModel folder is a program (issue 27, N4 of the December review): `predict`/`evaluate` run one
only when its graph holds nothing but the compute ops Keras models export to (deploy/saved_model_ops.py),
or with `--trust`; and only from a folder of this user's own, as run folders are.

The malicious folders are the review's probe, varied: a tf.Module whose signature writes a file and
returns a secret file's bytes as its predictions, with the file ops directly in the signature, in a
function it calls, in a loop's body or in a branch.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.deploy.saved_model_ops import ALLOWED_OPS, SAVER_OPS, graph_ops, read_graph_ops

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "tests" / "fixtures" / "deploy"
SECRET = b"TOP-SECRET-ssh-key-material-0123456789abcdef-ABCDEFGHIJKLMNOPQRS"
OTHER_UID = 12345  # an account that is not this one (the suite runs as root, which may chown)
REFUSAL = (
    "{folder}: error: this SavedModel holds TensorFlow ops outside netdsl's allow-list of the compute ops Keras "
    "models export to: {ops}; a SavedModel is a program; if it comes from someone you trust, run it with "
    "--trust (trust=True in the library)\n"
)
EVIL_SPEC = """model evil {
  input x: (4,)
  output y = x -> dense(64)
  train {
    loss = mse
  }
}
"""


def write_evil_saved_model(base: Path, layout: str = "direct") -> Path:
    """`base/evil_saved_model`, whose signature `x: (N, 4) -> y: (N, 64)` writes `base/WRITTEN_BY_MODEL`
    and returns the bytes of `base/secret.txt`; `layout` says where in the graph the file ops are."""
    import tensorflow as tf

    secret, written = base / "secret.txt", base / "WRITTEN_BY_MODEL"
    secret.write_bytes(SECRET)

    def leak(x):
        tf.io.write_file(str(written), "written by the model")
        raw = tf.io.decode_raw(tf.io.read_file(str(secret)), tf.uint8)
        return tf.reshape(tf.tile(tf.cast(raw, tf.float32)[None, :], tf.stack([tf.shape(x)[0], 1])), (-1, 64))

    inner = tf.function(leak)

    def looped(x):
        return tf.while_loop(
            lambda i, y: i < 1, lambda i, y: (i + 1, leak(x)), (tf.constant(0), tf.zeros((tf.shape(x)[0], 64)))
        )[1]

    def branched(x):
        return tf.cond(tf.reduce_sum(x) >= -1e30, lambda: leak(x), lambda: tf.zeros((tf.shape(x)[0], 64)))

    body = {"direct": leak, "nested function": inner, "loop body": looped, "cond branch": branched}[layout]

    class Evil(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((None, 4), tf.float32, name="x")])
        def serve(self, x):
            return {"y": body(x)}

    module = Evil()
    folder = base / "evil_saved_model"
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.serve})
    np.savez(base / "x.npz", x=np.zeros((2, 4), "float32"), y=np.zeros((2, 64), "float32"))
    (base / "evil.net").write_text(EVIL_SPEC)
    return folder


@pytest.fixture(scope="module")
def evil_base(tmp_path_factory):
    base = tmp_path_factory.mktemp("evil")
    write_evil_saved_model(base)
    return base


@pytest.fixture
def evil(evil_base):
    """The malicious folder; the file its graph writes (`evil_base/WRITTEN_BY_MODEL`) removed around each test."""
    (evil_base / "WRITTEN_BY_MODEL").unlink(missing_ok=True)
    yield evil_base / "evil_saved_model"
    (evil_base / "WRITTEN_BY_MODEL").unlink(missing_ok=True)


def run_cli(args: list, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refusal(folder: Path, ops: str = "DecodeRaw, ReadFile, WriteFile") -> str:
    return REFUSAL.format(folder=folder, ops=ops)


# ------------------------------------------------------------------ a program's ops, refused by name


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_saved_model_that_reads_and_writes_files_is_refused_naming_its_ops(command, evil, tmp_path, capsys):
    base = evil.parent
    args = {
        "predict": [command, evil, "--data", base / "x.npz", "-o", tmp_path / "p.npz"],
        "evaluate": [command, evil, "--data", base / "x.npz", "--spec", base / "evil.net"],
    }[command]
    code, out, err = run_cli(args, capsys)
    assert (code, out, err) == (1, "", refusal(evil))
    assert not (base / "WRITTEN_BY_MODEL").exists() and not (tmp_path / "p.npz").exists()
    assert SECRET.decode() not in out + err


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_trust_runs_it_and_it_does_what_the_review_showed(command, evil, tmp_path, capsys):
    base = evil.parent
    args = {
        "predict": [command, evil, "--data", base / "x.npz", "-o", tmp_path / "p.npz", "--trust"],
        "evaluate": [command, evil, "--data", base / "x.npz", "--spec", base / "evil.net", "--trust", "--json"],
    }[command]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert (base / "WRITTEN_BY_MODEL").read_text() == "written by the model"
    if command == "predict":
        assert out == f"wrote {tmp_path / 'p.npz'} (2 samples; y (2, 64))\n"
        with np.load(tmp_path / "p.npz") as got:
            assert got["y"][0].astype(np.uint8).tobytes() == SECRET
    else:
        assert list(json.loads(out)) == ["loss"]


def test_the_library_refuses_it_and_runs_it_with_trust(evil):
    base = evil.parent
    with pytest.raises(netdsl.NetdslError) as caught:
        netdsl.predict(evil, data=base / "x.npz")
    assert str(caught.value) + "\n" == refusal(evil)
    with pytest.raises(netdsl.NetdslError) as caught:
        netdsl.evaluate(evil, data=base / "x.npz", spec=base / "evil.net")
    assert str(caught.value) + "\n" == refusal(evil)
    assert not (base / "WRITTEN_BY_MODEL").exists()
    assert netdsl.predict(evil, data=base / "x.npz", trust=True)["y"].shape == (2, 64)
    assert (base / "WRITTEN_BY_MODEL").exists()


@pytest.mark.parametrize("layout", ["nested function", "loop body", "cond branch"])
def test_file_ops_are_found_wherever_the_graph_calls_them(layout, tmp_path, capsys):
    folder = write_evil_saved_model(tmp_path, layout)
    code, out, err = run_cli(["predict", folder, "--data", tmp_path / "x.npz", "-o", tmp_path / "p.npz"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(f"{folder}: error: this SavedModel holds TensorFlow ops outside netdsl's allow-list")
    listed = err.split("export to: ", 1)[1].split("; a SavedModel is a program", 1)[0].split(", ")
    assert {"ReadFile", "WriteFile"} <= set(listed)
    assert not (tmp_path / "WRITTEN_BY_MODEL").exists() and not (tmp_path / "p.npz").exists()


def test_trust_is_for_exported_files(tmp_path, capsys):
    (tmp_path / "m.keras").write_bytes(b"")  # never opened: the flag is refused first
    np.savez(tmp_path / "x.npz", x=np.zeros((2, 4), "float32"))
    code, out, err = run_cli(
        ["predict", tmp_path / "m.keras", "--data", tmp_path / "x.npz", "-o", tmp_path / "p.npz", "--trust"], capsys
    )
    assert (code, out, err) == (
        2,
        "",
        "netdsl predict: error: --trust runs an exported SavedModel whose graph holds "
        "ops outside netdsl's allow-list; a run folder or .keras file is loaded in "
        "Keras' safe mode, with nothing to trust\n",
    )


# ------------------------------------------------------------------ netdsl's own exports pass


@pytest.mark.parametrize(
    ("spec", "model"),
    [
        ("small.net", "convnet"),
        ("ops.net", "recurrent"),
        ("vit_tiny.net", "vit_tiny"),
        ("ops.net", "slices_and_splits"),
        ("ops.net", "spectral_and_index"),
    ],
    ids=["conv", "lstm-gru-rnn", "attention", "slices-splits", "spectral-index"],
)
def test_netdsls_own_saved_models_pass_the_allow_list_and_run(spec, model, tmp_path, capsys):
    folder = netdsl.export(
        DEPLOY / spec, model=model, format="saved_model", out=tmp_path / "m_saved_model", verify=False, seed=1
    )
    found = read_graph_ops(folder)
    assert found.refused() == [] and found.ops <= ALLOWED_OPS and found.saver_ops <= SAVER_OPS | ALLOWED_OPS
    assert {"SaveV2", "RestoreV2", "MergeV2Checkpoints"} <= found.saver_ops  # the saver's own, never run
    from netdsl.deploy.exported_runtime import open_exported

    exported = open_exported(folder)  # what predict opens: the allow-list, then TensorFlow
    batch = {s.name: np.zeros((2, *s.shape), s.dtype) for s in exported.signature.inputs}
    assert sorted(exported.run(batch)) == sorted(exported.signature.output_names)


# ------------------------------------------------------------------ folders of another account


def chown_tree(path: Path, uid: int) -> None:
    for where, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(Path(where) / name, uid, -1)
    os.lchown(path, uid, -1)


@pytest.fixture
def planted(evil, tmp_path):
    """`plant(layout)`: a copy of the malicious folder laid out as another account would leave it; returns
    (the path given to predict, the one-line refusal it must get)."""
    runs = tmp_path / "shared_runs"
    runs.mkdir()

    def plant(layout: str) -> tuple[Path, str]:
        if layout == "saved model folder":
            folder = runs / "evil_saved_model"
            shutil.copytree(evil, folder)
            chown_tree(folder, OTHER_UID)
            return folder, (
                f"{folder}: error: this saved_model folder belongs to another account (uid {OTHER_UID}); "
                "netdsl runs only saved_model folders you made\n"
            )
        if layout == "in a run folder":
            run = runs / "clf-8"
            folder = run / "clf_saved_model"
            shutil.copytree(evil, folder)
            (run / "config.json").write_text("{}")
            chown_tree(run, OTHER_UID)
            os.lchown(folder, os.getuid(), -1)  # even a folder of the user's own, inside another's run
        elif layout == "is a run folder":  # the review's: a run folder that also holds a saved_model.pb
            run = folder = runs / "clf-7"
            shutil.copytree(evil, folder)
            (run / "config.json").write_text("{}")
            chown_tree(run, OTHER_UID)
        elif layout == "onnx in a run folder":
            run = runs / "clf-9"
            run.mkdir()
            (run / "config.json").write_text("{}")
            folder = run / "clf.onnx"
            folder.write_bytes(b"an onnx file would go here")
            chown_tree(run, OTHER_UID)
        elif layout == "world-writable":
            folder = runs / "evil_saved_model"
            shutil.copytree(evil, folder)
            folder.chmod(0o777)
            return folder, (
                f"{folder}: error: other accounts may write into this saved_model folder (it is "
                "world-writable); netdsl runs only saved_model folders you made\n"
            )
        else:  # a link
            folder = runs / "evil_saved_model"
            folder.symlink_to(evil)
            return folder, (
                f"{folder}: error: is a symbolic link, not a saved_model folder; netdsl runs only "
                "saved_model folders you made\n"
            )
        return folder, (
            f"{run}: error: this run folder belongs to another account (uid {OTHER_UID}); netdsl resumes "
            "and reads only run folders you made\n"
        )

    return plant


@pytest.mark.skipif(
    not hasattr(os, "lchown") or os.geteuid() != 0, reason="planting another account's folder needs root"
)
@pytest.mark.parametrize("layout", ["saved model folder", "in a run folder", "is a run folder", "onnx in a run folder"])
@pytest.mark.parametrize("trust", [[], ["--trust"]], ids=["", "trust"])
def test_a_folder_of_another_account_is_refused_as_run_folders_are(layout, trust, planted, evil, tmp_path, capsys):
    folder, expected = planted(layout)
    for command in (
        ["predict", folder, "--data", evil.parent / "x.npz", "-o", tmp_path / "p.npz"],
        ["evaluate", folder, "--data", evil.parent / "x.npz", "--spec", evil.parent / "evil.net"],
    ):
        assert run_cli(command + trust, capsys) == (1, "", expected)
    assert not (evil.parent / "WRITTEN_BY_MODEL").exists() and not (tmp_path / "p.npz").exists()


@pytest.mark.parametrize("layout", ["world-writable", "link"])
def test_a_world_writable_or_linked_saved_model_folder_is_refused(layout, planted, evil, tmp_path, capsys):
    folder, expected = planted(layout)
    args = ["predict", folder, "--data", evil.parent / "x.npz", "-o", tmp_path / "p.npz", "--trust"]
    assert run_cli(args, capsys) == (1, "", expected)
    assert not (evil.parent / "WRITTEN_BY_MODEL").exists()


# ------------------------------------------------------------------ saved_model.pb itself


@pytest.mark.parametrize(
    ("plant", "expected"),
    [
        (
            lambda pb, tmp: pb.write_bytes(b"this is no model"),
            "saved_model.pb is not a SavedModel (Error parsing message with type 'tensorflow.SavedModel': Wire format "
            "was corrupt)",
        ),
        (
            lambda pb, tmp: os.truncate(pb, 256 * 1024**2 + 1),
            "saved_model.pb: file is too large (268,435,457 bytes); a SavedModel graph may be at most 268,435,456 bytes",
        ),
        (
            lambda pb, tmp: (pb.rename(tmp / "elsewhere.pb"), pb.symlink_to(tmp / "elsewhere.pb")),
            "saved_model.pb: is a symbolic link, not a SavedModel graph; netdsl does not read through links here",
        ),
    ],
    ids=["garbage", "oversized", "link"],
)
def test_a_saved_model_pb_is_read_bounded_never_through_a_link(plant, expected, evil, tmp_path, capsys):
    folder = tmp_path / "sm"
    shutil.copytree(evil, folder)
    plant(folder / "saved_model.pb", tmp_path)
    code, out, err = run_cli(["predict", folder, "--data", evil.parent / "x.npz", "-o", tmp_path / "p.npz"], capsys)
    assert (code, out, err) == (1, "", f"{folder}: error: {expected}\n")


# ------------------------------------------------------------------ the scanner, on crafted graphs


@pytest.fixture(scope="module")
def own_graph(tmp_path_factory):
    """The SavedModel protobuf of a netdsl export, to edit."""
    from tensorflow.core.protobuf import saved_model_pb2

    folder = netdsl.export(
        DEPLOY / "small.net",
        model="mlp",
        format="saved_model",
        out=tmp_path_factory.mktemp("own") / "mlp_saved_model",
        verify=False,
        seed=1,
    )
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((folder / "saved_model.pb").read_bytes())
    return saved


def edited(own_graph, edit) -> bytes:
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.CopyFrom(own_graph)
    edit(saved.meta_graphs[0])
    return saved.SerializeToString()


def function(meta_graph, part: str):
    return next(f for f in meta_graph.graph_def.library.function if part in f.signature.name)


def call(meta_graph, caller: str, callee: str, op: str = "StatefulPartitionedCall", attr: str = "f") -> None:
    node = function(meta_graph, caller).node_def.add(name="planted", op=op)
    if attr == "list":
        node.attr["branches"].list.func.add(name=callee)
    else:
        node.attr[attr].func.name = callee


SAVE = [  # the saver's ops outside the allow-list (its Select computes, as where's does: allowed)
    "DisableCopyOnRead",
    "MergeV2Checkpoints",
    "SaveV2",
    "ShardedFilename",
    "StaticRegexFullMatch",
    "StringJoin",
]


@pytest.mark.parametrize(
    ("edit", "refused"),
    [
        (lambda mg: None, []),
        # the saver's functions, called from the signature: their ops run
        (lambda mg: call(mg, "inference_serve", function(mg, "traced_save").signature.name), SAVE),
        (
            lambda mg: call(mg, "signature_wrapper", function(mg, "traced_restore").signature.name, "Case", "list"),
            ["Case", "RestoreV2"],
        ),  # (Case: no Keras export holds one)
        # a primitive op called by name, in a function attribute (nested in another one's attributes too)
        (lambda mg: call(mg, "inference_serve", "WriteFile"), ["WriteFile"]),
        (lambda mg: call(mg, "inference_serve", "DeleteRecursively", "While", "body"), ["DeleteRecursively"]),
        # a folder without an object graph loads the TensorFlow 1 way, running its saver
        (lambda mg: mg.ClearField("object_graph_def"), SAVE + ["RestoreV2"]),
        # a function no one calls is checked as if it ran; so is a node of the graph itself
        (lambda mg: mg.graph_def.library.function.add().node_def.add(name="p", op="PyFunc"), ["PyFunc"]),
        (lambda mg: mg.graph_def.node.add(name="p", op="PrintV2"), ["PrintV2"]),
        # the saver's own nodes doing something else
        (lambda mg: setattr(mg.graph_def.node[-1], "op", "MatchingFiles"), ["MatchingFiles"]),
        # two functions of one name (the saved_model fuzz campaign, seed 1, input 8989): both are read
        (
            lambda mg: (
                mg.graph_def.library.function.add().CopyFrom(function(mg, "inference_serve"))
                or function(mg, "inference_serve").node_def.add(name="p", op="ReadFile")
            ),
            ["ReadFile"],
        ),
    ],
    ids=[
        "as-exported",
        "save-from-signature",
        "restore-from-case",
        "op-by-name",
        "op-in-loop-body",
        "no-object-graph",
        "uncalled-function",
        "graph-node",
        "saver-node-op",
        "two-functions-one-name",
    ],
)
def test_the_saver_exemption_holds_only_where_tensorflow_2_never_runs_it(edit, refused, own_graph):
    assert graph_ops(edited(own_graph, edit)).refused() == sorted(refused)


def test_a_function_named_inside_another_functions_attributes_is_followed(own_graph):
    def plant(meta_graph):
        node = function(meta_graph, "inference_serve").node_def.add(name="planted", op="PartitionedCall")
        node.attr["f"].func.name = "Identity"
        node.attr["f"].func.attr["inner"].func.name = "ReadFile"

    # PartitionedCall itself is allowed (a text model's export calls its lookups through it); what it names,
    # however deep in its attributes, is walked: the planted ReadFile is found and refused
    assert graph_ops(edited(own_graph, plant)).refused() == ["ReadFile"]
