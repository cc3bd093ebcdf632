# Two commands on a fresh machine: `make serve` and `make test`. Each bootstraps .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 6379

.PHONY: serve test test-fakekey test-valkey lint bench venv clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $(STAMP)

venv: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/fakekey-server --bind $(HOST) --port $(PORT)

# Every test: unit tests, and the conformance suite against fakekey AND a real valkey-server.
test: $(STAMP)
	$(VENV)/bin/ruff check fakekey tests bench
	$(PY) -m pytest -q tests

test-fakekey: $(STAMP)
	FAKEKEY_TARGETS=fakekey $(PY) -m pytest -q tests

test-valkey: $(STAMP)
	FAKEKEY_TARGETS=valkey $(PY) -m pytest -q tests/conformance

lint: $(STAMP)
	$(VENV)/bin/ruff check fakekey tests bench

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
