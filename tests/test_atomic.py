"""Outputs are written atomically and never through a link planted where they go.

A build folder may be shared: whoever can write into it can leave a symbolic
link named like the next output (`build/m.keras -> ~/.bashrc`). Writing must
replace the link itself and leave the file it points to as it was; `fmt`,
which rewrites the file the user named, refuses a link instead. No write
touches the process umask (a language server writes from several threads).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from netdsl import atomic
from netdsl.cli import main

SPEC = "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"


def _planted_link(folder: Path, name: str, tmp_path: Path) -> Path:
    """`folder/name` -> a file outside it holding 'precious'; returns that file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).symlink_to(victim)
    return victim


def test_a_planted_link_is_replaced_and_its_target_untouched(tmp_path):
    out = tmp_path / "out"
    victim = _planted_link(out, "m.dot", tmp_path)
    atomic.write_bytes(out / "m.dot", b"digraph {}\n")
    assert victim.read_text() == "precious"
    assert not (out / "m.dot").is_symlink()
    assert (out / "m.dot").read_bytes() == b"digraph {}\n"
    assert sorted(p.name for p in out.iterdir()) == ["m.dot"]  # no temporary file left


def test_a_link_to_a_file_that_does_not_exist_is_not_followed(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "m.dot").symlink_to(tmp_path / "created-by-nobody")
    atomic.write_bytes(out / "m.dot", b"x")
    assert not (tmp_path / "created-by-nobody").exists()
    assert (out / "m.dot").read_bytes() == b"x" and not (out / "m.dot").is_symlink()


def test_refusing_links_leaves_both_the_link_and_its_file(tmp_path):
    victim = _planted_link(tmp_path, "a.net", tmp_path)
    with pytest.raises(atomic.LinkRefused) as info:
        atomic.write_bytes(tmp_path / "a.net", b"x", links="refuse")
    assert info.value.strerror == "it is a symbolic link; netdsl does not write through links"
    assert victim.read_text() == "precious" and (tmp_path / "a.net").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.net", "victim.txt"]


def test_a_new_file_gets_the_umask_mode_and_a_replaced_file_keeps_its_mode(tmp_path):
    umask = os.umask(0o027)  # this test's own setting, restored below
    try:
        atomic.write_bytes(tmp_path / "new.txt", b"x")
        kept = tmp_path / "kept.txt"
        kept.write_bytes(b"old")
        os.chmod(kept, 0o600)
        atomic.write_bytes(kept, b"new")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_bytes() == b"new"


def test_a_private_file_is_its_owners_alone_whatever_it_replaces(tmp_path):
    """`mode=0o600` (a sweep.json naming a database): a new file, a 0644 file and a planted link
    all end as a 0600 regular file, the link's target untouched; the temporary file is never wider."""
    victim = _planted_link(tmp_path, "linked.json", tmp_path)
    wide = tmp_path / "wide.json"
    wide.write_bytes(b"old")
    os.chmod(wide, 0o644)
    seen: list[int] = []
    for name in ("new.json", "wide.json", "linked.json"):
        with atomic.replacing(tmp_path / name, mode=0o600) as tmp:
            seen.append(stat.S_IMODE(tmp.stat().st_mode))
            tmp.write_bytes(b"secret")
        written = (tmp_path / name).lstat()
        assert stat.S_ISREG(written.st_mode) and stat.S_IMODE(written.st_mode) == 0o600
    assert seen == [0o600] * 3 and victim.read_text() == "precious"
    atomic.write_bytes(wide, b"again", mode=0o600)
    assert stat.S_IMODE(wide.stat().st_mode) == 0o600 and wide.read_bytes() == b"again"


def test_writing_never_changes_the_umask(tmp_path, monkeypatch):
    def no_umask(_mask):
        raise AssertionError("os.umask changes the mask of every thread")

    monkeypatch.setattr(os, "umask", no_umask)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for j in range(20):
                atomic.write_bytes(tmp_path / f"f{i}.txt", f"{i}-{j}".encode())
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f0.txt", "f1.txt", "f2.txt", "f3.txt"]
    assert (tmp_path / "f3.txt").read_text() == "3-19"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    old = tmp_path / "m.dot"
    old.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.replacing(old) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert old.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.dot"]


def test_render_replaces_a_planted_link(tmp_path, capsys):
    spec = tmp_path / "spec.net"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    victim = _planted_link(out, "m.dot", tmp_path)
    assert main(["render", str(spec), "--no-shapes", "--format", "dot", "-o", f"{out}/"]) == 0
    assert victim.read_text() == "precious"
    assert (out / "m.dot").read_text().startswith("digraph")
    assert capsys.readouterr().out == f"wrote {out / 'm.dot'}\n"


def test_render_into_a_folder_it_cannot_write_is_one_line(tmp_path, capsys):
    spec = tmp_path / "spec.net"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    out.mkdir()
    (out / "m.dot").mkdir()  # a folder where the diagram should go
    assert main(["render", str(spec), "--no-shapes", "--format", "dot", "-o", f"{out}/"]) == 1
    err = capsys.readouterr().err
    assert err == f"{spec}:1:1: error: cannot write the diagram of 'm': Is a directory\n"


def test_fmt_refuses_to_write_through_a_link(tmp_path, capsys):
    real = tmp_path / "real.net"
    real.write_text("let   a=1\n")
    link = tmp_path / "link.net"
    link.symlink_to(real)
    assert main(["fmt", str(link)]) == 1
    assert capsys.readouterr().err == (
        f"{link}:1:1: error: cannot write file: it is a symbolic link; "
        "netdsl does not write through links\n  let   a=1\n  ^\n"
    )
    assert real.read_text() == "let   a=1\n" and link.is_symlink()
    assert main(["fmt", "--check", str(link)]) == 1  # reading through it is fine
    assert capsys.readouterr().out == f"would reformat {link}\n"


def test_build_replaces_a_link_planted_in_the_output_folder(tmp_path, capsys):
    spec = tmp_path / "spec.net"
    spec.write_text(SPEC)
    out = tmp_path / "build"
    victim = _planted_link(out, "m.keras", tmp_path)
    assert main(["build", str(spec), "-o", str(out), "--no-diagram"]) == 0
    assert victim.read_text() == "precious"
    saved = out / "m.keras"
    assert not saved.is_symlink()
    import keras

    import netdsl  # noqa: F401 - registers netdsl's objects for loading

    assert keras.models.load_model(saved, safe_mode=True).count_params() == 10
