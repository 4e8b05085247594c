# netdsl — the two commands of the README:
#   make demo   set up .venv (if missing), then check, build and draw the example specs
#   make test   set up .venv (if missing), then run the whole test suite
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast bench graphviz clean

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
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

demo: $(STAMP) graphviz
	$(VENV)/bin/netdsl check specs/*.net
	$(VENV)/bin/netdsl build specs/lightning_mlp.net -o build
	$(VENV)/bin/netdsl build specs/resnet50.net -o build
	$(VENV)/bin/netdsl render specs/resnet50.net --depth 1 -o build/resnet50_depth1.png
	@echo; echo "Built models and diagrams:"; ls -l build

test: $(STAMP) graphviz
	$(VENV)/bin/python -m pytest

test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow"

bench: $(STAMP) graphviz
	$(VENV)/bin/python bench/bench_check.py
	$(VENV)/bin/python bench/bench_build.py
	$(VENV)/bin/python bench/bench_render.py

clean:
	rm -rf build .pytest_cache
