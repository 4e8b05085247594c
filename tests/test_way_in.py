"""A way in: the README's install lines, docs/quickstart.md run block by block, `netdsl init` and
`netdsl examples`, and the wheel that ships the example specs and the demo data."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from netdsl.cli import main

ROOT = Path(__file__).resolve().parents[1]


def fenced(path: Path) -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_a_plain_install_line():
    installs = [block for lang, block in fenced(ROOT / "README.md") if lang == "sh" and "pip install" in block]
    lines = [line.split("#")[0].strip() for line in installs[0].splitlines()]
    # a backend is an extra, as in Keras 3; training reads its data with tf.data on every backend
    assert lines[:4] == [
        "pip install 'netdsl[tensorflow]'",
        "pip install 'netdsl[tensorflow,jax]'",
        "pip install 'netdsl[tensorflow,torch]'",
        "pip install netdsl",
    ]
    assert "docs/quickstart.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_quickstart_runs_block_by_block(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    last_output, ran = None, []
    for lang, block in fenced(ROOT / "docs" / "quickstart.md"):
        if lang == "python":
            exec(compile(block, "docs/quickstart.md", "exec"), {})  # the guide's own code
        elif lang == "net":
            name = block.splitlines()[0].lstrip("# ").strip()
            Path(name).write_text(block, encoding="utf-8")
        elif lang == "sh":
            for line in block.splitlines():
                command = line.split("#")[0].strip()
                if not command or command.startswith("pip "):
                    continue
                args = shlex.split(command)[1:]
                if args[0] == "train":
                    args += ["--progress", "none"]
                capsys.readouterr()
                assert main(args) == 0, command
                last_output = capsys.readouterr().out
                ran.append(args[0])
        elif lang == "console":
            assert last_output == block
    assert ran == ["check", "train", "evaluate", "predict", "train", "evaluate", "train", "evaluate"]
    # the image example learns (its spec rescales the 0..255 pixels; without that it stayed at chance, 0.25)
    report = json.loads((tmp_path / "runs" / "pictures-1" / "report.json").read_text())
    assert report["test"]["accuracy"] >= 0.9, report["test"]


def test_init_writes_a_starter_and_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "demo"]) == 0
    assert capsys.readouterr().out == (
        "wrote demo/digits.net\nwrote demo/digits.npz\nnext:\n  cd demo\n  netdsl check digits.net\n"
        "  netdsl render digits.net -o digits.svg\n  netdsl train digits.net --data digits.npz\n"
        "  netdsl evaluate runs/digits-1\n"
    )
    assert main(["check", "demo/digits.net"]) == 0
    import numpy as np

    with np.load("demo/digits.npz") as data:
        assert {k: data[k].shape for k in data.files} == {"image": (2000, 28, 28), "label": (2000,)}
    assert main(["init", "demo"]) == 1
    assert capsys.readouterr().err == (
        "netdsl init: error: demo/digits.net already exists; netdsl does not overwrite it (choose another folder)\n"
    )


def test_examples_are_listed_and_copied_with_their_imports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["examples"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == sorted(p.stem for p in (ROOT / "specs").glob("*.net"))
    assert (
        "multi_output   One trunk, two heads: classify the single object in a 64x64 image and regress its "
        "bounding box." in listed
    )
    assert main(["examples", "unet", "-o", "mine"]) == 0
    assert capsys.readouterr().out == "wrote mine/unet.net\nwrote mine/lib/conv.net\n"
    assert main(["check", "mine/unet.net"]) == 0
    assert main(["examples", "resnet"]) == 1
    assert capsys.readouterr().err == "netdsl examples: error: no example named 'resnet'; did you mean 'resnet50'?\n"


VICTIM = b"the user's own file\n"


def test_init_in_a_folder_with_planted_links_writes_through_none(tmp_path, monkeypatch, capsys):
    """Security review 2026-12b N11: the demo data went through the fixed name .digits.npz.tmp.npz,
    which a link planted in a folder another account made turned into a write to the user's file."""
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "precious.txt"
    victim.write_bytes(VICTIM)
    (tmp_path / "demo").mkdir()
    for name in (".digits.npz.tmp.npz", ".digits.net.tmp", "digits.npz.tmp", ".tmp.npz"):
        os.symlink(victim, tmp_path / "demo" / name)
    assert main(["init", "demo"]) == 0
    assert capsys.readouterr().out.startswith("wrote demo/digits.net\nwrote demo/digits.npz\n")
    assert victim.read_bytes() == VICTIM
    assert not os.path.islink("demo/digits.npz") and not os.path.islink("demo/digits.net")
    import numpy as np

    with np.load("demo/digits.npz") as data:
        assert data["image"].shape == (2000, 28, 28)
    planted = {".digits.npz.tmp.npz", ".digits.net.tmp", "digits.npz.tmp", ".tmp.npz"}
    assert sorted(os.listdir("demo")) == sorted(planted | {"digits.net", "digits.npz"})  # no temporary file left


def test_a_link_planted_at_the_data_file_after_the_check_is_replaced_not_written_through(tmp_path):
    from netdsl.demo_data import write

    victim = tmp_path / "precious.txt"
    victim.write_bytes(VICTIM)
    os.symlink(victim, tmp_path / "digits.npz")  # as if planted between init's check and its write
    write(tmp_path / "digits.npz", samples=10)
    assert victim.read_bytes() == VICTIM
    assert not os.path.islink(tmp_path / "digits.npz") and zipfile.is_zipfile(tmp_path / "digits.npz")


def test_init_refuses_links_at_its_own_names(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "precious.txt"
    victim.write_bytes(VICTIM)
    (tmp_path / "demo").mkdir()
    os.symlink(victim, tmp_path / "demo" / "digits.npz")
    assert main(["init", "demo"]) == 1
    assert capsys.readouterr().err == (
        "netdsl init: error: demo/digits.npz already exists; netdsl does not overwrite it (choose another folder)\n"
    )
    assert victim.read_bytes() == VICTIM


def test_examples_write_through_no_link_planted_in_the_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "mine").mkdir()
    os.symlink(elsewhere, tmp_path / "mine" / "lib")  # unet.net imports lib/conv.net
    assert main(["examples", "unet", "-o", "mine"]) == 1
    assert capsys.readouterr().err == (
        "netdsl examples: error: mine/lib is a symbolic link; netdsl does not write through links\n"
    )
    assert list(elsewhere.iterdir()) == [] and os.listdir("mine") == ["lib"]  # nothing written
    os.remove(tmp_path / "mine" / "lib")
    victim = tmp_path / "precious.txt"
    victim.write_bytes(VICTIM)
    os.symlink(victim, tmp_path / "mine" / ".unet.net.tmp")
    assert main(["examples", "unet", "-o", "mine"]) == 0
    assert victim.read_bytes() == VICTIM
    assert not os.path.islink("mine/unet.net") and not os.path.islink("mine/lib/conv.net")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    builders = pytest.importorskip("hatchling.builders.wheel")
    out = tmp_path_factory.mktemp("wheel")
    (path,) = builders.WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])
    return Path(path)


def test_the_wheel_ships_the_example_specs_and_the_demo_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    specs = {f"netdsl/example_specs/{p.relative_to(ROOT / 'specs')}" for p in (ROOT / "specs").rglob("*.net")}
    assert specs <= names
    assert {"netdsl/demo_data.py", "netdsl/starter.py", "netdsl/netdsl.lark"} <= names
    # the zoo's backbones and the keras.applications names of their layers (without those, a backbone
    # would keep the spec's own names in an installed netdsl, and freeze patterns by Keras names miss)
    zoo = ROOT / "dsl" / "netdsl" / "zoo" / "specs"
    shipped = {f"netdsl/zoo/specs/{p.name}" for p in [*zoo.glob("*.net"), *zoo.glob("*.names.json")]}
    assert len(shipped) == 44 and shipped <= names  # 22 families, a spec and its names each


@pytest.mark.slow
def test_init_and_train_with_the_wheel_alone(wheel, tmp_path):
    """A fresh venv with the wheel installed by pip (its `netdsl` command, no source checkout on
    the path): init, then train to a test score. The dependencies are this venv's, seen through a
    .pth line (the index is not reachable from a test); netdsl itself is the wheel's."""
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True, capture_output=True, timeout=300)
    python = fresh / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    )
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "dependencies.pth").write_text("\n".join(ours) + "\n")  # appended after the venv's own
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    work = tmp_path / "work"
    work.mkdir()
    located = subprocess.run(
        [str(python), "-c", "import netdsl.starter as s; print(s.example_specs())"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert located.stdout.strip() == str(site / "netdsl" / "example_specs"), located.stderr
    netdsl = str(fresh / "bin" / "netdsl")
    subprocess.run([netdsl, "init", "demo"], cwd=work, env=env, check=True, capture_output=True, timeout=60)
    trained = subprocess.run(
        [netdsl, "train", "digits.net", "--data", "digits.npz", "--progress", "none"],
        cwd=work / "demo",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert trained.returncode == 0, trained.stderr
    assert trained.stdout.splitlines()[0].startswith("status: finished (3 of 3 epochs, ")
    assert trained.stdout.splitlines()[3].startswith("test:  test_loss ")


def test_the_gallery_page_lists_every_example_with_its_diagrams():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_gallery
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    text, images = gen_gallery.page()
    assert (ROOT / "docs" / "examples.md").read_text(encoding="utf-8") == text  # scripts/gen_gallery.py rewrites it
    assert [image.name for image, _ in images if not image.is_file()] == []
    assert {image.name.split("-")[0] for image, _ in images} == {p.stem for p in (ROOT / "specs").glob("*.net")}
