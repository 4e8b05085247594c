"""`netdsl preview` without a browser: snapshots, the file watcher, the server's routes and safety.

tests/preview/test_browser.py drives the page in a real headless Chromium.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netdsl.cli import main
from netdsl.preview import PreviewServer
from netdsl.preview.snapshot import make_snapshot
from netdsl.preview.watch import Hub, Watcher

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "errors").glob("*.net"))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")

SPEC = """\
block mlp(units) {
  input x
  output y = x -> dense(units, activation=relu) -> dropout(0.1)
}

model tiny {
  input features: (16,)
  hidden = features -> mlp(32)
  output probs = hidden -> dense(3, activation=softmax)
}
"""


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


# ====================================================================== snapshots


@pytest.mark.parametrize("spec", FIXTURES, ids=lambda p: p.stem)
def test_diagnostics_are_those_of_netdsl_check(spec, monkeypatch):
    monkeypatch.chdir(ROOT)
    expected = spec.with_suffix(".expected").read_text(encoding="utf-8")
    snapshot = make_snapshot(str(spec.relative_to(ROOT)), None, None)
    assert f"exit 1\n{snapshot.diagnostics}\n" == expected
    assert snapshot.errors > 0 and snapshot.svg is None


@needs_dot
def test_a_clean_spec_is_drawn_with_its_details(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    snapshot = make_snapshot(str(spec), None, None)
    assert (snapshot.version, snapshot.model, snapshot.errors, snapshot.diagnostics) == (1, "tiny", 0, "")
    assert snapshot.certain and snapshot.svg.startswith("<svg")
    dense = snapshot.nodes["n1"]
    assert dense == {
        "kind": "dense",
        "role": "layer",
        "name": "hidden.mlp.y.dense",
        "args": [["units", "32"], ["activation", "relu"]],
        "inputs": ["(16,)"],
        "outputs": ["(32,)"],
        "params": "544",
        "block": "hidden.mlp",
        "where": f"{spec}:3:19",
    }
    assert 'id="node&#45;n1"' in snapshot.svg  # the page finds the drawn layer by it
    assert snapshot.nodes["out0"]["outputs"] == ["(3,)"]


@needs_dot
def test_cost_draws_and_details_each_layers_flops_and_memory_as_render_does(tmp_path):
    """`preview --cost` (issue 31): the boxes filled by FLOPs with their figures, as `render --cost` draws them,
    and a clicked layer's details say its cost."""
    import netdsl

    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    snapshot = make_snapshot(str(spec), None, None, cost=True, batch=4)
    plain = make_snapshot(str(spec), None, None)
    dot = netdsl.render(spec, cost=True, batch=4).source
    # dense(16 -> 32, relu): 2 x 512 MACs + 32 bias adds + 32 ReLUs a sample; 4 x 32 x 4 bytes out
    assert snapshot.nodes["n1"]["cost"] == "1.09 KFLOPs  \u00b7  512 B"
    assert f"{snapshot.nodes['n1']['cost']}</FONT>" in dot  # the figure render --cost draws in that box
    assert "cost" not in plain.nodes["n1"] and "FLOPs" not in plain.svg
    assert "KFLOPs a sample; batch 4, float32" in snapshot.svg
    assert "cost" not in snapshot.nodes["out0"]  # an output is no step of its own


@needs_dot
def test_a_broken_spec_keeps_the_last_diagram(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    good = make_snapshot(str(spec), None, None)
    write(spec, SPEC.replace("dense(3", "dens(3"))
    broken = make_snapshot(str(spec), None, good)
    assert broken.version == 2 and broken.errors == 1 and broken.stale
    assert broken.svg == good.svg and broken.nodes == good.nodes
    assert broken.diagnostics.startswith(f"{spec}:9:28: error: unknown layer 'dens'")
    write(spec, SPEC)
    fixed = make_snapshot(str(spec), None, broken)
    assert not fixed.stale and fixed.diagnostics == "" and fixed.version == 3


@needs_dot
def test_what_the_spec_says_reaches_the_page_escaped(tmp_path):
    spec = tmp_path / "x.net"
    write(
        spec,
        'block b(tag) {\n  input x\n  output y = x -> dense(2, name="<script>alert(1)</script>&")\n}\n'
        'model m {\n  input x: (4,)\n  output y = x -> b("<script>alert(2)</script>")\n}\n',
    )
    snapshot = make_snapshot(str(spec), None, None)
    assert snapshot.errors == 0, snapshot.diagnostics
    assert "<script" not in snapshot.svg and "&lt;script&gt;alert(2)" in snapshot.svg  # the block's title
    # In the details it is a JSON string, which the page shows as text.
    assert json.loads(snapshot.to_json())["nodes"]["n1"]["args"][1] == ["name", '"<script>alert(1)</script>&"']


def test_a_model_that_does_not_exist_is_said(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    snapshot = make_snapshot(str(spec), "nope", None)
    assert snapshot.diagnostics == (
        f"{spec}:1:1: error: no model named 'nope'; models: tiny\n  block mlp(units) {{\n  ^"
    )


# ====================================================================== watching


class _Counter:
    def __init__(self, spec: Path):
        self.spec, self.calls = spec, 0

    def rebuild(self, previous):
        self.calls += 1
        return make_snapshot(str(self.spec), None, previous)


@needs_dot
def test_only_a_change_of_content_redraws(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    counter = _Counter(spec)
    hub = Hub(make_snapshot(str(spec), None, None))
    watcher = Watcher(hub, counter.rebuild)
    watcher.prime()
    os.utime(spec, ns=(time.time_ns() + 10**9,) * 2)  # touched, same bytes
    assert not watcher.poll() and counter.calls == 0
    write(spec, SPEC.replace("mlp(32)", "mlp(64)"))
    assert watcher.poll() and counter.calls == 1 and hub.snapshot.nodes["n1"]["outputs"] == ["(64,)"]
    assert not watcher.poll()


@needs_dot
def test_an_imported_file_is_watched(tmp_path):
    (tmp_path / "lib").mkdir()
    write(tmp_path / "lib" / "blocks.net", SPEC.split("model")[0])
    spec = tmp_path / "main.net"
    write(spec, 'import "lib/blocks.net"\n\nmodel tiny {\n  input f: (8,)\n  output y = f -> mlp(4)\n}\n')
    hub = Hub(make_snapshot(str(spec), None, None))
    watcher = Watcher(hub, _Counter(spec).rebuild)
    watcher.prime()
    assert len(hub.snapshot.files) == 2
    write(tmp_path / "lib" / "blocks.net", SPEC.split("model")[0].replace("dropout(0.1)", "dropout(0.5)"))
    assert watcher.poll()
    assert ["rate", "0.5"] in hub.snapshot.nodes["n2"]["args"]


@needs_dot
def test_an_editor_replacing_the_file_does_not_flash_an_error(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    hub = Hub(make_snapshot(str(spec), None, None))
    watcher = Watcher(hub, _Counter(spec).rebuild)
    watcher.prime()
    spec.unlink()  # the moment between an editor's delete and its rename
    assert not watcher.poll() and hub.snapshot.errors == 0
    fresh = tmp_path / "tiny.net.tmp"
    write(fresh, SPEC.replace("mlp(32)", "mlp(8)"))
    fresh.replace(spec)
    assert watcher.poll() and hub.snapshot.nodes["n1"]["outputs"] == ["(8,)"]


# ====================================================================== the server


@pytest.fixture
def served(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    server = PreviewServer(str(spec), port=0, interval=0.05)
    server.start()
    yield server, spec
    server.close()


def get(server, path: str, host: str | None = "") -> tuple[int, dict, bytes]:
    """GET `path` with `host` as the Host header (default: the server's own; None: no Host header)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host if host != "" else f"127.0.0.1:{server.port}")
        conn.endheaders()
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@needs_dot
def test_the_server_listens_on_loopback_only(served):
    server, _ = served
    assert server.httpd.server_address[0] == "127.0.0.1" and server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}/"


@needs_dot
def test_the_known_routes_and_nothing_else(served):
    server, spec = served
    status, headers, body = get(server, "/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8" and b"/preview.js" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"] and headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert get(server, "/preview.js")[0] == 200 and get(server, "/preview.css")[0] == 200
    status, headers, body = get(server, "/state")
    assert status == 200 and json.loads(body)["model"] == "tiny"
    for path in (
        "/tiny.net",
        f"/{spec}",
        "/../" + spec.name,
        "/static/index.html",
        "/%2e%2e/etc/passwd",
        "//etc/passwd",
        "/index.html",
    ):
        assert get(server, path)[0] == 404, path


@needs_dot
@pytest.mark.parametrize("host", ["evil.example:80", "attacker.test", " ", "127.0.0.1", "127.0.0.1:1", None])
def test_a_foreign_host_header_is_refused(served, host):
    """DNS rebinding: a page of another site resolving its name to 127.0.0.1 sends its own Host."""
    server, _ = served
    status, _, body = get(server, "/state", host=host)
    assert status == 403 and b"loopback" in body


@needs_dot
@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1"])
def test_a_request_from_another_site_is_refused(served, origin):
    server, _ = served
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/state", headers={"Origin": origin})
        assert conn.getresponse().status == 403
        conn.request("GET", "/state", headers={"Origin": f"http://127.0.0.1:{server.port}"})
        assert conn.getresponse().status == 200
    finally:
        conn.close()


@needs_dot
def test_localhost_is_accepted(served):
    server, _ = served
    assert get(server, "/state", host=f"localhost:{server.port}")[0] == 200


@needs_dot
def test_events_push_each_new_snapshot(served):
    server, spec = served
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/events")
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
        first = _next_event(response)
        assert first["version"] == 1
        write(spec, SPEC.replace("dense(3,", "dense(5,"))
        second = _next_event(response)
        assert second["version"] == 2 and second["nodes"]["n3"]["outputs"] == ["(5,)"]
    finally:
        conn.close()


def _next_event(response) -> dict:
    lines = []
    while True:
        line = response.fp.readline()
        assert line, "the event stream ended"
        if line == b"\n" and lines:
            break
        if line.startswith(b"data: "):
            lines.append(line[6:])
    return json.loads(b"".join(lines))


# ====================================================================== the command


def test_cli_refuses_a_missing_spec(tmp_path, capsys):
    assert main(["preview", str(tmp_path / "nope.net"), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert (
        err == f"netdsl preview: error: cannot read {tmp_path / 'nope.net'}: no such file\n"
    )  # as `netdsl check` says it


def test_cli_refuses_a_bad_port(tmp_path, capsys):
    assert main(["preview", str(tmp_path / "x.net"), "--port", "70000"]) == 2
    assert capsys.readouterr().err == "netdsl preview: error: --port must be 0 to 65535 and --depth 0 or more\n"


@needs_dot
def test_cli_says_when_the_port_is_taken(tmp_path, capsys):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["preview", str(spec), "--port", str(port)]) == 1
    assert capsys.readouterr().err == (
        f"netdsl preview: error: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "pick another port with --port, or --port 0 for any free one\n"
    )


@needs_dot
def test_cli_prints_the_url_and_serves_until_stopped(tmp_path):
    spec = tmp_path / "tiny.net"
    write(spec, SPEC)
    process = subprocess.Popen(
        [sys.executable, "-m", "netdsl.cli", "preview", str(spec), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("netdsl preview: http://127.0.0.1:") and line.endswith("/  (Ctrl-C to stop)\n")
        port = int(line.split(":")[3].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/state")
        assert json.loads(conn.getresponse().read())["model"] == "tiny"
        conn.close()
        process.send_signal(2)  # Ctrl-C
        assert process.wait(timeout=10) == 0
        assert "Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


# ====================================================================== the guide's examples

GUIDE = (ROOT / "docs" / "preview.md").read_text(encoding="utf-8")


@needs_dot
def test_the_guide_command_serves(tmp_path):
    (command,) = [
        line.split("#")[0].split()
        for block in re.findall(r"```sh\n(.*?)```", GUIDE, re.S)
        for line in block.splitlines()
        if line.strip()
    ]
    assert command[:2] == ["netdsl", "preview"]
    process = subprocess.Popen(
        [sys.executable, "-m", "netdsl.cli", *command[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = process.stdout.readline()
        port = int(line.split(":")[3].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/state")
        state = json.loads(conn.getresponse().read())
        conn.close()
        assert (state["model"], state["errors"], state["certain"]) == ("unet", 0, True)
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


@needs_dot
def test_the_guide_python_example_runs(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    (code,) = re.findall(r"```python\n(.*?)```", GUIDE, re.S)
    exec(compile(code, "docs/preview.md", "exec"), {})  # the guide's own example
    url, model = capsys.readouterr().out.split()
    assert url.startswith("http://127.0.0.1:") and model == "lightning_mlp"
