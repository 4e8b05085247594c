"""Watching a spec (and what it imports) for saves, and handing each new snapshot to the page.

No inotify and no new dependency: a thread polls every `interval` seconds
(0.1 by default). A file's signature is its mtime, size and content hash;
the hash is read again only when the mtime or size moved, and every second
regardless (a same-size save within the file system's time granularity).
Only a change of content makes a new snapshot: touching a file does not.
A file that vanishes is given a moment before it counts, since editors save
by writing a new file and renaming it over the old one.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
import time
from collections.abc import Callable

from netdsl.files import Refused, read_regular
from netdsl.preview.snapshot import Snapshot

__all__ = ["Hub", "Watcher"]

REHASH_EVERY = 1.0  # seconds between full content checks
MISSING_GRACE = 1.0  # seconds a file may be missing (an editor's rename) before it counts
MAX_HASHED_BYTES = 16 * 1024 * 1024  # larger files are told apart by mtime and size (the loader refuses them)


class Hub:
    """The latest snapshot, and a way for each page connection to wait for a newer one."""

    def __init__(self, first: Snapshot):
        self._snapshot = first
        self._changed = threading.Condition()
        self.stopped = False

    @property
    def snapshot(self) -> Snapshot:
        with self._changed:
            return self._snapshot

    def publish(self, snapshot: Snapshot) -> None:
        with self._changed:
            self._snapshot = snapshot
            self._changed.notify_all()

    def wait_newer(self, version: int, timeout: float) -> Snapshot | None:
        """The snapshot once its version passes `version`; None on timeout or when stopped."""
        with self._changed:
            self._changed.wait_for(lambda: self.stopped or self._snapshot.version > version, timeout)
            if self.stopped or self._snapshot.version <= version:
                return None
            return self._snapshot

    def stop(self) -> None:
        with self._changed:
            self.stopped = True
            self._changed.notify_all()


Signature = tuple  # (mtime_ns, size, sha256 digest or None); None for a missing file


class Watcher:
    """Polls the current snapshot's files; calls `rebuild(previous)` when their content changed."""

    def __init__(self, hub: Hub, rebuild: Callable[[Snapshot], Snapshot], interval: float = 0.1):
        self.hub = hub
        self.rebuild = rebuild
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="netdsl-preview-watch", daemon=True)
        self._seen: dict[str, Signature | None] = {}
        self._built: dict[str, bytes | None] = {}  # the digests the current snapshot was made from
        self._missing_since: float | None = None
        self._last_rehash = 0.0

    def prime(self) -> None:
        """Take the files' signatures as the current snapshot's (`start` does it first)."""
        self._seen = {f: _signature(f, None) for f in self.hub.snapshot.files}
        self._built = {f: _digest(s) for f, s in self._seen.items()}

    def start(self) -> None:
        self.prime()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception as exc:  # a bug must not stop the preview silently: say it, keep polling
                print(f"netdsl preview: internal error while updating: {type(exc).__name__}: {exc}", file=sys.stderr)

    def poll(self) -> bool:
        """Look at the files once; True when a new snapshot was published."""
        now = time.monotonic()
        rehash = now - self._last_rehash >= REHASH_EVERY
        if rehash:
            self._last_rehash = now
        files = self.hub.snapshot.files
        self._seen = {f: _signature(f, None if rehash else self._seen.get(f)) for f in files}
        if any(s is None for s in self._seen.values()):
            self._missing_since = self._missing_since or now
            if now - self._missing_since < MISSING_GRACE:
                return False
        else:
            self._missing_since = None
        digests = {f: _digest(s) for f, s in self._seen.items()}
        if digests == {f: self._built.get(f) for f in files}:
            return False
        self._built = digests  # set first: a rebuild that raises is not retried until the next change
        snapshot = self.rebuild(self.hub.snapshot)
        for f in snapshot.files:  # a newly imported file: watched from now on
            if f not in digests:
                self._seen[f] = _signature(f, None)
                digests[f] = _digest(self._seen[f])
        self.hub.publish(snapshot)
        return True


def _signature(path: str, old: Signature | None) -> Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if old is not None and old[:2] == (st.st_mtime_ns, st.st_size):
        return old
    digest = None
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the watcher, a device never end: the loader refuses them
        return (st.st_mtime_ns, st.st_size, repr(("not a regular file", st.st_mode)).encode())
    if st.st_size <= MAX_HASHED_BYTES:
        try:
            digest = hashlib.sha256(read_regular(path, MAX_HASHED_BYTES, "spec file")).digest()
        except Refused:
            return None
    return (st.st_mtime_ns, st.st_size, digest)


def _digest(signature: Signature | None) -> bytes | None:
    if signature is None:
        return None
    return signature[2] if signature[2] is not None else repr(signature[:2]).encode()
