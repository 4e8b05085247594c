"""The `sweep MODEL { ... }` section, checked: the search space and settings of `netdsl sweep`.

    sweep mlp {
      width = choice(32, 64, 128)          # a file-level constant and its distribution
      lr = log_uniform(1e-4, 1e-2)
      objective = minimize(val_loss)       # or maximize(val_accuracy): a metric the run reports
      # or several: objectives = [maximize(val_accuracy), minimize(flops)]  (a metric or a cost figure each)
      trials = 12                          # optional: the study's total
      pruner = median(warmup=1)            # optional: none (default) or median(warmup=E, startup=T)
      sampler = tpe                        # optional: tpe (default), random, grid, nsga2 or nsga2(population=N)
      constraints = [params < 5e6, train_memory(batch=64) < "12GiB"]   # optional: a budget, costed statically
    }

Every mistake is a diagnostic at its place, found by `netdsl check` before anything trains.
Pure Python: `netdsl.tuning` turns a `SweepSpace` into Optuna's distributions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netdsl.errors import Diagnostic, Fail, Span, did_you_mean
from netdsl.limits import MAX_SWEEP_CHOICES, MAX_SWEEP_OBJECTIVES, MAX_SWEEP_TRIALS
from netdsl.semantics.scope import FileScope
from netdsl.semantics.values import UNKNOWN, Env, Resolved, Sym, describe_value, type_name
from netdsl.syntax import ir

if TYPE_CHECKING:
    from netdsl.semantics.consts import Consts
    from netdsl.semantics.train_checks import TrainSpec

DISTRIBUTIONS = ("choice", "uniform", "log_uniform", "int_range")
SETTINGS = ("objective", "objectives", "trials", "pruner", "sampler", "constraints")
# Each one Optuna's, in tuning/study.py's table of the same names; every one of them takes several
# objectives in Optuna 4 and 5 (tpe as MOTPE, nsga2 is NSGA-II), so none is refused with `objectives`.
SAMPLERS = ("tpe", "random", "grid", "nsga2")
PRUNERS = ("median",)  # `pruner = NAME` or `none`; the same, tuning/study.py's PRUNERS
DIRECTIONS = ("minimize", "maximize")
# What a constraint may bound, each from the cost model of the trial's checked graph (tuning/constraints.py):
# counts, one sample's forward MACs and FLOPs, and the memory peaks of a batch (bytes).
QUANTITIES = ("params", "trainable_params", "macs", "flops")
MEMORIES = ("train_memory", "inference_memory")
BOUNDS = ("<", "<=", ">", ">=")
FIGURES = (*QUANTITIES, *MEMORIES)  # what a constraint bounds and a static objective optimizes


@dataclass(frozen=True)
class Constraint:
    """One budget line of a sweep: `quantity op limit` (`train_memory(batch=64) < "12GiB"`); `text` as written
    (the spec's own words, for the trial's reason)."""

    quantity: str  # one of QUANTITIES or MEMORIES
    op: str  # one of BOUNDS
    limit: float
    text: str
    batch: int | None = None  # a memory's batch (None: the train section's batch_size, else 32)

    def excess(self, value: float) -> float:
        """Optuna's constraint value: <= 0 when `value` keeps the bound, else how far past it it is (at least 1:
        a strict bound met exactly is broken too)."""
        gap = value - self.limit if self.op in ("<", "<=") else self.limit - value
        return gap if self.holds(value) else max(gap, 1.0)

    def holds(self, value: float) -> bool:
        return {"<": value < self.limit, "<=": value <= self.limit, ">": value > self.limit, ">=": value >= self.limit}[
            self.op
        ]


@dataclass(frozen=True)
class Objective:
    """One thing a sweep optimizes: a metric a trial's run reports (`val_accuracy`, its best epoch), or a
    figure of the cost model (`flops`, `train_memory(batch=64)`), costed from the trial's spec before it is
    built."""

    direction: str  # one of DIRECTIONS
    name: str  # as written: the metric, or the figure with its batch ("train_memory(batch=64)")
    figure: str | None = None  # one of FIGURES when the objective is a cost figure, else None
    batch: int | None = None  # a memory figure's batch (None: the train section's batch_size, else 32)
    span: Span | None = field(default=None, compare=False)  # where the metric is written (check_metric)

    @property
    def static(self) -> bool:
        """Whether the objective is a cost figure, known before the trial trains."""
        return self.figure is not None

    def describe(self) -> str:
        return f"{self.direction}({self.name})"


@dataclass(frozen=True)
class Param:
    """One searched constant: `kind` is a DISTRIBUTIONS name."""

    name: str
    kind: str
    choices: tuple[Any, ...] = ()  # choice
    low: float | int | None = None  # uniform, log_uniform, int_range
    high: float | int | None = None
    step: int = 1  # int_range
    names: bool = False  # choice of names (`relu`, `gelu`): each is given to the spec as a name

    def describe(self) -> str:
        if self.kind == "choice":
            return f"choice({', '.join(describe_value(c) for c in self.choices)})"
        step = f", {self.step}" if self.kind == "int_range" and self.step != 1 else ""
        return f"{self.kind}({describe_value(self.low)}, {describe_value(self.high)}{step})"


@dataclass
class SweepSpace:
    """A checked sweep section."""

    model: str
    span: Span
    params: list[Param] = field(default_factory=list)
    objectives: list[Objective] = field(default_factory=list)  # `objective` is a list of one; empty: not given
    trials: int | None = None
    pruner: str | None = None  # "median" or None
    warmup: int = 0  # epochs a trial runs before the pruner may stop it
    startup: int = 5  # trials finished before the pruner stops any (Optuna's default)
    sampler: str = "tpe"
    population: int | None = None  # nsga2(population=N): trials per generation (None: Optuna's 50)
    constraints: list[Constraint] = field(default_factory=list)  # a budget each trial is costed against

    @property
    def trained(self) -> list[Objective]:
        """The objectives a trial's run reports, in the order written."""
        return [o for o in self.objectives if not o.static]

    @property
    def metric(self) -> str | None:
        """The metric each epoch of a trial reports to Optuna (its first trained objective); None: none given."""
        return self.trained[0].name if self.trained else None

    @property
    def direction(self) -> str:
        """The first trained objective's direction (a single objective's: the study's)."""
        return self.trained[0].direction if self.trained else "minimize"

    @property
    def multi(self) -> bool:
        """Whether the sweep has several objectives: a multi-objective study and its Pareto front."""
        return len(self.objectives) > 1


def check_sweeps(scope: FileScope, consts: Consts, diagnostics: list[Diagnostic]) -> dict[str, SweepSpace]:
    """Every `sweep` of the root file, checked on its own (the metric is checked by `check_metric`)."""
    models = [d.name for d in scope.file.decls if isinstance(d, ir.ModelDecl)]
    lets = {d.name: d for d in scope.file.decls if isinstance(d, ir.Let)}
    spaces: dict[str, SweepSpace] = {}
    for decl in scope.file.decls:
        if not isinstance(decl, ir.SweepDecl):
            continue
        if decl.name not in models:
            diagnostics.append(
                Diagnostic.at(
                    _name_span(decl), f"no model named '{decl.name}' to sweep", did_you_mean(decl.name, models)
                )
            )
            continue
        if decl.name in spaces:
            diagnostics.append(
                Diagnostic.at(
                    _name_span(decl), f"model '{decl.name}' has a sweep already, at line {spaces[decl.name].span.line}"
                )
            )
            continue
        spaces[decl.name] = _SweepChecker(scope, consts, lets, diagnostics).check(decl)
    return spaces


def _name_span(decl: ir.SweepDecl) -> Span:
    """The model's name after `sweep` (written on the declaration's first line)."""
    return Span.at(decl.span.file, decl.span.line, decl.span.col, len("sweep ") + len(decl.name))


class _SweepChecker:
    def __init__(self, scope: FileScope, consts: Consts, lets: dict[str, ir.Let], diagnostics: list[Diagnostic]):
        self.scope, self.consts, self.lets, self.diagnostics = scope, consts, lets, diagnostics

    def check(self, decl: ir.SweepDecl) -> SweepSpace:
        space = SweepSpace(model=decl.name, span=decl.span)
        seen: set[str] = set()
        for item in decl.items:
            try:
                if item.name in seen:
                    raise Fail(item.span, f"'{item.name}' is set twice in this sweep")
                if item.name in ("objective", "objectives") and seen & {"objective", "objectives"}:
                    raise Fail(
                        item.span,
                        "a sweep sets objective or objectives, not both",
                        "objectives = [maximize(val_accuracy), minimize(flops)] holds every objective",
                    )
                seen.add(item.name)
                if item.name in SETTINGS:
                    self._setting(space, item)
                else:
                    space.params.append(self._param(item))
            except Fail as exc:
                if exc.diagnostic is not None:
                    self.diagnostics.append(exc.diagnostic)
        grid = next((i for i in decl.items if i.name == "sampler"), None)
        endless = [p.name for p in space.params if p.kind not in ("choice", "int_range")]
        if space.sampler == "grid" and grid is not None and endless:
            self.diagnostics.append(
                Diagnostic.at(
                    grid.value.span,
                    f"a grid needs a finite space: "
                    f"{', '.join(endless)} draw{'s' if len(endless) == 1 else ''} "
                    "from a range",
                    "use choice(...) or int_range(LO, HI), or sampler = tpe",
                )
            )
        elif space.sampler == "grid":
            self._bound_grid(space, decl)
        if not seen & {"objective", "objectives"}:
            self.diagnostics.append(
                Diagnostic.at(_name_span(decl), "this sweep has no objective", "add: objective = minimize(val_loss)")
            )
        self._check_objectives(space, decl)
        if not decl.items or (not space.params and seen <= set(SETTINGS)):
            self.diagnostics.append(
                Diagnostic.at(
                    _name_span(decl), "this sweep searches no constant", "add one: width = choice(32, 64, 128)"
                )
            )
        return space

    def _check_objectives(self, space: SweepSpace, decl: ir.SweepDecl) -> None:
        """What the objectives need of the rest: a metric to train for, and no pruner beside several."""
        setting = next((i for i in decl.items if i.name in ("objective", "objectives")), None)
        if setting is not None and space.objectives and not space.trained:
            self.diagnostics.append(
                Diagnostic.at(
                    setting.value.span,
                    "every objective here is a cost figure, known without training; a sweep trains for a metric",
                    "add one such as maximize(val_accuracy), or bound the figures with constraints = [...]",
                )
            )
        pruner = next((i for i in decl.items if i.name == "pruner"), None)
        if space.multi and space.pruner is not None and pruner is not None:
            self.diagnostics.append(
                Diagnostic.at(
                    pruner.value.span,
                    "a pruner stops a trial by one objective; a sweep of several objectives cannot prune",
                    "remove the pruner (Optuna prunes single-objective studies only)",
                )
            )

    def _bound_grid(self, space: SweepSpace, decl: ir.SweepDecl) -> None:
        """A grid of more points than a sweep has trials, said at the parameter that takes it past the
        bound: counted, never listed (Optuna's grid sampler lists every point)."""
        size = grid_size(space.params)
        if size <= MAX_SWEEP_TRIALS:
            return
        before = 1
        for param in space.params:
            count = grid_values(param)
            if before * count > MAX_SWEEP_TRIALS:
                item = next(i for i in decl.items if i.name == param.name)
                which = (
                    f"'{param.name}' alone takes {count:,} values"
                    if before == 1
                    else f"'{param.name}' takes {count:,} values, times {before:,} from the parameters before it"
                )
                self.diagnostics.append(
                    Diagnostic.at(
                        item.value.span,
                        f"the grid has {size:,} points, more than a sweep's {MAX_SWEEP_TRIALS:,} trials: {which}",
                        "narrow the ranges, give int_range a STEP, or use sampler = tpe with trials = N",
                    )
                )
                return
            before *= count

    # ------------------------------------------------------------ settings

    def _setting(self, space: SweepSpace, item: ir.Kwarg) -> None:
        value = item.value
        if item.name == "objective":
            space.objectives = [self._objective(value)]
        elif item.name == "objectives":
            space.objectives = self._objectives(value)
        elif item.name == "trials":
            number = self._fold(value)
            if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= MAX_SWEEP_TRIALS:
                raise Fail(
                    value.span,
                    f"trials is a whole number from 1 to {MAX_SWEEP_TRIALS:,}, received {describe_value(number)}",
                )
            space.trials = number
        elif item.name == "pruner":
            space.pruner, space.warmup, space.startup = self._pruner(value)
        elif item.name == "constraints":
            bounds = value.items if isinstance(value, ir.List) else [value]
            if not bounds:
                raise Fail(value.span, "constraints is a list of bounds", "for example: [params < 5e6]")
            for bound in bounds:  # each bound's mistake at its place
                try:
                    space.constraints.append(self._constraint(bound))
                except Fail as exc:
                    if exc.diagnostic is not None:
                        self.diagnostics.append(exc.diagnostic)
        elif item.name == "sampler":
            space.sampler, space.population = self._sampler(value)

    def _sampler(self, value: Any) -> tuple[str, int | None]:
        """`tpe`, `random`, `grid`, `nsga2`, or `nsga2(population=N)`: NSGA-II's generation of N trials."""
        if isinstance(value, ir.Call) and isinstance(value.func, ir.Name) and value.func.id == "nsga2":
            if value.args or [k.name for k in value.kwargs] != ["population"]:
                raise Fail(value.span, "nsga2 takes population=N", "for example: nsga2(population=20)")
            size = self._fold(value.kwargs[0].value)
            if isinstance(size, bool) or not isinstance(size, int) or not 2 <= size <= MAX_SWEEP_TRIALS:
                raise Fail(
                    value.kwargs[0].value.span,
                    f"population is a whole number of trials from 2 to {MAX_SWEEP_TRIALS:,}, "
                    f"received {describe_value(size)}",
                )
            return "nsga2", size
        if not isinstance(value, ir.Name) or value.id not in SAMPLERS:
            raise Fail(
                value.span,
                f"sampler is one of {', '.join(SAMPLERS)}",
                did_you_mean(value.id, SAMPLERS) if isinstance(value, ir.Name) else None,
            )
        return value.id, None

    def _pruner(self, value: Any) -> tuple[str | None, int, int]:
        if isinstance(value, ir.NoneLit):
            return None, 0, 5
        if isinstance(value, ir.Name) and value.id in PRUNERS:
            return value.id, 0, 5
        if isinstance(value, ir.Call) and isinstance(value.func, ir.Name) and value.func.id == "median":
            if value.args or any(k.name not in ("warmup", "startup") for k in value.kwargs):
                raise Fail(value.span, "median takes warmup=EPOCHS and startup=TRIALS", "for example: median(warmup=2)")
            settings = {"warmup": 0, "startup": 5}
            for kwarg in value.kwargs:
                number = self._fold(kwarg.value)
                if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                    what = "epochs" if kwarg.name == "warmup" else "finished trials"
                    raise Fail(
                        kwarg.value.span,
                        f"{kwarg.name} is a whole number of {what} (0 or more), received {describe_value(number)}",
                    )
                settings[kwarg.name] = number
            return "median", settings["warmup"], settings["startup"]
        raise Fail(
            value.span,
            "pruner is median(warmup=EPOCHS) or none",
            "median stops a trial whose objective is worse than the median of the others at that epoch",
        )

    def _objectives(self, value: Any) -> list[Objective]:
        """`[maximize(val_accuracy), minimize(flops)]`: each objective's mistake at its place, none twice."""
        entries = value.items if isinstance(value, ir.List) else [value]  # one alone, as constraints takes it
        if not entries:
            raise Fail(
                value.span,
                "objectives is a list of minimize(...) and maximize(...)",
                "for example: [maximize(val_accuracy), minimize(flops)]",
            )
        if len(entries) > MAX_SWEEP_OBJECTIVES:
            raise Fail(value.span, f"a sweep has at most {MAX_SWEEP_OBJECTIVES} objectives, received {len(entries)}")
        objectives: list[Objective] = []
        for entry in entries:
            try:
                objective = self._objective(entry)
            except Fail as exc:
                if exc.diagnostic is not None:
                    self.diagnostics.append(exc.diagnostic)
                continue
            if any(o.name == objective.name for o in objectives):
                self.diagnostics.append(
                    Diagnostic.at(entry.span, f"'{objective.name}' is an objective twice", "keep one of them")
                )
                continue
            objectives.append(objective)
        return objectives

    def _objective(self, value: Any) -> Objective:
        """`minimize(METRIC)` / `maximize(METRIC)`, where METRIC is a metric the run reports (checked against
        the model by `check_metric`) or a cost figure: one of FIGURES, a memory with its `batch=B`."""
        if not (isinstance(value, ir.Call) and isinstance(value.func, ir.Name) and value.func.id in DIRECTIONS):
            raise Fail(
                value.span, "an objective is minimize(METRIC) or maximize(METRIC)", "for example: minimize(val_loss)"
            )
        direction = value.func.id
        if len(value.args) != 1 or value.kwargs:
            raise Fail(value.span, f"{direction} takes one metric name, like {direction}(val_loss)")
        target = value.args[0]
        if isinstance(target, ir.Call) and isinstance(target.func, ir.Name) and target.func.id in MEMORIES:
            figure, batch = self._quantity(target)
            written = f"{figure}(batch={batch})" if batch is not None else figure
            return Objective(direction, written, figure, batch, target.span)
        if isinstance(target, ir.Name) and target.id in FIGURES:
            return Objective(direction, target.id, target.id, None, target.span)
        if not isinstance(target, (ir.Name, ir.String)):
            raise Fail(
                target.span,
                f"{direction} takes a metric name or a cost figure ({', '.join(FIGURES)})",
                f"for example: {direction}(val_loss) or {direction}(flops)",
            )
        return Objective(direction, target.id if isinstance(target, ir.Name) else target.value, span=target.span)

    def _constraint(self, bound: Any) -> Constraint:
        """`QUANTITY < LIMIT` (or <=, >, >=): a count or FLOPs bounded by a number, a memory peak
        (`train_memory(batch=B)`, `inference_memory`) by a number of bytes or a size such as "12GiB"."""
        example = 'for example: params < 5e6, flops < 6e8 or train_memory(batch=64) < "12GiB"'
        if not isinstance(bound, ir.BinOp) or bound.op not in BOUNDS:
            raise Fail(bound.span, "a constraint is a bound: QUANTITY < LIMIT", example)
        quantity, batch = self._quantity(bound.left)
        limit = self._fold(bound.right)
        written = f"{quantity}(batch={batch})" if batch is not None else quantity
        shown = (
            f"{limit:,.0f}"
            if isinstance(limit, (int, float)) and not isinstance(limit, bool) and float(limit).is_integer()
            else describe_value(limit)
        )  # 5,000,000 or "12GiB"
        if isinstance(limit, str) and quantity in MEMORIES:
            from netdsl.semantics.train_checks import memory_size

            size = memory_size(limit)
            if size is None:
                raise Fail(
                    bound.right.span,
                    f"{describe_value(limit)} is not a memory size",
                    'a number of bytes, or a size such as "12GiB" or "800MB"',
                )
            limit = size
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit >= 0:
            unit = 'a number of bytes or a size such as "12GiB"' if quantity in MEMORIES else "a number"
            raise Fail(bound.right.span, f"'{quantity}' is bounded by {unit}, received {describe_value(limit)}")
        return Constraint(quantity, bound.op, float(limit), f"{written} {bound.op} {shown}", batch)

    def _quantity(self, expr: Any) -> tuple[str, int | None]:
        names = (*QUANTITIES, *MEMORIES)
        if isinstance(expr, ir.Name) and expr.id in names:
            return expr.id, None
        called = isinstance(expr, ir.Call) and isinstance(expr.func, ir.Name)
        if called and expr.func.id in MEMORIES:
            if expr.args or any(k.name != "batch" for k in expr.kwargs):
                raise Fail(expr.span, f"{expr.func.id} takes batch=B", f"for example: {expr.func.id}(batch=64)")
            batch = self._fold(expr.kwargs[0].value) if expr.kwargs else None
            if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
                raise Fail(
                    expr.kwargs[0].value.span, f"batch is a whole number of 1 or more, received {describe_value(batch)}"
                )
            return expr.func.id, batch
        word = expr.id if isinstance(expr, ir.Name) else expr.func.id if called else None
        raise Fail(
            expr.span, f"a constraint bounds one of {', '.join(names)}", did_you_mean(word, names) if word else None
        )

    # ------------------------------------------------------------ parameters

    def _param(self, item: ir.Kwarg) -> Param:
        name_span = Span.at(item.span.file, item.span.line, item.span.col, len(item.name))
        decl = self.lets.get(item.name)
        if decl is None:
            hint = did_you_mean(item.name, [*self.lets, *SETTINGS])
            raise Fail(
                name_span,
                f"'{item.name}' is not a constant of this file",
                hint
                or "a sweep searches the file's own constants ('let NAME = VALUE') and sets " + ", ".join(SETTINGS),
            )
        try:
            current = self.consts.file_let(self.scope, item.name, decl.span)
        except Fail:
            current = UNKNOWN  # reported at the constant
        value = item.value
        kind = value.func.id if isinstance(value, ir.Call) and isinstance(value.func, ir.Name) else None
        if not isinstance(value, ir.Call) or kind not in DISTRIBUTIONS or value.kwargs:
            raise Fail(
                value.span,
                f"'{item.name}' takes a distribution: choice(A, B, ...), uniform(LO, HI), "
                "log_uniform(LO, HI) or int_range(LO, HI[, STEP])",
                did_you_mean(kind, DISTRIBUTIONS) if kind else None,
            )
        args = [self._fold(arg) for arg in value.args]
        if kind == "choice":
            return self._choice(item.name, value, args, current)
        return self._range(item.name, kind, value, args, current)

    def _choice(self, name: str, call: ir.Call, args: list[Any], current: Any) -> Param:
        if not args:
            raise Fail(call.span, "choice() needs at least one value", "for example: choice(32, 64, 128)")
        if len(args) > MAX_SWEEP_CHOICES:
            raise Fail(call.span, f"choice() takes at most {MAX_SWEEP_CHOICES} values, received {len(args)}")
        for arg, node in zip(args, call.args):
            if not _scalar(arg):
                raise Fail(
                    node.span, f"choice values are numbers, strings, booleans or names, received {type_name(arg)}"
                )
        kinds = {_kind(a) for a in args}
        if kinds == {"an integer", "a number"}:
            kinds = {"a number"}
        if len(kinds) > 1:
            first = _kind(args[0])
            odd = next(
                i for i, a in enumerate(args) if _kind(a) != first and {_kind(a), first} != {"an integer", "a number"}
            )
            raise Fail(
                call.args[odd].span,
                f"choice values are all of one type: {describe_value(args[0])} is "
                f"{first}, {describe_value(args[odd])} is {_kind(args[odd])}",
            )
        seen: list[Any] = []
        for arg, node in zip(args, call.args):
            if arg in seen and type(arg) is type(seen[seen.index(arg)]):
                raise Fail(node.span, f"{describe_value(arg)} is a choice twice")
            seen.append(arg)
        self._fits(name, call.span, args[0], current)
        choices = tuple(a.name if isinstance(a, (Sym, Resolved)) else a for a in args)
        if isinstance(current, float) and all(isinstance(a, (int, float)) for a in choices):
            choices = tuple(float(a) for a in choices)
        return Param(name, "choice", choices=choices, names=isinstance(args[0], (Sym, Resolved)))

    def _range(self, name: str, kind: str, call: ir.Call, args: list[Any], current: Any) -> Param:
        wanted = (2, 3) if kind == "int_range" else (2, 2)
        shape = "int_range(LO, HI[, STEP])" if kind == "int_range" else f"{kind}(LO, HI)"
        if not wanted[0] <= len(args) <= wanted[1]:
            raise Fail(
                call.span, f"{shape} takes {' or '.join(map(str, sorted(set(wanted))))} values, received {len(args)}"
            )
        for arg, node in zip(args, call.args):
            whole = kind == "int_range"
            if isinstance(arg, bool) or not isinstance(arg, int if whole else (int, float)):
                raise Fail(
                    node.span,
                    f"{shape} takes {'whole numbers' if whole else 'numbers'}, received {describe_value(arg)}",
                )
        low, high = args[0], args[1]
        if low >= high:
            raise Fail(
                call.span, f"{kind}: the low end {describe_value(low)} is not below the high end {describe_value(high)}"
            )
        if kind == "log_uniform" and low <= 0:
            raise Fail(call.args[0].span, f"log_uniform needs a low end above 0, received {describe_value(low)}")
        step = args[2] if len(args) == 3 else 1
        if step < 1:
            raise Fail(call.args[2].span, f"int_range's step is 1 or more, received {step}")
        sample = low if kind == "int_range" else float(low)
        self._fits(name, call.span, sample, current)
        return Param(
            name,
            kind,
            low=low if kind == "int_range" else float(low),
            high=high if kind == "int_range" else float(high),
            step=step,
        )

    def _fits(self, name: str, span: Span, sample: Any, current: Any) -> None:
        """A searched value must have the constant's type (an integer where a number is fine)."""
        if current is UNKNOWN:
            return
        have, want = _kind(sample), _kind(current)
        if have == want or (want == "a number" and have == "an integer"):
            return
        if isinstance(current, int) and not isinstance(current, bool) and have == "a number":
            hint = "use int_range(LO, HI) or choice(...) of integers for an integer constant"
        else:
            hint = None
        raise Fail(span, f"'{name}' is {want} ({describe_value(current)}), this draws {have}", hint)

    def _fold(self, expr: Any) -> Any:
        value = self.consts.fold(expr, Env(self.scope))
        if value is UNKNOWN:
            raise Fail(expr.span, "expected a constant value here")
        return value


def grid_values(param: Param) -> int:
    """How many values a grid takes from a choice or an int_range (its high end when the steps reach it)."""
    if param.kind == "choice":
        return len(param.choices)
    assert param.kind == "int_range" and isinstance(param.low, int) and isinstance(param.high, int), (
        f"{param.name} draws from a continuous range: a grid refuses it"
    )
    return (param.high - param.low) // param.step + 1


def grid_size(params: list[Param]) -> int:
    """The points of a grid over `params`: the product of their counts, computed, never listed."""
    size = 1
    for param in params:
        size *= grid_values(param)
    return size


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, Sym, Resolved))


def _kind(value: Any) -> str:
    return "a name" if isinstance(value, (Sym, Resolved)) else type_name(value)


def reported_metrics(train: TrainSpec | None, outputs: list[str]) -> list[str]:
    """The names a run's history holds for a checked train section: `loss`, each metric, and their
    `val_` twins (a multi-output model also reports each output's own loss and metrics, prefixed)."""
    names = ["loss"]
    if len(outputs) > 1:
        names += [f"{out}_loss" for out in outputs]
    metrics = train.metrics if train is not None else None
    per_output = metrics.items() if isinstance(metrics, dict) else [(None, metrics or [])]
    for out, entries in per_output:
        for entry in entries if isinstance(entries, list) else [entries]:
            for spelled in dict.fromkeys([getattr(entry, "written", None) or entry.name, entry.name]):
                names.append(f"{out}_{spelled}" if out is not None and len(outputs) > 1 else spelled)
    return names + [f"val_{name}" for name in names]


def check_metric(space: SweepSpace, train: TrainSpec | None, outputs: list[str]) -> list[Diagnostic]:
    """A diagnostic for each trained objective whose metric the model's runs do not report."""
    known = reported_metrics(train, outputs)
    problems = []
    for objective in space.trained:
        if objective.name in known or objective.span is None:
            continue
        hint = did_you_mean(objective.name, [*known, *FIGURES]) or f"the model reports: {', '.join(known)}"
        problems.append(
            Diagnostic.at(objective.span, f"model '{space.model}' does not report '{objective.name}'", hint)
        )
    return problems
