"""The preview's web server: a few fixed routes on 127.0.0.1, nothing read from the disk per request.

    GET /             the page (static/index.html)
    GET /preview.js   its script          GET /preview.css   its style sheet
    GET /state        the current snapshot as JSON
    GET /events       Server-Sent Events: the snapshot now, then each new one

Safety: the socket is bound to the loopback address only; a request whose
Host header is not this server's own loopback address and port is refused
(a page on another site cannot reach it through DNS rebinding), and so is one
whose Origin header names another site, or whose Sec-Fetch-Site header says
a browser sent it for another site (an `<img src>` on a page elsewhere sends
no Origin, and could otherwise hold every event stream); any other path
is 404 and nothing is ever served from the file system; every response
forbids framing and sniffing, and the page's Content-Security-Policy allows
only its own script (the diagram's SVG cannot run any), http.server's own
error pages included. At most MAX_CONNECTIONS connections are served at once
(more are closed unanswered), a connection whose request line and headers have
not all arrived within REQUEST_DEADLINE seconds is closed (a slow sender, one
header byte at a time, cannot hold a slot longer), and at most MAX_STREAMS event streams are open, of which at most
MAX_STREAMS_PER_ORIGIN from one origin (`_origin_of`: a program that opens streams
until it is refused leaves the pages theirs), and a stream whose page went away
frees its slot within a second. Other accounts of the machine can read the page, and reach the
port (loopback is theirs too; docs/preview.md says so). What a spec says
reaches the page only as JSON strings the script puts in text nodes, and in
the SVG Graphviz draws from labels netdsl has escaped.
"""

from __future__ import annotations

import io
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from netdsl.preview.snapshot import Snapshot, make_snapshot
from netdsl.preview.watch import Hub, Watcher

__all__ = ["PreviewServer"]

HOST = "127.0.0.1"
KEEPALIVE = 15.0  # seconds between comments on an idle event stream (a closed page is noticed)
MAX_STREAMS = 16  # open event streams at once; more get 503
MAX_STREAMS_PER_ORIGIN = 8  # of them from one origin (_origin_of): programs cannot take the pages' streams
MAX_CONNECTIONS = 64  # connections served at once (one thread each); more are closed at once
REQUEST_DEADLINE = 10.0  # seconds for a request line and all its headers to arrive, however slowly they trickle
CLOSED_CHECK = 1.0  # seconds between two looks at whether a stream's page went away
SAME_SITE = (None, "same-origin", "none")  # Sec-Fetch-Site of the page itself, or of a client not a browser

_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/preview.js": ("preview.js", "text/javascript; charset=utf-8"),
    "/preview.css": ("preview.css", "text/css; charset=utf-8"),
}


class PreviewServer:
    """`netdsl preview`: watch a spec, serve its page. `start()` returns the URL; `close()` ends everything."""

    def __init__(
        self,
        spec: str,
        model: str | None = None,
        *,
        port: int = 0,
        include: Sequence[str | os.PathLike] = (),
        depth: int | None = None,
        interval: float = 0.1,
        defines: dict | None = None,
        cost: bool = False,
        batch: int | None = None,
    ):
        self.spec, self.model, self.include, self.depth = spec, model, list(include), depth
        self.cost, self.batch = cost, batch  # --cost: each box's FLOPs and memory (for --batch)
        self.defines = dict(defines or {})  # -D overrides, applied to every snapshot
        self.hub = Hub(self._rebuild(None))
        self.watcher = Watcher(self.hub, self._rebuild, interval)
        self.static = {
            path: (resources.files(__package__).joinpath("static").joinpath(name).read_bytes(), kind)
            for path, (name, kind) in _STATIC.items()
        }
        self.httpd = _HTTPServer((HOST, port), _Handler)  # OSError when the port is taken
        self.httpd.preview = self
        self.port = self.httpd.server_address[1]
        self.allowed_hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}
        self.allowed_origins = {f"http://{host}" for host in self.allowed_hosts}  # a page of another site: 403
        self._streams: dict[str, int] = {}  # open event streams by origin (_origin_of)
        self._streams_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="netdsl-preview-http", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> str:
        self.watcher.start()
        self._thread.start()
        return self.url

    def close(self) -> None:
        self.hub.stop()  # event streams end
        self.watcher.stop()
        if self._thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()

    def open_stream(self, origin: str) -> str | None:
        """Take an event stream's slot for `origin`; None, or why there is none."""
        with self._streams_lock:
            if self._streams.get(origin, 0) >= MAX_STREAMS_PER_ORIGIN:
                return f"too many open previews from this origin (at most {MAX_STREAMS_PER_ORIGIN})"
            if sum(self._streams.values()) >= MAX_STREAMS:
                return f"too many open previews (at most {MAX_STREAMS})"
            self._streams[origin] = self._streams.get(origin, 0) + 1
            return None

    def close_stream(self, origin: str) -> None:
        with self._streams_lock:
            self._streams[origin] -= 1
            if not self._streams[origin]:
                del self._streams[origin]

    def _rebuild(self, previous: Snapshot | None) -> Snapshot:
        try:
            return make_snapshot(
                self.spec,
                self.model,
                previous,
                include=self.include,
                depth=self.depth,
                defines=self.defines,
                cost=self.cost,
                batch=self.batch,
            )
        except Exception as exc:  # a bug: shown on the page as one line, the last diagram kept
            from dataclasses import replace

            message = f"{self.spec}:1:1: error: internal error in netdsl preview: {type(exc).__name__}: {exc}"
            print(f"netdsl preview: {message}", file=sys.stderr)
            if previous is None:
                return Snapshot(1, self.spec, None, [], message, 1, None, files=[self.spec])
            return replace(
                previous, version=previous.version + 1, diagnostics=message, errors=1, stale=previous.svg is not None
            )


def _origin_of(headers: Any) -> str:
    """Where a request says it comes from: its Origin header (only this server's own get this
    far), else what a browser's Sec-Fetch-Site says ("same-origin": a page of this preview,
    which sends no Origin with a GET), else "" (no browser: a program). A program may say
    anything, so this keeps well-behaved clients apart rather than stopping a local attacker
    (loopback is every account's: docs/preview.md); MAX_STREAMS bounds them all."""
    return headers.get("Origin") or headers.get("Sec-Fetch-Site") or ""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # an open event stream never keeps the process alive
    allow_reuse_address = False  # never share a port another process listens on
    # connections the kernel queues until they are accepted (socketserver's default is 5: a page's burst of
    # requests past it waited a second each for the client's SYN to be sent again)
    request_queue_size = MAX_CONNECTIONS
    preview: PreviewServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):  # idle connections must not take a thread each, unbounded
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _DeadlineReader(io.RawIOBase):
    """A connection's incoming bytes, until a deadline: each read waits at most the time left,
    so a client that sends a byte now and then still runs out of time (TimeoutError)."""

    def __init__(self, connection: socket.socket, deadline: float):
        self.connection, self.deadline = connection, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.connection.settimeout(left)
        return self.connection.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    server_version = "netdsl-preview"
    sys_version = ""
    timeout = 30  # seconds a client may take to read a response (its request: REQUEST_DEADLINE)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the request is read under the deadline instead (http.server closes on TimeoutError)
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, time.monotonic() + REQUEST_DEADLINE))

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # reads the headers
        self.connection.settimeout(self.timeout)  # the request is in: writes get the usual timeout
        return parsed

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        preview = self.server.preview
        origin = self.headers.get("Origin")
        if (
            self.headers.get("Host") not in preview.allowed_hosts
            or (origin is not None and origin not in preview.allowed_origins)
            or (self.headers.get("Sec-Fetch-Site") not in SAME_SITE)
        ):
            self._send(
                403, b"forbidden: this preview answers only to its own loopback address\n", "text/plain; charset=utf-8"
            )
            return
        path = self.path.split("?", 1)[0]
        if path in preview.static:
            body, kind = preview.static[path]
            self._send(200, body, kind)
        elif path == "/state":
            self._send(200, preview.hub.snapshot.to_json().encode("ascii"), "application/json")
        elif path == "/events":
            self._events(preview)
        else:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's errors (400, 414, 501...) with the security headers; the text names no input."""
        self.close_connection = True
        reason = self.responses.get(code, ("error",))[0]
        self._send(code, f"{code} {reason}\n".encode("ascii", "replace"), "text/plain; charset=utf-8")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self._headers(kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _headers(self, kind: str) -> None:
        self.send_header("Content-Type", kind)
        for name, value in _SECURITY_HEADERS.items():
            self.send_header(name, value)

    def _events(self, preview: PreviewServer) -> None:
        origin = _origin_of(self.headers)
        refusal = preview.open_stream(origin)
        if refusal is not None:
            self._send(503, f"{refusal}\n".encode("ascii"), "text/plain; charset=utf-8")
            return
        try:
            self.send_response(200)
            self._headers("text/event-stream")
            self.end_headers()
            self.close_connection = True
            snapshot: Snapshot | None = preview.hub.snapshot
            while not preview.hub.stopped:
                if snapshot is None:
                    self.wfile.write(b": keep-alive\n\n")
                else:
                    self.wfile.write(b"event: snapshot\ndata: " + snapshot.to_json().encode("ascii") + b"\n\n")
                    version = snapshot.version
                self.wfile.flush()
                snapshot = self._wait_newer(preview, version)
        except (BrokenPipeError, ConnectionResetError, TimeoutError, OSError):
            pass  # the page went away
        finally:
            preview.close_stream(origin)

    def _wait_newer(self, preview: PreviewServer, version: int) -> Snapshot | None:
        """The next snapshot, or None after KEEPALIVE seconds; looks every CLOSED_CHECK seconds
        whether the page went away (EOF on the socket), so that its slot is freed at once."""
        waited = 0.0
        while waited < KEEPALIVE and not preview.hub.stopped:
            snapshot = preview.hub.wait_newer(version, CLOSED_CHECK)
            if snapshot is not None:
                return snapshot
            if self._closed_by_client():
                raise ConnectionResetError("the page went away")
            waited += CLOSED_CHECK
        return None

    def _closed_by_client(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        pass  # the terminal is for the URL and errors, not one line per request
