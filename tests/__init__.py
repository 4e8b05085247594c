"""netdsl's tests, one folder per room of dsl/netdsl (tests/syntax/ for netdsl/syntax/, ...).

Beside them: tests/support/ (helpers the tests import as `tests.support.NAME`), tests/fixtures/ (data files),
tests/fuzz/ (the fuzzing harness, `python -m tests.fuzz`). Whole-project checks sit at this level.
"""
