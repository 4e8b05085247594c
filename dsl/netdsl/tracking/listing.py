"""`netdsl runs [DIR]`: one line per run and sweep, newest first; `--json` the same as data."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from netdsl.errors import printable
from netdsl.tracking.found import Found, Sweep, number, run_best, spec_of, sweep_best, text
from netdsl.training.run.record import Run


@dataclass(frozen=True)
class Entry:
    """One line of `netdsl runs`."""

    kind: str  # "run" or "sweep"
    path: str
    name: str
    model: str
    status: str
    epochs: int | None  # a run's epochs run; a sweep's trials with a run folder
    best_metric: str | None
    best: float | None
    spec_sha256: str
    created: str
    front: int | None = None  # a sweep of several objectives: the trials of its Pareto front (it has no best)

    def as_json(self) -> dict:
        return asdict(self)


def entries(found: Found, root: Path) -> list[Entry]:
    """The runs and sweeps found, newest first (by when they were made, then by name)."""
    lines = [_run_entry(run, root) for run in found.runs] + [_sweep_entry(sweep, root) for sweep in found.sweeps]
    return sorted(lines, key=lambda e: (e.created, e.name), reverse=True)


def _name(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root)) if path != root else path.name
    except ValueError:
        return str(path)


def _run_entry(run: Run, root: Path) -> Entry:
    assert run.dir is not None
    best = run_best(run)
    epochs = number(run.report.get("epochs_run"))
    return Entry(
        "run",
        str(run.dir),
        _name(run.dir, root),
        text(spec_of(run.config).get("model")) or text(run.report.get("model"), "?"),
        run.status,
        int(epochs) if epochs is not None else None,
        best[0] if best else None,
        best[1] if best else None,
        text(spec_of(run.config).get("sha256")),
        text(run.config.get("created")),
    )


def _sweep_entry(sweep: Sweep, root: Path) -> Entry:
    best = sweep_best(sweep)
    spec = spec_of(sweep.record)
    return Entry(
        "sweep",
        str(sweep.dir),
        _name(sweep.dir, root),
        text(spec.get("model"), "?"),
        sweep.status,
        len(sweep.trials),
        best[0] if best else None,
        best[1] if best else None,
        text(spec.get("sha256")),
        text(sweep.record.get("created")),
        len(sweep.best["pareto"]) if isinstance(sweep.best.get("pareto"), list) else None,
    )


def table(lines: list[Entry]) -> list[str]:
    """The lines printed: a header, then one per entry, columns aligned, outside text escaped."""
    rows = [["NAME", "MODEL", "STATUS", "EPOCHS", "BEST", "SPEC"]]
    for e in lines:
        epochs = "" if e.epochs is None else (f"{e.epochs} trials" if e.kind == "sweep" else str(e.epochs))
        best = f"{e.best_metric} {e.best:.4g}" if e.best is not None and e.best_metric else "-"
        if e.front is not None:
            best = f"front of {e.front}"
        rows.append(
            [
                printable(e.name) + ("/" if e.kind == "sweep" else ""),
                printable(e.model),
                printable(e.status),
                epochs,
                printable(best),
                printable(e.spec_sha256[:12]) or "-",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
