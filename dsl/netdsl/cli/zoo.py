"""`netdsl zoo list|show NAME|fetch NAME`: the keras.applications backbones netdsl knows, and their
published ImageNet weights, fetched once into Keras' cache and checked by the hash Keras pins."""

from __future__ import annotations

import argparse
import sys

from netdsl.cli.common import EXIT_OK, add_command, print_failure
from netdsl.errors import printable
from netdsl.zoo.catalog import FAMILIES
from netdsl.zoo.weights import ZooError, cache_folder, describe, family, fetch, zoo_specs


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = add_command(sub, "zoo", summary="list the pretrained backbones; fetch their ImageNet weights",
                      description="The keras.applications families netdsl knows. `show NAME` prints one's input "
                                  "size, preprocessing and weights files; `fetch NAME` downloads its weights once "
                                  "into Keras' cache ($KERAS_HOME/models, ~/.keras/models) and checks them "
                                  "against the hash keras.applications pins. Without a network, give the file "
                                  "with --from FILE, or set NETDSL_ZOO_MIRROR to a folder URL holding it.",
                      examples=["netdsl zoo list", "netdsl zoo show resnet50",
                                "netdsl zoo fetch resnet50", "netdsl zoo fetch resnet50 --from ~/Downloads/"
                                "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5"])
    cmd.add_argument("action", choices=("list", "show", "fetch"), metavar="ACTION",
                     help="list, show NAME or fetch NAME")
    cmd.add_argument("name", nargs="?", metavar="NAME", help="a family, as `netdsl zoo list` names it")
    cmd.add_argument("--top", action="store_true",
                     help="the weights with ImageNet's 1000-class classifier (default: without it, a backbone)")
    cmd.add_argument("--from", dest="source", metavar="FILE",
                     help="a local copy of the published file (checked by its hash, then kept in the cache)")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list()
    if args.name is None:
        return print_failure("zoo", f"`netdsl zoo {args.action}` needs a NAME; `netdsl zoo list` lists them")
    try:
        if args.action == "show":
            for line in describe(family(args.name)):
                print(line)
            return EXIT_OK
        weights = fetch(args.name, include_top=args.top, source=args.source, progress=sys.stderr)
    except ZooError as exc:
        return print_failure("zoo", str(exc))
    print(f"{weights.name}: {printable(weights.path)} (sha256 {weights.sha256})")
    return EXIT_OK


def _list() -> int:
    width = max(len(found.name) for found in FAMILIES)
    for found in FAMILIES:
        usable = "spec" if found.name in zoo_specs() else "weights only"
        print(f"{found.name:<{width}}  {usable:<12}  keras.applications.{found.constructor}, "
              f"{found.input_size}x{found.input_size}, preprocess {found.preprocess}")
    print(f"weights cache: {printable(cache_folder())}")
    return EXIT_OK
