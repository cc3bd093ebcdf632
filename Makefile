# Two commands on a fresh machine: `make serve` and `make test`. Each bootstraps .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 6379

.PHONY: serve build test test-fakekey test-valkey lint bench venv clean tools node

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $(STAMP)

venv: $(STAMP)

# The hot modules compiled with mypyc (fakekey/compiled.py, setup.py), again whenever their
# source changed since the last build; without a build fakekey runs as pure Python.
build: $(STAMP)
	@$(PY) -c 'import runpy, sys; sys.exit(runpy.run_path("fakekey/compiled.py")["build_due"]())' \
		|| FAKEKEY_BUILD_STRICT=1 $(PY) -m pip install -q --no-build-isolation --no-deps -e .

serve: build
	$(VENV)/bin/fakekey-server --bind $(HOST) --port $(PORT)

# Debian's redis-tools: redis-cli (the shell recipe's test) and redis-benchmark (make bench).
# Installed when missing on a Debian machine where we are root; said otherwise.
tools:
	@command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || \
		{ command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
		  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-tools; } \
		  || echo "redis-tools is not installed: apt-get install redis-tools (redis-cli, redis-benchmark)"; }

# The Node examples' packages (ioredis, node-redis) for the tests that run Node clients,
# when npm is here; without it those tests skip with a reason.
node:
	@command -v npm >/dev/null || { echo "npm is not installed: the Node client tests will skip"; exit 0; }; \
		[ -d examples/node/node_modules ] || npm ci --prefix examples/node --silent --no-audit --no-fund \
		|| echo "npm ci failed: the Node client tests will skip"

# Every test: unit tests, and the conformance suite against fakekey AND a real valkey-server.
test: lint build tools node
	$(PY) -m pytest -q -n 2 tests
	FAKEKEY_PURE=1 FAKEKEY_TARGETS=fakekey $(PY) -m pytest -q -n 2 -m 'not packaging' tests

test-fakekey: build
	FAKEKEY_TARGETS=fakekey $(PY) -m pytest -q tests

test-valkey: $(STAMP)
	FAKEKEY_TARGETS=valkey $(PY) -m pytest -q tests/conformance

# the whole package type-checks (mypyc trusts the compiled modules' annotations)
lint: $(STAMP)
	$(VENV)/bin/ruff check fakekey tests bench tools setup.py
	$(PY) -m mypy fakekey

bench: build tools
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
