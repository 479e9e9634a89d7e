# sitekeep — set-up and everyday commands. `make run` and `make test` install what is missing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
GRID_STAMP := .grid/.installed
MAPPER_DIR := src/sitekeep/browser/mapper_node
MAPPER_STAMP := $(MAPPER_DIR)/node_modules/.installed
HOST ?= 127.0.0.1
PORT ?= 8700

.PHONY: setup services run test check bench token clean

# `setup` is the developer's set-up (runtime and test sets); `make run` needs only the runtime.
setup: $(TEST_STAMP)

# The runtime set: what `pip install sitekeep` brings (both browsers' drivers included).
$(STAMP): pyproject.toml scripts/setup-system.sh scripts/setup-mapper.sh src/sitekeep/browser/mapper_node/package-lock.json
	PYTHON=$(PYTHON) scripts/setup-system.sh
	scripts/setup-mapper.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

# The test set on top: pytest, Playwright, Django, ruff, mypy … (the `test` extra).
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(TEST_STAMP)

# Only the tests need it: the Selenium Grid (Java, npm's selenium-server jar in .grid/).
$(GRID_STAMP): scripts/setup-grid.sh
	@scripts/setup-grid.sh

# The opt-in mapper engine's npm packages, for its tests: after the Grid's set-up, which
# installs Node/npm on a machine that had none (the runtime set-up skips it without them).
$(MAPPER_STAMP): $(MAPPER_DIR)/package-lock.json scripts/setup-mapper.sh $(GRID_STAMP)
	scripts/setup-mapper.sh
	test -d $(MAPPER_DIR)/node_modules/chromium-bidi
	touch $(MAPPER_STAMP)

# Only the tests need them, every time (a new machine has them stopped): Redis, PostgreSQL.
services:
	@scripts/setup-services.sh

run: $(STAMP)
	@echo "admin token (tenant default): $$($(BIN)/sitekeep token create --tenant default --subject admin --admin)"
	$(BIN)/sitekeep serve --host $(HOST) --port $(PORT)

test: $(TEST_STAMP) $(GRID_STAMP) $(MAPPER_STAMP) services
	$(BIN)/pytest

check: $(TEST_STAMP)
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: $(TEST_STAMP)
	$(BIN)/python bench/save_restore.py

clean:
	rm -rf $(VENV) .grid .pytest_cache .mypy_cache .ruff_cache
