# Every target sets itself up: a fresh clone needs only `make demo` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A path entry, not setuptools' import hook: mypy (and other static tools) find the package
# from a user's script anywhere only through a path (ADR 0116).
EDITABLE := --config-settings editable_mode=compat
# `make demo` needs the runtime only: its own stamp, so it never waits on the dev toolchain.
DEMO_STAMP := $(VENV)/.installed-runtime

.PHONY: test demo lint typecheck unit bench clean docs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(EDITABLE) -e '.[dev]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(EDITABLE) -e .
	touch $(DEMO_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy --strict on the library, the specs and the acceptance scenarios (ADR 0146); the same
# paths are [tool.mypy] files, so a bare `mypy` checks what CI checks.
typecheck: $(STAMP)
	$(BIN)/mypy recurgent specs acceptance

# Two pytest workers share the specs (ADR 0121). The Ray specs start a Ray cluster in the pytest
# process; later specs that fork would then deadlock, so they run in a pytest of their own,
# serially (ADR 0112).
unit: $(STAMP)
	$(BIN)/pytest -q -n 2 -m "not live and not ray"
	$(BIN)/pytest -q -m "ray and not live" -p no:cacheprovider

test: lint typecheck unit

demo: $(DEMO_STAMP)
	$(BIN)/python examples/calculator.py

# docs/api.md from the public docstrings; specs/test_apidoc.py fails when it is stale.
docs: $(STAMP)
	$(BIN)/python -m recurgent._apidoc

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) -e '.[dev,bench]'
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/call_overhead.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/reuse.py
	$(BIN)/python bench/map.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
