"""What a sweep leaves to read: summary.csv, best.json, the table of `--show` (and its JSON), and the
plots; with several objectives, the Pareto front in each of them and pareto.svg/png.

Everything is read from the study itself (its storage), so a sweep shared by many workers
is summed up whole by any of them. Trials whose number reaches the study's total (two
workers asked for the last trial at the same moment; the later one gave it up) are left out.
The plots are drawn with matplotlib's object API, as curves.py draws a run's curves.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from netdsl.atomic import write_bytes
from netdsl.errors import NetdslError, printable
from netdsl.semantics.sweep_space import Objective
from netdsl.semantics.values import describe_value
from netdsl.training.errors import RunError
from netdsl.tuning.folder import SweepFolder, write_json

FIGURES = "figures"  # a trial's user attribute: each cost objective's figure, by its name (runner.py)
STATES = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "failed", "RUNNING": "running", "WAITING": "waiting"}


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the summary shows it."""

    number: int
    params: dict[str, Any]
    value: float | None  # the objective: the metric's best epoch (None: failed, or still running); several: the first's
    state: str  # complete, pruned, infeasible, failed, running
    epochs: int | None
    seconds: float | None
    run_dir: str | None
    reason: str | None = None  # why a trial failed
    resumed: int = 0  # times taken up again from its checkpoint after its worker died
    values: tuple[float | None, ...] = ()  # each objective's value, in the order of SweepResult.goals


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
    objectives: tuple[Objective, ...] = ()  # what the sweep optimizes (empty: `metric`, `direction` alone)

    @property
    def goals(self) -> tuple[Objective, ...]:
        """The objectives, in the order written (a sweep recorded before `objectives`: its one metric)."""
        return self.objectives or (Objective(self.direction, self.metric),)

    @property
    def multi(self) -> bool:
        """Whether the sweep has several objectives (then it has a Pareto front, and no best trial)."""
        return len(self.goals) > 1

    @property
    def pareto(self) -> list[TrialRecord]:
        """The complete trials no other complete trial dominates, sorted by the first objective (best
        first), then the next; with one objective, the best trial and any equal to it."""
        return pareto_front(self.trials, [goal.direction for goal in self.goals])

    @property
    def best(self) -> TrialRecord | None:
        """The complete trial of the best objective value; None with several objectives (see `pareto`)."""
        if self.multi:
            return None
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


def pareto_front(trials: list[TrialRecord], directions: list[str]) -> list[TrialRecord]:
    """The complete trials with a finite value for every objective that no other such trial dominates (is at
    least as good on every objective and better on one), sorted best first by the first objective, then the
    next. Trials of equal values are all on it. Sorted so, a trial can only be dominated by one before it, and
    then by one of the front found so far: n times the front's size comparisons, not n squared."""
    signs = [1.0 if direction == "minimize" else -1.0 for direction in directions]
    points = []
    for t in trials:
        if t.state == "complete" and len(t.values) == len(signs) and all(v is not None for v in t.values):
            points.append((tuple(sign * cast(float, v) for sign, v in zip(signs, t.values)), t.number, t))
    points.sort(key=lambda point: point[:2])
    front: list[tuple[tuple[float, ...], TrialRecord]] = []
    for point, _, t in points:
        if not any(_dominates(other, point) for other, _ in front):
            front.append((point, t))
    return [t for _, t in front]


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether `a` is no worse than `b` everywhere and better somewhere (both to minimize)."""
    return all(x <= y for x, y in zip(a, b)) and a != b


def records(
    study: Any, total: int | None, where: Path | None = None, objectives: tuple[Objective, ...] | list[Objective] = ()
) -> list[TrialRecord]:
    """The study's trials below `total` (None: all), by number, each with the value of each of `objectives`.
    A study is data others may have written (a shared storage, a received folder): a value of the wrong kind
    is left out, and a study Optuna cannot read is one line (about the sweep folder `where`)."""
    try:
        trials = study.get_trials(deepcopy=False)
        out = [_record(trial, tuple(objectives)) for trial in trials if total is None or trial.number < total]
        return sorted(out, key=lambda t: t.number)
    except NetdslError:
        raise
    except Exception as exc:  # noqa: BLE001 - Optuna and SQLAlchemy raise whatever a damaged study's bytes cause
        raise RunError(f"cannot read the study: {one_line(exc)}", file=None if where is None else str(where)) from None


def _record(trial: Any, objectives: tuple[Objective, ...]) -> TrialRecord:
    attrs = trial.user_attrs
    if not isinstance(trial.number, int):
        raise RunError(f"cannot read the study: a trial numbered {describe_value(trial.number)}")
    values = _values(trial, objectives)
    params = {name: v for name, v in trial.params.items() if isinstance(name, str)}
    return TrialRecord(
        number=trial.number,
        params=params,
        value=values[0] if values else None,
        values=values,
        state="infeasible"
        if attrs.get("infeasible") is True and trial.state.name == "PRUNED"
        else STATES.get(trial.state.name, trial.state.name.lower()),
        epochs=_whole(attrs.get("epochs")),
        seconds=_finite(attrs.get("seconds")),
        run_dir=_text(attrs.get("run")),
        reason=_text(attrs.get("reason")),
        resumed=_whole(attrs.get("resumed")) or 0,
    )


def _values(trial: Any, objectives: tuple[Objective, ...]) -> tuple[float | None, ...]:
    """Each objective's value: a complete trial's as told to Optuna; another's its cost figures (recorded
    before it was built) and, pruned, its metric's best epoch so far."""
    count = max(len(objectives), 1)
    told = trial.values if trial.state.name == "COMPLETE" else None
    if isinstance(told, (list, tuple)) and len(told) == count:
        return tuple(_finite(v) for v in told)
    figures = trial.user_attrs.get(FIGURES)
    figures = figures if isinstance(figures, dict) else {}
    first_trained = next((i for i, o in enumerate(objectives) if not o.static), 0)
    values: list[float | None] = []
    for i in range(count):
        if i < len(objectives) and objectives[i].static:
            values.append(_finite(figures.get(objectives[i].name)))
        elif i == first_trained:  # a pruned trial's best epoch so far
            values.append(_finite(trial.user_attrs.get("objective")))
        else:
            values.append(None)
    return tuple(values)


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
    """summary.csv and best.json in the sweep folder (the plots beside them: `plots.py`)."""
    write_bytes(result.dir / "summary.csv", summary_csv(result).encode())
    write_json(
        result.dir / "best.json",
        _front_record(result) if result.multi else _best_record(result),
        private=result.storage != SweepFolder(result.dir).own_storage,
    )


def _best_record(result: SweepResult) -> dict[str, Any] | None:
    best = result.best
    if best is None:
        return None
    return {
        "trial": best.number,
        "params": best.params,
        "objective": {"metric": result.metric, "direction": result.direction, "value": best.value},
        "epochs": best.epochs,
        "seconds": best.seconds,
        "run": best.run_dir,
        "trials": result.counts(),
        "study": result.study,
        "storage": result.storage,
    }


def _front_record(result: SweepResult) -> dict[str, Any]:
    """best.json of a sweep of several objectives: no one best trial, but the Pareto front, sorted."""
    return {
        "objectives": [goal.describe() for goal in result.goals],
        "pareto": [
            {
                "trial": t.number,
                "params": t.params,
                "values": _named_values(result, t),
                "epochs": t.epochs,
                "seconds": t.seconds,
                "run": t.run_dir,
            }
            for t in result.pareto
        ],
        "trials": result.counts(),
        "study": result.study,
        "storage": result.storage,
    }


def _named_values(result: SweepResult, trial: TrialRecord) -> dict[str, float | None]:
    return {goal.name: value for goal, value in zip(result.goals, values_of(trial, result))}


def values_of(trial: TrialRecord, result: SweepResult) -> tuple[float | None, ...]:
    """A trial's value of each objective (a record made without `values`: its one value)."""
    return (
        trial.values if len(trial.values) == len(result.goals) else (trial.value,) + (None,) * (len(result.goals) - 1)
    )


def summary_csv(result: SweepResult) -> str:
    """One row per trial: its parameters, each objective's value (several: and whether it is on the Pareto
    front), its state and its run."""
    names = param_names(result)
    front = {t.number for t in result.pareto}
    marks = ["pareto"] if result.multi else []
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["trial", *names, *(g.name for g in result.goals), *marks, "state", "epochs", "seconds", "resumed", "run"]
    )
    for t in result.trials:
        writer.writerow(
            [
                t.number,
                *(_cell(t.params.get(n)) for n in names),
                *(_cell(v) for v in values_of(t, result)),
                *(["true" if t.number in front else "false"] if result.multi else []),
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


# Trials in `--show`: complete ones first, then pruned, infeasible, running and failed ones.
ORDER = {"complete": 0, "pruned": 1, "infeasible": 2, "running": 3, "waiting": 3, "failed": 4}


def show_table(result: SweepResult) -> str:
    """The trials sorted by the objective (best first; pruned, failed and running after), aligned; with
    several objectives, the Pareto front first, then every trial (the front's first, marked)."""
    if result.multi:
        return _front_table(result)
    names = param_names(result)
    sign = 1 if result.direction == "minimize" else -1
    rows = sorted(
        result.trials,
        key=lambda t: (ORDER.get(t.state, 4), sign * t.value if t.value is not None else math.inf, t.number),
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
    return "\n".join([_title(result), *_aligned(lines)])


def _front_table(result: SweepResult) -> str:
    names, goals = param_names(result), result.goals
    front = result.pareto
    on = {t.number for t in front}
    sign = 1 if goals[0].direction == "minimize" else -1
    rest = sorted(
        (t for t in result.trials if t.number not in on),
        key=lambda t: (ORDER.get(t.state, 4), sign * t.value if t.value is not None else math.inf, t.number),
    )
    values = lambda t: [_figure_text(g, v) for g, v in zip(goals, values_of(t, result))]  # noqa: E731
    front_lines = [["trial", *(g.name for g in goals), *names]] + [
        [str(t.number), *values(t), *(_shown(t.params.get(n)) for n in names)] for t in front
    ]
    every = [["trial", *names, *(g.name for g in goals), "pareto", "state", "epochs", "seconds"]] + [
        [
            str(t.number),
            *(_shown(t.params.get(n)) for n in names),
            *values(t),
            "*" if t.number in on else "",
            t.state,
            _cell(t.epochs),
            _cell(t.seconds),
        ]
        for t in [*front, *rest]
    ]
    complete = sum(1 for t in result.trials if t.state == "complete")
    heading = (
        f"Pareto front: {len(front)} of {complete} complete trial{'s' if complete != 1 else ''}, "
        f"best {printable(goals[0].name)} first"
    )
    return "\n".join([_title(result), heading, *_aligned(front_lines), "", "Every trial:", *_aligned(every)])


def _json_value(value: Any) -> Any:
    """A parameter as JSON holds it: a number that is no finite one (a damaged study's) as null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _title(result: SweepResult) -> str:
    counts = ", ".join(f"{n} {state}" for state, n in result.counts().items())
    goals = ", ".join(f"{g.direction} {g.name}" for g in result.goals)
    return printable(f"{result.study}: {len(result.trials)} trials ({counts}); {goals}")


def _aligned(lines: list[list[str]]) -> list[str]:
    """Rows of cells in columns, each as wide as its widest cell; names and values from a study escaped."""
    lines = [[printable(cell) for cell in row] for row in lines]
    widths = [max(len(row[i]) for row in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines]


def _figure_text(goal: Objective, value: float | None) -> str:
    """A value as `--show` prints it: a cost figure (a count, FLOPs, bytes) whole with thousands separators."""
    if value is not None and goal.static and float(value).is_integer():
        return f"{int(value):,}"
    return _cell(value)


def _shown(value: Any) -> str:
    return "" if value is None else f"{value:.4g}" if isinstance(value, float) else describe_value(value)


def sweep_json(result: SweepResult) -> dict[str, Any]:
    """`netdsl sweep --show DIR --json`: the objectives, every trial (each objective's value by name, and
    whether it is on the Pareto front), the front (trial numbers, sorted) and the best trial (one objective)."""
    front = result.pareto
    on = {t.number for t in front}
    best = result.best
    return {
        "dir": str(result.dir),
        "study": result.study,
        "storage": result.storage,
        "objectives": [{"name": g.name, "direction": g.direction, "figure": g.figure} for g in result.goals],
        "counts": result.counts(),
        "pareto": [t.number for t in front],
        "best": None if best is None else best.number,
        "trials": [
            {
                "number": t.number,
                "params": {name: _json_value(v) for name, v in t.params.items()},
                "values": _named_values(result, t),
                "pareto": t.number in on,
                "state": t.state,
                "epochs": t.epochs,
                "seconds": t.seconds,
                "resumed": t.resumed,
                "run": t.run_dir,
                "reason": t.reason,
            }
            for t in result.trials
        ],
    }
