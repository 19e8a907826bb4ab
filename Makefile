# One-command set-up on a fresh machine with python3 and pip:
#   make reproduce            # venv + deps + `paperzoo reproduce coordconv` (quick scale)
#   make test                 # venv + deps + lint + the test suite
#   make docs                 # the API reference from the docstrings, into build/api/
# torch is installed first, pinned, so that no multi-GB CUDA build is pulled on CPU machines.
#
# A machine with no package index (a GPU box with no internet): on a machine that has one,
#   make wheelhouse TORCH_VERSION=2.13.0+cu126 TORCH_INDEX=https://download.pytorch.org/whl/cu126
# writes every wheel the box needs into WHEELS (torch of that CUDA build and its own
# dependencies, paperzoo's wheel and its dependencies with the repro and test extras, pip,
# setuptools and wheel for the editable install; WHEEL_PYTHON=3.11 WHEEL_PLATFORM=
# manylinux_2_28_x86_64 when the box's Python or platform differ from this one's). Copy the
# folder with the tree: `make install` (and `make gpu-check`) then install from it alone, with
# pip --no-index --find-links, whenever it holds wheels (OFFLINE=1 insists on it, OFFLINE=0 uses
# the index).
PY ?= python3
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=
PYPI ?= https://pypi.org/simple
WHEELS ?= wheelhouse
WHEEL_PYTHON ?=
WHEEL_PLATFORM ?=
OFFLINE ?= $(if $(wildcard $(WHEELS)/*.whl),1,0)
PIP_SOURCE := $(if $(filter 1,$(OFFLINE)),--no-index --find-links $(abspath $(WHEELS)))
VENV ?= .venv
BIN := $(VENV)/bin
PAPER ?= coordconv
SCALE ?= quick
ARGS ?=

.PHONY: install wheelhouse reproduce test lint docs bench clean summary screenshot gpu-check

$(BIN)/.installed: pyproject.toml
	@[ "$(OFFLINE)" != 1 ] || ls $(WHEELS)/*.whl >/dev/null 2>&1 || { \
		echo "make: OFFLINE=1 but $(WHEELS) holds no wheels (make wheelhouse on a machine with an index)" >&2; exit 2; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(PIP_SOURCE) --upgrade pip
	$(BIN)/python -m pip install -q $(PIP_SOURCE) torch==$(TORCH_VERSION)
	$(BIN)/python -m pip install -q $(PIP_SOURCE) -e '.[repro,test]'
	touch $@

install: $(BIN)/.installed

# every wheel `make install` needs, into WHEELS (see the top of this file); one resolution, so
# that paperzoo's `torch>=...` is met by the pinned build and no second torch is fetched
WHEEL_TARGET := $(if $(WHEEL_PYTHON)$(WHEEL_PLATFORM),--only-binary=:all:) \
	$(if $(WHEEL_PYTHON),--python-version $(WHEEL_PYTHON)) $(if $(WHEEL_PLATFORM),--platform $(WHEEL_PLATFORM))
wheelhouse:
	mkdir -p $(WHEELS)
	rm -f $(WHEELS)/paperzoo-*.whl
	$(PY) -m pip wheel -q --no-deps -w $(WHEELS) .
	$(PY) -m pip download -q -d $(WHEELS) $(WHEEL_TARGET) \
		$(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) --extra-index-url $(PYPI)) \
		torch==$(TORCH_VERSION) pip 'setuptools>=77' wheel \
		"paperzoo[repro,test] @ file://$$(ls $(abspath $(WHEELS))/paperzoo-*.whl)"
	@echo "wheelhouse: $$(ls $(WHEELS)/*.whl | wc -l) wheels in $(WHEELS) ($$(du -sh $(WHEELS) | cut -f1))"

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
# from the docstrings; the reproductions (paperzoo.papers, paperzoo.experiments, the CLI, reports)
# are left out.
API_MODULES := paperzoo paperzoo.nn paperzoo.models paperzoo.optim paperzoo.adversarial \
	paperzoo.adversarial.attacks paperzoo.adversarial.defenses paperzoo.metrics \
	paperzoo.metrics.disentanglement paperzoo.data paperzoo.data.ground_truth paperzoo.engine \
	paperzoo.registry paperzoo.utils paperzoo.paper
docs: $(BIN)/.docs
	rm -rf build/api
	$(BIN)/pdoc --docformat google --no-search -o build/api $(API_MODULES) \
		'!paperzoo.experiments' '!paperzoo.verdict' '!paperzoo.cli' '!paperzoo.bench' \
		'!paperzoo.catalogue' '!paperzoo.cost' '!paperzoo.provenance' '!paperzoo.report' \
		'!paperzoo.summary' '!paperzoo.scaffold' '!paperzoo.papers'

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
