# One-command set-up on a fresh machine with python3 and pip:
#   make reproduce            # venv + deps + `paperzoo reproduce coordconv` (quick scale)
#   make test                 # venv + deps + lint + the test suite
# torch is installed first, pinned, so that no multi-GB CUDA build is pulled on CPU machines.
PY ?= python3
TORCH_VERSION ?= 2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
PAPER ?= coordconv
SCALE ?= quick
ARGS ?=

.PHONY: install reproduce test lint bench clean summary screenshot gpu-check

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==$(TORCH_VERSION)
	$(BIN)/python -m pip install -q -e '.[repro,test]'
	touch $@

install: $(BIN)/.installed

reproduce: install
	$(BIN)/paperzoo reproduce $(PAPER) --scale $(SCALE) $(ARGS)

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

test: lint
	$(BIN)/python -m pytest -q $(ARGS)

$(BIN)/.bench: $(BIN)/.installed
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python -m pip install -q --no-deps torchattacks
	touch $@

bench: $(BIN)/.bench
	$(BIN)/paperzoo bench $(PAPER_BENCH)

# README's results and performance tables, docs/results.md, docs/benchmarks.md's tables and the
# front page results/index.html, from the runs and bench reports committed under results/
summary: install
	$(BIN)/python tools/update_summary.py --readme
	$(BIN)/python tools/bench_overview.py --write

# a PNG of the front page (headless Chromium: apt-get install -y chromium)
screenshot: summary
	tools/screenshot_summary.sh results/index.html $(or $(PNG),/tmp/paperzoo-summary.png)

# every paper's full config for a few steps on CUDA and each one's estimate (tools/gpu_check.sh;
# DATA_ROOT=DIR, SYNTH=1, PAPERS="...", DEVICE=cpu SCALE=smoke for the plumbing)
gpu-check: install
	SCALE=$(if $(filter command line environment,$(origin SCALE)),$(SCALE),full) tools/gpu_check.sh

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
