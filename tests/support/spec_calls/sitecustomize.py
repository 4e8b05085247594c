"""Counts, in every Python process started with this folder on PYTHONPATH, each run of the spec checker
(`semantics.analysis._analyze`, under every `analyze`) and each model pick (`syntax.loader.pick_model`):
one line per call, "PID check|pick", appended to the file NETDSL_SPEC_CALLS names. The calls run as
they would; only the lines are added (tests/training/test_checked_once.py reads them)."""

import os


def _count() -> None:
    record = os.environ.get("NETDSL_SPEC_CALLS")
    if not record:
        return
    import functools

    from netdsl.syntax import loader

    def counted(kind, function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            with open(record, "a") as out:
                out.write(f"{os.getpid()} {kind}\n")
            return function(*args, **kwargs)

        return call

    # before any other module imports its name: every `from netdsl.syntax.loader import pick_model` gets this one
    loader.pick_model = counted("pick", loader.pick_model)
    from netdsl.semantics import analysis

    analysis._analyze = counted("check", analysis._analyze)


_count()
