"""Declared losses and metrics as `check` reads them, in pure Python: what a train section resolves them
to, the names a sweep may optimize, the words `loss` and `metric` still usable as names, and `fmt`.
(Keras' side: tests/custom/test_declared_losses.py; the diagnostics: tests/fixtures/errors/declared_losses.net.)"""

from __future__ import annotations

import netdsl
from netdsl import scoring
from netdsl.lsp.names import build_index
from netdsl.semantics.analysis import analyze, checked_graphs
from netdsl.semantics.values import Resolved

SPEC = """\
loss contrastive(y_true, y_pred, margin=1) = mean(
  (1 - y_true) * square(y_pred) + y_true * square(maximum(margin - y_pred, 0)),
)
metric gap(y_true, y_pred) = mean(abs(y_true - y_pred), axis=-1)
let width = 4

model two {
  input x: (4,)
  loss = x -> dense(width)
  output same = loss -> dense(1, activation=sigmoid)
  output box = x -> dense(2)
  train {
    optimizer = rmsprop
    loss = {same: contrastive(margin=2), box: mse}
    metrics = {same: [gap, contrastive], box: [mae]}
  }
}

sweep two {
  width = choice(1, 2)
  objective = minimize(val_same_gap)
}
"""


def graph():
    program = netdsl.parse(SPEC, filename="losses.net")
    assert analyze(program).diagnostics == []
    return checked_graphs(program, ["two"])["two"]


def test_a_train_section_resolves_declared_losses_and_metrics_per_output():
    train = graph().train
    same, box = train.loss["same"], train.loss["box"]
    assert (same.kind, same.name, same.kwargs) == ("declared_loss", "contrastive", (("margin", 2),))
    assert same.decl.config(dict(same.kwargs))["params"] == ["y_true", "y_pred", "margin"]
    assert (box.kind, box.name) == ("loss", "mean_squared_error")
    # a declared loss listed as a metric is the mean of its values, its parameters at their defaults
    assert [(m.kind, m.name, m.kwargs) for m in train.metrics["same"]] == [
        ("declared_metric", "gap", ()),
        ("declared_metric", "contrastive", (("margin", 1),)),
    ]
    assert isinstance(train.metrics["box"][0], Resolved)


def test_a_sweep_may_optimize_a_declared_metric_and_misspelt_it_is_refused():
    assert analyze(netdsl.parse(SPEC, filename="losses.net")).sweeps["two"].metric == "val_same_gap"
    wrong = SPEC.replace("minimize(val_same_gap)", "minimize(val_same_gaps)")
    diagnostics = analyze(netdsl.parse(wrong, filename="losses.net")).diagnostics
    assert [(d.message, d.hint) for d in diagnostics] == [
        ("model 'two' does not report 'val_same_gaps'", "did you mean 'val_same_gap'?")
    ]


def test_the_exported_file_scorer_scores_these_declared_losses_and_metrics_in_numpy():
    g = graph()
    assert scoring.not_in_numpy(g.train, g.output_names) is None  # their values: tests/scoring/test_scoring.py


def test_fmt_writes_declarations_canonically_and_keeps_loss_as_a_name():
    messy = "loss  c(y_true,y_pred , margin = 1)=mean( square(y_pred - y_true) )\nmetric m(t, p) = abs(t-p)\n"
    assert netdsl.format(text=messy) == (
        "loss c(y_true, y_pred, margin=1) = mean(square(y_pred - y_true))\nmetric m(t, p) = abs(t - p)\n"
    )
    assert netdsl.format(text=SPEC) == SPEC


def test_the_editor_finds_a_declared_loss_and_its_uses_in_the_train_section():
    index = build_index(netdsl.parse(SPEC, filename="losses.net"))
    places = {
        sym.name: [(o.span.line, o.span.col, o.definition) for o in occurrences]
        for sym, occurrences in index.by_symbol.items()
        if sym.kind == "decl"
    }
    assert places["contrastive"] == [(1, 6, True), (14, 19, False), (15, 28, False)]
    assert places["gap"] == [(4, 8, True), (15, 23, False)]
