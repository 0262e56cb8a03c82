# The README's two set-up commands: `make demo` and `make test`.
# CI (.ci/run) runs `make test VENV=<fresh venv>`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

.PHONY: demo install install-server install-demo lint test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

install-server: $(BIN)/python
	$(PIP) install --quiet -c constraints.txt -e '.[server]'

# The server plus the frameworks the demo's agents run on (LangGraph, OpenAI Agents, MCP).
install-demo: $(BIN)/python
	$(PIP) install --quiet -c constraints.txt -e '.[server,agents]'

install: $(BIN)/python
	$(PIP) install --quiet -c constraints.txt -e '.[dev,server]'

# The whole stack on embedded SQLite (./ctxledger.db): collector, dashboard, demo incidents
# (real agent loops on the clients and the frameworks against the provider stand-in).
demo: install-demo
	$(BIN)/ctxledger up

lint: install
	$(BIN)/ruff check sdk collector dashboard cli migrations tests bench
	$(BIN)/ruff format --check sdk collector dashboard cli
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q -n 4 --dist loadfile --durations=25

bench: install
	$(BIN)/python bench/sdk_overhead.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/admission.py
	$(BIN)/python bench/queries.py
	$(BIN)/python bench/truncation_strategies.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
