"""Run folders: `DIR/<model>-<N>/`, one per run, never reused.

A new run takes the number after the highest one in DIR and creates its
folder with `os.mkdir`, which fails when the folder exists: two runs
started at the same moment get two folders. A run holds an exclusive lock
(`.lock`, flock) while it trains, so `--resume` never continues a run that
another process is still training; the kernel drops the lock when the
process dies, even by SIGKILL.

Statuses (report.json): running, finished, stopped_early, stopped (Ctrl-C
or SIGTERM; resumable), failed (with the reason). `--resume auto` picks the
newest run of the model that did not end: running, stopped or failed.

A runs folder may be shared, so a run folder is only trusted when this user
owns it and no other account may write to it, neither the world nor the
folder's group (`--resume auto` passes over any other; `--resume DIR`
refuses it, saying why), and its files are read as `syntax/source.py` reads
specs: never through a link, only regular files, at most
`MAX_RUN_JSON_BYTES` (a FIFO or `/dev/zero` planted as report.json is
refused at once), and only files this user owns and no one else may write
to. netdsl makes its run folders 0o755 and their files 0o644 (less what the
umask takes), so a umask of 002 (a shared project's setting) never makes its
own runs group-writable.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from netdsl.errors import UsageError
from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_RUN_JSON_BYTES
from netdsl.training.errors import RunError

UNFINISHED = ("running", "stopped", "failed")
# The modes of a run folder and of the files a resume reads back (the umask may take more, never add):
# no other account writes into a run, whatever the umask (002 on many shared project folders).
RUN_FOLDER_MODE, RUN_FILE_MODE = 0o755, 0o644
CONFIG, REPORT, HISTORY, CHECKPOINT = "config.json", "report.json", "history.csv", "checkpoint.npz"
# The two sets of weights a run keeps: its best epoch by val_loss (written only when it has validation
# data) and its last (written when it ends). Every command reading a run uses `RunFolder.weights`.
CHECKPOINTS = {"best": "best.keras", "last": "model.keras"}


@dataclass(frozen=True)
class Weights:
    """The weights of a run a command uses: the file, which of the two, and the line that says so."""

    path: Path
    checkpoint: str  # "best" or "last"
    line: str  # "weights: best (epoch 7 of 10, val_loss 0.1234)", printed on stderr by every command


def check_checkpoint(checkpoint: str | None) -> None:
    """`--checkpoint` / `checkpoint=`: "best", "last" or None (the run's default); UsageError otherwise."""
    if checkpoint is not None and checkpoint not in CHECKPOINTS:
        raise UsageError(f"checkpoint takes 'best' or 'last'; received {checkpoint!r}")


def is_run_folder(path: object) -> bool:
    """Whether `path` names a folder with a run's config.json (what `RunFolder.existing` then checks)."""
    return isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, CONFIG))


def refuse_checkpoint(checkpoint: str | None, what: str) -> None:
    """`--checkpoint` chooses between a run folder's two sets of weights: anything else has one."""
    if checkpoint is not None:
        raise UsageError(f"--checkpoint chooses a run folder's weights (best or last); {what} has one set")


def weights_line(
    checkpoint: str, epoch: int | None, epochs: int | None, val_loss: float | None = None, why: str | None = None
) -> str:
    """What `weights` says: which weights, of which epoch, and why when it is not the one asked for."""
    details = []
    if isinstance(epoch, int):
        details.append(f"epoch {epoch} of {epochs}" if isinstance(epochs, int) else f"epoch {epoch}")
    if isinstance(val_loss, (int, float)) and not isinstance(val_loss, bool):
        details.append(f"val_loss {val_loss:.4f}")
    if why:
        details.append(why)
    return f"weights: {checkpoint}" + (f" ({', '.join(details)})" if details else "")


# Windows has no advisory locks (no fcntl): runs are still never reused. A platform test, not a caught
# ImportError, so that type checkers know `fcntl` exists wherever it is used.
if sys.platform != "win32":
    import fcntl


class RunFolder:
    def __init__(self, path: Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # ------------------------------------------------------------ finding

    @classmethod
    def create(cls, out: str | os.PathLike, model: str) -> RunFolder:
        """A new folder `out/<model>-<N>`, N one past the highest taken."""
        out = Path(out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunError(f"cannot create the runs folder: {exc.strerror or exc}", file=str(out)) from None
        number = max((n for n, _ in _numbered(out, model)), default=0) + 1
        while True:
            path = out / f"{model}-{number}"
            try:
                os.mkdir(path, RUN_FOLDER_MODE)
                return cls(path)
            except FileExistsError:
                number += 1  # another run took it a moment ago
            except OSError as exc:
                raise RunError(f"cannot create a run folder: {exc.strerror or exc}", file=str(path)) from None

    @classmethod
    def at(cls, path: str | os.PathLike) -> RunFolder:
        """A new run folder at exactly `path` (a sweep's `trials/<k>`); RunError when it exists."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, RUN_FOLDER_MODE)
        except FileExistsError:
            raise RunError("this run folder exists already; a run never reuses a folder", file=str(path)) from None
        except OSError as exc:
            raise RunError(f"cannot create a run folder: {exc.strerror or exc}", file=str(path)) from None
        return cls(path)

    @classmethod
    def existing(cls, path: str | os.PathLike) -> RunFolder:
        folder = cls(Path(path))
        if not folder.path.is_dir():
            raise RunError("no such run folder", file=str(path))
        distrust = untrusted(folder.path)
        if distrust is not None:
            raise RunError(distrust, file=str(path), hint="netdsl resumes and reads only run folders you made")
        if not (folder.path / CONFIG).is_file():
            raise RunError(f"not a run folder (no {CONFIG}), or a run killed before it started", file=str(path))
        return folder

    @classmethod
    def newest_unfinished(cls, out: str | os.PathLike, model: str) -> RunFolder | None:
        """The highest-numbered run of `model` in `out` that can be resumed, or None."""
        out = Path(out)
        for _, path in sorted(_numbered(out, model), reverse=True) if out.is_dir() else []:
            folder = cls(path)
            if untrusted(path) is None and (path / CONFIG).is_file() and folder.status() in UNFINISHED:
                return folder
        return None

    # ------------------------------------------------------------ reading

    def read_json(self, name: str) -> dict:
        """A JSON object the run wrote ({} when the file is not there yet); RunError when it is not one."""
        try:
            data = json.loads(
                read_regular(self.path / name, MAX_RUN_JSON_BYTES, "run file", follow_links=False, own=True)
            )
        except Refused as exc:
            if str(exc) == "no such file":
                return {}
            raise RunError(f"cannot read {name}: {exc}", file=str(self.path)) from None
        except (ValueError, RecursionError) as exc:
            raise RunError(f"cannot read {name}: {exc}", file=str(self.path)) from None
        if not isinstance(data, dict):
            raise RunError(f"cannot read {name}: not a JSON object", file=str(self.path))
        return data

    def weights(self, checkpoint: str | None = None) -> Weights:
        """The weights `evaluate`, `predict`, `export`, `decompile` (and train's test scores) use:
        `checkpoint` "best" (best.keras, written at each epoch that lowers val_loss: only a run with
        validation data has one) or "last" (model.keras, written when the run ends); None: best when
        the run has one, else last. RunError when that file is not there (yet)."""
        check_checkpoint(checkpoint)
        report = self.read_json(REPORT)
        status = report.get("status", "running")
        has_best = (self.path / CHECKPOINTS["best"]).is_file()
        chosen = checkpoint or ("best" if has_best else "last")
        path = self.path / CHECKPOINTS[chosen]
        if chosen == "best" and not has_best:
            why = (
                "no epoch has ended yet"
                if status == "running" and not report.get("epochs_run")
                else "the run had no validation data"
            )
            raise RunError(
                f"no best.keras ({why}; status: {status})",
                file=str(self.path),
                hint="--checkpoint last reads model.keras, written when the run ends",
            )
        if not path.is_file():
            raise RunError(
                f"no model.keras yet (status: {status})",
                file=str(self.path),
                hint="it is written when the run ends"
                + ("; --checkpoint best reads best.keras, the best epoch so far" if has_best else ""),
            )
        epochs = report.get("epochs_run")
        if chosen == "best":
            found = report.get("best")
            best: dict = found if isinstance(found, dict) else {}
            return Weights(path, chosen, weights_line(chosen, best.get("epoch"), epochs, best.get("val_loss")))
        reason = "no validation data, so no best epoch" if checkpoint is None else None
        return Weights(path, chosen, weights_line(chosen, epochs, epochs, why=reason))

    def status(self) -> str:
        """The status report.json gives; `running` when it has none yet (killed at the start)."""
        return self.read_json(REPORT).get("status", "running")

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    def subfolder(self, name: str) -> Path:
        """`name` inside the run folder, made now when missing; a link or a file there is refused
        (TensorBoard would write wherever a planted link points)."""
        path = self.path / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, RUN_FOLDER_MODE)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            raise RunError(f"{name} is {what}; netdsl does not write through links", file=str(self.path))
        return path

    # ------------------------------------------------------------ locking

    def in_use(self) -> bool:
        """Whether a live process holds the run's lock now (a killed one holds nothing)."""
        if sys.platform == "win32" or not (self.path / ".lock").is_file():
            return False
        try:
            fd = os.open(self.path / ".lock", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the run's lock; RunError when another live process holds it."""
        if sys.platform == "win32":
            yield
            return
        try:
            fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise RunError(f"cannot lock the run: {exc.strerror or exc}", file=str(self.path)) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
                raise RunError(f"in use by another netdsl process (pid {holder})", file=str(self.path)) from None
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            yield
        finally:
            os.close(fd)  # also releases the lock


def untrusted(path: Path, what: str = "run folder") -> str | None:
    """Why a run folder (or another folder netdsl reads as its own: `what`, a sweep folder, its trials/,
    a SavedModel folder) is not this user's own to resume or run, or None: another account owns it, or
    may write into it (its files could change under the run), or it is a link."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"cannot read the {what}: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode):
        return f"is a symbolic link, not a {what}"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"this {what} belongs to another account (uid {info.st_uid})"
    if info.st_mode & stat.S_IWOTH:
        return f"other accounts may write into this {what} (it is world-writable)"
    if info.st_mode & stat.S_IWGRP:
        return (
            f"the members of its group may write into this {what} (it is group-writable), so the run "
            "could be changed under you; `chmod -R g-w` it to resume it"
        )
    return None


def _numbered(out: Path, model: str) -> list[tuple[int, Path]]:
    pattern = re.compile(rf"{re.escape(model)}-(\d+)")
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(out):
            match = pattern.fullmatch(entry.name)
            if match and entry.is_dir(follow_symlinks=False):
                found.append((int(match.group(1)), Path(entry.path)))
    return found
