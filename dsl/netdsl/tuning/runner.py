"""Running a sweep: Optuna asks for parameters, netdsl trains one ordinary run per trial, Optuna is told.

    result = run_sweep(resolve_sweep(SweepRequest(spec="mlp.net", data=DataRequest(data="d.npz"))))

One worker (this process) loops: while the study has fewer than `trials` trials, ask for
one, train it in `trials/<k>/` with its parameters as defines (a Keras callback reports
the objective after every epoch; the pruner may stop it: `status: pruned`), and tell the
study its objective, the metric's best epoch. `--workers K` starts K such workers as
processes of `netdsl sweep` on one study; this process waits for them.

Faults: a trial whose worker died (kill -9) stays RUNNING in the study, its run folder
unlocked. The starting process, once its workers ended, and `--resume` take such trials
of their own sweep folder up again from the run's checkpoint, so the sweep ends with
exactly `trials` trials, none counted twice.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from netdsl.errors import SpecError
from netdsl.limits import MAX_SWEEP_TRIALS
from netdsl.semantics.analysis import analyze
from netdsl.semantics.defines import SpecName, apply_defines
from netdsl.semantics.sweep_space import SweepSpace
from netdsl.syntax.loader import Program, as_program, pick_model
from netdsl.training.errors import DataError, RunError, TrainingError, UsageError
from netdsl.training.runs import RunFolder
from netdsl.training.settings import DEFAULT_SPLIT, MAX_SEED, DataRequest, TrainRequest, json_defines, spec_sha256
from netdsl.tuning import study as studies
from netdsl.tuning.folder import STUDY_FILE, SweepFolder
from netdsl.tuning.records import SweepResult, records, write_records

MAX_WORKERS = 64  # processes of one `--workers K` (each loads TensorFlow)


@dataclass
class SweepRequest:
    """What was asked: the flags of `netdsl sweep` or the arguments of `netdsl.sweep`."""

    spec: Any  # a path or a Program
    model: str | None = None
    data: DataRequest = field(default_factory=DataRequest)
    trials: int | None = None  # None: the spec's `trials`, else 10 (a grid: its size)
    workers: int = 1
    storage: str | None = None  # None: SQLite in the sweep folder
    study: str | None = None  # None: "<model>-sweep"
    seed: int | None = None
    out: str | os.PathLike = "sweeps"
    resume: str | os.PathLike | None = None  # "auto" or a sweep folder
    epochs: int | None = None
    batch_size: int | None = None
    defines: dict[str, Any] = field(default_factory=dict)  # fixed -D overrides under every trial
    include: list = field(default_factory=list)
    join: str | os.PathLike | None = None  # internal: a worker of this sweep folder (--workers)
    echo: bool = False  # print one line per trial (the CLI)


@dataclass
class SweepConfig:
    request: SweepRequest
    program: Program
    model: str
    space: SweepSpace
    trials: int
    seed: int
    storage: str
    study: str
    folder: SweepFolder
    identity: dict[str, Any]


DEFAULT_TRIALS = 10


def resolve_sweep(request: SweepRequest) -> SweepConfig:
    """Check the spec, its sweep and the flags; make (or find) the sweep folder. Nothing trains yet."""
    program = apply_defines(as_program(request.spec, list(request.include)), request.defines)
    name = pick_model(program, request.model)
    analysis = analyze(program, models=[name])
    if analysis.errors:
        raise SpecError(analysis.errors, program.sources())
    space = analysis.sweeps.get(name)
    if space is None:
        raise UsageError(f"the spec has no sweep section for model '{name}'",
                         hint=f"add one: sweep {name} {{ width = choice(32, 64)  objective = minimize(val_loss) }}")
    clash = sorted(set(request.defines) & {p.name for p in space.params})
    if clash:
        raise UsageError(f"-D {clash[0]} fixes a constant this sweep searches; leave it out of the sweep or of -D")
    folder = _existing_folder(request, name)
    saved = folder.read() if folder is not None else {}
    _settings_from(saved, request)
    _check_flags(request)
    _check_validation(space, request.data, analysis.graphs[name].train.fit.get("validation_split"))
    grid = studies.grid_size(space) if space.sampler == "grid" else None
    trials = request.trials or saved.get("trials") or space.trials or grid or DEFAULT_TRIALS
    if not 1 <= trials <= MAX_SWEEP_TRIALS:
        raise UsageError(f"--trials takes a number from 1 to {MAX_SWEEP_TRIALS:,}; received {trials}")
    folder = folder or SweepFolder.create(request.out, name)  # only once everything was checked
    seed = saved.get("seed", request.seed if request.seed is not None else int.from_bytes(os.urandom(4), "little"))
    joined = os.environ.get(STORAGE_ENV) if request.join else None
    storage = request.storage or joined or saved_storage(folder, saved)
    identity = {"spec": spec_sha256(program), "model": name, "metric": space.metric, "direction": space.direction,
                "defines": json_defines(request.defines)}
    config = SweepConfig(request=request, program=program, model=name, space=space, trials=trials, seed=seed,
                         storage=storage, study=request.study or saved.get("study") or f"{name}-sweep",
                         folder=folder, identity=identity)
    if request.join is None:
        _record(config, saved)
    return config


STORAGE_ENV = "NETDSL_SWEEP_STORAGE"  # how --workers K hands its storage URL to the workers (not in argv)


def saved_storage(folder: SweepFolder, saved: dict) -> str:
    """The storage of a sweep folder: its own SQLite file, or the URL it recorded."""
    if saved.get("storage", STUDY_FILE) == STUDY_FILE:
        return folder.own_storage
    if saved.get("storage_url"):
        return saved["storage_url"]
    raise UsageError(f"this sweep's study is in {saved['storage']}; give the URL again with --storage URL")


def _settings_from(saved: dict, request: SweepRequest) -> None:
    """A resumed sweep keeps its data, epochs and batch size unless they are given again."""
    if not saved:
        return
    request.epochs = request.epochs or saved.get("epochs")
    request.batch_size = request.batch_size or saved.get("batch_size")
    data = saved.get("data", {})
    if request.data.data is None and request.data.train is None and data:
        for key in ("data", "train", "val", "test"):
            entry = data.get(key)
            if entry is not None and "absolute" not in entry:
                raise UsageError("this sweep trained on arrays passed in memory; pass them again to resume")
            setattr(request.data, key, entry["absolute"] if entry else None)
        request.data.split = tuple(data["split"]) if "split" in data else None
        request.data.targets = dict(data.get("targets", {}))


def _check_flags(request: SweepRequest) -> None:
    for flag, value, low, high in (("--workers", request.workers, 1, MAX_WORKERS),
                                   ("--trials", request.trials, 1, MAX_SWEEP_TRIALS),
                                   ("--epochs", request.epochs, 1, None), ("--batch-size", request.batch_size, 1, None),
                                   ("--seed", request.seed, 0, MAX_SEED)):
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < low or (high and value > high):
            bounds = f"from {low} to {high:,}" if high else f"of {low} or more"
            raise UsageError(f"{flag} takes a whole number {bounds}; received {value!r}")
    if request.data.data is None and request.data.train is None and request.join is None:
        raise UsageError("no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]")


def _check_validation(space: SweepSpace, data: DataRequest, validation_split: float | None) -> None:
    """A `val_` objective needs validation data: said before anything trains."""
    if not space.metric.startswith("val_") or validation_split:
        return
    split = data.split or DEFAULT_SPLIT
    if (data.data is not None and (len(split) < 2 or split[1] <= 0)) or (data.train is not None and data.val is None):
        raise UsageError(f"the objective {space.metric} needs validation data, and this sweep has none",
                         hint="give --val SRC (with --train), a --split with a validation part, or minimize "
                              "a training metric such as loss")


def _existing_folder(request: SweepRequest, model: str) -> SweepFolder | None:
    """The sweep folder joined or resumed (None: a new sweep; `--resume auto` with nothing to resume too)."""
    if request.join is not None:
        return SweepFolder.existing(request.join)
    if request.resume is None:
        return None
    folder = (SweepFolder.newest_unfinished(request.out, model) if str(request.resume) == "auto"
              else SweepFolder.existing(request.resume))
    if folder is not None:
        searched = folder.read().get("spec", {}).get("model")
        if searched != model:
            raise RunError(f"this sweep searched model '{searched}', not '{model}'", file=str(folder.path))
    return folder


def _record(config: SweepConfig, saved: dict) -> None:
    request = config.request
    here = config.storage == config.folder.own_storage
    shown = studies.shown_url(config.storage)
    config.folder.write({
        "spec": {"path": os.path.abspath(config.program.root), "sha256": config.identity["spec"],
                 "model": config.model},
        "objective": {"direction": config.space.direction, "metric": config.space.metric},
        "space": {p.name: p.describe() for p in config.space.params},
        "sampler": config.space.sampler, "pruner": config.space.pruner,
        "trials": config.trials, "seed": config.seed, "study": config.study,
        "storage": STUDY_FILE if here else shown,
        # the URL itself only where it holds no password (`--resume` and `--show` then need no --storage)
        **({"storage_url": config.storage} if not here and ":***@" not in shown else {}),
        "data": request.data.describe(), "defines": json_defines(request.defines),
        "epochs": request.epochs, "batch_size": request.batch_size,
        "status": "running",
        "created": saved.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
    })


# ------------------------------------------------------------------ running


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run (or join, or resume) the sweep to its total; write the summary, best.json and plots."""
    request = config.request
    storage = studies.open_storage(config.storage)
    study = studies.open_study(storage, config.study, config.space, _worker_seed(config), config.identity)
    if request.join is not None:
        _work(config, study)
        return _result(config, study)
    if request.workers > 1:
        code = _run_workers(config)
        if code == 130:
            config.folder.set_status("stopped")
            raise KeyboardInterrupt
    _repair(config, study)  # trials of this folder whose worker died: from their checkpoint
    stopped = not _work(config, study)  # with --workers K: what the workers left undone, if any
    result = _result(config, study)
    write_records(result)
    done = sum(1 for t in result.trials if t.state in ("complete", "pruned", "failed")) >= config.trials
    config.folder.set_status("finished" if done and not stopped else "stopped" if stopped else "running")
    if stopped:
        raise KeyboardInterrupt
    return result


def _worker_seed(config: SweepConfig) -> int:
    """One worker: the sweep's seed; the others of --workers K their own, so that they propose apart."""
    index = int(os.environ.get("NETDSL_SWEEP_WORKER", "0"))
    return (config.seed + 7919 * index) % (MAX_SEED + 1)


def _result(config: SweepConfig, study: Any) -> SweepResult:
    return SweepResult(dir=config.folder.path, study=config.study, storage=studies.shown_url(config.storage),
                       metric=config.space.metric, direction=config.space.direction,
                       trials=records(study, config.trials),
                       log_scale=tuple(p.name for p in config.space.params if p.kind == "log_uniform"))


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
    """Resume this folder's trials left RUNNING by a worker that died."""
    mine = str(config.folder.path.resolve())
    # The folder's own SQLite study has no other sweep's trials: one killed before it was marked is ours too.
    own = config.storage == config.folder.own_storage
    for frozen in study.get_trials(deepcopy=False, states=(_states().RUNNING,)):
        attrs = frozen.user_attrs
        if frozen.number >= config.trials or attrs.get("sweep", mine if own else None) != mine \
                or _alive(attrs.get("worker")):
            continue
        run_dir = Path(attrs["run"]) if attrs.get("run") else config.folder.trial_dir(frozen.number)
        if run_dir.exists() and RunFolder(run_dir).in_use():
            continue
        trial = _optuna().trial.Trial(study, frozen._trial_id)
        trial.set_user_attr("worker", studies.worker_id())
        trial.set_user_attr("resumed", attrs.get("resumed", 0) + 1)  # said in summary.csv
        resume = run_dir if (run_dir / "config.json").is_file() else None
        if run_dir.exists() and resume is None:  # killed before the run wrote anything
            _remove_empty(run_dir)
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


def _remove_empty(path: Path) -> None:
    for child in sorted(path.rglob("*"), reverse=True):
        child.unlink() if not child.is_dir() else child.rmdir()
    path.rmdir()


def _train_trial(config: SweepConfig, study: Any, trial: Any, params: dict, resume: Path | None) -> bool:
    """Train one trial and tell the study; False when Ctrl-C / SIGTERM stopped it (left RUNNING)."""
    from netdsl.training.engine import run_training
    from netdsl.training.epoch_hook import epoch_hook
    from netdsl.training.settings import resolve

    request, space = config.request, config.space
    metric, states = space.metric, _states()
    run_dir = config.folder.trial_dir(trial.number)
    trial.set_user_attr("run", str(run_dir.resolve()))
    seen: dict[str, list[float]] = {}

    def report(epoch: int, logs: dict[str, float]) -> str | None:
        if metric not in logs:
            raise DataError(f"the objective '{metric}' is not in this run's history (it reports: "
                            f"{', '.join(logs)}); give validation data or pick another metric")
        seen.setdefault(metric, []).append(logs[metric])
        if math.isfinite(logs[metric]):
            trial.report(logs[metric], epoch)
            if trial.should_prune():
                return "pruned"
        return None

    train = TrainRequest(
        spec=config.program, model=config.model, data=request.data, epochs=request.epochs,
        batch_size=request.batch_size, seed=config.seed, out=config.folder.trials, resume=resume,
        include=list(request.include), callbacks=[epoch_hook(report)],
        defines={**request.defines, **studies.trial_defines(space, params)},
        run_dir=None if resume is not None else run_dir,
        extra={"sweep": {"folder": str(config.folder.path.resolve()), "study": config.study, "trial": trial.number,
                         "params": params, "objective": {"direction": space.direction, "metric": metric}}})
    started = time.monotonic()
    try:
        run = run_training(resolve(train))
    except (DataError, UsageError):
        study.tell(trial, state=states.FAIL)
        raise  # the same for every trial: the sweep stops here
    except (TrainingError, SpecError, Exception) as exc:  # this trial's parameters: the sweep goes on
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
    finite = [v for v in history if math.isfinite(v)]
    pick = min if space.direction == "minimize" else max
    value = pick(finite) if finite else None
    if run.status == "pruned":
        trial.set_user_attr("objective", value)
        study.tell(trial, state=states.PRUNED)
    elif value is None:
        trial.set_user_attr("reason", f"no finite value of {metric}")
        study.tell(trial, state=states.FAIL)
    else:
        study.tell(trial, value)
    _echo(config, trial.number, params, value, "pruned" if run.status == "pruned" else
          "complete" if value is not None else "failed", len(history), None)
    return True


def _echo(config: SweepConfig, number: int, params: dict, value: float | None, state: str, epochs: int | None,
          reason: str | None) -> None:
    if not config.request.echo:
        return
    shown = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
    outcome = f"{config.space.metric} {value:.6g}" if value is not None else reason or "no value"
    print(f"trial {number}: {shown} -> {outcome} ({state}{f', {epochs} epochs' if epochs else ''})", flush=True)


def _states() -> Any:
    return _optuna().trial.TrialState


def _optuna() -> Any:
    return studies.optuna_module()


# ------------------------------------------------------------------ several workers


def _run_workers(config: SweepConfig) -> int:
    """Start `--workers K` processes of `netdsl sweep --join FOLDER` and wait for them; 130 when stopped."""
    argv = _worker_argv(config)
    children: list[subprocess.Popen] = []
    stop = {"signal": None}

    def forward(signum: int, _frame: Any) -> None:
        stop["signal"] = signum
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(s) is not signal.SIG_IGN} if _main_thread() else {}
    try:
        for index in range(config.request.workers):
            env = {**os.environ, "NETDSL_SWEEP_WORKER": str(index + 1), STORAGE_ENV: config.storage}
            children.append(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL))
        codes = [child.wait() for child in children]
    finally:
        for child in children:  # an error here must not leave a worker behind
            if child.poll() is None:
                child.kill()
                child.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if stop["signal"] is not None:
        return 130
    bad = [c for c in codes if c not in (0, -signal.SIGKILL, 137)]
    if bad and all(c == bad[0] for c in codes):  # every worker refused the same way: say so once
        raise UsageError(f"the sweep's workers ended with exit code {bad[0]} (see their messages above)")
    return 0


def _worker_argv(config: SweepConfig) -> list[str]:
    request = config.request
    argv = [sys.executable, "-m", "netdsl.cli", "sweep", os.path.abspath(config.program.root),
            "--model", config.model, "--join", str(config.folder.path.resolve()), "--trials", str(config.trials),
            "--study", config.study, "--seed", str(config.seed)]
    if not isinstance(request.spec, (str, os.PathLike)):
        raise UsageError("--workers K runs `netdsl sweep` processes: give the spec as a path")
    for key in ("data", "train", "val", "test"):
        value = getattr(request.data, key)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise UsageError("--workers K runs `netdsl sweep` processes: give the data as paths")
        if value is not None:
            argv += [f"--{key}", os.path.abspath(value)]
    if request.data.split is not None:
        argv += ["--split", ",".join(str(f) for f in request.data.split)]
    for out, column in request.data.targets.items():
        argv += ["--targets", f"{out}={column}"]
    for flag, value in (("--epochs", request.epochs), ("--batch-size", request.batch_size)):
        if value is not None:
            argv += [flag, str(value)]
    for name, value in request.defines.items():
        argv += ["-D", f"{name}={_spec_literal(value)}"]
    for folder in request.include:
        argv += ["--include", str(folder)]
    return argv


def _spec_literal(value: Any) -> str:
    if isinstance(value, SpecName):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_spec_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(_spec_literal(v) + ", " for v in value) + ")"
    return repr(value)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
