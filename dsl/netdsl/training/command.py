"""`netdsl train`, `netdsl evaluate` and `netdsl predict` (moves to cli/ with the new layout).

    netdsl train SPEC [--model NAME] (--data SRC [--split 0.8,0.1,0.1] | --train SRC [--val SRC] [--test SRC])
                 [--targets OUT=COLUMN] [--epochs N] [--batch-size N] [--seed S] [-o DIR]
                 [--resume auto|RUN_DIR] [--progress auto|bar|line|none] [--tensorboard]
    netdsl evaluate RUN_DIR|MODEL.keras --data SRC [--json] [--batch-size N]
    netdsl predict RUN_DIR|MODEL.keras --data SRC -o PREDS.npz [--batch-size N]

Exit codes: 0 a finished (or early-stopped) run, 1 a spec or data error or
a failed run, 2 a usage error, 130 a run stopped by Ctrl-C (resumable).
The spec and the flags are checked before TensorFlow loads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .errors import TrainingError, UsageError

EXIT_STOPPED = 130


def add_commands(sub: Any, include: Any) -> None:
    """Register the three commands on the CLI's sub-parsers (`include` adds --include)."""
    train = sub.add_parser("train", help="train a spec's model on data; one run folder per run")
    train.add_argument("spec", metavar="SPEC")
    train.add_argument("--model", metavar="NAME")
    source = train.add_mutually_exclusive_group()
    source.add_argument("--data", metavar="SRC", help="one source, split by --split")
    source.add_argument("--train", metavar="SRC", help="the training source (with --val, --test)")
    train.add_argument("--split", metavar="A,B[,C]", help="train,validation[,test] fractions of --data "
                                                         "(default 0.8,0.1,0.1)")
    train.add_argument("--val", metavar="SRC")
    train.add_argument("--test", metavar="SRC")
    _targets(train)
    train.add_argument("--epochs", type=int, metavar="N")
    train.add_argument("--batch-size", type=int, metavar="N")
    train.add_argument("--seed", type=int, metavar="S")
    train.add_argument("-o", "--output", default="runs", metavar="DIR", help="where run folders go (runs/)")
    train.add_argument("--resume", metavar="auto|RUN_DIR")
    train.add_argument("--progress", choices=("auto", "bar", "line", "none"), default="auto")
    train.add_argument("--tensorboard", action="store_true", help="TensorBoard logs in the run folder")
    train.add_argument("--plugin", action="append", default=[], metavar="MODULE")
    include(train)
    train.set_defaults(run=run_train)

    for name, help_text in (("evaluate", "the loss and metrics of a trained model on data"),
                            ("predict", "a trained model's outputs on data, as .npz")):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("trained", metavar="RUN_DIR|MODEL.keras")
        cmd.add_argument("--data", required=True, metavar="SRC")
        cmd.add_argument("--batch-size", type=int, metavar="N")
        _targets(cmd)
        if name == "evaluate":
            cmd.add_argument("--json", action="store_true", help="print the values as JSON")
            cmd.set_defaults(run=run_evaluate)
        else:
            cmd.add_argument("-o", "--output", required=True, metavar="PREDS.npz")
            cmd.set_defaults(run=run_predict)


def _targets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--targets", action="append", default=[], metavar="OUT=COLUMN",
                        help="the CSV column holding an output's targets (repeatable)")


# ------------------------------------------------------------------ train


def run_train(args: argparse.Namespace) -> int:
    from .settings import DataRequest, TrainRequest, parse_split, resolve

    try:
        if (args.val or args.test) and not args.train:
            raise UsageError("--val and --test go with --train (with --data, --split cuts them)")
        if args.split and not args.data:
            raise UsageError("--split cuts --data; with --train give --val and --test")
        if not (args.data or args.train or args.resume):
            raise UsageError("no training data: give --data SRC, or --train SRC [--val SRC] [--test SRC]")
        data = DataRequest(data=args.data, train=args.train, val=args.val, test=args.test,
                           split=parse_split(args.split) if args.split else None, targets=parse_targets(args.targets))
        request = TrainRequest(spec=args.spec, model=args.model, data=data, epochs=args.epochs,
                               batch_size=args.batch_size, seed=args.seed, out=args.output, resume=args.resume,
                               progress=args.progress, tensorboard=args.tensorboard, include=args.include)
        config = resolve(request)  # spec errors and bad flags, before TensorFlow loads
        _load_tensorflow(args.plugin, args.spec)
        from .engine import run_training

        config.on_start = _announce
        run = run_training(config)
    except TrainingError as exc:
        return report_error(exc)
    _print_summary(run, args.spec)
    return EXIT_STOPPED if run.status == "stopped" else 0


def _announce(folder: Path, first_epoch: int) -> None:
    resumed = f" (resuming after epoch {first_epoch})" if first_epoch else ""
    print(f"run folder: {folder}{resumed}", file=sys.stderr, flush=True)


def _print_summary(run: Any, spec: str) -> None:
    report = run.report
    seconds, speed = report.get("seconds") or 0.0, report.get("samples_per_second")
    rate = f", {speed:,.0f} samples/s" if speed else ""
    print(f"status: {report['status']} ({report['epochs_run']} of {report['epochs']} epochs, {seconds:.1f} s{rate})")
    for group, prefix in (("train", ""), ("val", "val_"), ("test", "test_")):
        values = report.get(group) or {}
        if values:
            print(f"{group + ':':<6} " + "  ".join(f"{prefix}{k} {v:.4f}" for k, v in values.items()))
    if report["status"] == "stopped":
        print(f"resume with: netdsl train {spec} --resume {run.dir}")
    print(f"run folder: {run.dir}")


def report_error(exc: TrainingError) -> int:
    print(f"netdsl: {exc}" if not exc.file else str(exc), file=sys.stderr)
    run_dir = getattr(exc, "run_dir", None)
    if run_dir is not None:
        print(f"run folder: {run_dir} (status: failed)", file=sys.stderr)
    return exc.exit_code


def parse_targets(items: list[str]) -> dict[str, str]:
    targets = {}
    for item in items:
        for pair in item.split(","):
            output, sep, column = pair.partition("=")
            if not sep or not output.strip() or not column.strip():
                raise UsageError(f"--targets takes OUTPUT=COLUMN pairs, like probs=label; received {pair!r}")
            targets[output.strip()] = column.strip()
    return targets


def _load_tensorflow(plugins: list[str], spec: str) -> None:
    from ..compile import quiet_tensorflow
    from ..errors import Diagnostic, SpecError
    from ..plugins import load_plugins

    quiet_tensorflow()
    for module in plugins:
        try:
            load_plugins([module])
        except Exception as exc:
            raise SpecError(Diagnostic.for_file(spec, f"cannot load plugin '{module}': "
                                                      f"{type(exc).__name__}: {exc}")) from None


# ------------------------------------------------------------------ evaluate, predict


def run_evaluate(args: argparse.Namespace) -> int:
    try:
        _load_tensorflow([], args.trained)
        from .inference import evaluate

        values = evaluate(args.trained, args.data, args.batch_size, parse_targets(args.targets))
    except TrainingError as exc:
        return report_error(exc)
    if args.json:
        print(json.dumps(values, indent=2))
    else:
        width = max(len(k) for k in values)
        for key, value in values.items():
            print(f"{key:<{width}}  {value:.6g}")
    return 0


def run_predict(args: argparse.Namespace) -> int:
    try:
        _load_tensorflow([], args.trained)
        from .inference import predict, write_predictions

        predictions = predict(args.trained, args.data, args.batch_size, parse_targets(args.targets))
        target = write_predictions(predictions, args.output)
    except TrainingError as exc:
        return report_error(exc)
    except OSError as exc:
        print(f"{args.output}: error: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 1
    shapes = ", ".join(f"{name} {tuple(array.shape)}" for name, array in predictions.items())
    print(f"wrote {target} ({shapes})")
    return 0
