"""A fuzzing harness for netdsl's front end: `netdsl.check` must answer every input with
diagnostics or success — never another exception — within the bounds of netdsl.limits.

    python -m tests.fuzz --count 100000 --seed 1 --report "$(mktemp -d)"   # from the repo root

Inputs come from two sources, mixed: programs derived at random from the
grammar itself (`grammar_gen.py`, reading grammar/netdsl.lark), and
token-level mutations of every spec and fixture of the repository
(`mutate.py`). Each input is checked in a worker process (`worker.py`) that
runs under a memory limit; the runner (`runner.py`) kills and restarts it
when an input takes too long, and records every failure, the slowest inputs
and the peak memory. tests/test_fuzz.py runs a seeded few hundred in CI.

`--target keras` and `--target data` (`targets.py`, issue 22) feed generated and mutated
`.keras` files to the Keras -> .net reader and npz, CSV, TFRecord and PNG files to the
training data readers, in the same kind of worker; tests/test_fuzz_targets.py runs a few.
Time bounds are compared with the worker's CPU time, and an input is stopped after 3x its
bound of CPU time (read by the runner from /proc: a niced worker on a loaded machine may wait
far longer than it runs), or 20x of wall time (a worker blocked without running). A worker
serves input after input (imports, TensorFlow included, paid once) and is started again after
a timeout or a death. `--max-seconds S` stops a campaign after S s; summary.json is written at
every progress line. A worker's CPU time grows under a loaded machine's hyperthreads: re-run
an over-bound input alone (`--only I`) before calling it a finding.
"""

from .runner import Bounds, Finding, Report, run  # noqa: F401
