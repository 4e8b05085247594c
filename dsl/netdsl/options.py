"""Each command's options, declared once: a dataclass per command whose fields are the library's
keywords, each carrying its command-line flag, metavar, help and default (issue 29.2).

    @dataclass(frozen=True)
    class TrainOptions:
        epochs: int | None = option("--epochs", type=int, metavar="N", help="epochs to train ...")

`netdsl.cli` generates every command's argparse parser from these fields (`cli/common.add_options`),
and `tests/cli/test_options.py` holds each library function's keywords (`netdsl.train`, `.sweep`,
`.export` ...) equal to its command's fields: a new option is one field here and one keyword
there. A field's default is the library's; `cli_default` says where the command line's differs
(`--progress auto`, a repeatable flag's empty list). `cli_only`: a flag with no library keyword
(`--json`, `--plugin`, the job flags); `keyword`: the library's name for a field named otherwise.

This module imports nothing of netdsl's: the parser of every command is made from it, and `check`,
`fmt`, `render` ... import no backend. The name lists below are repeated from the rooms that own
them, and the same test holds them equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Alias",
    "Command",
    "Flag",
    "FLAG",
    "COMMANDS",
    "COMMAND_OPTIONS",
    "BACKENDS",
    "PROGRESS",
    "IMAGE_FORMATS",
    "EXPORT_FORMATS",
    "REGISTRY_KINDS",
]

BACKENDS = ("tensorflow", "jax", "torch")  # backend/runtime.BACKENDS
PROGRESS = ("auto", "bar", "line", "none")  # training/run/settings.PROGRESS
IMAGE_FORMATS = ("svg", "png", "pdf", "dot")  # diagram.FORMATS
EXPORT_FORMATS = ("onnx", "saved_model", "litert")  # deploy/formats.FORMATS, api.ExportFormat
REGISTRY_KINDS = (
    "layer",
    "activation",
    "initializer",
    "regularizer",
    "constraint",
    "optimizer",
    "loss",
    "metric",
    "schedule",
    "callback",
)  # registry.KINDS
CHECKPOINTS = ("best", "last")  # training/run/runs.CHECKPOINTS

FLAG = "netdsl.flag"  # the key of a field's metadata that holds its Flag
SAME = object()  # cli_default: the library's default


@dataclass(frozen=True)
class Alias:
    """An earlier spelling of a flag, still accepted and not shown in --help (CHANGELOG lists them)."""

    flags: tuple[str, ...]
    dest: str | None = None  # None: the field's
    action: str | None = None
    const: Any = None
    type: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Flag:
    """How one field is typed on the command line; `flags` empty for a positional argument."""

    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    type: Any = None
    choices: tuple[str, ...] | None = None
    action: Any = None  # an argparse action: "store_true", "append", a class
    nargs: str | None = None
    required: bool = False
    cli_default: Any = SAME
    aliases: tuple[Alias, ...] = ()
    group: str | None = None  # "exclusive": one of the mutually exclusive flags; else an argument group's title
    hidden: bool = False  # accepted, not shown in --help
    cli_only: bool = False  # no library keyword
    keyword: str | None = None  # the library's keyword, where the field is named otherwise


def option(*flags: str, help: str, default: Any = None, **how: Any) -> Any:  # noqa: A002 - argparse's name
    """A field: its library default and its flag."""
    return field(default=default, metadata={FLAG: Flag(tuple(flags), help, **how)})


def positional(metavar: str | None, help: str, default: Any = None, **how: Any) -> Any:  # noqa: A002
    """A positional argument (`metavar` None: argparse shows its choices)."""
    return field(default=default, metadata={FLAG: Flag((), help, metavar=metavar, **how)})


# ------------------------------------------------------------------ the options several commands share


def spec(help: str = "the .net spec file", **how: Any) -> Any:  # noqa: A002
    return positional("SPEC", help, **how)


def model(default: str = "every model of the spec") -> Any:
    return option("--model", metavar="NAME", help=f"the model of the spec to use (default: {default})")


def json_flag(what: str) -> Any:
    return option(
        "--json",
        action="store_true",
        default=False,
        cli_only=True,
        help=f"print {what} as JSON (for scripts and editors)",
    )


def include() -> Any:
    return option(
        "-I",
        "--include",
        action="append",
        default=(),
        cli_default=[],
        metavar="DIR",
        help="a further folder imports may read from (repeatable; default: only the spec's folder)",
    )


def defines() -> Any:
    return option(
        "-D",
        "--define",
        action="append",
        cli_default=[],
        metavar="NAME=VALUE",
        help="replace a file-level constant of the spec: -D width=128 (repeatable)",
    )


def plugin(cli_only: bool = True) -> Any:
    """`--plugin MODULE`: a library keyword (`plugins`) only where the function loads them itself."""
    return option(
        "--plugin",
        action="append",
        default=(),
        cli_default=[],
        metavar="MODULE",
        cli_only=cli_only,
        keyword="plugins",
        help="a Python module that registers layers or activations (repeatable)",
    )


def backend() -> Any:
    return option(
        "--backend",
        choices=BACKENDS,
        help="the Keras backend (default: KERAS_BACKEND, else tensorflow); jax needs netdsl[jax], torch netdsl[torch]",
    )


def checkpoint(**how: Any) -> Any:
    return option(
        "--checkpoint",
        choices=CHECKPOINTS,
        help="a run folder's best epoch (best.keras) or its last (model.keras); default: best when the "
        "run had validation data, else last",
        **how,
    )


def weights(metavar: str = "FILE", help: str | None = None) -> Any:  # noqa: A002
    return option(
        "--weights",
        metavar=metavar,
        help=help
        or "load every model's weights from FILE (.keras or "
        '.weights.h5), matched by layer name as a train section\'s init = "FILE" (read as arrays only)',
    )


def out(*flags: str, metavar: str, help: str, default: Any = None, **how: Any) -> Any:  # noqa: A002
    """`-o/--out`, with `--output` its earlier spelling."""
    aliases = () if "--output" in flags else (Alias(("--output",)),)
    return option(*(flags or ("-o", "--out")), metavar=metavar, help=help, default=default, aliases=aliases, **how)


def targets() -> Any:
    return option(
        "--targets",
        action="append",
        cli_default=[],
        metavar="OUT=COLUMN",
        help="the CSV column holding an output's targets (repeatable)",
    )


def batch_size(help: str) -> Any:  # noqa: A002
    return option("--batch-size", type=int, metavar="N", help=help)


# The data of a run: `--data SRC [--split A,B[,C]]` or `--train SRC [--val SRC] [--test SRC]`, and the columns.
def data(help: str = "one source (.npz, .csv, .tfrecord, image folder), split by --split") -> Any:  # noqa: A002
    return option("--data", metavar="SRC", group="exclusive", help=help)


def train_source() -> Any:
    return option("--train", metavar="SRC", group="exclusive", help="the training source (with --val, --test)")


def split(help: str = "train,validation[,test] fractions of --data (default: 0.8,0.1,0.1)") -> Any:  # noqa: A002
    return option("--split", metavar="A,B[,C]", help=help)


def val() -> Any:
    return option("--val", metavar="SRC", help="the validation source (with --train)")


def test(help: str = "the test source, scored once at the end (with --train)") -> Any:  # noqa: A002
    return option("--test", metavar="SRC", help=help)


def features() -> Any:
    return option(
        "--features",
        metavar="COL,...",
        help="a CSV file's columns that form the input, in this order (default: every numeric column "
        "that holds no targets); recorded in the run folder",
    )


def drop() -> Any:
    return option("--drop", metavar="COL,...", help="CSV columns left out of the input (an id, a row number)")


def track() -> Any:
    return option(
        "--track",
        metavar="URI",
        help="push the run as it trains, as `netdsl runs push --to URI` does (mlflow:<tracking URI> or "
        "tensorboard:<folder>); a server that is down never fails the run",
    )


# ------------------------------------------------------------------ specs (no Keras)


@dataclass(frozen=True)
class CheckOptions:
    files: Any = positional("SPEC", "the .net spec files to check", nargs="+", keyword="spec")
    json: bool = option(
        "--json",
        action="store_true",
        default=False,
        cli_only=True,
        help="print the diagnostics (a list, empty when clean) as JSON (for scripts and editors)",
        aliases=(Alias(("--format",), dest="format", choices=("text", "json")),),
    )
    plugin: Any = plugin()
    include: Any = include()
    defines: Any = defines()


@dataclass(frozen=True)
class FmtOptions:
    files: Any = positional("SPEC", "the .net spec files to format", nargs="+", keyword="spec")
    check: bool = option(
        "--check",
        action="store_true",
        default=False,
        cli_only=True,
        help="only report files that would change (exit 1)",
    )
    diff: bool = option(
        "--diff", action="store_true", default=False, cli_only=True, help="print a diff instead of writing"
    )


@dataclass(frozen=True)
class RenderOptions:
    spec: Any = spec()
    out: Any = out(
        metavar="FILE|DIR",
        cli_only=True,
        help="the file (its suffix gives the image format) or folder/ to write (default: <model>.svg "
        "in the current folder)",
    )
    model: Any = model()
    image_format: Any = option(
        "--image-format",
        choices=IMAGE_FORMATS,
        cli_only=True,
        help="svg, png, pdf or dot (default: -o's suffix, else svg)",
        aliases=(Alias(("--format",), choices=IMAGE_FORMATS),),
    )
    depth: Any = option(
        "--depth",
        type=int,
        metavar="N",
        help="fold block instances nested deeper than N into one box (0: every block; default: none folded)",
    )
    no_shapes: bool = option(
        "--no-shapes",
        action="store_true",
        default=False,
        keyword="shapes",
        help="topology only, without shapes: no TensorFlow",
    )
    collapse_repeats: bool = option(
        "--no-collapse",
        action="store_false",
        default=True,
        help="draw every copy of a step repeated * N (default: one box marked xN)",
        aliases=(Alias(("--expand-repeats",), action="store_false"),),
    )
    cost: bool = option(
        "--cost",
        action="store_true",
        default=False,
        help="each box's FLOPs a sample and output memory, filled the deeper the more FLOPs; "
        "the model's totals in the title (docs/cost.md)",
    )
    batch: Any = option(
        "--batch",
        type="positive",
        metavar="B",
        help="the batch --cost counts memory for (default: the train section's batch_size, else 32)",
    )
    plugin: Any = plugin()
    include: Any = include()
    defines: Any = defines()


@dataclass(frozen=True)
class LayersOptions:
    name: Any = positional("NAME", "one entry to show in full (default: list them all)", nargs="?")
    kind: Any = option(
        "--kind", choices=REGISTRY_KINDS, help="list this kind of entry (default: layers and activations)"
    )


@dataclass(frozen=True)
class PreviewOptions:
    spec: Any = spec()
    model: Any = model("the spec's first")
    port: int = option("--port", type=int, default=8765, metavar="P", help="the port to serve on; 0: any free one")
    depth: Any = option("--depth", type=int, metavar="N", help="fold blocks nested deeper than N")
    cost: bool = option(
        "--cost",
        action="store_true",
        default=False,
        help="each box's FLOPs a sample and output memory, filled the deeper the more FLOPs, as render --cost "
        "(docs/cost.md)",
    )
    batch: Any = option(
        "--batch",
        type="positive",
        metavar="B",
        help="the batch --cost counts memory for (default: the train section's batch_size, else 32)",
    )
    plugin: Any = plugin()
    include: Any = include()
    defines: Any = defines()


@dataclass(frozen=True)
class LspOptions:
    plugin: Any = plugin()
    include: Any = include()


# ------------------------------------------------------------------ models


@dataclass(frozen=True)
class BuildOptions:
    spec: Any = spec()
    out: Any = out(metavar="DIR", default="build", cli_only=True, help="the folder to write into")
    model: Any = model()
    plugin: Any = plugin()
    no_diagram: bool = option(
        "--no-diagram", action="store_true", default=False, cli_only=True, help="write the .keras files only, no .svg"
    )
    param_limit: Any = option(
        "--param-limit",
        type=int,
        metavar="N",
        help="refuse a layer with more than N parameters (default: 1,000,000,000)",
        aliases=(Alias(("--max-params",), type=int, metavar="N"),),
    )
    weights: Any = weights()
    backend: Any = backend()
    include: Any = include()
    defines: Any = defines()


@dataclass(frozen=True)
class SummaryOptions:
    spec: Any = spec()
    model: Any = model()
    json: bool = json_flag(
        "per model: params, trainable_params, non_trainable_params, layers, outputs (and cost, with --cost)"
    )
    cost: bool = option(
        "--cost",
        action="store_true",
        default=False,
        help="add each layer's FLOPs and activation memory, and the model's forward and "
        "training-step FLOPs and inference and training memory peaks (docs/cost.md)",
    )
    batch: Any = option(
        "--batch",
        type="positive",
        metavar="B",
        help="the batch --cost counts for (default: the train section's batch_size, else 32)",
    )
    precision: Any = option(
        "--precision",
        choices=("float32", "mixed_bfloat16", "mixed_float16"),
        help="the dtype policy --cost counts for (default: the train section's mixed_precision, else float32)",
    )
    plugin: Any = plugin()
    weights: Any = weights()
    backend: Any = backend()
    include: Any = include()
    defines: Any = defines()


@dataclass(frozen=True)
class DecompileOptions:
    trained: Any = positional(
        "MODEL.keras|RUN_DIR", "the saved model: a .keras file, or a run folder (its best.keras or model.keras)"
    )
    checkpoint: Any = checkpoint()
    out: Any = out(metavar="OUT.net", cli_only=True, help="write the spec here instead of printing it")
    flat: bool = option(
        "--flat", action="store_true", default=False, help="no blocks or repeats: every layer where it is used"
    )
    verify: bool = option(
        "--verify",
        action="store_true",
        default=False,
        cli_only=True,
        help="rebuild the spec and prove it is the same model (imports TensorFlow)",
    )
    plugin: Any = plugin()


@dataclass(frozen=True)
class ExportOptions:
    source: Any = positional(
        "SRC",
        "a spec (.net), a run folder, a .keras file or a Lightning checkpoint of netdsl.lightning.SpecModule (.ckpt)",
    )
    format: Any = option("--format", required=True, metavar="FORMAT", help=f"one of: {', '.join(EXPORT_FORMATS)}")
    out: Any = out(
        metavar="OUT",
        help="the file (a folder for saved_model); default: <model>.onnx, "
        "<model>_saved_model or <model>.tflite in the run folder, beside the .keras "
        "file, or here",
    )
    model: Any = option("--model", metavar="NAME", help="the model of a spec with several")
    weights: Any = weights("FILE.keras", "weights for the spec's model (default: fresh)")
    seed: Any = option(
        "--seed",
        type=int,
        metavar="S",
        help="draw a spec's fresh weights from this seed (the same seed, the same file)",
    )
    checkpoint: Any = checkpoint(aliases=(Alias(("--last",), action="store_const", const="last"),))
    verify: bool = option(
        "--verify",
        action="BooleanOptionalAction",
        default=True,
        help="run the file in its runtime and compare with Keras (default: on)",
    )
    data: Any = option(
        "--data",
        metavar="SRC",
        help="verify on the first 32 samples of this data (.npz, .csv, .tfrecord, image folder), "
        "found by the model's input names (default: seeded inputs)",
    )
    include: Any = include()
    plugin: Any = plugin()


# ------------------------------------------------------------------ training


@dataclass(frozen=True)
class TrainOptions:
    spec: Any = spec()
    model: Any = model("the spec's only model")
    data: Any = data()
    train: Any = train_source()
    split: Any = split()
    val: Any = val()
    test: Any = test()
    targets: Any = targets()
    features: Any = features()
    drop: Any = drop()
    epochs: Any = option("--epochs", type=int, metavar="N", help="epochs to train (default: the spec's, else 1)")
    batch_size: Any = batch_size("samples per step (default: the spec's, else 32)")
    max_memory: Any = option(
        "--max-memory",
        type="memory",
        metavar="SIZE",
        help="refuse a batch size whose estimated training peak memory is over SIZE (12GiB, "
        "800MB), naming the largest batch that fits (default: the spec's max_memory; "
        "docs/cost.md)",
    )
    seed: Any = option(
        "--seed",
        type=int,
        metavar="S",
        help="the seed of weights, split and shuffling: the same seed, the same run (default: a "
        "random one, recorded in the run folder)",
    )
    out: Any = out(metavar="DIR", default="runs", help="the folder run folders go into")
    resume: Any = option(
        "--resume",
        metavar="auto|RUN_DIR",
        help="continue a stopped run: RUN_DIR, or auto for the newest unfinished run of the model "
        "in OUT (default: a new run)",
    )
    progress: str = option(
        "--progress",
        choices=PROGRESS,
        default="none",
        cli_default="auto",
        help="on stderr: bar (redrawn), line (one per epoch), none, or auto (a bar on a terminal, else lines)",
    )
    tensorboard: bool = option(
        "--tensorboard", action="store_true", default=False, help="TensorBoard logs in the run folder"
    )
    track: Any = track()
    init_from: Any = option(
        "--init-from",
        metavar="FILE",
        help="the whole model's initial weights from FILE (.keras or .weights.h5), matched by "
        'layer name as a train section\'s init = "FILE" (read as arrays only)',
    )
    backend: Any = backend()
    devices: Any = option(
        "--devices", type=int, metavar="N", help="train on N devices of this process (GPUs, or the CPU split in N)"
    )
    processes: Any = option(
        "--processes",
        type=int,
        metavar="N",
        group="several processes (JAX)",
        cli_only=True,
        help="start N processes of one job on this machine",
    )
    coordinator: Any = option(
        "--coordinator",
        metavar="HOST:PORT",
        group="several processes (JAX)",
        cli_only=True,
        help="process 0's address and a free port",
    )
    num_processes: Any = option(
        "--num-processes",
        type=int,
        metavar="N",
        group="several processes (JAX)",
        cli_only=True,
        help="the number of processes of the job",
    )
    process_id: Any = option(
        "--process-id",
        type=int,
        metavar="I",
        group="several processes (JAX)",
        cli_only=True,
        help="this process's number, 0 to N-1",
    )
    plugin: Any = plugin(cli_only=False)
    include: Any = include()
    defines: Any = defines()


@dataclass(frozen=True)
class SweepOptions:
    spec: Any = spec("the .net spec file with a sweep section", nargs="?")
    show: Any = option(
        "--show", metavar="DIR", cli_only=True, help="print a sweep folder's trials, best first, and stop"
    )
    json: bool = json_flag("the trials, the objectives and the Pareto front (with a sweep: instead of its lines)")
    model: Any = model("the model the spec's one sweep section names")
    data: Any = data("one source, split by --split (as netdsl train)")
    train: Any = train_source()
    split: Any = split("train,validation[,test] fractions of --data")
    val: Any = val()
    test: Any = test("the test source (with --train)")
    targets: Any = targets()
    features: Any = features()
    drop: Any = drop()
    trials: Any = option("--trials", type=int, metavar="N", help="the study's total (default: the spec's trials)")
    workers: int = option("--workers", type=int, default=1, metavar="K", help="processes sharing the study")
    storage: Any = option(
        "--storage",
        metavar="URL",
        help="the study's database (default: SQLite in the sweep folder); postgresql://... for "
        "many machines; or in NETDSL_SWEEP_STORAGE (a password stays out of ps)",
    )
    study: Any = option("--study", metavar="NAME", help="the study's name in --storage (default: MODEL-sweep)")
    seed: Any = option("--seed", type=int, metavar="S", help="the sampler's seed and every trial's")
    epochs: Any = option("--epochs", type=int, metavar="N", help="epochs per trial (default: the spec's train section)")
    batch_size: Any = batch_size("batch size (default: the spec's train section)")
    out: Any = out("-o", "--out", "--output", metavar="DIR", default="sweeps", help="where sweep folders go (sweeps/)")
    resume: Any = option("--resume", metavar="auto|DIR", help="finish a stopped or killed sweep")
    track: Any = option(
        "--track",
        metavar="URI",
        help="push the sweep as its trials train, as `netdsl runs push --to URI` does "
        "(mlflow:<tracking URI> or tensorboard:<folder>); a server that is down never fails "
        "the sweep",
    )
    join: Any = option(
        "--join", metavar="DIR", hidden=True, help="one of the processes of --workers K: the sweep folder it works in"
    )
    plugin: Any = plugin(cli_only=False)
    include: Any = include()
    defines: Any = defines()


# ------------------------------------------------------------------ trained models


def trained() -> Any:
    return positional(
        "RUN_DIR|MODEL.keras|EXPORTED",
        "a run folder (its best.keras or model.keras: see --checkpoint), a .keras file, or an exported "
        ".onnx, .tflite or SavedModel folder (run in its own runtime)",
    )


def trust() -> Any:
    return option(
        "--trust",
        action="store_true",
        default=False,
        help="run a SavedModel folder whose graph holds TensorFlow ops outside netdsl's allow-list (a "
        "SavedModel is a program: only one from someone you trust)",
    )


DATA_OF_A_MODEL = "the data (.npz, .csv, .tfrecord, image folder), found by the model's input names"
RUN_BATCH = "samples per step (default: the run's batch size, else 32)"


@dataclass(frozen=True)
class EvaluateOptions:
    trained: Any = trained()
    checkpoint: Any = checkpoint()
    data: Any = option("--data", metavar="SRC", help=DATA_OF_A_MODEL + " (default: a run folder's own --split)")
    batch_size: Any = batch_size(RUN_BATCH)
    trust: bool = trust()
    targets: Any = targets()
    plugin: Any = plugin()
    backend: Any = backend()
    split: str = option(
        "--split",
        choices=("test", "val", "train"),
        default="test",
        help="without --data: which part of a run folder's own data",
    )
    spec: Any = option(
        "--spec",
        metavar="SPEC.net",
        help="an exported file's loss and metrics: this spec's train section (default: the spec of "
        "the run folder the file is in)",
    )
    model: Any = option(
        "--model",
        metavar="NAME",
        help="with --spec: the model whose train section scores the file (default: the one the file "
        "records, or the spec's only model)",
    )
    include: Any = include()
    json: bool = json_flag("the values (one object)")


@dataclass(frozen=True)
class PredictOptions:
    trained: Any = trained()
    checkpoint: Any = checkpoint()
    data: Any = option("--data", metavar="SRC", required=True, help=DATA_OF_A_MODEL)
    batch_size: Any = batch_size(RUN_BATCH)
    trust: bool = trust()
    targets: Any = targets()
    plugin: Any = plugin()
    backend: Any = backend()
    # Required, checked by the command: argparse's own check would refuse the old spelling --output.
    out: Any = out(
        metavar="PREDS.npz", cli_only=True, help="the file to write (required): .csv, .npz or .json, by its suffix"
    )


# ------------------------------------------------------------------ the rest of the command line


@dataclass(frozen=True)
class CompletionOptions:
    shell: Any = positional(None, "the shell to complete in", choices=("bash", "zsh"))


@dataclass(frozen=True)
class InitOptions:
    folder: Any = positional("DIR", "where to write them (default: here)", default=".", nargs="?")


@dataclass(frozen=True)
class ExamplesOptions:
    name: Any = positional("NAME", "the example to copy (with the files it imports)", nargs="?")
    out: Any = out(metavar="DIR", default=".", cli_only=True, help="where to copy it")


@dataclass(frozen=True)
class RunsOptions:
    words: Any = positional(
        "DIR | compare RUN ... | push DIR|RUN ...",
        "a folder to list (default: .), or compare / push and the run folders",
        nargs="*",
        cli_only=True,
    )
    json: bool = json_flag("the list (or the comparison)")
    out: Any = option(
        "--out", metavar="FILE", cli_only=True, help="compare: draw the runs' curves overlaid (.svg, .png or .pdf)"
    )
    to: Any = option(
        "--to",
        metavar="URI",
        cli_only=True,
        help="push: mlflow:<tracking URI> (sqlite:///mlflow.db, http://host:5000) or tensorboard:<folder>",
    )
    experiment: Any = option(
        "--experiment", default="netdsl", metavar="NAME", cli_only=True, help="push: the MLflow experiment"
    )


@dataclass(frozen=True)
class ZooOptions:
    action: Any = positional("ACTION", "list, show NAME or fetch NAME", choices=("list", "show", "fetch"))
    name: Any = positional("NAME", "a family, as `netdsl zoo list` names it", nargs="?")
    top: bool = option(
        "--top",
        action="store_true",
        default=False,
        cli_only=True,
        help="the weights with ImageNet's 1000-class classifier (default: without it, a backbone)",
    )
    source: Any = option(
        "--from",
        metavar="FILE",
        cli_only=True,
        help="a local copy of the published file (checked by its hash, then kept in the cache)",
    )


@dataclass(frozen=True)
class Command:
    """A command as `netdsl --help` lists it and `netdsl NAME --help` explains it, and its options."""

    options: type
    summary: str  # its line in `netdsl --help`
    description: str
    examples: tuple[str, ...]  # each `netdsl NAME ...`, run in tests/cli/test_help.py where it can be


# Every command, in the order `netdsl --help` lists them; the library function a command's keywords are
# held to has its name (tests/cli/test_options.py).
COMMANDS: dict[str, Command] = {
    "check": Command(
        CheckOptions,
        summary="check specs for errors (fast; no TensorFlow)",
        description="Parse and check each spec, and every file it imports: every error at "
        "file:line:col with the source line and a did-you-mean. Exit 0 when clean, "
        "1 when a spec has errors.",
        examples=(
            "netdsl check specs/lightning_mlp.net",
            "netdsl check specs/*.net --json     # the diagnostics as a JSON list",
        ),
    ),
    "fmt": Command(
        FmtOptions,
        summary="format specs canonically, in place",
        description="Rewrite each spec in the canonical layout (comments kept), printing "
        "`reformatted FILE` for each file it changed.",
        examples=(
            "netdsl fmt specs/lightning_mlp.net",
            "netdsl fmt --check specs/*.net      # exit 1 when a file would change (CI)",
        ),
    ),
    "build": Command(
        BuildOptions,
        summary="build .keras models (and diagrams) from a spec",
        description="Build every model of the spec (or --model) with Keras and write "
        "OUT/<model>.keras and OUT/<model>.svg, each atomically, printing a "
        "summary table per model.",
        examples=(
            "netdsl build specs/lightning_mlp.net",
            "netdsl build specs/siamese.net -o models/ --model siamese --no-diagram",
        ),
    ),
    "summary": Command(
        SummaryOptions,
        summary="print each model's layers, shapes and parameters",
        description="Print each model's (or --model's) layers, output shapes and parameter "
        "counts (trainable and not), writing no file. Counted without "
        "TensorFlow when the shape inference is sure of every layer; built "
        "with Keras otherwise, and with --backend, --weights or --plugin.",
        examples=("netdsl summary specs/lightning_mlp.net", "netdsl summary specs/siamese.net --json"),
    ),
    "render": Command(
        RenderOptions,
        summary="draw a model as a Graphviz diagram",
        description="Draw every model of the spec (or --model) as <model>.svg in the current "
        "folder, or where -o says, with each layer's output shape and parameters "
        "(TensorFlow only where the pure-Python inference is unsure).",
        examples=(
            "netdsl render specs/resnet50.net --depth 1 -o resnet50.png",
            "netdsl render specs/siamese.net --no-shapes --image-format dot -o diagrams/",
        ),
    ),
    "layers": Command(
        LayersOptions,
        summary="list what a spec may name (layers, activations, ...)",
        description="List the layers and activations a spec may name, with their parameters; "
        "NAME shows one entry in full.",
        examples=("netdsl layers", "netdsl layers conv2d", "netdsl layers --kind optimizer"),
    ),
    "preview": Command(
        PreviewOptions,
        summary="a live diagram of a spec in the browser, redrawn on every save",
        description="Serve the spec's diagram and diagnostics on http://127.0.0.1:P/, redrawn "
        "each time the spec (or a file it imports) is saved, until Ctrl-C.",
        examples=(
            "netdsl preview specs/resnet50.net --depth 1",
            "netdsl preview my.net --port 0        # any free port",
        ),
    ),
    "decompile": Command(
        DecompileOptions,
        summary="write a saved Keras model (.keras) as a spec",
        description="Print the spec of a saved Keras model, repeated structure as blocks and "
        "`* N` repeats; the file is read as data (no TensorFlow).",
        examples=(
            "netdsl decompile build/lightning_mlp.keras",
            "netdsl decompile resnet50.keras -o resnet50.net --verify",
        ),
    ),
    "export": Command(
        ExportOptions,
        summary="export a spec, run or .keras file to ONNX, SavedModel or LiteRT",
        description="Write the model as ONNX, a SavedModel or a LiteRT (.tflite) file, atomically, "
        "then run the file in that format's own runtime (onnxruntime, "
        "tf.saved_model.load, the LiteRT interpreter) next to Keras and print the "
        "largest difference per output. Needs netdsl[export] for onnx and litert.",
        examples=(
            "netdsl export runs/lightning_mlp-1 --format onnx",
            "netdsl export specs/lightning_mlp.net --format litert -o mlp.tflite",
            "netdsl export model.keras --format saved_model --no-verify",
        ),
    ),
    "lsp": Command(
        LspOptions,
        summary="run the language server over stdio (for editors; needs netdsl[lsp])",
        description="The language server editors start: diagnostics, hover, completion, go to "
        "definition, rename ..., over stdin/stdout (docs/lsp.md).",
        examples=("netdsl lsp", "netdsl lsp --include shared/ --plugin my_layers"),
    ),
    "train": Command(
        TrainOptions,
        summary="train a spec's model on data; one run folder per run",
        description="Train one model of the spec on data found by its input and output names "
        "(.npz, CSV, TFRecord, an image folder), in a new run folder "
        "OUT/<model>-N/ (models, history, report, curves); resumable.",
        examples=(
            "netdsl train specs/lightning_mlp.net --data digits.npz --epochs 3 --seed 0",
            "netdsl train my.net --train train.csv --val val.csv --targets probs=label",
            "netdsl train specs/lightning_mlp.net --data digits.npz --resume auto",
        ),
    ),
    "sweep": Command(
        SweepOptions,
        summary="search a spec's constants (its sweep section) with Optuna",
        description="Run the trials of the spec's `sweep MODEL { ... }` section: each trial an "
        "ordinary run folder (trials/<k>/) trained with its values as -D defines; "
        "summary.csv, best.json and plots in OUT/<model>-sweep-N/.",
        examples=(
            "netdsl sweep mlp.net --data digits.npz --trials 12",
            "netdsl sweep mlp.net --data digits.npz --workers 2 --seed 0",
            "netdsl sweep --show sweeps/mlp-sweep-1",
        ),
    ),
    "runs": Command(
        RunsOptions,
        summary="list, compare and push run folders (MLflow, TensorBoard)",
        description="List the runs and sweeps under DIR (default: the current folder), newest first: "
        "name, model, status, epochs, best objective and spec hash. `runs compare RUN "
        "RUN ...` sets runs' settings side by side (`*` marks what differs) with their "
        "final and best metrics; `runs push DIR|RUN ... --to URI` records them in MLflow "
        "(mlflow:<tracking URI>) or TensorBoard (tensorboard:<folder>), again and again "
        "without duplicates.",
        examples=(
            "netdsl runs",
            "netdsl runs runs/ --json",
            "netdsl runs compare runs/mlp-1 runs/mlp-2 --out compare.svg",
            "netdsl runs push runs/ sweeps/ --to mlflow:sqlite:///mlflow.db",
            "netdsl runs push runs/mlp-3 --to mlflow:http://127.0.0.1:5000",
            "netdsl runs push runs/ --to tensorboard:logs/",
        ),
    ),
    "evaluate": Command(
        EvaluateOptions,
        summary="the loss and metrics of a trained model on data",
        description="Print the loss and each metric of a trained model (a run folder, a .keras "
        "file, or a file of netdsl export run in its own runtime) on data read as "
        "train reads it.",
        examples=(
            "netdsl evaluate runs/lightning_mlp-1 --data digits.npz",
            "netdsl evaluate mlp.onnx --data digits.npz --spec specs/lightning_mlp.net",
            "netdsl evaluate build/model.keras --data test.csv --targets probs=label --json",
        ),
    ),
    "predict": Command(
        PredictOptions,
        summary="a trained model's predictions on new data, as .csv, .npz or .json",
        description="Write a trained model's predictions on the data's inputs, one row per sample "
        "named by its file (an image's path in the folder) or CSV line: a classifier's "
        "predicted class name and each class's probability, or an output's values.",
        examples=(
            "netdsl predict runs/shapes-1 --data new_pictures/ -o preds.csv",
            "netdsl predict runs/lightning_mlp-1 --data digits.npz -o preds.npz",
            "netdsl predict mlp.onnx --data new_rows.csv -o preds.json",
        ),
    ),
    "completion": Command(
        CompletionOptions,
        summary="print a shell completion script (bash, zsh)",
        description="Print a script that completes netdsl's commands, options and choices; "
        "load it from your shell's start-up file.",
        examples=(
            'netdsl completion bash      # then: eval "$(netdsl completion bash)" in ~/.bashrc',
            'netdsl completion zsh       # then: eval "$(netdsl completion zsh)" in ~/.zshrc',
        ),
    ),
    "init": Command(
        InitOptions,
        summary="write a starter spec and a tiny dataset that trains in seconds",
        description="Write DIR/digits.net (a small model) and DIR/digits.npz (2,000 generated "
        "28x28 images of 10 classes), then print the commands to try. "
        "Nothing is overwritten.",
        examples=("netdsl init demo     # then: cd demo && netdsl train digits.net --data digits.npz",),
    ),
    "examples": Command(
        ExamplesOptions,
        summary="list the example specs; NAME copies one into the current folder",
        description="List the example specs that ship with netdsl, each with its first comment "
        "line; with NAME, copy that example (and the files it imports) out.",
        examples=("netdsl examples", "netdsl examples resnet50 -o specs/"),
    ),
    "zoo": Command(
        ZooOptions,
        summary="list the pretrained backbones; fetch their ImageNet weights",
        description="The keras.applications families netdsl knows. `show NAME` prints one's input "
        "size, preprocessing and weights files; `fetch NAME` downloads its weights once "
        "into Keras' cache ($KERAS_HOME/models, ~/.keras/models) and checks them "
        "against the hash keras.applications pins. Without a network, give the file "
        "with --from FILE, or set NETDSL_ZOO_MIRROR to a folder URL holding it.",
        examples=(
            "netdsl zoo list",
            "netdsl zoo show resnet50",
            "netdsl zoo fetch resnet50",
            "netdsl zoo fetch resnet50 --from ~/Downloads/resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5",
        ),
    ),
}
COMMAND_OPTIONS: dict[str, type] = {name: command.options for name, command in COMMANDS.items()}
