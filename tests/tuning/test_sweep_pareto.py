"""Several objectives (issue 31, item 4): `objectives = [minimize(loss), minimize(flops)]` is a multi-objective
Optuna study; a cost objective's value is the cost model's figure of the trial's spec, told without a build of
its own; the Pareto front is in `--show`, `--json`, summary.csv, best.json, `SweepResult.pareto` and
pareto.svg/png, drawn the same byte for byte twice."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.errors import Span
from netdsl.semantics.sweep_space import Objective, SweepSpace
from netdsl.tuning import plots as sweep_plots
from netdsl.tuning import records as sweep_records
from netdsl.tuning import runner
from netdsl.tuning.records import SweepResult, TrialRecord, pareto_front

optuna = pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")

# dense(8 -> width, relu) + dense(width -> 2): one sample's forward FLOPs are 2*8*width multiply-adds, width
# bias adds and width ReLUs, then 2*width*2 and 2 bias adds: 22 * width + 2 (docs/cost.md's convention)
SPEC = """\
let width = 4

model tiny {
  input x: (8,)
  output y = x -> dense(width, activation=relu) -> dense(2)
  train {
    optimizer = adam
    loss = mse
    metrics = [mae]
    batch_size = 16
    epochs = 1
  }
}

sweep tiny {
  width = choice(1, 2, 4, 8, 16)
  objectives = [minimize(loss), minimize(flops), minimize(mae)]
  SETTINGS
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pareto")
    rng = np.random.default_rng(0)
    np.savez(
        folder / "data.npz",
        x=rng.normal(size=(32, 8)).astype("float32"),
        y=rng.normal(size=(32, 2)).astype("float32"),
    )
    (folder / "tiny.net").write_text(SPEC.replace("SETTINGS", "sampler = grid"))
    return folder


@pytest.fixture(scope="module")
def swept(project) -> SweepResult:
    """Five trials, one per width: loss and mae read at one epoch, flops from the cost model."""
    return netdsl.sweep(project / "tiny.net", data=project / "data.npz", seed=0, out=project / "sweeps")


def _dominated(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether `b` dominates `a`: each value here to minimize."""
    return all(y <= x for x, y in zip(a, b)) and any(y < x for x, y in zip(a, b))


def test_the_front_is_the_trials_no_other_dominates(swept):
    assert [t.state for t in swept.trials] == ["complete"] * 5
    points = {t.number: t.values for t in swept.trials}
    by_hand = {n for n, point in points.items() if not any(_dominated(point, o) for m, o in points.items() if m != n)}
    assert 0 < len(by_hand) < 5  # a front that leaves trials out (loss does not fall with width on this data)
    assert {t.number for t in swept.pareto} == by_hand
    # sorted by the first objective, best first
    assert [t.values[0] for t in swept.pareto] == sorted(t.values[0] for t in swept.pareto)
    study = optuna.load_study(study_name=swept.study, storage=f"sqlite:///{swept.dir / 'study.db'}")
    assert study.directions == [optuna.study.StudyDirection.MINIMIZE] * 3
    assert {t.number for t in study.best_trials} == by_hand  # Optuna's own front agrees
    assert swept.best is None  # several objectives: no one best trial


def test_each_trials_flops_are_the_cost_models_figure_of_its_spec(swept, project):
    for trial in swept.trials:
        width = trial.params["width"]
        costed = netdsl.summary(project / "tiny.net", defines={"width": width}, cost=True)["tiny"]["cost"]
        assert trial.values[1] == costed["flops"] == 22 * width + 2


def test_the_trained_values_are_one_epochs_of_the_run(swept):
    for trial in swept.trials:
        with open(Path(trial.run_dir) / "history.csv", newline="") as f:
            (epoch,) = list(csv.DictReader(f))
        assert trial.values[0] == pytest.approx(float(epoch["loss"]), rel=1e-6)
        assert trial.values[2] == pytest.approx(float(epoch["mae"]), rel=1e-6)


def test_summary_csv_has_a_column_per_objective_and_the_front(swept):
    with open(swept.dir / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "trial",
        "width",
        "loss",
        "flops",
        "mae",
        "pareto",
        "state",
        "epochs",
        "seconds",
        "resumed",
        "run",
    ]
    front = {t.number for t in swept.pareto}
    assert {int(r["trial"]): r["pareto"] for r in rows} == {n: "true" if n in front else "false" for n in range(5)}
    assert [r["flops"] for r in rows] == [str(22 * t.params["width"] + 2) for t in swept.trials]
    best = json.loads((swept.dir / "best.json").read_text())
    assert best["objectives"] == ["minimize(loss)", "minimize(flops)", "minimize(mae)"]
    assert [entry["trial"] for entry in best["pareto"]] == [t.number for t in swept.pareto]
    assert best["pareto"][0]["values"]["flops"] == swept.pareto[0].values[1]


def test_show_lists_the_front_and_json_carries_it(swept, capsys):
    assert main(["sweep", "--show", str(swept.dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    front = swept.pareto
    assert lines[0] == "tiny-sweep: 5 trials (5 complete); minimize loss, minimize flops, minimize mae"
    assert lines[1] == f"Pareto front: {len(front)} of 5 complete trials, best loss first"
    assert lines[2].split() == ["trial", "loss", "flops", "mae", "width"]
    assert [int(line.split()[0]) for line in lines[3 : 3 + len(front)]] == [t.number for t in front]
    assert lines[3 + len(front) : 5 + len(front)] == ["", "Every trial:"]
    every = lines[6 + len(front) :]
    rest = sorted((t for t in swept.trials if t not in front), key=lambda t: t.values[0])
    assert [int(line.split()[0]) for line in every] == [t.number for t in front + rest]
    assert main(["sweep", "--show", str(swept.dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["pareto"] == [t.number for t in front] and shown["best"] is None
    assert shown["objectives"] == [
        {"name": "loss", "direction": "minimize", "figure": None},
        {"name": "flops", "direction": "minimize", "figure": "flops"},
        {"name": "mae", "direction": "minimize", "figure": None},
    ]
    assert [t["pareto"] for t in shown["trials"]] == [t in front for t in swept.trials]
    assert shown["trials"][0]["values"]["flops"] == 22 * swept.trials[0].params["width"] + 2


def test_runs_lists_the_sweep_with_its_front(swept, capsys):
    """A sweep of several objectives has no best trial: `netdsl runs` says how many trials its front holds."""
    assert main(["runs", str(swept.dir.parent)]) == 0
    (line,) = capsys.readouterr().out.splitlines()[1:]
    assert line.split()[:5] == [f"{swept.dir.name}/", "tiny", "finished", "5", "trials"]
    assert f"front of {len(swept.pareto)}" in line
    assert main(["runs", str(swept.dir.parent), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["front"], listed["best"], listed["best_metric"]) == (len(swept.pareto), None, None)


def test_the_plot_is_written_and_the_same_twice(swept):
    first = {name: (swept.dir / name).read_bytes() for name in ("pareto.svg", "pareto.png")}
    assert first["pareto.svg"].startswith(b"<?xml") and first["pareto.png"].startswith(b"\x89PNG")
    sweep_plots.write_plots(netdsl.show_sweep(swept.dir))
    assert {name: (swept.dir / name).read_bytes() for name in first} == first


def test_a_tracking_server_is_sent_the_objectives_and_the_plot(swept):
    from netdsl.tracking.found import open_sweep
    from netdsl.tracking.pushed import pushed_sweep

    item = pushed_sweep(open_sweep(swept.dir))
    assert item.params["sweep.objectives"] == "minimize(loss), minimize(flops), minimize(mae)"
    assert {"pareto.svg", "pareto.png", "summary.csv", "best.json"} <= {path.name for path in item.files}


def test_a_stopped_multi_objective_sweep_resumes_to_its_total(project, monkeypatch):
    """A sweep stopped after two trials (its third left running, as Ctrl-C leaves it) is finished by
    `resume`: the study reopened with its directions, the third trial taken up again, none counted twice."""
    (project / "resumed.net").write_text(SPEC.replace("SETTINGS", "trials = 4\n  sampler = random"))
    train = runner._train_trial
    calls: list[int] = []

    def stopped_at_the_third(config, study, trial, params, resume):
        calls.append(trial.number)
        return False if len(calls) == 3 else train(config, study, trial, params, resume)

    monkeypatch.setattr(runner, "_train_trial", stopped_at_the_third)
    keywords = {"data": project / "data.npz", "seed": 3, "out": project / "resumed"}
    with pytest.raises(KeyboardInterrupt):
        netdsl.sweep(project / "resumed.net", **keywords)
    folder = project / "resumed" / "tiny-sweep-1"
    assert json.loads((folder / "sweep.json").read_text())["status"] == "stopped"
    monkeypatch.setattr(runner, "_train_trial", train)
    result = netdsl.sweep(project / "resumed.net", resume="auto", **keywords)
    assert result.dir == folder
    assert [(t.number, t.state, t.resumed) for t in result.trials] == [
        (0, "complete", 0),
        (1, "complete", 0),
        (2, "complete", 1),
        (3, "complete", 0),
    ]
    assert all(t.values[1] == 22 * t.params["width"] + 2 for t in result.trials)
    study = optuna.load_study(study_name=result.study, storage=f"sqlite:///{folder / 'study.db'}")
    assert len(study.directions) == 3 and [t.state.name for t in study.trials] == ["COMPLETE"] * 4
    assert {t.number for t in study.best_trials} == {t.number for t in result.pareto}


def test_a_budget_and_a_cost_objective_together(project, capsys):
    """An infeasible trial is never built and is on no front; its cost figure is still shown."""
    spec = SPEC.replace("SETTINGS", "sampler = grid\n  constraints = [params < 80]")
    (project / "budget.net").write_text(spec.replace(", minimize(mae)", ""))
    result = netdsl.sweep(project / "budget.net", data=project / "data.npz", seed=0, out=project / "budget", echo=True)
    by_width = {t.params["width"]: t for t in result.trials}
    # 11 * width + 2 parameters: 8 (90) and 16 (178) are over 80
    assert {w: t.state for w, t in by_width.items()} == {
        1: "complete",
        2: "complete",
        4: "complete",
        8: "infeasible",
        16: "infeasible",
    }
    assert by_width[16].values == (None, 354.0) and by_width[16].run_dir is None
    assert {t.params["width"] for t in result.pareto} <= {1, 2, 4}
    printed = capsys.readouterr().out.splitlines()
    trial = by_width[4]
    assert f"trial {trial.number}: width=4 -> loss {trial.values[0]:.6g}, flops 90 (complete, 1 epoch)" in printed


# ------------------------------------------------------------------ the front and its table, by hand


def test_the_trained_values_are_read_at_the_first_objectives_best_epoch():
    space = SweepSpace(
        model="m",
        span=Span(file="s.net", line=1, col=1, end_line=1, end_col=2),
        objectives=[
            Objective("minimize", "val_loss"),
            Objective("minimize", "flops", "flops"),
            Objective("maximize", "val_accuracy"),
        ],
    )
    history = {"val_loss": [0.5, 0.3, 0.3, 0.4], "val_accuracy": [0.6, 0.7, 0.95, 0.9]}
    # the earliest of val_loss's equal best epochs, not val_accuracy's own best
    assert runner.epoch_values(space, history) == [0.3, 0.7]
    assert runner.told_values(space, [0.3, 0.7], (1234.0,)) == [0.3, 1234.0, 0.7]  # in the order written
    assert runner.epoch_values(space, {"val_loss": [0.5, 0.3], "val_accuracy": [0.6, float("nan")]}) is None
    assert runner.epoch_values(space, {"val_loss": [float("nan")], "val_accuracy": [0.6]}) is None


GOALS = (Objective("maximize", "val_accuracy"), Objective("minimize", "flops", "flops"))


def _trial(number: int, accuracy: float | None, flops: float, state: str = "complete") -> TrialRecord:
    return TrialRecord(
        number=number,
        params={"width": 2**number},
        value=accuracy,
        values=(accuracy, flops),
        state=state,
        epochs=1 if state == "complete" else None,
        seconds=1.5 if state == "complete" else None,
        run_dir=None,
    )


def _result(folder: Path, trials: list[TrialRecord], goals: tuple[Objective, ...] = GOALS) -> SweepResult:
    return SweepResult(
        dir=folder,
        study="mlp-sweep",
        storage="study.db",
        metric="val_accuracy",
        direction="maximize",
        trials=trials,
        objectives=goals,
    )


TRIALS = [
    _trial(0, 0.80, 1000.0),
    _trial(1, 0.90, 4000.0),
    _trial(2, 0.70, 2000.0),  # dominated by 0: less accurate and costlier
    _trial(3, 0.90, 4000.0),  # equal to 1: both on the front
    _trial(4, 0.60, 500.0),
    _trial(5, None, 100.0, "infeasible"),  # never trained: on no front
]


def test_a_front_computed_by_hand():
    assert [t.number for t in pareto_front(TRIALS, ["maximize", "minimize"])] == [1, 3, 0, 4]
    assert [t.number for t in pareto_front(TRIALS, ["minimize", "minimize"])] == [4]
    one = [replace(t, values=t.values[:1]) for t in TRIALS]
    assert [t.number for t in pareto_front(one, ["maximize"])] == [1, 3]  # one objective: the best, ties too


def test_the_show_table(tmp_path):
    assert sweep_records.show_table(_result(tmp_path, TRIALS)) == "\n".join(
        [
            "mlp-sweep: 6 trials (5 complete, 1 infeasible); maximize val_accuracy, minimize flops",
            "Pareto front: 4 of 5 complete trials, best val_accuracy first",
            "trial  val_accuracy  flops  width",
            "1      0.9           4,000  2",
            "3      0.9           4,000  8",
            "0      0.8           1,000  1",
            "4      0.6           500    16",
            "",
            "Every trial:",
            "trial  width  val_accuracy  flops  pareto  state       epochs  seconds",
            "1      2      0.9           4,000  *       complete    1       1.5",
            "3      8      0.9           4,000  *       complete    1       1.5",
            "0      1      0.8           1,000  *       complete    1       1.5",
            "4      16     0.6           500    *       complete    1       1.5",
            "2      4      0.7           2,000          complete    1       1.5",
            "5      32                   100            infeasible",
        ]
    )


def test_plots_of_three_objectives_are_drawn_pairwise_and_the_same_twice(tmp_path):
    goals = (*GOALS, Objective("minimize", "train_memory(batch=64)", "train_memory", 64))
    trials = [
        TrialRecord(
            number=n,
            params={"width": w},
            value=a,
            values=(a, f, m),
            state="complete",
            epochs=1,
            seconds=1.0,
            run_dir=None,
        )
        for n, (w, a, f, m) in enumerate([(8, 0.7, 100.0, 9e6), (16, 0.8, 200.0, 8e6), (32, 0.75, 400.0, 7e6)])
    ]
    result = _result(tmp_path, trials, goals)
    written = sweep_plots.write_plots(result)
    assert tmp_path / "pareto.svg" in written and tmp_path / "pareto.png" in written
    first = {path: path.read_bytes() for path in written}
    svg = first[tmp_path / "pareto.svg"].decode()
    for label in ("val_accuracy (maximize)", "flops (minimize)", "train_memory(batch=64) (minimize)"):
        assert svg.count(label) == 2  # three pairs: each objective on two of them
    sweep_plots.write_plots(result)
    assert {path: path.read_bytes() for path in written} == first
    assert [t.number for t in result.pareto] == [1, 2, 0]  # none dominates another on all three


FLIPPED = """\
let width = 4

model aug {
  input x: (8, 8, 3)
  output y = x -> auto_contrast -> conv2d(width, 3) -> global_average_pooling2d -> dense(2)
  train {
    optimizer = adam
    loss = mse
  }
}

sweep aug {
  width = choice(4, 8)
  objectives = [minimize(loss), minimize(flops)]
  trials = 2
}
"""


def test_a_cost_objective_the_cost_model_can_only_bound_fails_the_trial_unbuilt(tmp_path, monkeypatch, capsys):
    """A lower bound would rank a trial above better ones: the trial fails, saying why, and is never built.
    `netdsl sweep ... --json` prints the result alone: no trial lines."""
    from netdsl.backend import compiler

    built: list[object] = []
    monkeypatch.setattr(compiler, "build", lambda *a, **k: built.append(a))
    (tmp_path / "aug.net").write_text(FLIPPED)
    np.savez(tmp_path / "data.npz", x=np.zeros((8, 8, 8, 3), "float32"), y=np.zeros((8, 2), "float32"))
    argv = [str(tmp_path / "aug.net"), "--data", str(tmp_path / "data.npz"), "--seed", "0", "-o", str(tmp_path)]
    assert main(["sweep", *argv, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)  # the whole output is one JSON object
    reason = (
        "flops is only a lower bound: the cost model cannot count y.auto_contrast: 'auto_contrast' has no cost rule"
    )
    assert [(t["state"], t["reason"], t["run"]) for t in shown["trials"]] == [("failed", reason, None)] * 2
    assert built == [] and shown["pareto"] == [] and shown["counts"] == {"failed": 2}
