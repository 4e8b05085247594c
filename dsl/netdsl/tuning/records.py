"""What a sweep leaves to read: summary.csv, best.json, the table of `--show`, and two plots.

Everything is read from the study itself (its storage), so a sweep shared by many workers
is summed up whole by any of them. Trials whose number reaches the study's total (two
workers asked for the last trial at the same moment; the later one gave it up) are left out.
The plots are drawn with matplotlib's object API, as curves.py draws a run's curves.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netdsl.atomic import replacing, write_bytes
from netdsl.errors import NetdslError, printable
from netdsl.semantics.values import describe_value
from netdsl.training.errors import RunError
from netdsl.tuning.folder import SweepFolder, write_json

STATES = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "failed", "RUNNING": "running", "WAITING": "waiting"}


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the summary shows it."""

    number: int
    params: dict[str, Any]
    value: float | None  # the objective: the metric's best epoch (None: failed, or still running)
    state: str  # complete, pruned, failed, running
    epochs: int | None
    seconds: float | None
    run_dir: str | None
    reason: str | None = None  # why a trial failed
    resumed: int = 0  # times taken up again from its checkpoint after its worker died


@dataclass(frozen=True)
class SweepResult:
    """A sweep's outcome: its folder, the study's trials (by number) and the best one."""

    dir: Path
    study: str
    storage: str  # the storage URL without its password
    metric: str
    direction: str
    trials: list[TrialRecord] = field(default_factory=list)
    log_scale: tuple[str, ...] = ()  # parameters drawn from log_uniform: plotted on a log axis

    @property
    def best(self) -> TrialRecord | None:
        scored = [(t, value) for t, value in scored_trials(self.trials) if t.state == "complete"]
        if not scored:
            return None
        pick = min if self.direction == "minimize" else max
        return pick(scored, key=lambda pair: pair[1])[0]  # the first of equals: the earliest trial

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.trials:
            out[t.state] = out.get(t.state, 0) + 1
        return out


def scored_trials(trials: list[TrialRecord]) -> list[tuple[TrialRecord, float]]:
    """The trials that have an objective value, each with it (in their order)."""
    return [(t, t.value) for t in trials if t.value is not None]


def records(study: Any, total: int | None, where: Path | None = None) -> list[TrialRecord]:
    """The study's trials below `total` (None: all), by number. A study is data others may have
    written (a shared storage, a received folder): a value of the wrong kind is left out, and a
    study Optuna cannot read is one line (about the sweep folder `where`)."""
    try:
        trials = study.get_trials(deepcopy=False)
        out = [_record(trial) for trial in trials if total is None or trial.number < total]
        return sorted(out, key=lambda t: t.number)
    except NetdslError:
        raise
    except Exception as exc:  # noqa: BLE001 - Optuna and SQLAlchemy raise whatever a damaged study's bytes cause
        raise RunError(f"cannot read the study: {one_line(exc)}", file=None if where is None else str(where)) from None


def _record(trial: Any) -> TrialRecord:
    attrs = trial.user_attrs
    if not isinstance(trial.number, int):
        raise RunError(f"cannot read the study: a trial numbered {describe_value(trial.number)}")
    value = trial.value if trial.state.name == "COMPLETE" else attrs.get("objective")
    params = {name: v for name, v in trial.params.items() if isinstance(name, str)}
    return TrialRecord(
        number=trial.number,
        params=params,
        value=_finite(value),
        state="infeasible"
        if attrs.get("infeasible") is True and trial.state.name == "PRUNED"
        else STATES.get(trial.state.name, trial.state.name.lower()),
        epochs=_whole(attrs.get("epochs")),
        seconds=_finite(attrs.get("seconds")),
        run_dir=_text(attrs.get("run")),
        reason=_text(attrs.get("reason")),
        resumed=_whole(attrs.get("resumed")) or 0,
    )


def one_line(exc: BaseException) -> str:
    """An exception from a library as one escaped line: its type, and the first line of its text."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return printable(f"{type(exc).__name__}: {text}"[:300])


def _finite(value: Any) -> float | None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if number and math.isfinite(value) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def param_names(result: SweepResult) -> list[str]:
    names: list[str] = []
    for t in result.trials:
        names.extend(n for n in t.params if n not in names)
    return names


# ------------------------------------------------------------------ files


def write_records(result: SweepResult) -> None:
    """summary.csv, best.json and the plots in the sweep folder."""
    write_bytes(result.dir / "summary.csv", summary_csv(result).encode())
    best = result.best
    write_json(
        result.dir / "best.json",
        None
        if best is None
        else {
            "trial": best.number,
            "params": best.params,
            "objective": {"metric": result.metric, "direction": result.direction, "value": best.value},
            "epochs": best.epochs,
            "seconds": best.seconds,
            "run": best.run_dir,
            "trials": result.counts(),
            "study": result.study,
            "storage": result.storage,
        },
        private=result.storage != SweepFolder(result.dir).own_storage,
    )
    with contextlib.suppress(Exception):  # a picture must not leave a sweep unfinished (as a run's curves)
        write_plots(result)


def summary_csv(result: SweepResult) -> str:
    names = param_names(result)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["trial", *names, result.metric, "state", "epochs", "seconds", "resumed", "run"])
    for t in result.trials:
        writer.writerow(
            [
                t.number,
                *(_cell(t.params.get(n)) for n in names),
                _cell(t.value),
                t.state,
                _cell(t.epochs),
                _cell(t.seconds),
                t.resumed,
                t.run_dir or "",
            ]
        )
    return buffer.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def show_table(result: SweepResult) -> str:
    """The trials sorted by the objective (best first; pruned, failed and running after), aligned."""
    names = param_names(result)
    order = {"complete": 0, "pruned": 1, "infeasible": 2, "running": 3, "waiting": 3, "failed": 4}
    sign = 1 if result.direction == "minimize" else -1
    rows = sorted(
        result.trials,
        key=lambda t: (order.get(t.state, 4), sign * t.value if t.value is not None else math.inf, t.number),
    )
    header = ["trial", *names, result.metric, "state", "epochs", "seconds"]
    lines = [header] + [
        [
            str(t.number),
            *(_shown(t.params.get(n)) for n in names),
            _cell(t.value),
            t.state,
            _cell(t.epochs),
            _cell(t.seconds),
        ]
        for t in rows
    ]
    lines = [[printable(cell) for cell in row] for row in lines]  # names and values from a study: escaped
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines]
    counts = ", ".join(f"{n} {printable(state)}" for state, n in result.counts().items())
    title = f"{result.study}: {len(result.trials)} trials ({counts}); {result.direction} {result.metric}"
    return "\n".join([printable(title), *text])


def _shown(value: Any) -> str:
    return "" if value is None else f"{value:.4g}" if isinstance(value, float) else describe_value(value)


# ------------------------------------------------------------------ plots

# Text from a spec or a study (study name, metric, parameter names, choice labels) is drawn as
# it is written, its control characters escaped (`printable`): matplotlib would parse `$...$` as
# mathtext (or run TeX with text.usetex), and warn about a missing glyph with the raw character.
PLAIN: dict[str, Any] = {"parse_math": False, "usetex": False}


def write_plots(result: SweepResult) -> list[Path]:
    """history.svg/png (objective per trial, running best) and params.svg/png (objective per parameter)."""
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "netdsl"
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    written = []
    scored = scored_trials(result.trials)
    history = Figure(figsize=(6.4, 4.0))
    axes = history.add_subplot()
    for state, marker in (("complete", "o"), ("pruned", "x")):
        shown = [(t, value) for t, value in scored if t.state == state]
        if shown:
            axes.plot(
                [t.number for t, _ in shown], [value for _, value in shown], marker, linestyle="none", label=state
            )
    complete = [(t, value) for t, value in scored if t.state == "complete"]
    if complete:
        pick = min if result.direction == "minimize" else max
        best: float | None = None
        xs: list[int] = []
        ys: list[float] = []
        for t, value in complete:
            best = value if best is None else pick(best, value)
            xs.append(t.number)
            ys.append(best)
        axes.step(xs, ys, where="post", label="best so far")
    axes.set_xlabel("trial")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel(printable(result.metric), **PLAIN)
    axes.set_title(printable(f"{result.study}: {result.direction} {result.metric}"), **PLAIN)
    axes.grid(True, alpha=0.3)
    if scored:
        axes.legend()
    history.subplots_adjust(left=0.14, right=0.97, bottom=0.13, top=0.9)
    written += _save(history, result.dir / "history")

    names = param_names(result)
    columns = max(1, min(3, len(names)))
    rows = max(1, math.ceil(len(names) / columns))
    params = Figure(figsize=(4.2 * columns, 3.2 * rows))
    params.suptitle(printable(f"{result.metric} against each parameter"), **PLAIN)
    for i, name in enumerate(names):
        axes = params.add_subplot(rows, columns, i + 1)
        points = [(t.params[name], value, t.state) for t, value in scored if name in t.params]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v, _, _ in points)
        labels = sorted({printable(v) for v, _, _ in points}) if not numeric else []
        for state, marker in (("complete", "o"), ("pruned", "x")):
            mine = [(v, y) for v, y, s in points if s == state]
            if mine:
                xs = [v if numeric else labels.index(printable(v)) for v, _ in mine]
                axes.plot(xs, [y for _, y in mine], marker, linestyle="none", label=state)
        if not numeric:
            axes.set_xticks(range(len(labels)), labels, **PLAIN)
        elif name in result.log_scale:
            axes.set_xscale("log")
        axes.set_xlabel(printable(name), **PLAIN)
        axes.set_ylabel(printable(result.metric), **PLAIN)
        axes.grid(True, alpha=0.3)
    # Fixed margins: matplotlib's constrained layout took most of the drawing time.
    params.subplots_adjust(
        left=0.08 if columns > 1 else 0.14,
        right=0.98,
        bottom=0.12 / rows + 0.04,
        top=1 - 0.1 / rows,
        wspace=0.35,
        hspace=0.45,
    )
    written += _save(params, result.dir / "params")
    return written


def _save(figure: Any, base: Path) -> list[Path]:
    out = []
    for suffix, options in (("svg", {"metadata": {"Date": None}}), ("png", {"dpi": 100})):
        target = base.with_suffix(f".{suffix}")
        with replacing(target, suffix=f".tmp.{suffix}") as tmp:
            figure.savefig(tmp, format=suffix, **options)
        out.append(target)
    return out
