# natsobj: two commands do all the setup on a fresh machine (Python 3.11 + Java 17).
#   make demo   run the example Spark pipeline against an embedded NATS server
#   make test   create .venv when missing and run the whole suite

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow bench lint format clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[all,dev]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m benchmarks.run

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check natsobj tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format natsobj tests benchmarks
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .natsobj .demo .pytest_cache .ruff_cache
