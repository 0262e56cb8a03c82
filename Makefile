# The README's two set-up commands: `make demo` and `make test`.
# CI (.ci/run) runs `make test VENV=<fresh venv>`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

.PHONY: demo install install-sdk lint test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

install-sdk: $(BIN)/python
	$(PIP) install --quiet -c constraints.txt -e .

install: $(BIN)/python
	$(PIP) install --quiet -c constraints.txt -e '.[dev]'

demo: install-sdk
	$(BIN)/ctxledger demo

lint: install
	$(BIN)/ruff check sdk tests bench
	$(BIN)/ruff format --check sdk
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/sdk_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
