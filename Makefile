# One-command set-up on a fresh machine with python3 and pip:
#   make reproduce            # venv + deps + `paperzoo reproduce coordconv` (quick scale)
#   make test                 # venv + deps + lint + the test suite
#   make docs                 # the API reference from the docstrings, into build/api/
# torch is installed first, pinned, so that no multi-GB CUDA build is pulled on CPU machines.
PY ?= python3
TORCH_VERSION ?= 2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
PAPER ?= coordconv
SCALE ?= quick
ARGS ?=

.PHONY: install reproduce test lint docs bench clean summary screenshot gpu-check

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

$(BIN)/.docs: $(BIN)/.installed
	$(BIN)/python -m pip install -q -e '.[docs]'
	touch $@

# The API reference: one HTML page per module of the library (build/api/paperzoo/nn.html, ...),
# from the docstrings; the reproductions (paperzoo.experiments, the CLI, reports) are left out.
API_MODULES := paperzoo paperzoo.nn paperzoo.models paperzoo.optim paperzoo.adversarial \
	paperzoo.adversarial.attacks paperzoo.adversarial.defenses paperzoo.metrics \
	paperzoo.metrics.disentanglement paperzoo.data paperzoo.data.ground_truth paperzoo.engine \
	paperzoo.registry paperzoo.utils paperzoo.paper
docs: $(BIN)/.docs
	rm -rf build/api
	$(BIN)/pdoc --docformat google --no-search -o build/api $(API_MODULES) \
		'!paperzoo.experiments' '!paperzoo.verdict' '!paperzoo.cli' '!paperzoo.bench' \
		'!paperzoo.catalogue' '!paperzoo.cost' '!paperzoo.provenance' '!paperzoo.report' \
		'!paperzoo.summary' '!paperzoo.scaffold'

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
	rm -rf $(VENV) .venv-floor build dist src/*.egg-info .pytest_cache .ruff_cache
