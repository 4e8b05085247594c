"""A checked `SweepSpace` in Optuna's terms: distributions, sampler, pruner, storage, study.

Optuna does the searching (ask-and-tell); nothing here samples. Optuna is an extra
(`pip install 'netdsl[sweep]'`), imported when a sweep starts.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from netdsl.errors import UsageError
from netdsl.semantics import sweep_space
from netdsl.semantics.sweep_space import Param, SweepSpace
from netdsl.semantics.values import SpecName

if TYPE_CHECKING:
    import optuna


def optuna_module() -> Any:
    """Optuna, quiet (netdsl prints one line per trial itself); UsageError when it is not installed."""
    try:
        import optuna
    except ImportError:
        raise UsageError(
            "netdsl sweep needs Optuna, which is not installed",
            hint="pip install 'netdsl[sweep]' (or: pip install optuna)",
        ) from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna


# Optuna's distribution for each kind of parameter the check knows (sweep_space.DISTRIBUTIONS: the same
# names, tests/tuning/test_study_tables.py holds them equal), from Optuna's `distributions` module.
DISTRIBUTIONS: dict[str, Callable[[Any, Param], Any]] = {
    "choice": lambda dist, p: dist.CategoricalDistribution(p.choices),
    "uniform": lambda dist, p: dist.FloatDistribution(p.low, p.high),
    "log_uniform": lambda dist, p: dist.FloatDistribution(p.low, p.high, log=True),
    "int_range": lambda dist, p: dist.IntDistribution(p.low, _int_top(p), step=p.step),
}


def distributions(space: SweepSpace) -> dict[str, Any]:
    dist = optuna_module().distributions
    return {p.name: DISTRIBUTIONS[p.kind](dist, p) for p in space.params}


def _int_top(p: Param) -> int:
    """int_range's high end is included when the steps reach it (Optuna's rule); else the last step below."""
    low, high = _int_ends(p)
    return low + (high - low) // p.step * p.step


def _int_ends(p: Param) -> tuple[int, int]:
    """An int_range's two ends: whole numbers (check_sweeps refuses any other)."""
    assert isinstance(p.low, int) and isinstance(p.high, int), f"int_range {p.name} has ends that are not whole"
    return p.low, p.high


def grid_size(space: SweepSpace) -> int:
    """The grid's points, counted (check_sweeps refuses a grid of more than MAX_SWEEP_TRIALS)."""
    return sweep_space.grid_size(space.params)


def _grid(space: SweepSpace) -> dict[str, list[Any]]:
    return {p.name: list(p.choices) if p.kind == "choice" else _int_values(p) for p in space.params}


def _int_values(p: Param) -> list[int]:
    """Every value of an int_range, its high end included when the steps reach it."""
    return list(range(_int_ends(p)[0], _int_top(p) + 1, p.step))


# Optuna's sampler for each name `sampler = NAME` takes (sweep_space.SAMPLERS: the same names, held equal
# by tests/tuning/test_study_tables.py), from Optuna's `samplers` module: a name missing here cannot fall to TPE.
# Every one of them takes several objectives (`directions`); TPE and NSGA-II also take a budget's constraint
# values (`constraints_func`), random search and the grid do not: they propose without it, and a trial over
# budget is still never built (runner.py costs each one).
SAMPLERS: dict[str, Callable[[Any, SweepSpace, int], Any]] = {
    "tpe": lambda samplers, space, seed: _budgeted(samplers.TPESampler, space, seed),
    "random": lambda samplers, space, seed: samplers.RandomSampler(seed=seed),
    "grid": lambda samplers, space, seed: _ask_and_tell_grid(samplers.GridSampler)(_grid(space), seed=seed),
    "nsga2": lambda samplers, space, seed: _budgeted(
        samplers.NSGAIISampler, space, seed, **({"population_size": space.population} if space.population else {})
    ),
}


def _budgeted(made: Callable[..., Any], space: SweepSpace, seed: int, **settings: Any) -> Any:
    """A sampler that takes `constraints_func`; with a budget (`constraints`), told each trial's constraint
    values so that it proposes inside it."""
    if not space.constraints:
        return made(seed=seed, **settings)
    import warnings

    from netdsl.tuning.constraints import constraint_values

    with warnings.catch_warnings():  # constraints_func is marked experimental in Optuna 3 to 5
        warnings.simplefilter("ignore")
        return made(seed=seed, constraints_func=constraint_values, **settings)


def sampler(space: SweepSpace, seed: int) -> Any:
    return SAMPLERS[space.sampler](optuna_module().samplers, space, seed)


def _ask_and_tell_grid(grid_sampler: type) -> type:
    """Optuna's GridSampler, without its `study.stop()` once the grid is done: that call is only
    allowed inside `study.optimize`, and a sweep stops by counting its trials itself."""

    class AskAndTellGrid(grid_sampler):
        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            return None

    return AskAndTellGrid


# Optuna's pruner for each `pruner =` (None: `none` or not set; sweep_space.PRUNERS names the others).
PRUNERS: dict[str | None, Callable[[Any, SweepSpace], Any]] = {
    None: lambda pruners, space: pruners.NopPruner(),
    "median": lambda pruners, space: pruners.MedianPruner(n_startup_trials=space.startup, n_warmup_steps=space.warmup),
}


def pruner(space: SweepSpace) -> Any:
    return PRUNERS[space.pruner](optuna_module().pruners, space)


def storage_url(url: str) -> str:
    """The SQLAlchemy URL Optuna opens: `postgresql://` goes through psycopg 3 (netdsl[sweep])."""
    return re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", url)


# Query parameters of a URL that libpq and psycopg take as secrets (or as the way to one).
SECRET_QUERY = ("password", "passfile", "sslpassword", "sslkey")
MASK = "***"


def holds_secret(url: str) -> bool:
    """Whether a storage URL names a secret: a password (`user:PASSWORD@`, `?password=`) or a key;
    a URL SQLAlchemy cannot read is taken to hold one."""
    parsed = _parsed(url)
    return parsed is None or parsed.password is not None or bool(_secret_keys(parsed))


def shown_url(url: str) -> str:
    """A storage URL without its secrets, for files and messages: its password and SECRET_QUERY
    values as `***` (read as SQLAlchemy reads the URL: a password may hold `/`); a URL that holds
    none as it was given."""
    parsed = _parsed(url)
    if parsed is None:
        return f"{url.partition(':')[0]}://{MASK}" if "://" in url else MASK
    if not holds_secret(url):
        return url
    masked = parsed.update_query_dict({key: MASK for key in _secret_keys(parsed)})
    if parsed.host and "@" in parsed.host:  # `user:p@ss@host`: SQLAlchemy takes `ss@host` as the host
        masked = masked.set(host=f"{MASK}@{parsed.host.rpartition('@')[2]}")
    # render_as_string writes a query value with %-escapes: the mask is shown as it is written here
    return masked.render_as_string(hide_password=True).replace("=%2A%2A%2A", f"={MASK}")


def _parsed(url: str) -> Any:
    """The URL as SQLAlchemy (Optuna's storage) reads it; None when it cannot."""
    try:
        from sqlalchemy.engine import make_url
    except ImportError:  # Optuna's extra is not installed: nothing can open the URL either
        return None
    try:
        return make_url(url)
    except Exception:  # an ArgumentError, a port that is not a number: a URL nobody can open
        return None


def _secret_keys(parsed: Any) -> list[str]:
    return [key for key in parsed.query if key.lower() in SECRET_QUERY]


def _secrets(url: str) -> list[str]:
    """The secret texts of a URL, as written and as read, for scrubbing a driver's message."""
    parsed = _parsed(url)
    if parsed is None:
        return [url]
    values = [parsed.password or ""]
    for key in _secret_keys(parsed):
        found = parsed.query[key]
        values += [found] if isinstance(found, str) else list(found)
    if parsed.host and "@" in parsed.host:
        values.append(parsed.host.rpartition("@")[0])
    return sorted(
        {v for text in values if len(text) >= MIN_SCRUBBED for v in (text, quote(text, safe=""), quote_plus(text))},
        key=len,
        reverse=True,
    )


# Shorter secrets are not looked for in a driver's message: masking them would mask ordinary words.
MIN_SCRUBBED = 4


def _scrubbed(text: str, url: str) -> str:
    """A driver's message with the URL's secrets masked (libpq does not echo a password; this
    makes sure of it for every driver)."""
    for secret in _secrets(url):
        text = text.replace(secret, MASK)
    return text


def open_storage(url: str) -> Any:
    optuna = optuna_module()
    parsed = _parsed(url)
    if parsed is not None and parsed.host and "@" in parsed.host:  # the driver would look the rest up as a host
        raise UsageError(
            f"cannot open the study's storage {shown_url(url)}: its host holds '@'",
            hint="write an '@' of the user name or password as %40",
        )
    engine: dict[str, Any] = {}
    if url.startswith("sqlite"):
        engine = {"connect_args": {"timeout": 60}}  # several workers on one file wait for each other
    for attempt in range(SCHEMA_ATTEMPTS):
        try:
            return optuna.storages.RDBStorage(storage_url(url), engine_kwargs=engine)
        except Exception as exc:  # a database that is down, a bad URL, a driver missing
            if attempt + 1 < SCHEMA_ATTEMPTS and _schema_race(exc):
                time.sleep(0.5 * (attempt + 1))
                continue
            raise UsageError(
                f"cannot open the study's storage {shown_url(url)}: {_scrubbed(_first_line(exc), url)}"
            ) from None
    raise AssertionError("unreachable")  # pragma: no cover


# Workers starting together on an empty database all create Optuna's tables; all but one
# of them lose that race (a unique violation in PostgreSQL's catalog) and try again.
SCHEMA_ATTEMPTS = 5


def _schema_race(exc: BaseException) -> bool:
    return type(exc).__name__ in ("IntegrityError", "ProgrammingError") or "already exists" in str(exc)


def open_study(storage: Any, name: str, space: SweepSpace, seed: int, identity: dict[str, Any]) -> optuna.Study:
    """The study `name` in `storage`, created or joined; UsageError when it searches something else."""
    optuna = optuna_module()
    for attempt in range(5):  # two workers creating the same study at once: one of them loads it
        try:
            study = optuna.create_study(
                storage=storage,
                study_name=name,
                directions=[objective.direction for objective in space.objectives],
                sampler=sampler(space, seed),
                pruner=pruner(space),
                load_if_exists=True,
            )
            break
        except optuna.exceptions.DuplicatedStudyError:
            time.sleep(0.2 * (attempt + 1))
    else:  # pragma: no cover - five lost races in a row
        raise UsageError(f"cannot create or load the study '{name}'")
    known = study.user_attrs.get("netdsl")
    if known is None:
        study.set_user_attr("netdsl", identity)
    elif known != identity:
        different = [k for k in identity if known.get(k) != identity[k]]
        raise UsageError(
            f"the study '{name}' in this storage searches something else ({', '.join(different)} differ)",
            hint="give another --study NAME, or the same spec, model and -D flags",
        )
    return study


def trial_defines(space: SweepSpace, params: dict[str, Any]) -> dict[str, Any]:
    """A trial's parameters as defines: a choice among names stays a name."""
    kinds = {p.name: p for p in space.params}
    return {name: SpecName(value) if kinds[name].names else value for name, value in params.items()}


def worker_id() -> dict[str, Any]:
    return {"host": os.uname().nodename if hasattr(os, "uname") else "?", "pid": os.getpid()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
