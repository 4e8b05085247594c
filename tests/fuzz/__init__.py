"""A fuzzing harness for netdsl's front end: `netdsl.check` must answer every input with
diagnostics or success — never another exception — within the bounds of netdsl.limits.

    python -m tests.fuzz --count 100000 --seed 1 --report /tmp/fuzz   # from the repo root

Inputs come from two sources, mixed: programs derived at random from the
grammar itself (`grammar_gen.py`, reading grammar/netdsl.lark), and
token-level mutations of every spec and fixture of the repository
(`mutate.py`). Each input is checked in a worker process (`worker.py`) that
runs under a memory limit; the runner (`runner.py`) kills and restarts it
when an input takes too long, and records every failure, the slowest inputs
and the peak memory. tests/test_fuzz.py runs a seeded few hundred in CI.
"""

from .runner import Bounds, Finding, Report, run  # noqa: F401
