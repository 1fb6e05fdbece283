# The two set-up commands of the README: `make demo` and `make test`.
# Both create the virtual environment, install robench and the built-in data when missing.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.robench-installed
FMNIST := /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test lint install data clean

demo: install data
	$(BIN)/robench demo

test: install data lint
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check robench tests benchmarks
	$(BIN)/ruff format --check robench tests benchmarks
	$(BIN)/mypy robench

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

data: $(FMNIST)

$(FMNIST):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q dataset-fashion-mnist

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
