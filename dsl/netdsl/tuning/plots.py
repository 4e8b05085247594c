"""A sweep's plots, written into its folder beside summary.csv and best.json: history.svg/png (the objective per
trial and the running best), params.svg/png (the objective against each parameter) and, with several
objectives, pareto.svg/png (the trials and the Pareto front). Deterministic: the same bytes twice."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

from netdsl.atomic import replacing
from netdsl.errors import printable
from netdsl.tuning.records import SweepResult, param_names, scored_trials, values_of

# Text from a spec or a study (study name, metric, parameter names, choice labels) is drawn as
# it is written, its control characters escaped (`printable`): matplotlib would parse `$...$` as
# mathtext (or run TeX with text.usetex), and warn about a missing glyph with the raw character.
PLAIN: dict[str, Any] = {"parse_math": False, "usetex": False}


def write_plots(result: SweepResult) -> list[Path]:
    """history.svg/png (objective per trial, running best) and params.svg/png (objective per parameter); with
    several objectives, of the first, and pareto.svg/png (the trials and the front)."""
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "netdsl"
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    written = []
    first = result.goals[0]
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
        pick = min if first.direction == "minimize" else max
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
    axes.set_ylabel(printable(first.name), **PLAIN)
    axes.set_title(printable(f"{result.study}: {first.direction} {first.name}"), **PLAIN)
    axes.grid(True, alpha=0.3)
    if scored:
        axes.legend()
    history.subplots_adjust(left=0.14, right=0.97, bottom=0.13, top=0.9)
    written += _save(history, result.dir / "history")

    names = param_names(result)
    columns = max(1, min(3, len(names)))
    rows = max(1, math.ceil(len(names) / columns))
    params = Figure(figsize=(4.2 * columns, 3.2 * rows))
    params.suptitle(printable(f"{first.name} against each parameter"), **PLAIN)
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
        axes.set_ylabel(printable(first.name), **PLAIN)
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
    if result.multi:
        written += _save(pareto_figure(result), result.dir / "pareto")
    return written


def pareto_figure(result: SweepResult) -> Any:
    """The complete trials and the Pareto front: one panel per pair of objectives (two objectives: one panel,
    the front joined by a line; more: every pair, the front of all of them marked in each, unjoined, since a
    pair's view of a front of more objectives is no line). Each front trial is labelled with its number."""
    from matplotlib.figure import Figure

    goals = result.goals
    front = result.pareto
    on = {t.number for t in front}
    points = [
        (t, [cast(float, v) for v in values_of(t, result)])
        for t in result.trials
        if t.state == "complete" and all(v is not None for v in values_of(t, result))
    ]
    pairs = [(i, j) for i in range(len(goals)) for j in range(i + 1, len(goals))]
    columns = min(3, len(pairs))
    rows = math.ceil(len(pairs) / columns)
    figure = Figure(figsize=(6.4, 4.4) if len(pairs) == 1 else (4.2 * columns, 3.6 * rows))
    complete = len(points)
    figure.suptitle(
        printable(f"{result.study}: Pareto front, {len(front)} of {complete} complete trial{'s' * (complete != 1)}"),
        **PLAIN,
    )
    for panel, (i, j) in enumerate(pairs):
        axes = figure.add_subplot(rows, columns, panel + 1)
        others = [values for t, values in points if t.number not in on]
        if others:
            axes.plot(
                [v[i] for v in others], [v[j] for v in others], "o", color="0.65", linestyle="none", label="dominated"
            )
        mine = sorted(((values[i], values[j], t.number) for t, values in points if t.number in on), key=lambda p: p[:2])
        if mine:
            axes.plot(
                [x for x, _, _ in mine],
                [y for _, y, _ in mine],
                "o-" if len(goals) == 2 else "o",
                color="C3",
                label="Pareto front",
            )
            for x, y, number in mine:
                axes.annotate(str(number), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        axes.set_xlabel(printable(f"{goals[i].name} ({goals[i].direction})"), **PLAIN)
        axes.set_ylabel(printable(f"{goals[j].name} ({goals[j].direction})"), **PLAIN)
        axes.grid(True, alpha=0.3)
        if panel == 0 and points:
            axes.legend(fontsize=8)
    figure.subplots_adjust(
        left=0.14 if columns == 1 else 0.08,
        right=0.97,
        bottom=0.12 / rows + 0.04,
        top=1 - 0.1 / rows,
        wspace=0.35,
        hspace=0.5,
    )
    return figure


def _save(figure: Any, base: Path) -> list[Path]:
    out = []
    for suffix, options in (("svg", {"metadata": {"Date": None}}), ("png", {"dpi": 100})):
        target = base.with_suffix(f".{suffix}")
        with replacing(target, suffix=f".tmp.{suffix}") as tmp:
            figure.savefig(tmp, format=suffix, **options)
        out.append(target)
    return out
