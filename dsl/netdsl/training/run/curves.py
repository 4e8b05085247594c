"""curves.svg / curves.png: loss and each metric per epoch, train and validation, one panel each.

Drawn with matplotlib's object API (a `Figure` on the Agg canvas: no
pyplot, no display, no global backend switch). The SVG is byte-identical
for the same history (fixed hash salt, no date).
"""

from __future__ import annotations

import math
from pathlib import Path

from netdsl.atomic import replacing


def panels(history: dict[str, list[float]]) -> list[str]:
    """The metric names to draw: loss first, then the others in history order (val_ forms merged)."""
    names = []
    for key in history:
        base = key[4:] if key.startswith("val_") else key
        if base not in names and base != "epoch":
            names.append(base)
    return sorted(names, key=lambda n: (n != "loss", names.index(n)))


def _lines(values: list | None, label: str) -> list[tuple[list, str]]:
    """The lines of one history column: itself, or one per class for a metric of one value per class
    (each epoch's value a list: `train [0]`, `train [1]`, ...)."""
    if not values:
        return []
    first = next((v for v in values if isinstance(v, list)), None)
    if first is None:
        return [(values, label)]
    return [
        ([v[i] if isinstance(v, list) and i < len(v) else math.nan for v in values], f"{label} [{i}]")
        for i in range(len(first))
    ]


def write_curves(history: dict[str, list[float]], epochs: list[int], folder: Path, title: str) -> list[Path]:
    """Write curves.svg and curves.png into `folder`; the paths written (none without history)."""
    names = panels(history)
    if not names or not epochs:
        return []
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "netdsl"
    from matplotlib.figure import Figure

    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    figure = Figure(figsize=(4.2 * columns, 3.2 * rows), layout="constrained")
    figure.suptitle(title)
    for i, name in enumerate(names):
        axes = figure.add_subplot(rows, columns, i + 1)
        for key, label, style in ((name, "train", "-"), (f"val_{name}", "validation", "--")):
            for values, line_label in _lines(history.get(key), label):
                axes.plot(epochs, values, style, marker="o", markersize=3, label=line_label)
        axes.set_title(name)
        axes.set_xlabel("epoch")
        axes.grid(True, alpha=0.3)
        axes.legend()
        if len(epochs) < 12:
            axes.set_xticks(epochs)
    written = []
    for suffix, options in (("svg", {"metadata": {"Date": None}}), ("png", {"dpi": 100})):
        target = folder / f"curves.{suffix}"
        with replacing(target, suffix=f".tmp.{suffix}") as tmp:
            figure.savefig(tmp, format=suffix, **options)
        written.append(target)
    return written
