# spotbatch: every target echoes what it runs; the logic lives in the Python packages.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SPOTBATCH := $(BIN)/spotbatch
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_NO_ADVISORY_WARNINGS := 1

.PHONY: setup data model test check lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## create the venv under the repo and install the project with its dev tools

data: setup  ## the default 10,000-sentence dataset (downloads the vaderSentiment sdist once)
	$(SPOTBATCH) data prepare

model: data  ## fine-tune the offline MiniLM sentiment classifier (about 3-7 minutes on 2 cores, once)
	$(SPOTBATCH) model build

test: setup  ## every test, slow end-to-end ones included
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

check: lint typecheck  ## ruff + mypy

bench: model  ## benchmarks: each prints a ratio against a baseline measured in the same run
	$(BIN)/python -m bench.worker_throughput

clean:
	rm -rf build runs reports/out .mypy_cache .ruff_cache .pytest_cache
