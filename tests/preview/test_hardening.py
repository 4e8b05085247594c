"""The preview under the review's probes (issue 22, security review 2026-12 findings 9 and 10)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from netdsl.preview import PreviewServer
from netdsl.preview import server as server_module

SPEC = "model m {\n  input x: (4,)\n  output y = x -> dense(2)\n}\n"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


@pytest.fixture
def preview(tmp_path):
    (tmp_path / "spec.net").write_text(SPEC)
    server = PreviewServer(str(tmp_path / "spec.net"), port=0)
    server.start()
    yield server
    server.close()


def _request(port: int, path: str, extra: str = "", method: str = "GET") -> tuple[socket.socket, bytes]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode())
    return sock, sock.recv(4096)


CROSS_SITE = "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: no-cors\r\nSec-Fetch-Dest: image\r\n"


@needs_dot
def test_requests_a_browser_marks_cross_site_are_refused_and_cannot_hold_the_streams(preview):
    held = []
    try:
        for _ in range(server_module.MAX_STREAMS + 2):
            sock, head = _request(preview.port, "/events", CROSS_SITE)
            held.append(sock)
            assert head.startswith(b"HTTP/1.0 403 ")
        for path in ("/state", "/"):
            sock, head = _request(preview.port, path, CROSS_SITE)
            held.append(sock)
            assert head.startswith(b"HTTP/1.0 403 ")
        sock, head = _request(preview.port, "/events", "Sec-Fetch-Site: same-origin\r\n")
        held.append(sock)
        assert head.startswith(b"HTTP/1.0 200 ")  # the page's own stream is served
    finally:
        for sock in held:
            sock.close()


SAME_ORIGIN = "Sec-Fetch-Site: same-origin\r\n"  # what a browser sends with the page's own EventSource


@needs_dot
def test_stream_slots_are_bounded_per_origin_and_freed_within_seconds_when_a_client_leaves(preview):
    per_origin, total = server_module.MAX_STREAMS_PER_ORIGIN, server_module.MAX_STREAMS
    programs = [_request(preview.port, "/events") for _ in range(per_origin)]  # no browser headers
    pages = []
    try:
        assert all(head.startswith(b"HTTP/1.0 200 ") for _, head in programs)
        response = _rest(*_request(preview.port, "/events"))
        assert response.startswith(b"HTTP/1.0 503 ")
        assert response.endswith(f"\r\n\r\ntoo many open previews from this origin (at most {per_origin})\n".encode())
        pages = [_request(preview.port, "/events", SAME_ORIGIN) for _ in range(total - per_origin)]
        assert all(head.startswith(b"HTTP/1.0 200 ") for _, head in pages)  # the pages still have theirs
        response = _rest(*_request(preview.port, "/events", f"Origin: http://localhost:{preview.port}\r\n"))
        assert response.endswith(f"\r\n\r\ntoo many open previews (at most {total})\n".encode())
        for sock, _ in programs:
            sock.close()
        deadline = time.monotonic() + 5 * server_module.CLOSED_CHECK + 5
        while time.monotonic() < deadline:
            sock, head = _request(preview.port, "/events")
            sock.close()
            if head.startswith(b"HTTP/1.0 200 "):
                break
            time.sleep(0.2)
        assert head.startswith(b"HTTP/1.0 200 ")  # (0.1.0: 15 s, the next keep-alive)
    finally:
        for sock, _ in programs + pages:
            sock.close()


def _rest(sock: socket.socket, received: bytes) -> bytes:
    """The whole response: one recv() may hold the head alone or head and body together."""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    return received


@needs_dot
def test_http_servers_own_error_pages_carry_the_security_headers(preview):
    sock, head = _request(preview.port, "/state", method="POST")
    head = _rest(sock, head)  # HTTP/1.0: the server closes the connection after its error page
    assert head.startswith(b"HTTP/1.0 501 ")
    assert b"Content-Security-Policy: default-src 'none'" in head and b"X-Frame-Options: DENY" in head
    assert head.endswith(b"\r\nContent-Length: 20\r\n\r\n501 Not Implemented\n")


@needs_dot
def test_idle_connections_are_capped(preview):
    idle = []
    try:
        for _ in range(server_module.MAX_CONNECTIONS + 20):
            idle.append(socket.create_connection(("127.0.0.1", preview.port), timeout=10))
        time.sleep(0.5)
        threads = [t for t in threading.enumerate() if "process_request" in t.name]
        assert len(threads) <= server_module.MAX_CONNECTIONS
    finally:
        for sock in idle:
            sock.close()


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:  # closed with bytes it had not read yet
        return True


@needs_dot
def test_slow_senders_lose_their_slots_at_the_request_deadline(tmp_path, monkeypatch):
    """Security review 2026-12b N15: another account held every connection slot with requests that
    never end (a header line every few seconds), and the user's own page got no answer."""
    monkeypatch.setattr(server_module, "MAX_CONNECTIONS", 4)
    monkeypatch.setattr(server_module, "REQUEST_DEADLINE", 1.0)  # 10 s in use
    (tmp_path / "spec.net").write_text(SPEC)
    server = PreviewServer(str(tmp_path / "spec.net"), port=0)
    server.start()
    stop = threading.Event()
    slow = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(4)]

    def trickle(sock: socket.socket) -> None:
        try:
            sock.sendall(f"GET /state HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: ".encode())
            while not stop.wait(0.1):
                sock.sendall(b"a")  # a header that never ends, one byte at a time
        except OSError:
            pass  # the server closed it

    senders = [threading.Thread(target=trickle, args=(sock,), daemon=True) for sock in slow]
    for sender in senders:
        sender.start()
    try:
        head = b""
        for _ in range(100):  # every slot is a slow sender's until the deadline frees it
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            try:
                sock.sendall(f"GET /state HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
                head = sock.recv(4096)
            except ConnectionResetError:
                head = b""
            finally:
                sock.close()
            if head.startswith(b"HTTP/1.0 200 "):
                break
            time.sleep(0.2)
        assert head.startswith(b"HTTP/1.0 200 ")  # answered while the slow senders are still connected
        assert all(_closed_by_server(sock) for sock in slow)
    finally:
        stop.set()
        for sock in slow:
            sock.close()
        server.close()


@needs_dot
def test_a_spec_importing_a_fifo_is_served_and_its_error_shown(tmp_path):
    os.mkfifo(tmp_path / "p.net")
    (tmp_path / "spec.net").write_text('import "p.net"\n' + SPEC)
    process = subprocess.Popen(
        [sys.executable, "-m", "netdsl.cli", "preview", "spec.net", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()  # 0.1.0 hung here, before the URL: the watcher opened the FIFO
        assert line.startswith("netdsl preview: http://127.0.0.1:")
        port = int(line.split(":")[3].split("/")[0])
        sock, body = _request(port, "/state")  # the first recv() may already hold the whole state
        while b"p.net:1:1: error: is a named pipe (FIFO), not a spec file" not in body:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        sock.close()
        assert b"p.net:1:1: error: is a named pipe (FIFO), not a spec file" in body
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


def test_a_fifo_given_as_the_spec_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "p.net")
    result = subprocess.run(
        [sys.executable, "-m", "netdsl.cli", "preview", "p.net", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "netdsl preview: error: cannot read p.net: is a named pipe (FIFO), not a spec file\n"
