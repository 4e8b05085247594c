"""A run as one process of a job: join it, train in step with the others, end together.

Any error in this process (bad data, a failed collective, a bug) is
reported to the other processes and printed as one line, and the process
leaves at once with `os._exit`, without JAX's shutdown barrier that would
hold it for minutes (training/scale/faults.py). A finished job leaves through
that barrier, so no process ends while another still needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netdsl.errors import ReportedError, SpecError, UsageError
from netdsl.training.run.signals import EXIT_STOPPED


def run_in_job(
    config: Any,
    topology: Any,
    own_files: frozenset,
    check: Callable[[], Any],
    announce: Callable,
    summarize: Callable[[Any], None],
    track: Callable[[Any], Callable[[], None]] | None = None,
) -> int:
    """Train `config` (None: checked here by `check()`, once the backend is loaded: the spec needs
    --plugin) as this process of the job; `own_files`: the data parts this process reads from its own
    file. Process 0 gets `announce(folder, first_epoch)` at the start and `summarize(result)` at the end;
    with `track` (`--track`), it alone tracks the run it writes: `track(config)` attaches a tracker and
    returns its finish, called once the run ended, however it ended."""
    from netdsl.training.scale import faults
    from netdsl.training.scale.distribute import set_up

    distribution = set_up(topology)  # joins the job (UsageError when it cannot)
    assert distribution is not None  # set_up returns None only for one process, and a job has several
    distribution.own_files = own_files
    me = f"process {topology.process_id}"
    try:
        config = config or check()
        from netdsl.training.run.engine import run_training

        config.seed = distribution.agree_seed(config.seed)
        finish = None
        if topology.writes:
            config.on_start = announce
            finish = track(config) if track is not None else None
        try:
            result = run_training(config, distribution)
        finally:
            if finish is not None:
                finish()
    except SpecError as exc:
        faults.fail(f"{me}: {_first(str(exc))}")
    except (ReportedError, UsageError) as exc:
        faults.fail(f"{me}: {exc}", exc.exit_code)
    except Exception as exc:  # a collective that failed because another process died, or a bug
        faults.fail_after(exc, me)
    if topology.writes:
        summarize(result)
    if result.status == "stopped":
        faults.fail(f"{me}: stopped; resume with --resume", EXIT_STOPPED)
    faults.leave()
    return 0


def _first(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "error"
