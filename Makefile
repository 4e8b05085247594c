# netdsl — the two commands of the README:
#   make demo   set up .venv (if missing), then check, build and draw the example specs, and train
#               the Lightning tutorial's model (specs/lightning_mlp.net) on generated digits
#   make test   set up .venv (if missing), then run the whole test suite (it includes `make lint`'s checks)
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint regen regen-check bench graphviz editors chromium postgresql clean

# torch, pinned, before the extras: this build is the CPU one (on this project's machines, from local disk);
# left to `.[dev]` alone, pip would take the package index's torch and gigabytes of CUDA libraries with it.
TORCH := torch==2.13.0

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet "$(TORCH)"
	$(VENV)/bin/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

# The system Graphviz (`dot`) draws the diagrams; install it where we can.
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) \
	      || echo "netdsl: could not install Graphviz; diagrams fall back to .dot files"; \
	  elif command -v brew >/dev/null 2>&1; then brew install graphviz; \
	  else echo "netdsl: Graphviz 'dot' not found; install it (apt-get install graphviz / brew install graphviz)"; fi; }

# Node.js runs the editor tests: the TextMate grammar through the engine VS Code
# uses (vscode-textmate + vscode-oniguruma) and the VS Code client. npm installs
# them into editors/vscode/node_modules (git-ignored) from its lock file.
EDITOR_MODULES := editors/vscode/node_modules/.installed

$(EDITOR_MODULES): editors/vscode/package.json editors/vscode/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
	      || echo "netdsl: could not install Node.js; the editor tests will be skipped"; \
	  elif command -v brew >/dev/null 2>&1; then brew install node; \
	  else echo "netdsl: Node.js not found; install it to run the editor tests"; fi; }
	@if command -v npm >/dev/null 2>&1; then \
	  cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; fi

editors: $(EDITOR_MODULES)

# Debian's Chromium and ChromeDriver: the browser tests of `netdsl preview` drive them
# (tests/preview/test_browser.py; skipped, with the reason, where they are missing).
chromium:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "netdsl: could not install Chromium; the preview's browser tests will be skipped"; \
	  else echo "netdsl: chromium/chromedriver not found; the preview's browser tests will be skipped" \
	    "(apt-get install chromium chromium-driver)"; fi; }

# Debian's PostgreSQL server: the multi-worker sweep test (tests/tuning/test_sweep_processes.py) starts
# a throw-away cluster with its initdb and pg_ctl (skipped, with the reason, where they are missing).
postgresql:
	@{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
	      || echo "netdsl: could not install PostgreSQL; the multi-worker sweep test will be skipped"; \
	  else echo "netdsl: PostgreSQL's initdb not found; the multi-worker sweep test will be skipped" \
	    "(apt-get install postgresql)"; fi; }

demo: $(STAMP) graphviz
	$(VENV)/bin/netdsl check specs/*.net
	$(VENV)/bin/netdsl build specs/lightning_mlp.net -o build
	$(VENV)/bin/netdsl build specs/resnet50.net -o build
	$(VENV)/bin/netdsl render specs/resnet50.net --depth 1 -o build/resnet50_depth1.png
	@echo; echo "Built models and diagrams:"; ls -l build
	@echo; echo "Training specs/lightning_mlp.net (the Lightning tutorial's model) on generated 28x28 digits:"
	$(VENV)/bin/python scripts/demo_data.py build/demo/digits.npz
	$(VENV)/bin/netdsl train specs/lightning_mlp.net --data build/demo/digits.npz --epochs 3 --seed 0 -o build/runs

# The tests that stop a process with Ctrl-C run again as a script's background job runs them
# (SIGINT ignored, no terminal, from another folder): the suite must pass however it is started.
SIGNAL_TESTS = tests/preview/test_server.py::test_cli_prints_the_url_and_serves_until_stopped \
               tests/training/test_engine.py::test_ctrl_c_stops_cleanly_and_the_run_resumes

# Test files are spread over TEST_WORKERS processes (pytest-xdist), each file whole in one of
# them (module fixtures are built once), the longest files first (tests/support/schedule.py);
# `make test TEST_WORKERS=0` runs them in this process.
# Tests marked `processes` start jobs of several training processes and interrupt runs, each at a moment
# the run reached and stopped at by itself (tests/support/paused_cli.py). They run afterwards, two at a time
# and test by test: with the other tests beside them every test's CPU time rose 10-15% (each job's thread
# pools against the other worker), the whole suite 1.5 minutes; alone, one at a time, they left a core idle.
# Each stage adds its seconds per room of tests/ to ROOM_TIMES; the last prints the whole suite's.
# `--room-times=FILE`, one word: as two, pytest takes FILE for a path to test before it knows the flag, and
# once the first stage has written FILE it looks for conftest.py beside it, not in tests/ (the flag is then unknown).
TEST_WORKERS ?= 2
ROOM_TIMES := $(CURDIR)/build/test-room-times.json
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The suite's Python processes keep their bytecode (in the git-ignored __pycache__ folders) even where the
# environment says PYTHONDONTWRITEBYTECODE, as this project's machines do: otherwise each of its hundreds of
# processes compiled netdsl anew (0.15 CPU s a `check`) and each test worker rewrote every test's asserts (7.5 s).
test test-fast: export PYTHONDONTWRITEBYTECODE :=

test: $(STAMP) graphviz editors chromium postgresql
	@mkdir -p build && rm -f $(ROOM_TIMES)
	$(VENV)/bin/python -m pytest $(PARALLEL) -m "not processes" --room-times=$(ROOM_TIMES)
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist load -m processes --room-times=$(ROOM_TIMES)
	cd /tmp && trap '' INT && $(abspath $(VENV))/bin/python -m pytest -q -p no:cacheprovider \
	    --room-times=$(ROOM_TIMES) $(addprefix $(CURDIR)/,$(SIGNAL_TESTS)) </dev/null

# The quality gate (also run by tests/test_quality_gate.py in `make test`, and by pre-commit):
# ruff for lint, import order and format, mypy with the settings of pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/python -m ruff check dsl tests bench scripts
	$(VENV)/bin/python -m ruff format --check dsl tests bench scripts
	$(VENV)/bin/python -m mypy

# Every generated file, regenerated in dependency order (scripts/regen.py lists them; review the diff),
# or only checked: exit 1 naming every stale output, writing nothing.
regen: $(STAMP) graphviz
	$(VENV)/bin/python scripts/regen.py

regen-check: $(STAMP)
	$(VENV)/bin/python scripts/regen.py --check

# The edit loop: every test not marked `slow` (nor `processes`), in parallel; `make test` runs them all.
test-fast: $(STAMP) editors
	$(VENV)/bin/python -m pytest $(PARALLEL) -m "not slow and not processes"

bench: $(STAMP) graphviz chromium
	$(VENV)/bin/python bench/bench_check.py
	$(VENV)/bin/python bench/bench_build.py
	$(VENV)/bin/python bench/bench_render.py
	$(VENV)/bin/python bench/bench_preview.py
	$(VENV)/bin/python bench/bench_decompile.py
	$(VENV)/bin/python bench/bench_export.py
	$(VENV)/bin/python bench/bench_evaluate_exported.py
	$(VENV)/bin/python bench/bench_lsp.py
	$(VENV)/bin/python bench/bench_train.py
	$(VENV)/bin/python bench/bench_backends.py
	$(VENV)/bin/python bench/bench_distribute.py
	$(VENV)/bin/python bench/bench_sweep.py

clean:
	rm -rf build .pytest_cache
