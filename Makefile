# The two commands of the README. Both set up what they need on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO := build/demo

.PHONY: demo test test-fast lint setup docs docs-reference shipped-renders node-catalogue

$(BIN)/n8nlock: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/n8nlock

## demo: set up, then run the main job on the bundled example workspace (envs/)
demo: setup
	rm -rf $(DEMO) && mkdir -p $(DEMO) && cp -r envs $(DEMO)/envs
	$(BIN)/python -m testbed.demo $(DEMO)

## test: set up, then run lint, types and the whole test suite (installs Redis and n8n itself).
## The end-to-end tests run against n8n 2.41.1, then again against the last 1.x, then the lock
## suites once more against 2.41.1 in queue mode (main, 2 workers, PostgreSQL, Redis), and last
## the queue-mode tests that kill a worker, in a test bed of their own (marker worker_kill).
test: setup lint docs
	$(BIN)/pytest
	N8NLOCK_TEST_N8N_VERSIONS=1.123.81 $(BIN)/pytest tests/e2e
	N8NLOCK_TEST_TOPOLOGY=queue N8NLOCK_TEST_N8N_VERSIONS=2.41.1 $(BIN)/pytest tests/e2e -m "queue_suite and not worker_kill"
	N8NLOCK_TEST_TOPOLOGY=queue N8NLOCK_TEST_N8N_VERSIONS=2.41.1 $(BIN)/pytest tests/e2e -m worker_kill

## test-fast: set up, then run lint, types, the docs build and every test that needs no n8n
## (under a minute). It leaves out the tests marked e2e (n8n) and slow (packaging, pre-commit,
## the model check); `make test` runs those too.
test-fast: setup lint docs
	$(BIN)/pytest -m "not e2e and not slow"

lint: setup
	$(BIN)/ruff check n8n_lockkit tests testbed scripts bench
	$(BIN)/ruff format --check n8n_lockkit tests testbed scripts bench
	$(BIN)/mypy

## shipped-renders: regenerate n8n_lockkit/primitives/shipped_renders.json from git history
shipped-renders: setup
	$(BIN)/python -m scripts.gen_shipped_renders

## node-catalogue: regenerate n8n_lockkit/data/node_types.json (installs each supported n8n)
node-catalogue: setup
	$(BIN)/python -m scripts.gen_node_catalogue --write

## docs: build the docs site (docs/, mkdocs.yml) with --strict: a broken link, a missing anchor or
## a page left out of the nav fails it.
docs: setup
	$(BIN)/mkdocs build --strict --site-dir build/site

## docs-reference: write the generated reference pages again: docs/reference/cli.md from every
## command's --help, docs/reference/keys.md from primitives/keys.py (tests/cli/test_cli_reference.py
## and tests/cli/test_key_reference.py fail when they are stale).
docs-reference: setup
	$(BIN)/python -m scripts.gen_cli_reference
	$(BIN)/python -m scripts.gen_key_reference
