"""The compiler: a checked spec becomes Keras 3 functional models (TensorFlow backend).

    spec = LoadedSpec.of("spec.net")                      # semantics.session: read once
    analysis, models = build(spec.models())               # every model of the root file
    model = build_one(spec.model(None))                   # the file's only model
    model = build_one(spec.model("classifier", param_limit=10_000_000))

The handle's pure-Python check is replayed (`netdsl.backend.builder.replay`);
where it cannot be, the front end (`analyze`) expands each model again with
`KerasBackend`, which builds and calls every layer as soon as the
expander knows it; any error — a spec error or a layer Keras rejects — comes
back as a `SpecError` whose diagnostics point at the spec's line and column.

Training section. A model whose spec has `train { ... }` comes back compiled:
optimizer (with clipping and learning-rate schedules), losses, metrics and
loss weights per output (in output order, keyed by the spec's output names),
`jit_compile` and `steps_per_execution` (where the spec says nothing, the backend's
default: backend/execution.py, or one step for a model built with `one_step_per_execution=True`,
as a job of several processes builds its own; `execution_of(model)` says which). `mixed_precision` sets the Keras
dtype policy while *that* model is built (the global policy is restored
afterwards). Its outputs stay float32, as the Keras guide recommends: a
model-level layer named like an output (`output probs = ... -> dense(10)`)
computes in float32 unless the spec gives it a dtype, and any other output
that would not be float32 gets a float32 `linear` Activation named after
the output. Under "mixed_float16" the optimizer is wrapped in a
`LossScaleOptimizer` (in the saved compile config too). The fit settings (batch_size, epochs,
validation_split, shuffle, callbacks) are not part of `compile`; get them
with `fit_kwargs(model)`:

    model.fit(x, y, **netdsl.fit_kwargs(model))

They are held in memory for the built model (a model loaded from a `.keras`
file has its compile settings but not these).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from typing import Any

from netdsl import registry
from netdsl.backend import profiles
from netdsl.backend.execution import Execution, execution_settings, several_devices_problem
from netdsl.backend.runtime import current_backend, dtype_policy, init_backend
from netdsl.errors import Diagnostic, Fail, SpecError, sort_diagnostics
from netdsl.semantics.analysis import Analysis, analyze
from netdsl.semantics.session import CheckedModel, CheckedModels, LoadedSpec
from netdsl.semantics.values import describe_value
from netdsl.syntax import ir
from netdsl.syntax.loader import Program

__all__ = [
    "build",
    "build_one",
    "compile_program",
    "execution_of",
    "fit_kwargs",
    "unfreeze_epoch",
    "unfreeze",
    "adapted_layers",
]

_FIT: weakref.WeakKeyDictionary[Any, tuple[dict, list]] = weakref.WeakKeyDictionary()
_INIT_REPORTS: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()  # what `init` loaded
_PHASES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # model -> graph, two-phase fine-tuning
_EXECUTION: weakref.WeakKeyDictionary[Any, Execution] = weakref.WeakKeyDictionary()  # compiled with, and why
_ADAPTED: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()  # layers `adapt` names


# ------------------------------------------------------------------ entry points


def build(
    checked: CheckedModels,
    *,
    backend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    one_step_per_execution: bool = False,
) -> tuple[Analysis, dict[str, Any]]:
    """The one build door: the picked, checked models of `checked` as Keras models.

    Returns the analysis (graphs with `built` set and parameter counts filled
    in) and `{name: keras.Model}` in the order picked. Raises `SpecError` with
    every diagnostic when anything fails. `backend` ('tensorflow', 'jax' or 'torch')
    must be the one Keras runs on in this process, or Keras not loaded yet (None:
    the environment's choice, see `runtime.init_backend`). `weights`: a `.keras` or
    `.weights.h5` file each model's weights are loaded from, as a train section's
    `init = "FILE"` loads them (`UsageError` when a layer does not match).
    `one_step_per_execution`: a model with a train section defaults to one step per
    execution (backend/execution.py says when: a job of several processes, a MirroredStrategy).

    The models were checked and expanded in pure Python once (the handle's
    analysis); when that was certain and clean, their layers are built back to
    back from those graphs (`builder.replay`), with no second check. Otherwise —
    an error to report in Keras' own terms, a shape the checker could not know —
    the expansion runs again with Keras building each layer as it goes.
    """
    init_backend(backend, mute_stderr=False)
    program, wanted = checked.program, list(checked.names)
    analysis = checked.to_build()
    if analysis.exhausted:  # building it with Keras would only spend more
        raise SpecError(analysis.errors, program.sources())
    replayed = None if analysis.errors else _replay_all(program, analysis, wanted, one_step_per_execution)
    built = replayed or _compile_interleaved(program, analysis, wanted, checked.param_limit, one_step_per_execution)
    if weights is not None:
        for model in built[1].values():
            load_weights(model, weights)
    return built


def build_one(
    checked: CheckedModel,
    *,
    backend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    one_step_per_execution: bool = False,
) -> Any:
    """The one model of `checked` as a `keras.Model` (compiled when it has a train section): `build`'s."""
    return build(checked, backend=backend, weights=weights, one_step_per_execution=one_step_per_execution)[1][
        checked.name
    ]


def compile_program(
    program: Program,
    models: list[str] | None = None,
    param_limit: int | None = None,
    *,
    one_step_per_execution: bool = False,
) -> tuple[Analysis, dict[str, Any]]:
    """`build` for a bare `Program`: `models` (default: every model of the root file) picked and built."""
    names = list(models) if models is not None else program.model_names
    return build(
        LoadedSpec(program).models(names, param_limit=param_limit), one_step_per_execution=one_step_per_execution
    )


def _replay_all(
    program: Program, checked: Analysis, wanted: list[str], one_step_per_execution: bool
) -> tuple[Analysis, dict[str, Any]] | None:
    """Build the checked graphs directly; None when one of them must be expanded with Keras."""
    from netdsl.backend.builder import KerasBackend, replay

    built: dict[str, Any] = {}
    for policy, names in _policy_groups(wanted, {n: _policy_of(checked.graphs[n]) for n in wanted}):
        with dtype_policy(policy):
            backend = KerasBackend(float32_outputs=_output_names(program, names) if policy else None)
            for name in names:
                graph = checked.graphs[name]
                if graph.built is None and not replay(graph, backend):
                    return None
                try:
                    if graph.train is not None:
                        _compile_training(
                            graph.built,
                            graph,
                            execution_settings(
                                graph.train, current_backend(), one_step_per_execution=one_step_per_execution
                            ),
                        )
                except Fail:
                    return None  # reported, with every other error, by the interleaved build
                built[name] = graph.built
    checked.graphs = {name: checked.graphs[name] for name in wanted}
    return checked, {name: built[name] for name in wanted}


def _policy_of(graph: Any) -> str | None:
    policy = graph.train.mixed_precision if graph.train is not None else None
    return policy if policy not in (None, "float32") else None


def _policy_groups(wanted: list[str], policies: Mapping[str, str | None]) -> list[tuple[str | None, list[str]]]:
    """Models built under the global policy together, then one group per mixed-precision model."""
    groups = [(None, [m for m in wanted if not policies.get(m)])]
    return groups + [(policies[m], [m]) for m in wanted if policies.get(m)]


def _compile_interleaved(
    program: Program, checked: Analysis, wanted: list[str], param_limit: int | None, one_step_per_execution: bool
) -> tuple[Analysis, dict[str, Any]]:
    """Expand with Keras building each layer as it goes: exact shapes, Keras' own errors."""
    from netdsl.backend.builder import KerasBackend

    # A model's dtype policy is read from the pure-Python check (its train
    # section comes after the layers it concerns); nothing is built on errors.
    policies = {} if checked.errors else {n: p for n in wanted if (p := _policy_of(checked.graphs[n]))}
    result = Analysis(program)
    # Declarations (blocks, declared layers, constants) were checked on their
    # own with unknown parameters: that is the pure-Python checker's job.
    diagnostics: list[Diagnostic] = list(checked.declaration_diagnostics)
    built: dict[str, Any] = {}
    for policy, names in _policy_groups(wanted, policies):
        if not names:
            continue
        with dtype_policy(policy):
            backend = KerasBackend(float32_outputs=_output_names(program, names) if policy else None)
            analysis = analyze(program, backend=backend, models=names, declarations=False, param_limit=param_limit)
            diagnostics.extend(analysis.diagnostics)
            if analysis.errors:
                continue
            for name in names:
                graph = analysis.graphs[name]
                try:
                    if graph.built is None:
                        graph.built = backend.finish(graph)
                    if graph.train is not None:
                        _compile_training(
                            graph.built,
                            graph,
                            execution_settings(
                                graph.train, current_backend(), one_step_per_execution=one_step_per_execution
                            ),
                        )
                except Fail as exc:
                    diagnostics.extend(exc.all_diagnostics())
                    continue
                result.graphs[name] = graph
                built[name] = graph.built
    result.diagnostics = sort_diagnostics(diagnostics, list(program.files))
    if result.errors:
        raise SpecError(result.errors, program.sources())
    result.graphs = {name: result.graphs[name] for name in wanted}
    return result, {name: built[name] for name in wanted}


def fit_kwargs(model: Any) -> dict[str, Any]:
    """`model.fit` keyword arguments from the spec's train section: batch_size,
    epochs, validation_split, shuffle and fresh callback objects (empty for a
    model without a train section)."""
    from netdsl.backend.builder import keras_value
    from netdsl.custom import factory

    fit, callbacks = _FIT.get(model, ({}, []))
    kwargs = dict(fit)
    if callbacks:
        kwargs["callbacks"] = [
            factory.make(_checked_entry("callback", c.name), {k: keras_value(v) for k, v in c.kwargs})
            for c in callbacks
        ]
    return kwargs


def execution_of(model: Any) -> Execution | None:
    """The steps_per_execution and jit_compile a built model was compiled with, and where each came from."""
    return _EXECUTION.get(model)


def _output_names(program: Program, names: list[str]) -> set[str]:
    """The output names the models `names` declare (from the source, before building)."""
    out: set[str] = set()

    def walk(body: list) -> None:
        for stmt in body:
            if isinstance(stmt, ir.Output):
                out.update(item.name for item in stmt.items if item.name)
            elif isinstance(stmt, ir.If):
                walk(stmt.then)
                walk(stmt.orelse or [])

    for decl in program.root_file.decls:
        if isinstance(decl, ir.ModelDecl) and decl.name in names:
            walk(decl.body)
    return out


# ------------------------------------------------------------------ training


def init_report(model: Any) -> list[str]:
    """What the spec's `init` loaded into a model built in this process, one line a part ("init: N layers of ...")."""
    return list(_INIT_REPORTS.get(model, []))


def load_weights(model: Any, path: str | os.PathLike[str]) -> None:
    """The whole model's weights from a file named outside the spec (`--weights`, `--init-from`), reported as `init`."""
    from netdsl.backend.fine_tuning import load_weights_file

    _INIT_REPORTS.setdefault(model, []).append(load_weights_file(model, path))


def adapted_layers(model: Any) -> list[str]:
    """The layers a built model's train section adapts to the training data (`adapt`), in graph order."""
    return list(_ADAPTED.get(model, []))


def unfreeze_epoch(model: Any) -> int | None:
    """The epoch a built model's second fine-tuning phase starts at (`unfreeze_after`), or None."""
    graph = _PHASES.get(model)
    return graph.train.unfreeze_after if graph is not None else None


def unfreeze(model: Any) -> None:
    """Start the second phase: the frozen parts train again, at `unfreeze_learning_rate` (recompiled)."""
    from netdsl.backend.fine_tuning import thaw_for_second_phase

    graph = _PHASES[model]
    thaw_for_second_phase(model, graph)
    # The first phase's steps and jit_compile (none when the section compiles nothing: nor does this phase).
    execution = _EXECUTION.get(model) or execution_settings(graph.train, current_backend())
    _compile_training(model, graph, execution, second_phase=True)


def _compile_training(model: Any, graph: Any, execution: Execution, second_phase: bool = False) -> None:
    """Compile `model` with its train section's optimizer, losses and metrics, and `execution`'s settings."""
    from netdsl.backend.builder import reason

    spec = graph.train
    _FIT[model] = (dict(spec.fit), list(spec.callbacks))
    if spec.adapt and not second_phase:
        from netdsl.semantics.adapting import adapted_layer_names

        _ADAPTED[model] = adapted_layer_names(graph, spec)
    if (spec.init or spec.freeze) and not second_phase:
        from netdsl.backend.fine_tuning import apply_fine_tuning

        _INIT_REPORTS[model] = apply_fine_tuning(model, graph)  # before compile: what is frozen is not trained
    if spec.unfreeze_after is not None:
        _PHASES[model] = graph
    if spec.loss is None and spec.optimizer is None and not spec.metrics:
        return
    names = graph.output_names
    try:
        optimizer = _object(spec.optimizer) if spec.optimizer is not None else "rmsprop"
        if second_phase and spec.unfreeze_learning_rate is not None:
            import keras

            optimizer = keras.optimizers.get(optimizer)
            optimizer.learning_rate = spec.unfreeze_learning_rate
        if spec.mixed_precision == "mixed_float16":
            # Keras would wrap it too, but only while the policy is global;
            # wrapped here, the saved compile config says so and reloads alike.
            import keras

            optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.get(optimizer))
        loss = _per_output(spec.loss, names, _object)
        metrics = _metrics(spec.metrics, names)
        weights = _per_output(spec.loss_weights, names, float, missing=1.0)
    except Fail:
        raise
    except Exception as exc:
        raise Fail(graph.span, f"the train section of '{graph.name}' cannot be built: {reason(exc)}") from None
    _refuse_on_torch(graph)
    _refuse_on_several_tensorflow_devices(graph)
    _try_declared_objectives(model, graph)
    try:
        model.compile(
            optimizer=optimizer,
            loss=loss,
            metrics=metrics,
            loss_weights=weights,
            jit_compile=execution.jit_compile,
            steps_per_execution=execution.steps_per_execution,
        )
        _EXECUTION[model] = execution
    except Exception as exc:
        raise Fail(graph.span, f"cannot compile '{graph.name}' for training: {reason(exc)}") from None


def compile_for_scoring(model: Any, checked: CheckedModel) -> bool:
    """Compile a loaded `model` with the losses, loss weights and metrics of its spec's train section, for
    `evaluate`; False when the model has no train section with a loss (the model is left as it was).

    A `.keras` file's compile config is what Keras' `get_config` writes, and some of Keras' losses leave
    their arguments out of it (Huber's `delta`; CosineSimilarity's and SparseCategoricalCrossentropy's
    `axis`): reloaded, they score with their defaults. The spec has them. Its optimizer and execution
    settings are the loaded model's (evaluate runs no optimizer step). SpecError when `checked` has errors."""
    graph = checked.graph
    spec, names = graph.train, graph.output_names
    if spec is None or spec.loss is None:
        return False
    model.compile(
        optimizer=model.optimizer,
        loss=_per_output(spec.loss, names, _object),
        metrics=_metrics(spec.metrics, names),
        loss_weights=_per_output(spec.loss_weights, names, float, missing=1.0),
        jit_compile=model.jit_compile,
        steps_per_execution=model.steps_per_execution,
    )
    return True


def _refuse_on_torch(graph: Any) -> None:
    """A train section the torch backend cannot run: an error at the model, before Keras fails inside fit."""
    from netdsl.backend.torch_limits import train_problem

    backend = current_backend()
    profile = profiles.get(backend)
    problem = train_problem(graph.train) if profile is not None and profile.train_limits else None
    if problem is not None:
        raise Fail(graph.span, f"'{graph.name}' cannot train on the {backend} backend: {problem}")


def _checked_entry(kind: str, name: str) -> registry.Entry:
    """The registry entry of a name the check resolved (an unknown name is a spec error before this)."""
    entry = registry.lookup(kind, name)
    assert entry is not None, (kind, name)
    return entry


def _refuse_on_several_tensorflow_devices(graph: Any) -> None:
    """A train section TensorFlow cannot run on several devices: an error at the model, before Keras fails
    inside fit (with an error about the data)."""
    problem = several_devices_problem(graph.train, current_backend())
    if problem is not None:
        raise Fail(graph.span, f"'{graph.name}' cannot train on several TensorFlow devices: {problem}")


def _object(resolved: Any) -> Any:
    """A Resolved optimizer / loss / metric as a fresh Keras object."""
    from netdsl.backend.builder import keras_value, reason
    from netdsl.custom import factory

    if resolved.kind in ("declared_loss", "declared_metric"):
        return _declared_objective(resolved)
    entry = _checked_entry(resolved.kind, resolved.name)
    kwargs = {k: keras_value(v, entry.param(k), resolved.name) for k, v in resolved.kwargs}
    try:
        return factory.make(entry, kwargs, as_written=getattr(resolved, "written", None))
    except Exception as exc:
        if resolved.span is None:
            raise
        raise Fail(resolved.span, f"'{resolved.describe()}' rejected its arguments: {reason(exc)}") from None


def _declared_objective(resolved: Any) -> Any:
    """A loss or metric declared in the spec (`loss contrastive(...) = ...`) as netdsl's Keras class holding its
    checked tree, its constants bound (`loss = contrastive(margin=2)`)."""
    from netdsl.custom.declared_losses import DeclaredLoss, DeclaredMetric

    cls = DeclaredLoss if resolved.kind == "declared_loss" else DeclaredMetric
    return cls(**resolved.decl.config(dict(resolved.kwargs)))


def _try_declared_objectives(model: Any, graph: Any) -> None:
    """Each declared loss and metric computed once on its output's symbolic tensor (the targets taken of the
    same shape): what Keras would refuse inside `fit` (`mean(x, axis=3)` of a (batch, 1) output), one line
    at the train section's loss or metric, before anything trains."""
    from netdsl.backend.builder import reason
    from netdsl.semantics.train_checks import each_output_objective

    spec = graph.train
    for output, resolved in each_output_objective(spec.loss, spec.metrics, graph.output_names):
        if resolved.kind not in ("declared_loss", "declared_metric"):
            continue
        tensor = model.outputs[graph.output_names.index(output)]
        symbolic = _declared_objective(resolved)
        try:
            if resolved.kind == "declared_loss":
                symbolic.call(tensor, tensor)
            else:
                symbolic.per_sample(tensor, tensor)
        except Exception as exc:
            shape = (
                "(" + ", ".join(["batch", *(describe_value(d) for d in tensor.shape[1:])]) + ")"
            )  # as the body sees it
            raise Fail(
                resolved.span or graph.span,
                f"the {resolved.kind.removeprefix('declared_')} '{resolved.name}' cannot be computed on the output "
                f"'{output}' of shape {shape}: {reason(exc)}",
            ) from None


def _per_output(value: Any, names: list[str], convert: Any, missing: Any = None) -> Any:
    """One value per output, in output order (a single output: the value itself)."""
    if value is None:
        return None
    if isinstance(value, dict):
        out = [convert(value[n]) if n in value else missing for n in names]
    elif isinstance(value, list):
        out = [convert(v) for v in value]
    else:
        out = [convert(value) for _ in names]  # fresh objects per output
    return out[0] if len(names) == 1 else out


def _metrics(value: Any, names: list[str]) -> Any:
    if not value:
        return None
    if isinstance(value, dict):
        per = [[_object(m) for m in value.get(n, [])] for n in names]
    else:
        per = [[_object(m) for m in value] for _ in names]
    return per[0] if len(names) == 1 else per
