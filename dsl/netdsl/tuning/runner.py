"""Running a sweep: Optuna asks for parameters, netdsl trains one ordinary run per trial, Optuna is told.

    result = run_sweep(resolve_sweep(SweepRequest(spec="mlp.net", data=DataRequest(data="d.npz"))))

One worker (this process) loops: while the study has fewer than `trials` trials, ask for
one, train it in `trials/<k>/` with its parameters as defines (a Keras callback reports
the objective after every epoch; the pruner may stop it: `status: pruned`), and tell the
study its objective, the metric's best epoch. `--workers K` starts K such workers as
processes of `netdsl sweep` on one study (`workers.py`); this process waits for them.

Faults: a trial whose worker died (kill -9) stays RUNNING in the study, its run folder
unlocked. The starting process, once its workers ended, and `--resume` take such trials
of their own sweep folder up again from the run's checkpoint, so the sweep ends with
exactly `trials` trials, none counted twice.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from pathlib import Path
from typing import Any

from netdsl.errors import ReportedError, SpecError, UsageError, printable
from netdsl.semantics.sweep_space import SweepSpace
from netdsl.training.errors import DataError
from netdsl.training.run.runs import RunFolder
from netdsl.training.run.settings import MAX_SEED, TrainRequest
from netdsl.training.run.signals import EXIT_STOPPED
from netdsl.tuning import study as studies
from netdsl.tuning.plots import write_plots
from netdsl.tuning.records import FIGURES, SweepResult, records, write_records
from netdsl.tuning.settings import SweepConfig, SweepRequest, resolve_sweep
from netdsl.tuning.workers import run_workers

__all__ = ["SweepRequest", "SweepConfig", "resolve_sweep", "run_sweep"]


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run (or join, or resume) the sweep to its total; write the summary, best.json and plots."""
    request = config.request
    storage = studies.open_storage(config.storage)
    study = studies.open_study(storage, config.study, config.space, _worker_seed(config), config.identity)
    if request.join is not None:
        _work(config, study)
        return _result(config, study)
    if request.workers > 1:
        code = run_workers(config)
        if code == EXIT_STOPPED:
            config.folder.set_status("stopped")
            raise KeyboardInterrupt
    _repair(config, study)  # trials of this folder whose worker died: from their checkpoint
    stopped = not _work(config, study)  # with --workers K: what the workers left undone, if any
    result = _result(config, study)
    write_records(result)
    with contextlib.suppress(Exception):  # a picture must not leave a sweep unfinished (as a run's curves)
        write_plots(result)
    done = sum(1 for t in result.trials if t.state in ("complete", "pruned", "infeasible", "failed")) >= config.trials
    config.folder.set_status("finished" if done and not stopped else "stopped" if stopped else "running")
    if stopped:
        raise KeyboardInterrupt
    return result


def _worker_seed(config: SweepConfig) -> int:
    """One worker: the sweep's seed; the others of --workers K their own, so that they propose apart."""
    index = int(os.environ.get("NETDSL_SWEEP_WORKER", "0"))
    return (config.seed + 7919 * index) % (MAX_SEED + 1)


def _result(config: SweepConfig, study: Any) -> SweepResult:
    return SweepResult(
        dir=config.folder.path,
        study=config.study,
        storage=studies.shown_url(config.storage),
        metric=config.metric,
        direction=config.space.direction,
        trials=records(study, config.trials, config.folder.path, config.space.objectives),
        log_scale=tuple(p.name for p in config.space.params if p.kind == "log_uniform"),
        objectives=tuple(config.space.objectives),
    )


def _work(config: SweepConfig, study: Any) -> bool:
    """Ask, train, tell until the study has its total; False when stopped by Ctrl-C / SIGTERM."""
    dists = studies.distributions(config.space)
    while len(study.get_trials(deepcopy=False)) < config.trials:
        trial = study.ask(dists)
        if trial.number >= config.trials:  # another worker asked for the last one at the same moment
            trial.set_user_attr("excess", True)
            study.tell(trial, state=_states().FAIL)
            break
        trial.set_user_attr("worker", studies.worker_id())
        trial.set_user_attr("sweep", str(config.folder.path.resolve()))
        if not _train_trial(config, study, trial, dict(trial.params), resume=None):
            return False
    return True


def _repair(config: SweepConfig, study: Any) -> None:
    """Resume this folder's trials left RUNNING by a worker that died.

    A trial's run folder is `trials/<number>` of this sweep folder, by netdsl's own rule; never a path
    read from the study, which whoever can write the study chooses (security review N1)."""
    mine = str(config.folder.path.resolve())
    # The folder's own SQLite study has no other sweep's trials: one killed before it was marked is ours too.
    own = config.storage == config.folder.own_storage
    for frozen in study.get_trials(deepcopy=False, states=(_states().RUNNING,)):
        attrs = frozen.user_attrs
        if (
            frozen.number >= config.trials
            or attrs.get("sweep", mine if own else None) != mine
            or _alive(attrs.get("worker"))
        ):
            continue
        run_dir = config.folder.trial_dir(frozen.number)
        if run_dir.exists() and RunFolder(run_dir).in_use():
            continue
        trial = _optuna().trial.Trial(study, frozen._trial_id)
        trial.set_user_attr("worker", studies.worker_id())
        trial.set_user_attr("resumed", attrs.get("resumed", 0) + 1)  # said in summary.csv
        resume = run_dir if (run_dir / "config.json").is_file() else None
        if resume is None and not config.folder.clear_unstarted(run_dir):
            reason = (
                f"its run folder {run_dir} holds files netdsl did not write before a run starts; "
                "netdsl left it as it is"
            )
            trial.set_user_attr("reason", reason)
            study.tell(trial, state=_states().FAIL)
            _echo(config, frozen.number, dict(frozen.params), None, "failed", None, reason)
            continue
        if not _train_trial(config, study, trial, dict(frozen.params), resume=resume):
            raise KeyboardInterrupt


def _alive(worker: dict | None) -> bool:
    """Whether the worker that took a trial still runs (on this machine; another machine's: assumed)."""
    if not worker:
        return False
    if worker.get("host") != studies.worker_id()["host"]:
        return True
    if worker.get("pid") == os.getpid():
        return False
    try:
        os.kill(int(worker["pid"]), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return _is_sweep_process(int(worker["pid"]))


def _is_sweep_process(pid: int) -> bool:
    """A pid reused by another program is not our worker (Linux: its command line says)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"sweep" in command


def _train_trial(config: SweepConfig, study: Any, trial: Any, params: dict, resume: Path | None) -> bool:
    """Train one trial and tell the study; False when Ctrl-C / SIGTERM stopped it (left RUNNING)."""
    from netdsl.training.run.engine import run_training
    from netdsl.training.run.epoch_hook import epoch_hook
    from netdsl.training.run.settings import resolve

    request, space = config.request, config.space
    metric, states = config.metric, _states()
    defines = {**request.defines, **studies.trial_defines(space, params)}
    figures = _costed(config, study, trial, params, defines, resume)
    if figures is None:
        return True  # over budget, or a spec these parameters break: told, never built
    run_dir = config.folder.trial_dir(trial.number)
    trial.set_user_attr("run", str(run_dir.resolve()))
    trained = [objective.name for objective in space.trained]

    def report(epoch: int, logs: dict[str, Any]) -> str | None:
        for name in trained:
            if name not in logs:
                raise DataError(
                    f"the objective '{name}' is not in this run's history (it reports: "
                    f"{', '.join(logs)}); give validation data or pick another metric"
                )
            if not isinstance(logs[name], (int, float)):  # a list: one value per class (f1_score without average)
                raise DataError(
                    f"the objective '{name}' gives one value per class; an objective is one number: "
                    f'give the metric average="macro" (or "micro", "weighted")'
                )
        # Optuna reports and prunes single-objective studies only (the check refuses a pruner beside several)
        if not space.multi and math.isfinite(logs[metric]):
            trial.report(logs[metric], epoch)
            if trial.should_prune():
                return "pruned"
        return None

    train = TrainRequest(
        spec=config.program,
        model=config.model,
        data=request.data,
        epochs=request.epochs,
        batch_size=request.batch_size,
        seed=config.seed,
        out=config.folder.trials,
        resume=resume,
        include=list(request.include),
        callbacks=[epoch_hook(report), *request.callbacks],
        defines=defines,
        run_dir=None if resume is not None else run_dir,
        extra={
            "sweep": {
                "folder": str(config.folder.path.resolve()),
                "study": config.study,
                "trial": trial.number,
                "params": params,
                "objective": {"direction": space.direction, "metric": metric},
                **({"objectives": [o.describe() for o in space.objectives]} if space.multi else {}),
            }
        },
    )
    started = time.monotonic()
    try:
        run = run_training(resolve(train))
    except (DataError, UsageError):
        study.tell(trial, state=states.FAIL)
        raise  # the same for every trial: the sweep stops here
    except (ReportedError, SpecError, Exception) as exc:  # this trial's parameters: the sweep goes on
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        trial.set_user_attr("reason", reason)
        trial.set_user_attr("seconds", round(time.monotonic() - started, 3))
        study.tell(trial, state=states.FAIL)
        _echo(config, trial.number, params, None, "failed", None, reason)
        return True
    history = run.history.get(metric, [])
    trial.set_user_attr("epochs", len(history))
    trial.set_user_attr("seconds", run.report.get("seconds"))
    if run.status == "stopped":
        return False  # Ctrl-C or SIGTERM: the trial stays RUNNING; --resume takes it up
    measured = epoch_values(space, run.history)
    values = None if measured is None else told_values(space, measured, figures)
    if run.status == "pruned":
        trial.set_user_attr("objective", None if measured is None else measured[0])
        study.tell(trial, state=states.PRUNED)
    elif values is None:
        trial.set_user_attr("reason", f"no finite value of {', '.join(trained)}")
        study.tell(trial, state=states.FAIL)
    else:
        study.tell(trial, values)
    _echo(
        config,
        trial.number,
        params,
        values,
        "pruned" if run.status == "pruned" else "complete" if values is not None else "failed",
        len(history),
        None,
    )
    return True


def epoch_values(space: SweepSpace, history: dict[str, list]) -> list[float] | None:
    """Each trained objective's value at one epoch: the best epoch of the first (its lowest value to
    minimize, highest to maximize; the earliest of equals), so that a trial's point is one its model
    reached. None when that metric has no finite value, or another has none at that epoch."""
    first = space.trained[0]
    series = history.get(first.name, [])
    finite = [(v, epoch) for epoch, v in enumerate(series) if isinstance(v, float) and math.isfinite(v)]
    if not finite:
        return None
    pick = min if first.direction == "minimize" else max
    epoch = pick(finite, key=lambda pair: pair[0])[1]
    values = []
    for objective in space.trained:
        found = history.get(objective.name, [])
        value = found[epoch] if epoch < len(found) else None
        if not isinstance(value, float) or not math.isfinite(value):
            return None
        values.append(value)
    return values


def told_values(space: SweepSpace, trained: list[float], figures: tuple[float, ...]) -> list[float]:
    """The values Optuna is told, in the order of the objectives: the trained ones and the cost figures."""
    measured, costed = iter(trained), iter(figures)
    return [next(costed) if objective.static else next(measured) for objective in space.objectives]


def _costed(
    config: SweepConfig, study: Any, trial: Any, params: dict, defines: dict, resume: Path | None
) -> tuple[float, ...] | None:
    """The trial's model costed (in pure Python, nothing built) when the sweep has a budget or cost
    objectives: each cost objective's figure, or None when the trial ended here. A model over budget is
    told to the study as pruned and recorded as infeasible; a spec these parameters break fails the trial,
    as training it would, and so does a cost objective the cost model can only bound from below."""
    from netdsl.tuning.constraints import ATTRIBUTE, costed_trial

    space = config.space
    budget = space.constraints if resume is None else []  # a trial taken up again was inside it
    statics = [objective for objective in space.objectives if objective.static]
    if not budget and not statics:
        return ()
    try:
        cost = costed_trial(config.program, config.model, defines, budget, statics)
    except SpecError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _ended(config, study, trial, params, "failed", reason)
        return None
    if statics:
        trial.set_user_attr(FIGURES, {o.name: value for o, value in zip(statics, cost.figures)})
    if budget:
        trial.set_user_attr(ATTRIBUTE, list(cost.budget.values))
    if cost.budget.broken:
        trial.set_user_attr("infeasible", True)
        _ended(config, study, trial, params, "infeasible", cost.budget.reason)
        return None
    if cost.floor is not None:
        _ended(config, study, trial, params, "failed", cost.floor)
        return None
    return cost.figures


def _ended(config: SweepConfig, study: Any, trial: Any, params: dict, state: str, reason: str) -> None:
    """A trial that ends before it is built: `infeasible` (told as pruned) or `failed`, with its reason."""
    trial.set_user_attr("reason", reason)
    study.tell(trial, state=_states().PRUNED if state == "infeasible" else _states().FAIL)
    _echo(config, trial.number, params, None, state, None, reason)


def _echo(
    config: SweepConfig,
    number: int,
    params: dict,
    values: list[float] | None,
    state: str,
    epochs: int | None,
    reason: str | None,
) -> None:
    if not config.request.echo:
        return
    # values and reasons come from the spec and the study: escaped (printable), as every printer's
    shown = printable(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()))
    outcome = (
        ", ".join(f"{printable(o.name)} {v:.6g}" for o, v in zip(config.space.objectives, values))
        if values is not None
        else printable(reason or "no value")
    )
    counted = f", {epochs} epoch{'s' if epochs != 1 else ''}" if epochs else ""
    print(f"trial {number}: {shown} -> {outcome} ({state}{counted})", flush=True)


def _states() -> Any:
    return _optuna().trial.TrialState


def _optuna() -> Any:
    return studies.optuna_module()
