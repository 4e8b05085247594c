"""Sweep folders: `DIR/<model>-sweep-<N>/`, one per sweep (per worker on a shared study).

    mlp-sweep-1/
      sweep.json            what was asked: spec, model, objectives, storage, study, seed, data, status
      study.db              the study (SQLite) when no --storage was given
      trials/<k>/           one ordinary run folder per trial k (what `netdsl train` writes)
      summary.csv           trial, parameters, objective, state, epochs, seconds, run
      best.json             the best trial: its parameters, objective and run folder (several
                            objectives: the Pareto front, each trial's values)
      history.png/.svg      the objective per trial with the running best (several: the first)
      params.png/.svg       the objective against each parameter (several: the first)
      pareto.png/.svg       several objectives: the trials and the Pareto front

Statuses in sweep.json: running, finished, stopped (Ctrl-C; `--resume` goes on).

A sweep folder is trusted as a run folder is (`runs.untrusted`): this user owns it, no other account
may write into it, it is no link; `--resume auto` passes over any other, `--resume DIR`, `--join DIR`
and `--show DIR` refuse it. `sweep.json` is read as run files are: a regular file, never through a
link, at most `MAX_RUN_JSON_BYTES`. The only thing a sweep ever deletes is a trial's folder that
`clear_unstarted` proves is netdsl's own and holds nothing a run wrote (a worker killed between
making it and writing config.json).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from netdsl.atomic import write_bytes
from netdsl.files import Refused, read_regular
from netdsl.limits import MAX_RUN_JSON_BYTES, MAX_SWEEP_TRIALS
from netdsl.training.errors import RunError
from netdsl.training.run.runs import RUN_FOLDER_MODE, RunFolder, untrusted

SWEEP = "sweep.json"
# What a trial's run writes into its folder before config.json: the lock, config.json's temporary file.
_BEFORE_CONFIG = re.compile(r"\.lock|\.config\.json\.[0-9a-f]{12}\.tmp")
STUDY_FILE = "study.db"  # the default storage: SQLite in the sweep folder


class SweepFolder:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def create(cls, out: str | os.PathLike, model: str) -> SweepFolder:
        """A new folder `out/<model>-sweep-<N>` (N one past the highest taken)."""
        return cls(RunFolder.create(out, f"{model}-sweep").path)

    @classmethod
    def existing(cls, path: str | os.PathLike) -> SweepFolder:
        folder = cls(path)
        if not folder.path.is_dir():
            raise RunError("no such sweep folder", file=str(path))
        distrust = untrusted(folder.path, "sweep folder")
        if distrust is not None:
            raise RunError(distrust, file=str(path), hint="netdsl resumes, joins and shows only sweep folders you made")
        if not (folder.path / SWEEP).is_file():
            raise RunError(f"not a sweep folder (no {SWEEP})", file=str(path))
        return folder

    @classmethod
    def newest_unfinished(cls, out: str | os.PathLike, model: str) -> SweepFolder | None:
        """The highest-numbered sweep of `model` in `out` that did not finish, or None."""
        out = Path(out)
        numbered = []
        prefix = f"{model}-sweep-"
        if out.is_dir():
            for entry in out.iterdir():
                if entry.name.startswith(prefix) and entry.name[len(prefix) :].isdigit():
                    numbered.append((int(entry.name[len(prefix) :]), entry))
        for _, path in sorted(numbered, reverse=True):
            folder = cls(path)
            if untrusted(path, "sweep folder") is not None or not (path / SWEEP).is_file():
                continue  # another account's (or a world-writable) folder is never adopted
            if folder.read().get("status") != "finished":
                return folder
        return None

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(read_regular(self.path / SWEEP, MAX_RUN_JSON_BYTES, "sweep file", follow_links=False))
        except Refused as exc:
            if str(exc) == "no such file":
                return {}
            raise RunError(f"cannot read {SWEEP}: {exc}", file=str(self.path)) from None
        except (ValueError, RecursionError) as exc:
            raise RunError(f"cannot read {SWEEP}: {exc}", file=str(self.path)) from None
        if not isinstance(data, dict):
            raise RunError(f"cannot read {SWEEP}: not a JSON object", file=str(self.path))
        problem = record_problem(data)
        if problem is not None:
            raise RunError(f"cannot read {SWEEP}: {problem}", file=str(self.path))
        return data

    def write(self, record: dict[str, Any]) -> None:
        # a record that names a database (its URL masked) is its owner's alone: 0600
        write_json(self.path / SWEEP, record, private=record.get("storage", STUDY_FILE) != STUDY_FILE)

    def set_status(self, status: str) -> None:
        record = self.read()
        record["status"] = status
        self.write(record)

    @property
    def own_storage(self) -> str:
        """The URL of the folder's own study file (the default storage)."""
        return f"sqlite:///{(self.path / STUDY_FILE).resolve()}"

    @property
    def trials(self) -> Path:
        return self.path / "trials"

    def trial_dir(self, number: int) -> Path:
        """`trials/<number>`, with `trials/` made now when missing; a link or anything but this user's
        own folder there is refused (trials would be written, and cleared, wherever it points)."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.trials, RUN_FOLDER_MODE)
        distrust = untrusted(self.trials, "sweep's trials folder")
        if distrust is not None:
            raise RunError(
                f"trials: {distrust}", file=str(self.path), hint="netdsl writes trials only into a folder of its own"
            )
        if not self.trials.is_dir():
            raise RunError("trials/ is not a folder", file=str(self.path))
        return self.trials / str(int(number))

    def clear_unstarted(self, run_dir: Path) -> bool:
        """Make way for a trial whose worker died before its run wrote config.json: remove `run_dir` when
        it is this sweep's own `trials/<k>` folder, of this user, holding nothing but what a run writes
        before config.json (its `.lock`, config.json's temporary file). True when `run_dir` is gone
        now; False leaves it as it is (the caller says so). Never recursive, never through a link."""
        if run_dir.parent != self.trials or not run_dir.name.isdigit():
            return False
        try:
            info = os.lstat(run_dir)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode) or untrusted(run_dir) is not None:
            return False
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(run_dir, flags)
        except OSError:
            return False
        try:
            names = os.listdir(fd)
            for name in names:
                entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not (_BEFORE_CONFIG.fullmatch(name) and stat.S_ISREG(entry.st_mode) and entry.st_uid == info.st_uid):
                    return False
            for name in names:
                os.unlink(name, dir_fd=fd)
            os.rmdir(run_dir)  # fails, and leaves the folder, when anything appeared meanwhile
            return True
        except OSError:
            return False
        finally:
            os.close(fd)


# What netdsl writes into sweep.json, by key: the type each value must have where it is given (a damaged
# or edited file is one line, not a KeyError deep in a reader).
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "spec": (dict,),
    "objective": (dict,),
    "objectives": (list,),
    "space": (dict,),
    "data": (dict,),
    "defines": (dict,),
    "sampler": (str, type(None)),
    "pruner": (str, type(None)),
    "study": (str,),
    "storage": (str,),
    "storage_url": (str,),
    "status": (str,),
    "created": (str,),
    "trials": (int,),
    "seed": (int,),
    "epochs": (int, type(None)),
    "batch_size": (int, type(None)),
}
_NESTED_TYPES: dict[tuple[str, str], tuple[type, ...]] = {
    ("spec", "model"): (str,),
    ("spec", "path"): (str,),
    ("spec", "sha256"): (str,),
    ("objective", "metric"): (str,),
    ("objective", "direction"): (str,),
}


def record_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a sweep.json record, or None."""
    for key, kinds in _RECORD_TYPES.items():
        value = record.get(key)
        if key in record and (not isinstance(value, kinds) or isinstance(value, bool)):
            return f"'{key}' holds {type(value).__name__}, not {' or '.join(k.__name__ for k in kinds)}"
    for (outer, key), kinds in _NESTED_TYPES.items():
        value = record.get(outer, {}).get(key)
        if key in record.get(outer, {}) and not isinstance(value, kinds):
            return f"'{outer}.{key}' holds {type(value).__name__}, not {' or '.join(k.__name__ for k in kinds)}"
    if record.get("objective", {}).get("direction", "minimize") not in ("minimize", "maximize"):
        return "'objective.direction' is neither minimize nor maximize"
    for objective in record.get("objectives", []):
        if not (
            isinstance(objective, dict)
            and objective.get("direction") in ("minimize", "maximize")
            and isinstance(objective.get("name"), str)
            and isinstance(objective.get("figure"), (str, type(None)))
        ):
            return "'objectives' holds an entry that is not {direction, name, figure}"
    if not all(isinstance(text, str) for text in record.get("space", {}).values()):
        return "'space' holds a parameter that is not described by a string"
    if not 1 <= record.get("trials", 1) <= MAX_SWEEP_TRIALS:
        return f"'trials' is not a number from 1 to {MAX_SWEEP_TRIALS:,}"
    return None


def write_json(target: Path, data: Any, private: bool = False) -> None:
    """`data` as JSON, atomically; `private`: mode 0600 (a file that names a storage database)."""
    write_bytes(
        target,
        (json.dumps(data, indent=2, allow_nan=False, default=str) + "\n").encode(),
        mode=0o600 if private else None,
    )
