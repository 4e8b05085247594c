"""`netdsl runs compare RUN RUN ...`: the runs' settings side by side, what differs marked with `*`,
their final and best metrics, and one plot of their curves overlaid (`--out FILE`).

The settings are what makes one run differ from another: the spec (its hash and model), each `-D`
define (`-` where a run kept the spec's value), the train settings, the data, the backend and the
seed. Metrics differ between any two runs, so only settings are marked.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from netdsl.atomic import replacing
from netdsl.errors import UsageError, printable
from netdsl.tracking.found import number, spec_of
from netdsl.training.run.record import Run

ABSENT = "-"
# Settings that say where or when a run was made, not how: never marked as a difference.
_PLACES = {"data.absolute"}


def settings(run: Run) -> dict[str, str]:
    """A run's settings as `name: value` text, in a fixed order (the rows of the table)."""
    config = run.config
    spec = spec_of(config)
    rows = {"spec": str(spec.get("sha256", ABSENT))[:12], "model": str(spec.get("model", ABSENT))}
    defines = config.get("defines")
    for key, value in sorted(defines.items() if isinstance(defines, dict) else []):
        rows[f"define {key}"] = _shown(value)
    configured = config.get("settings")
    for key, value in configured.items() if isinstance(configured, dict) else []:
        rows[key] = _shown(value)
    for key, value in _flat(config.get("data"), "data"):
        if not any(key.endswith(place) for place in _PLACES):
            rows[key] = value
    rows["backend"] = _shown(config.get("backend", ABSENT))
    return rows


def _flat(value: Any, prefix: str) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [pair for key, inner in value.items() for pair in _flat(inner, f"{prefix}.{key}")]
    return [(prefix, _shown(value))]


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def metrics(run: Run) -> dict[str, str]:
    """`final NAME` (the last epoch) and `best NAME` (at the best epoch by val_loss) of each metric."""
    best = run.report.get("best")
    best_epoch = best.get("epoch") if isinstance(best, dict) else None
    rows: dict[str, str] = {}
    for name, values in run.history.items():
        if values:
            rows[f"final {name}"] = _metric(values[-1])
    if isinstance(best_epoch, int) and best_epoch in run.epochs:
        rows["best epoch"] = str(best_epoch)
        at = run.epochs.index(best_epoch)
        for name, values in run.history.items():
            if at < len(values):
                rows[f"best {name}"] = _metric(values[at])
    return rows


def _metric(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_metric(v) for v in value) + "]"
    found = number(value)
    return ABSENT if found is None else f"{found:.6g}"


def table(runs: list[Run]) -> list[str]:
    """The comparison: a header of run names, the settings (`*` where they differ), then the metrics."""
    names = [printable(run.name) for run in runs]
    lines: list[list[str]] = [["", "setting", *names]]
    rows = [settings(run) for run in runs]
    for key in _union(rows):
        values = [printable(row.get(key, ABSENT)) for row in rows]
        lines.append(["*" if len(set(values)) > 1 else "", printable(key), *values])
    scores = [metrics(run) for run in runs]
    lines.append(["", "", *([""] * len(runs))])
    for key in _union(scores):
        lines.append(["", printable(key), *(printable(score.get(key, ABSENT)) for score in scores)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]


def differing(runs: list[Run]) -> list[str]:
    """The settings whose values differ between the runs (the rows marked `*`)."""
    rows = [settings(run) for run in runs]
    return [key for key in _union(rows) if len({row.get(key, ABSENT) for row in rows}) > 1]


def _union(rows: list[dict[str, str]]) -> list[str]:
    """Every row's keys, in the order `settings` makes them (a define only one run has among the defines)."""
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    return sorted(keys, key=_rank)


def _rank(key: str) -> int:
    if key in ("spec", "model"):
        return 0
    if key.startswith("define "):
        return 1
    return {"data": 3, "backend": 4}.get(key.partition(".")[0], 2)


def plot(runs: list[Run], target: Path) -> Path:
    """One figure, a panel per metric, each run's training curve solid and its validation curve dashed
    in one colour; written atomically as SVG or PNG (by `target`'s suffix)."""
    suffix = target.suffix.lower().lstrip(".")
    if suffix not in ("svg", "png", "pdf"):
        raise UsageError(f"--out takes a .svg, .png or .pdf file; received {printable(target.name)!r}")
    from matplotlib.figure import Figure

    from netdsl.training.run.curves import panels

    names = panels({key: [] for run in runs for key in run.history})
    if not names:
        raise UsageError("these runs have no epochs to draw yet")
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    figure = Figure(figsize=(4.6 * columns, 3.4 * rows), layout="constrained")
    for i, name in enumerate(names):
        axes = figure.add_subplot(rows, columns, i + 1)
        for k, run in enumerate(runs):
            colour = f"C{k % 10}"
            for key, style, label in ((name, "-", run.name), (f"val_{name}", "--", f"{run.name} (validation)")):
                values = [number(v) for v in run.history.get(key, [])]
                if values:
                    axes.plot(
                        run.epochs[: len(values)],
                        [math.nan if v is None else v for v in values],
                        style,
                        color=colour,
                        marker="o",
                        markersize=2,
                        label=label,
                    )
        axes.set_title(name)
        axes.set_xlabel("epoch")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    with replacing(target, suffix=f".tmp.{suffix}") as tmp:
        metadata: dict[str, Any] = {"metadata": {"Date": None}} if suffix == "svg" else {}  # an svg the same each time
        figure.savefig(tmp, format=suffix, **metadata)
    return target
