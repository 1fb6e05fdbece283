# The two set-up commands of the README: `make demo` and `make test`.
# Both create the virtual environment, install robench at the versions pinned in
# constraints.txt (the lock file) and the built-in data when missing.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.robench-installed
FMNIST := /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
# The built-in text corpus: the reStructuredText sources of the Python docs (docs/text-data.md).
PYDOCS := /usr/share/doc/python3.11/html/_sources/glossary.rst.txt
# WordNet 3.0 dict files: PWWS's synonyms (robench/perturbations/text/wordnet.py).
WORDNET := /usr/share/wordnet/data.noun
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

PIP_INSTALL := $(BIN)/python -m pip install --quiet --constraint constraints.txt

.PHONY: demo demo-reports test test-gpu lint gate baseline install lock data slurm-test-deps clean

# The tour (attacks and corruptions on the nano ViT pair, the page) into runs/demo/ (ignored by
# git); `robench demo --full` runs every section, `make demo-reports` refreshes the committed copy.
demo: install data
	$(BIN)/robench demo

demo-reports: install data
	$(BIN)/robench demo --full --out-dir reports/demo

test: install data lint
	$(BIN)/python -m pytest

# The tests that need a CUDA GPU (tests/test_gpu.py; skipped by `make test` without one).
test-gpu: install data
	$(BIN)/python -m pytest -m gpu -rs

lint: install
	$(BIN)/ruff check robench tests benchmarks
	$(BIN)/ruff format --check robench tests benchmarks
	$(BIN)/mypy robench

# robench gates its own CI: the shipped elliptical checkpoint under the smoke suite must not
# regress against the committed baseline report (paired McNemar test, default policy).
GATE_MODEL := vit_nano_elliptical_fmnist
GATE_BASELINE := reports/baselines/$(GATE_MODEL)-smoke.json
GATE_EVAL = $(BIN)/robench eval $(GATE_MODEL) --suite smoke --limit 1000 --seed 0 --overwrite --format markdown

gate: install data
	$(GATE_EVAL) -o runs/ci/candidate.json
	$(BIN)/robench gate --baseline $(GATE_BASELINE) --candidate runs/ci/candidate.json \
		--summary runs/ci/gate.md --junit runs/ci/gate.xml

baseline: install data
	$(GATE_EVAL) -o $(GATE_BASELINE)
	rm -f $(GATE_BASELINE:.json=.samples.jsonl)

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e '.[test,hf,lmeval,smp,text,slurm]'
	# OpenCV (behind imagecorruptions) needs libGL and GLib, absent from minimal Debian images.
	$(BIN)/python -c "import cv2" 2>/dev/null || { $(SUDO) apt-get update -q && \
		$(SUDO) apt-get install -y -q libgl1 libglib2.0-0; }
	touch $(STAMP)

# Re-resolve the dependencies of pyproject.toml in a scratch environment and pin the result.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e '.[test,hf,lmeval,smp,text,slurm]'
	{ echo "# Pinned versions for a reproducible install: make installs robench with pip install -c constraints.txt."; \
	  echo "# Regenerate with make lock after changing the dependencies in pyproject.toml."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable; } > constraints.txt
	rm -rf .lock-venv

data: $(FMNIST) $(PYDOCS) $(WORDNET)
	command -v chromium >/dev/null || { $(SUDO) apt-get update -q && \
		$(SUDO) apt-get install -y -q chromium; }

$(FMNIST):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q dataset-fashion-mnist

$(PYDOCS):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q python3.11-doc

$(WORDNET):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q wordnet-base

# The sweep's SLURM integration test (tests/test_sweep_slurm.py) starts a one-node cluster on
# localhost from Debian's packages; without them (or without root) that test is skipped.
slurm-test-deps:
	command -v slurmd >/dev/null && command -v munged >/dev/null || { $(SUDO) apt-get update -q && \
		$(SUDO) apt-get install -y -q slurm-wlm munge; }

clean:
	rm -rf $(VENV) .lock-venv .pytest_cache .mypy_cache .ruff_cache
