"""The sweep section in pure Python: what `netdsl check` reads from it, how the editor sees its
names, and its translation into Optuna's distributions (no training here)."""

from __future__ import annotations

import pytest

import netdsl
from netdsl.lsp.names import build_index
from netdsl.semantics.analysis import analyze
from netdsl.semantics.sweep_space import Param, grid_size, reported_metrics

SPEC = """\
let width = 64
let lr = 1e-3
let act = relu

model mlp {
  input x: (8,)
  output y = x -> dense(width, activation=act) -> dense(3)
  train {
    optimizer = adam(learning_rate=lr)
    loss = sparse_categorical_crossentropy(from_logits=true)
    metrics = [sparse_categorical_accuracy]
  }
}

sweep mlp {
  width = int_range(16, 70, 16)
  lr = log_uniform(1e-4, 1e-2)
  act = choice(relu, gelu)
  objective = maximize(val_sparse_categorical_accuracy)
  pruner = median(warmup=2, startup=3)
  sampler = random
}
"""


def space():
    analysis = analyze(netdsl.parse(SPEC, filename="s.net"))
    assert analysis.diagnostics == []
    return analysis.sweeps["mlp"]


def test_the_section_as_checked():
    s = space()
    assert s.params == [
        Param("width", "int_range", low=16, high=70, step=16),
        Param("lr", "log_uniform", low=1e-4, high=1e-2),
        Param("act", "choice", choices=("relu", "gelu"), names=True),
    ]
    assert (s.direction, s.metric, s.pruner, s.warmup, s.startup, s.sampler, s.trials) == (
        "maximize",
        "val_sparse_categorical_accuracy",
        "median",
        2,
        3,
        "random",
        None,
    )


def test_the_metrics_a_model_reports():
    graph = analyze(netdsl.parse(SPEC, filename="s.net")).graphs["mlp"]
    assert reported_metrics(graph.train, ["y"]) == [
        "loss",
        "sparse_categorical_accuracy",
        "val_loss",
        "val_sparse_categorical_accuracy",
    ]


def test_the_editor_sees_the_sweep_names_as_uses():
    index = build_index(netdsl.parse(SPEC, filename="s.net"))
    uses = {
        sym.name: [(o.span.line, o.span.col) for o in occs if not o.definition]
        for sym, occs in index.by_symbol.items()
        if sym.kind == "decl"
    }
    assert uses["width"] == [(7, 25), (16, 3)] and uses["act"] == [(7, 43), (18, 3)]
    assert uses["mlp"] == [(15, 7)]  # the model a sweep names: rename renames it too


def test_optuna_distributions_and_the_trial_defines():
    pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    from netdsl.semantics.values import SpecName
    from netdsl.tuning import study

    dists = study.distributions(space())
    assert dists == {
        "width": IntDistribution(16, 64, step=16),
        "lr": FloatDistribution(1e-4, 1e-2, log=True),
        "act": CategoricalDistribution(("relu", "gelu")),
    }  # 70 is not on a step: 64 is the top
    defines = study.trial_defines(space(), {"width": 32, "lr": 1e-3, "act": "gelu"})
    assert isinstance(defines["act"], SpecName) and defines["width"] == 32
    program = netdsl.parse(
        SPEC.replace("sampler = random", "sampler = grid").replace("  lr = log_uniform(1e-4, 1e-2)\n", ""),
        filename="g.net",
    )
    assert study.grid_size(analyze(program).sweeps["mlp"]) == 4 * 2
    assert study.shown_url("postgresql://me:pw@db:5432/s") == "postgresql://me:***@db:5432/s"
    assert study.storage_url("postgres://me@db/s") == "postgresql+psycopg://me@db/s"


def test_a_grid_is_counted_never_listed():
    assert grid_size([Param("width", "int_range", low=16, high=70, step=16)]) == 4  # 16, 32, 48, 64
    assert (
        grid_size([Param("w", "int_range", low=1, high=10**12), Param("a", "choice", choices=("x", "y"))]) == 2 * 10**12
    )
    assert grid_size([Param("w", "int_range", low=0, high=999, step=1)] * 4) == 10**12


@pytest.mark.parametrize(
    "url, shown, secret",
    [
        ("postgresql://me:pw@db:5432/s", "postgresql://me:***@db:5432/s", True),
        ("postgresql://sweeper:s3cr/et@db.cluster/sweeps", "postgresql://sweeper:***@db.cluster/sweeps", True),
        (
            "postgresql://me@db/s?password=a/b&application_name=x",
            "postgresql://me@db/s?application_name=x&password=***",
            True,
        ),
        (
            "postgresql://me@db/s?passfile=/home/me/pg&sslkey=/k&sslpassword=z",
            "postgresql://me@db/s?passfile=***&sslkey=***&sslpassword=***",
            True,
        ),
        ("postgresql://me:p@ss@db/s", "postgresql://me:***@***@db/s", True),  # SQLAlchemy: password 'p', host 'ss@db'
        ("postgresql://me@db:5432/s", "postgresql://me@db:5432/s", False),
        ("sqlite:////shared/sweeps/study.db", "sqlite:////shared/sweeps/study.db", False),
        ("no url at all", "***", True),  # unreadable: nothing shown, nothing kept
        ("postgresql://me:pw@db:port/s", "postgresql://***", True),
    ],
)
def test_a_storage_url_is_shown_without_its_secrets(url, shown, secret):
    pytest.importorskip("sqlalchemy", reason="netdsl[sweep] (Optuna, SQLAlchemy) is not installed")
    from netdsl.tuning import study

    assert (study.shown_url(url), study.holds_secret(url)) == (shown, secret)


def test_nsga2_with_a_population():
    spec = SPEC.replace("sampler = random", "sampler = nsga2(population=16)").replace(
        "pruner = median(warmup=2, startup=3)\n", ""
    )
    analysis = analyze(netdsl.parse(spec, filename="s.net"))
    assert analysis.diagnostics == []
    assert (analysis.sweeps["mlp"].sampler, analysis.sweeps["mlp"].population) == ("nsga2", 16)
