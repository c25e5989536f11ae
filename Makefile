# Every target creates .venv and installs on first use, so a fresh clone needs nothing but Python.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo lint test serve bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Options go in ARGS: make demo ARGS="--session=ID", make serve ARGS="--cors-origin http://localhost:5173".
# DEMO_VIA_MAKE makes the CLI's resume hint a `make demo` command (a bare `python` is not the venv's).
demo: $(STAMP)
	DEMO_VIA_MAKE=1 $(BIN)/python -m demo $(ARGS)

serve: $(STAMP)
	$(BIN)/python -m demo --serve $(ARGS)

# Lint and strict typing run first, so `make test` (and CI, which runs it) fails on them too.
lint: $(STAMP)
	$(BIN)/python -m ruff check picoflow tests demo bench
	$(BIN)/python -m mypy

test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/turn_overhead.py

clean:
	rm -rf $(VENV) .picoflow .pytest_cache .mypy_cache .ruff_cache
