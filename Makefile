# Every target creates .venv and installs on first use, so a fresh clone needs nothing but Python.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo lint test serve bench clean scenarios node-clients

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

# Lint, strict typing and the layer contracts (pyproject.toml, docs/architecture.md) run first,
# so `make test` (and CI, which runs it) fails on them too.
lint: $(STAMP)
	$(BIN)/python -m ruff check picoflow tests demo bench
	$(BIN)/python -m mypy
	$(BIN)/lint-imports

# G3: the real front-end clients (@ag-ui/client, ai) the protocol tests drive, and Vite, React
# and @ai-sdk/react for their useChat page (tests/server/protocols/ui), pinned in
# tests/package.json and its lock; `npm ci` installs exactly the locked versions, once per lock.
NODE_CLIENTS := tests/node_modules/.package-lock.json
$(NODE_CLIENTS): tests/package.json tests/package-lock.json
	npm ci --prefix tests --no-audit --no-fund --loglevel=error
	touch $(NODE_CLIENTS)

node-clients: $(NODE_CLIENTS)

# The suite runs on two workers (pytest-xdist): these machines have two cores. PYTEST_ARGS="-n 0"
# runs it in one process, e.g. to debug a test.
PYTEST_ARGS ?= -n 2 --durations=15
test: lint $(NODE_CLIENTS)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/turn_overhead.py

clean:
	rm -rf $(VENV) .picoflow .pytest_cache .mypy_cache .ruff_cache tests/node_modules

# X2: every demo flow's scenarios through the runner, not only through pytest, on the offline
# models (no key). A demo whose scenarios/ folder holds no scenario yet is skipped.
# SCENARIO_ARGS goes to every run, e.g. make scenarios SCENARIO_ARGS="--repeat 3 --quiet".
PORTED_SCENARIOS := basic:BasicFlow travel:TravelFlow medical:MedicalFlow \
	decision_hotel:DecisionHotelFlow decision_support:DecisionSupportFlow benefits:EmployeeBenefitsFlow \
	insurance:HomeInsuranceQuoteFlow
scenarios: $(STAMP)
	OPENAI_API_KEY= $(BIN)/python -m picoflow.scenarios run demo/hotel/scenarios \
		--flows demo.hotel.flow:HotelFlow $(SCENARIO_ARGS)
	@for entry in $(PORTED_SCENARIOS); do \
		name=$${entry%%:*}; flow=$${entry#*:}; \
		ls demo/$$name/scenarios/*.scenario.* >/dev/null 2>&1 || continue; \
		echo "OPENAI_API_KEY= python -m picoflow.scenarios run demo/$$name/scenarios ..."; \
		OPENAI_API_KEY= $(BIN)/python -m picoflow.scenarios run demo/$$name/scenarios \
			--flows demo.$$name.flow:$$flow --provider offline=demo.ported:offline_provider \
			$(SCENARIO_ARGS) || exit 1; \
	done
