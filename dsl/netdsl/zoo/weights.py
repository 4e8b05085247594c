"""A zoo family's published weights: found in the cache, or fetched once and checked by hash.

The cache is Keras' own: `$KERAS_HOME/models/<file name>` (`~/.keras/models` without
KERAS_HOME), the file names keras.applications uses, so a file Keras fetched serves
netdsl and one netdsl fetched serves `keras.applications.X(weights="imagenet")`.

netdsl does the download itself rather than through `keras.utils.get_file`, with the
same layout and the same pinned hashes, because get_file (Keras 3.15) writes into a
shared `/tmp/.keras` when the cache is not writable, writes the download in place under
its final name (a killed download is a file in the cache), and keeps a file whose hash
did not match where the next call finds it. Here a download streams into a new file
beside its final name, is hashed as it arrives, and becomes the cached file only once
its hash is the pinned one; a file in the cache is hashed again every time it is used.
It also needs no backend, so `netdsl zoo fetch` loads no framework.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from netdsl import atomic, files
from netdsl.errors import NetdslError, did_you_mean, printable
from netdsl.limits import MAX_ZOO_WEIGHTS_BYTES, ZOO_DOWNLOAD_TIMEOUT_S
from netdsl.syntax.loader import zoo_specs
from netdsl.zoo.catalog import BY_NAME, Family, WeightsFile

MIRROR_VARIABLE = "NETDSL_ZOO_MIRROR"  # a folder URL holding the files under Keras' names
_CHUNK = 1 << 20


class ZooError(NetdslError):
    """A family or a weights file that cannot be had: one line, the family or file first."""


@dataclass(frozen=True)
class Weights:
    """A checked weights file: where it is, what it is, and its sha256 (recorded by a run)."""

    family: str
    include_top: bool
    path: Path
    sha256: str

    @property
    def name(self) -> str:
        return f"{self.family}/imagenet" + ("" if self.include_top else "-notop")


def family(name: str) -> Family:
    """The zoo family called `name` (case does not matter), or a ZooError with the nearest names."""
    found = BY_NAME.get(name.lower())
    if found is None:
        raise ZooError(
            f"no zoo family is called '{printable(name)}'{_did_you_mean(name)}; `netdsl zoo list` lists them"
        )
    return found


def cache_folder() -> Path:
    """Keras' cache of downloaded models: `$KERAS_HOME/models`, or `~/.keras/models`."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(home) / "models"


def cached(found: Family, include_top: bool) -> Weights | None:
    """The family's file from the cache when it is there and its hash is the pinned one."""
    published = found.weights(include_top)
    path = cache_folder() / published.fname
    if not os.path.lexists(path):
        return None
    digests = _hash_file(path, published, f"{found.name}'s cached weights")
    _check(
        published,
        digests,
        f"{found.name}'s cached weights {path}",
        "delete it, then fetch it again (`netdsl zoo fetch NAME`)",
    )
    return Weights(found.name, include_top, path, digests["sha256"])


def fetch(
    name: str, include_top: bool = False, source: str | os.PathLike | None = None, progress: IO[str] | None = None
) -> Weights:
    """The family's weights, from the cache, else from `source` (a local copy of the published
    file, for a machine without a network) or downloaded (`$NETDSL_ZOO_MIRROR` first when set),
    checked against the pinned hash and kept in the cache."""
    found = family(name)
    published = found.weights(include_top)
    ready = cached(found, include_top)  # a file there is used or refused, never replaced
    if ready is not None:
        return ready
    target = cache_folder() / published.fname
    _make_cache(target.parent)
    try:
        with atomic.replacing(target, suffix=".part", links="refuse") as tmp:
            with open(tmp, "wb") as out:
                if source is not None:
                    where = str(source)
                    digests = _copy_local(Path(source), out, published)
                else:
                    where = _origin(published)
                    digests = _download(where, out, published, progress)
                out.flush()
                os.fsync(out.fileno())
            _check(published, digests, f"{found.name}'s weights from {printable(where)}", "the file was not kept")
    except OSError as exc:  # the cache's disk full, a link planted while the file was written
        raise ZooError(f"cannot keep {published.fname} in {target.parent}: {exc.strerror or exc}") from None
    return Weights(found.name, include_top, target, digests["sha256"])


def _origin(published: WeightsFile) -> str:
    mirror = os.environ.get(MIRROR_VARIABLE)
    if not mirror:
        return published.origin
    return mirror.rstrip("/") + "/" + urllib.parse.quote(published.fname)


def _make_cache(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ZooError(
            f"cannot make the weights cache {folder}: {exc.strerror or exc}; set KERAS_HOME to a folder you can write"
        ) from None
    reason = _foreign(folder)
    if reason is not None:
        raise ZooError(f"the weights cache {folder} {reason}; set KERAS_HOME to a folder of your own")


def _foreign(folder: Path) -> str | None:
    """Why netdsl does not write into this cache folder, or None (it must be this user's, not a link,
    and writable by no one else: a planted file there would be taken for the published weights until
    its hash is checked, and a planted link could send the download elsewhere)."""
    info = os.lstat(folder)
    if os.path.islink(folder):
        return "is a symbolic link"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"belongs to another account (uid {info.st_uid})"
    if info.st_mode & 0o022:
        return "may be written by other accounts"
    return None


def _download(url: str, out: IO[bytes], published: WeightsFile, progress: IO[str] | None) -> dict[str, str]:
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("https", "http", "file"):
        raise ZooError(f"cannot fetch {printable(url)}: only https, http and file URLs are fetched")
    try:
        with urllib.request.urlopen(url, timeout=ZOO_DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310 (scheme checked)
            size = _declared_size(response)
            return _stream(response.read, out.write, published, _reporter(progress, published.fname, size))
    except urllib.error.HTTPError as exc:
        raise ZooError(f"cannot fetch {printable(url)}: HTTP {exc.code} {printable(exc.reason)}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise ZooError(
            f"cannot fetch {printable(url)}: {printable(reason)}; without a network, fetch the "
            f"file elsewhere and give it with --from FILE"
        ) from None


def _declared_size(response: object) -> int | None:
    length = getattr(response, "headers", {}).get("Content-Length")
    try:
        size = int(length) if length is not None else None
    except ValueError:
        return None
    if size is not None and size > MAX_ZOO_WEIGHTS_BYTES:
        raise ZooError(
            f"the server declares {size:,} bytes; a zoo weights file is at most {MAX_ZOO_WEIGHTS_BYTES:,} bytes"
        )
    return size


def _copy_local(source: Path, out: IO[bytes], published: WeightsFile) -> dict[str, str]:
    try:
        with files.open_regular(source, "weights file") as fd, os.fdopen(os.dup(fd), "rb") as src:
            return _stream(src.read, out.write, published, lambda done: None)
    except files.Refused as exc:
        raise ZooError(f"{printable(source)}: {exc}") from None


def _stream(
    read: Callable[[int], bytes],
    write: Callable[[bytes], object],
    published: WeightsFile,
    report: Callable[[int], None],
) -> dict[str, str]:
    md5, sha256, done = hashlib.md5(usedforsecurity=False), hashlib.sha256(), 0
    while chunk := read(_CHUNK):
        done += len(chunk)
        if done > MAX_ZOO_WEIGHTS_BYTES:
            raise ZooError(
                f"{published.fname} is larger than {MAX_ZOO_WEIGHTS_BYTES:,} bytes, "
                "more than any published zoo file; not kept"
            )
        md5.update(chunk)
        sha256.update(chunk)
        write(chunk)
        report(done)
    report(-1)
    return {"md5": md5.hexdigest(), "sha256": sha256.hexdigest()}


def _hash_file(path: Path, published: WeightsFile, what: str) -> dict[str, str]:
    try:
        with (
            files.open_regular(path, "weights file", follow_links=False, own=True) as fd,
            os.fdopen(os.dup(fd), "rb") as src,
        ):
            return _stream(src.read, lambda chunk: None, published, lambda done: None)
    except files.Refused as exc:
        raise ZooError(f"{what} {path}: {exc}") from None


def _check(published: WeightsFile, digests: dict[str, str], what: str, then: str) -> None:
    """A file whose hash is not the one keras.applications pins is refused, both hashes named."""
    expected = published.file_hash
    if expected is None:
        return  # Keras pins none for this file (MobileNetV2); its sha256 is still recorded
    algorithm = "sha256" if len(expected) == 64 else "md5"
    if digests[algorithm] != expected.lower():
        raise ZooError(f"{what}: {algorithm} hash {digests[algorithm]} is not the published {expected}; {then}")


def _reporter(progress: IO[str] | None, fname: str, size: int | None) -> Callable[[int], None]:
    """A progress line on `progress` (a terminal: redrawn in place; else one line at the end)."""
    if progress is None:
        return lambda done: None
    live = progress.isatty()
    last = [-1]

    def report(done: int) -> None:
        if done < 0:
            print(f"\rfetched {fname}: {last[0] / 1e6:,.1f} MB", file=progress, flush=True)
            return
        last[0] = done
        if live:
            total = f" of {size / 1e6:,.1f}" if size else ""
            print(f"\rfetching {fname}: {done / 1e6:,.1f}{total} MB", end="", file=progress, flush=True)

    return report


def _did_you_mean(name: str) -> str:
    close = did_you_mean(name.lower(), BY_NAME)
    return f" ({close})" if close else ""


def spec_line(found: Family) -> str:
    """How a spec uses the family: its import line, or why it has none (its weights can still be fetched)."""
    if found.name in zoo_specs():
        return f'import "zoo:{found.name}"'
    return "none yet (netdsl's decompiler has not proved one the same model): weights only"


def describe(found: Family) -> list[str]:
    """What `netdsl zoo show NAME` prints: the family, its input, its preprocessing, its files."""
    lines = [
        f"{found.name}: keras.applications.{found.constructor}",
        f"  spec: {spec_line(found)}",
        f"  input: {found.input_size}x{found.input_size}x3",
        f"  preprocess: {found.preprocess_text}",
    ]
    spec = zoo_specs().get(found.name)
    if spec is not None:  # the names `freeze = ["NAME.PATTERN"]` reaches inside it by
        lines.append(f"  file: {spec} (its layers' names: netdsl summary FILE)")
    for label, published in (("weights", found.top), ("weights without top", found.notop)):
        here = cache_folder() / published.fname
        state = "cached" if os.path.lexists(here) else "not fetched"
        pinned = f"md5 {published.file_hash}" if published.file_hash else "no hash pinned by Keras"
        lines.append(f"  {label}: {published.origin} ({pinned}; {state})")
    return lines


__all__ = [
    "MIRROR_VARIABLE",
    "Weights",
    "ZooError",
    "cache_folder",
    "cached",
    "describe",
    "family",
    "fetch",
    "spec_line",
]
