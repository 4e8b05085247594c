"""Sweep folders: `DIR/<model>-sweep-<N>/`, one per sweep (per worker on a shared study).

    mlp-sweep-1/
      sweep.json            what was asked: spec, model, objective, storage, study, seed, data, status
      study.db              the study (SQLite) when no --storage was given
      trials/<k>/           one ordinary run folder per trial k (what `netdsl train` writes)
      summary.csv           trial, parameters, objective, state, epochs, seconds, run
      best.json             the best trial: its parameters, objective and run folder
      history.png/.svg      the objective per trial with the running best
      params.png/.svg       the objective against each parameter

Statuses in sweep.json: running, finished, stopped (Ctrl-C; `--resume` goes on).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from netdsl.atomic import write_bytes
from netdsl.training.errors import RunError
from netdsl.training.run.runs import RunFolder

SWEEP = "sweep.json"
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
                if entry.name.startswith(prefix) and entry.name[len(prefix):].isdigit():
                    numbered.append((int(entry.name[len(prefix):]), entry))
        for _, path in sorted(numbered, reverse=True):
            folder = cls(path)
            if (path / SWEEP).is_file() and folder.read().get("status") != "finished":
                return folder
        return None

    def read(self) -> dict[str, Any]:
        try:
            return json.loads((self.path / SWEEP).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RunError(f"cannot read {SWEEP}: {exc}", file=str(self.path)) from None

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
        return self.trials / str(number)

    def owns(self, run_dir: str | None) -> bool:
        """Whether a trial's run folder lies in this sweep folder."""
        if not run_dir:
            return False
        try:
            Path(run_dir).resolve().relative_to(self.trials.resolve())
            return True
        except ValueError:
            return False


def write_json(target: Path, data: Any, private: bool = False) -> None:
    """`data` as JSON, atomically; `private`: mode 0600 (a file that names a storage database)."""
    write_bytes(target, (json.dumps(data, indent=2, allow_nan=False, default=str) + "\n").encode(),
                mode=0o600 if private else None)
