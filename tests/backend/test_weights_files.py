"""Security review 2026-12b, N2 and N3: netdsl's HDF5 weights reader (`init = FILE`, `build --weights`,
`summary --weights`, `train --init-from`) reads only the weights file's own bytes, through no link,
and nothing a file declares beyond what it stores.

Each hostile file is made here with h5py and zipfile (tests/support/hostile_weights.py), as the
review's probes made them: external storage pointing at a secret outside the spec's folder, a
virtual dataset, external and soft links, a hard link looping back, a shape bomb, a fill-value
bomb, values that are not numbers or not the model's, and the two zip bombs. Each is refused with
one line naming the path inside the file, before a byte of it is read, and the secret reaches no
model and no file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.errors import FileRefused
from tests.support import hostile_weights as hostile

ROOT = Path(__file__).resolve().parents[2]
KERAS_SAYS = "as Keras does"
OUTSIDE = "netdsl reads only the weights file's own bytes, " + KERAS_SAYS
NO_LINKS = "netdsl follows no links in a weights file, " + KERAS_SAYS

# file name: the line after `PATH: error: ` (the path inside the file, and why)
REFUSED = {
    "external.weights.h5": f"layers/dense/vars/0 keeps its data in another file (HDF5 external storage); {OUTSIDE}",
    "virtual.weights.h5": f"layers/dense/vars/0 is an HDF5 virtual dataset (its data mapped from other files); "
    f"{OUTSIDE}",
    "extlink.weights.h5": f"layers/dense/vars/0 is an HDF5 external link (to another file); {NO_LINKS}",
    "extgroup.weights.h5": f"layers/dense is an HDF5 external link (to another file); {NO_LINKS}",
    "softlink.weights.h5": f"layers/dense/vars/0 is an HDF5 soft link; {NO_LINKS}",
    "loop.weights.h5": "layers/dense/layers is a second link to a group or array already read (a loop?)",
    "bomb.weights.h5": "layers/dense/vars/0 declares (65536, 32768) float32 (8,589,934,592 bytes) but the file "
    "stores 0 bytes of it",
    "fill.weights.h5": "layers/dense/vars/0 declares (8192, 8192) float32 (268,435,456 bytes) but the file "
    "stores 0 bytes of it",
    "strings.weights.h5": "layers/dense/vars/0 holds strings, not numbers",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A spec's folder holding the model's spec and every hostile file; the secret lies outside it."""
    root = tmp_path_factory.mktemp("weights")
    folder, secret = root / "spec", root / "outside" / "secret.txt"
    folder.mkdir()
    secret.parent.mkdir()
    secret.write_bytes(hostile.SECRET)
    (folder / "plain.net").write_text(hostile.MODEL, encoding="utf-8")
    for make in (
        hostile.virtual_dataset,
        hostile.external_link,
        hostile.external_link_group,
        hostile.soft_link,
        hostile.hard_link_loop,
        hostile.shape_bomb,
        hostile.fill_bomb,
        hostile.strings,
        hostile.dtype_mismatch,
        hostile.good,
    ):
        make(folder)
    hostile.external_storage(folder, secret)
    hostile.config_bomb(folder)
    hostile.weights_bomb(folder, _config_of_the_model(folder))
    assert {p.name for p in folder.iterdir()} >= set(REFUSED)
    return folder


def _config_of_the_model(folder: Path) -> bytes:
    netdsl.build(folder / "plain.net").save(folder / "model.keras")
    with zipfile.ZipFile(folder / "model.keras") as archive:
        return archive.read("config.json")


def spec_with_init(folder: Path, weights: str, extra: str = "") -> Path:
    path = folder / "init.net"
    path.write_text(
        textwrap.dedent(f"""\
        model m {{
          input x: (4,)
          output y = x -> dense(4)
          train {{
            loss = mse
            init = "{weights}"{extra}
          }}
        }}
    """),
        encoding="utf-8",
    )
    return path


def files_holding(folder: Path, data: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and data in p.read_bytes()]


# ------------------------------------------------ build --weights: one line naming the path in the file, exit 1


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_build_weights_refuses_a_hostile_file_with_one_line_naming_the_path_inside_it(
    files, name, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(files)
    code = main(["build", "plain.net", "--weights", name, "-o", str(tmp_path), "--no-diagram"])
    out, err = capsys.readouterr()
    assert (code, err) == (1, f"{name}: error: {REFUSED[name]}\n")
    assert list(tmp_path.iterdir()) == []


def test_the_zip_bombs_are_refused_by_ratio_before_they_are_expanded(files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(files)
    packed = {
        name: {i.filename: i.compress_size for i in zipfile.ZipFile(files / name).infolist()}
        for name in ("bomb_config.keras", "bomb_weights.keras")
    }
    assert main(["build", "plain.net", "--weights", "bomb_config.keras", "-o", str(tmp_path), "--no-diagram"]) == 1
    assert capsys.readouterr().err == (
        f"bomb_config.keras: error: config.json expands from {packed['bomb_config.keras']['config.json']:,} bytes "
        f"to more than 100x that; a model's config expands less (a zip bomb?)\n"
    )
    assert main(["summary", "plain.net", "--weights", "bomb_weights.keras"]) == 1
    assert capsys.readouterr().err == (
        f"bomb_weights.keras: error: model.weights.h5 expands from "
        f"{packed['bomb_weights.keras']['model.weights.h5']:,} bytes to more than 200x that; a model's weights "
        f"expand less (a zip bomb?)\n"
    )


def test_values_of_another_type_are_a_mismatch_named_before_they_are_read(files):
    with pytest.raises(netdsl.UsageError) as error:
        netdsl.build(files / "plain.net", weights=files / "ints.weights.h5")
    assert str(error.value) == (
        f"layer 'y' has weights of types float32, float32; '{files / 'ints.weights.h5'}' holds int64, float32 for it"
    )


# ------------------------------------------------ a spec's init = FILE: the diagnostic at the setting


@pytest.mark.parametrize("name", ["external.weights.h5", "virtual.weights.h5", "bomb.weights.h5"])
def test_a_specs_init_refuses_a_hostile_file_at_the_setting(files, name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(files)
    spec_with_init(files, name)
    assert main(["build", "init.net", "-o", str(tmp_path), "--no-diagram"]) == 1
    assert capsys.readouterr().err == (
        f"init.net:6:12: error: weights file '{name}': {REFUSED[name]}\n"
        f'  init = "{name}"\n'
        f"         {'^' * (len(name) + 2)}\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_secret_reaches_no_model_and_no_file_whatever_the_strictness(files, tmp_path):
    for extra in ("", "\n    init_strict = false"):
        with pytest.raises(netdsl.SpecError, match="HDF5 external storage"):
            netdsl.build(spec_with_init(files, "external.weights.h5", extra))
    with pytest.raises(FileRefused) as refused:
        netdsl.build(files / "plain.net", weights=files / "external.weights.h5")
    assert (refused.value.file, refused.value.exit_code) == (str(files / "external.weights.h5"), 1)
    model = netdsl.build(files / "plain.net", weights=files / "good.weights.h5")  # the same layout, its own bytes
    np.testing.assert_array_equal(model.get_layer("y").get_weights()[0], hostile.kernel())
    assert files_holding(files, hostile.SECRET) == []


# ------------------------------------------------ train --init-from: refused before any run folder is made


def test_train_init_from_refuses_a_hostile_file_before_any_run_folder(files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(files)
    spec = files / "train.net"
    spec.write_text(hostile.MODEL.replace("dense(4)\n", "dense(4)\n  train {\n    loss = mse\n  }\n"), encoding="utf-8")
    rng = np.random.default_rng(0)
    np.savez(files / "xy.npz", x=rng.normal(size=(8, 4)).astype("float32"), y=rng.normal(size=(8, 4)).astype("float32"))
    for name in ("external.weights.h5", "bomb_weights.keras"):
        code = main(
            [
                "train",
                "train.net",
                "--data",
                "xy.npz",
                "--init-from",
                name,
                "-o",
                str(tmp_path / "runs"),
                "--epochs",
                "1",
            ]
        )
        err = capsys.readouterr().err.splitlines()
        assert (code, err[-1:]) == (1, [f"{files / name}: error: {_reason(files, name)}"])
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []
    assert files_holding(tmp_path, hostile.SECRET) == []


def _reason(files: Path, name: str) -> str:
    if name in REFUSED:
        return REFUSED[name]
    packed = zipfile.ZipFile(files / name).getinfo("model.weights.h5").compress_size
    return (
        f"model.weights.h5 expands from {packed:,} bytes to more than 200x that; a model's weights expand "
        f"less (a zip bomb?)"
    )


# ------------------------------------------------ the fuzzing campaign's findings (python -m tests.fuzz --target weights)

FIXTURES = ROOT / "tests" / "fixtures" / "weights"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        # seed 1, input 1042: a root group whose header is damaged; hashing it raised TypeError ("Objects of
        # class FileID cannot be hashed"), printed as the reason
        (
            "damaged_root.weights.h5",
            "not a readable HDF5 file (Can't get info for object: '.' (unable to determine object type))",
        ),
        # seed 1, input 226: a name that is not UTF-8 (h5py gives it as bytes); sorting it with the others
        # raised "'<' not supported between instances of 'bytes' and 'str'"
        (
            "name_not_utf8.weights.h5",
            "not a readable HDF5 file (Unable to synchronously open object (bad object header version number))",
        ),
        # seed 1, inputs 31397 and 81073: a damaged root header on which HDF5's H5Oget_info (h5py's
        # h5o.get_info, its hash of an object) looped for good; the walk reads objects' identity with
        # H5Gget_objinfo, the header's basics only
        (
            "header_loop.weights.h5",
            "not a readable HDF5 file (Unable to get group info (addr overflow, "
            "addr = 281476138881620, size = 328, eoa = 9256))",
        ),
        (
            "header_loop_2.weights.h5",
            "not a readable HDF5 file (Unable to get group info (addr overflow, "
            "addr = 281476138881620, size = 328, eoa = 13352))",
        ),
    ],
)
def test_the_fuzzers_findings_are_one_line_about_the_file(files, name, message):
    with pytest.raises(FileRefused) as refused:
        netdsl.build(files / "plain.net", weights=FIXTURES / name)
    assert str(refused.value) == message


# ------------------------------------------------ export --weights: the same reader (not Keras' legacy .h5 loader)


def test_export_weights_reads_through_the_same_reader(files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(files)
    out = tmp_path / "m.onnx"
    for name in ("external.weights.h5", "virtual.weights.h5"):
        assert main(["export", "plain.net", "--format", "onnx", "-o", str(out), "--weights", name, "--no-verify"]) == 1
        assert capsys.readouterr().err == f"{name}: error: {REFUSED[name]}\n"
    assert (
        main(["export", "plain.net", "--format", "onnx", "-o", str(out), "--weights", "ints.weights.h5", "--no-verify"])
        == 1
    )
    assert capsys.readouterr().err == (
        "ints.weights.h5: error: cannot load these weights into the model (layer 'y' has weights of types "
        "float32, float32; 'ints.weights.h5' holds int64, float32 for it)\n"
    )
    assert not out.exists()


# ------------------------------------------------ legit files: what Keras saved still loads, bitwise


def test_weights_saved_by_keras_load_as_before(files, tmp_path):
    model = netdsl.build(files / "plain.net")
    model.get_layer("y").set_weights([hostile.kernel(), hostile.bias()])
    model.save_weights(tmp_path / "saved.weights.h5")
    model.save(tmp_path / "saved.keras")
    for saved in ("saved.weights.h5", "saved.keras"):
        loaded = netdsl.build(files / "plain.net", weights=tmp_path / saved)
        for got, want in zip(loaded.get_weights(), model.get_weights()):
            np.testing.assert_array_equal(got, want)


# ------------------------------------------------ every small file: bounded in memory


BOUNDED = """
import json, os, resource, sys
import netdsl
from netdsl.backend.fine_tuning import load_weights_file
model = netdsl.build(sys.argv[1])
with open("/proc/self/statm") as fh:
    held = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
limit = held + int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
answers = {}
for path in sys.argv[3:]:
    try:
        answers[os.path.basename(path)] = ["loaded", load_weights_file(model, path)]
    except netdsl.UsageError as exc:
        answers[os.path.basename(path)] = [type(exc).__name__, str(exc)]
print(json.dumps(answers))
"""


def test_every_hostile_file_is_refused_within_a_memory_bound(files, tmp_path):
    """Under an address-space limit of 1.5 GB beyond what the process holds after its imports, each
    file gets its one line (an 8 GiB allocation, a 1 GiB expansion, a 64 MiB parse would fail)."""
    variants = []
    for shape in ((4, 1 << 28), (1 << 20, 1 << 20, 4), (4, 4, 1 << 40)):
        path = tmp_path / f"bomb_{len(variants)}.weights.h5"
        with __import__("h5py").File(path, "w") as h5:
            h5.create_dataset("layers/dense/vars/0", shape=shape, dtype="float64")
        variants.append(path)
    small = [p for p in sorted(files.iterdir()) if p.name.endswith((".h5", ".keras")) and p.stat().st_size <= 64 * 1024]
    assert len(small) >= 12
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            BOUNDED,
            str(files / "plain.net"),
            str(3 << 29),
            *map(str, small + variants + [files / "bomb_weights.keras"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "dsl"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    answers = json.loads(result.stdout.splitlines()[-1])
    for name in REFUSED:
        assert answers[name] == ["FileRefused", REFUSED[name]], name
    assert answers["bomb_0.weights.h5"] == [
        "FileRefused",
        "layers/dense/vars/0 declares (4, 268435456) float64 (8,589,934,592 bytes) but the file stores 0 bytes of it",
    ]
    assert answers["bomb_2.weights.h5"][0] == "FileRefused"
    assert answers["good.weights.h5"][0] == answers["other.weights.h5"][0] == "loaded"
    assert {kind for kind, _ in answers.values()} <= {"FileRefused", "UsageError", "loaded"}


SHORT_OF_MEMORY = """
import os, resource, sys
import netdsl
from netdsl.backend.fine_tuning import load_weights_file
model = netdsl.build(sys.argv[1])
model.save_weights(sys.argv[2])
with open("/proc/self/statm") as fh:
    held = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (held + (16 << 20), resource.RLIM_INFINITY))
try:
    load_weights_file(model, sys.argv[2])
except netdsl.UsageError as exc:
    print(type(exc).__name__, exc)
"""


def test_a_memory_error_reading_weights_is_the_files_never_the_specs(tmp_path):
    """A genuine shortage (64 MiB of kernel with 16 MiB to spare): one line about the file."""
    spec = tmp_path / "big.net"
    spec.write_text("model big {\n  input x: (4096,)\n  output y = x -> dense(4096)\n}\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", SHORT_OF_MEMORY, str(spec), str(tmp_path / "big.weights.h5")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "dsl"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.stdout.splitlines()[-1:] == ["FileRefused reading it needs more memory than there is"], result.stderr
