"""`netdsl zoo`: the families listed, their published weights fetched once into Keras' cache and
checked by hash, offline from a local copy or a mirror; against a real HTTP server on this machine.

CI cannot download, so the server here serves a file these tests wrote, and the family the tests
fetch pins that file's hash (`pinned`): every path of the download is the one a user's takes."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import os
import threading
from pathlib import Path

import pytest

import netdsl
from netdsl.cli import main
from netdsl.zoo import weights as zoo_weights
from netdsl.zoo.catalog import BY_NAME, FAMILIES

CONTENT = b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 64  # what the test server serves (not read as HDF5 here)
NOTOP = BY_NAME["resnet50"].notop.fname


class _Server:
    """A plain HTTP server on a free port, serving `files` by name and counting requests."""

    def __init__(self, files: dict[str, bytes]):
        self.files, self.requests = files, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                outer.requests.append(self.path)
                body = outer.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch, tmp_path):
    served = _Server({NOTOP: CONTENT})
    monkeypatch.setenv(zoo_weights.MIRROR_VARIABLE, served.url)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    yield served
    served.close()


@pytest.fixture
def pinned(monkeypatch):
    """resnet50's no-top file pinned to the md5 of CONTENT (keras.applications pins the real file's)."""
    family = BY_NAME["resnet50"]
    notop = dataclasses.replace(family.notop, file_hash=hashlib.md5(CONTENT).hexdigest())
    monkeypatch.setitem(zoo_weights.BY_NAME, "resnet50", dataclasses.replace(family, notop=notop))


def run(capsys, *argv):
    code = main(["zoo", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_names_every_family_and_the_cache(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    code, out, err = run(capsys, "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == [family.name for family in FAMILIES]
    assert lines[0] == "resnet50            spec          keras.applications.ResNet50, 224x224, preprocess caffe"
    assert lines[-1] == f"weights cache: {tmp_path / 'models'}"
    # which families a spec can import: all of them (ConvNeXt-Tiny since netdsl knows its LayerScale)
    assert "convnext_tiny       spec          keras.applications.ConvNeXtTiny, 224x224, preprocess none" in lines
    assert all(line.split()[1] == "spec" for line in lines[:-1])


def test_a_family_without_a_spec_is_weights_only(capsys, monkeypatch, tmp_path):
    """A family the decompiler has not proved (none today) is listed with its weights, which can still be fetched."""
    shipped = {name: path for name, path in zoo_weights.zoo_specs().items() if name != "convnext_tiny"}
    monkeypatch.setattr(zoo_weights, "zoo_specs", lambda: shipped)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    lines = run(capsys, "list")[1].splitlines()
    assert "convnext_tiny       weights only  keras.applications.ConvNeXtTiny, 224x224, preprocess none" in lines
    assert run(capsys, "show", "convnext_tiny")[1].splitlines()[1] == (
        "  spec: none yet (netdsl's decompiler has not proved one the same model): weights only"
    )


def test_show_says_input_preprocessing_and_files(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    code, out, _ = run(capsys, "show", "ResNet50")
    assert code == 0
    assert out.splitlines()[:4] == [
        "resnet50: keras.applications.ResNet50",
        '  spec: import "zoo:resnet50"',
        "  input: 224x224x3",
        "  preprocess: caffe: RGB to BGR, then each channel minus the ImageNet mean (0..255 pixels in)",
    ]
    spec = Path(netdsl.__file__).parent / "zoo" / "specs" / "resnet50.net"
    assert out.splitlines()[4] == f"  file: {spec} (its layers' names: netdsl summary FILE)"
    assert (
        f"  weights without top: https://storage.googleapis.com/tensorflow/keras-applications/resnet/{NOTOP} "
        "(md5 4d473c1dd8becc155b73f8504c6f6626; not fetched)"
    ) in out


def test_an_unknown_family_is_one_line_with_the_nearest(capsys):
    assert run(capsys, "show", "resnet5") == (
        1,
        "",
        "netdsl zoo: error: no zoo family is called 'resnet5' (did you mean 'resnet50'?); "
        "`netdsl zoo list` lists them\n",
    )
    assert run(capsys, "fetch") == (
        1,
        "",
        "netdsl zoo: error: `netdsl zoo fetch` needs a NAME; `netdsl zoo list` lists them\n",
    )


def test_fetch_downloads_once_into_keras_cache(capsys, server, pinned, tmp_path):
    code, out, err = run(capsys, "fetch", "resnet50")
    cached = tmp_path / "keras-home" / "models" / NOTOP
    assert code == 0, err
    assert out == f"resnet50/imagenet-notop: {cached} (sha256 {hashlib.sha256(CONTENT).hexdigest()})\n"
    assert err == f"\rfetched {NOTOP}: {len(CONTENT) / 1e6:,.1f} MB\n"  # not a terminal: one line at the end
    assert cached.read_bytes() == CONTENT
    assert os.listdir(cached.parent) == [NOTOP]  # no temporary file left beside it
    assert server.requests == [f"/{NOTOP}"]
    assert run(capsys, "fetch", "resnet50")[0] == 0
    assert server.requests == [f"/{NOTOP}"], "a cached file is not fetched again"


def test_a_file_whose_hash_is_not_the_published_one_is_not_kept(capsys, server, tmp_path):
    # resnet50's real pinned hash: the test server's file is not the published one
    code, out, err = run(capsys, "fetch", "resnet50")
    got = hashlib.md5(CONTENT).hexdigest()
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"netdsl zoo: error: resnet50's weights from {server.url}/{NOTOP}: md5 hash {got} is not the "
        "published 4d473c1dd8becc155b73f8504c6f6626; the file was not kept"
    )
    assert os.listdir(tmp_path / "keras-home" / "models") == []


def test_a_server_error_is_one_line_and_offline_has_a_way(capsys, server, pinned, tmp_path):
    code, _, err = run(capsys, "fetch", "resnet50", "--top")
    top = BY_NAME["resnet50"].top.fname
    assert code == 1
    assert err == f"netdsl zoo: error: cannot fetch {server.url}/{top}: HTTP 404 Not Found\n"
    server.close()
    code, _, err = run(capsys, "fetch", "resnet50")
    assert code == 1
    assert err.startswith(f"netdsl zoo: error: cannot fetch {server.url}/{NOTOP}: ")
    assert err.endswith("; without a network, fetch the file elsewhere and give it with --from FILE\n")


def test_from_a_local_copy_checks_and_keeps_it(capsys, server, pinned, tmp_path):
    copy = tmp_path / "Downloads" / NOTOP
    copy.parent.mkdir()
    copy.write_bytes(CONTENT + b"more")
    code, _, err = run(capsys, "fetch", "resnet50", "--from", str(copy))
    assert code == 1
    assert err == (
        f"netdsl zoo: error: resnet50's weights from {copy}: md5 hash "
        f"{hashlib.md5(CONTENT + b'more').hexdigest()} is not the published "
        f"{hashlib.md5(CONTENT).hexdigest()}; the file was not kept\n"
    )
    assert os.listdir(tmp_path / "keras-home" / "models") == []
    copy.write_bytes(CONTENT)
    code, out, err = run(capsys, "fetch", "resnet50", "--from", str(copy))
    assert code == 0, err
    assert (tmp_path / "keras-home" / "models" / NOTOP).read_bytes() == CONTENT
    assert server.requests == []


def test_a_damaged_cached_file_is_refused_not_replaced(capsys, server, pinned, tmp_path):
    models = tmp_path / "keras-home" / "models"
    models.mkdir(parents=True)
    (models / NOTOP).write_bytes(b"half a download")
    code, _, err = run(capsys, "fetch", "resnet50")
    assert code == 1
    assert err == (
        f"netdsl zoo: error: resnet50's cached weights {models / NOTOP}: md5 hash "
        f"{hashlib.md5(b'half a download').hexdigest()} is not the published "
        f"{hashlib.md5(CONTENT).hexdigest()}; delete it, then fetch it again (`netdsl zoo fetch NAME`)\n"
    )
    assert (models / NOTOP).read_bytes() == b"half a download", "netdsl deletes only what it made"
    assert server.requests == []


def test_a_cache_that_is_a_link_or_shared_is_not_written(capsys, server, pinned, tmp_path):
    home = tmp_path / "keras-home"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "models").symlink_to(elsewhere)
    code, _, err = run(capsys, "fetch", "resnet50")
    assert code == 1
    assert err == (
        f"netdsl zoo: error: the weights cache {home / 'models'} is a symbolic link; set KERAS_HOME "
        "to a folder of your own\n"
    )
    assert os.listdir(elsewhere) == []
    (home / "models").unlink()
    (home / "models").mkdir(mode=0o777)
    os.chmod(home / "models", 0o777)
    code, _, err = run(capsys, "fetch", "resnet50")
    assert code == 1
    assert err.endswith("may be written by other accounts; set KERAS_HOME to a folder of your own\n")


def test_a_planted_link_in_the_cache_is_not_read(capsys, server, pinned, tmp_path):
    models = tmp_path / "keras-home" / "models"
    models.mkdir(parents=True)
    secret = tmp_path / "secret.h5"
    secret.write_bytes(CONTENT)
    (models / NOTOP).symlink_to(secret)
    code, _, err = run(capsys, "fetch", "resnet50")
    assert code == 1
    assert err == (
        f"netdsl zoo: error: resnet50's cached weights {models / NOTOP}: is a symbolic link, not a "
        "weights file; netdsl does not read through links here\n"
    )


def test_a_server_sending_more_than_any_published_file_is_cut_off(capsys, server, pinned, monkeypatch):
    monkeypatch.setattr(zoo_weights, "MAX_ZOO_WEIGHTS_BYTES", 1000)
    code, _, err = run(capsys, "fetch", "resnet50")
    assert code == 1
    assert err == (
        f"netdsl zoo: error: the server declares {len(CONTENT):,} bytes; a zoo weights file is at most 1,000 bytes\n"
    )


def test_zoo_imports_no_backend():
    import subprocess
    import sys

    code = (
        "import sys; from netdsl.cli import main; main(['zoo', 'list']); "
        "print(sorted(m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(zoo_weights.__file__).parents[2])},
    ).stdout
    assert out.splitlines()[-1] == "[]"
