# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet -c constraints.txt
# Extra packages the tests need beyond the [test] extra: the CPU build of PyTorch
# (pinned by constraints.txt) and the trainer frameworks the ledger callbacks plug into.
TEST_EXTRA := torch==2.13.0 "transformers>=4.40" "accelerate>=1.1" "lightning>=2.2"

.PHONY: demo test chromium clean readme docs fuzz

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e ".[all]"
	touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt Makefile | $(BIN)/python
	$(PIP) $(TEST_EXTRA) -e ".[test]"
	touch $@ $(VENV)/.demo-installed $(VENV)/.docs-installed

demo: $(VENV)/.demo-installed
	@$(BIN)/napkin demo

# The browser tests need the system Chromium; install it when missing (never a browser download).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { echo "chromium is required for the browser tests and could not be installed"; exit 1; }

test: $(VENV)/.test-installed chromium
	$(BIN)/python -m pytest -n 2 -q

# The fuzz suite at scale (issue 15; not in CI): 60,000 command lines and 40,000 web requests, in process,
# and 1,200 damaged logs. Every problem is counted (not stopped at), the counts printed by tests.fuzz.summary;
# everything it writes (the counts, pytest's temporary files) lies in a folder from mktemp, removed after.
FUZZ_CLI    ?= 60000
FUZZ_WEB    ?= 2000
FUZZ_LEDGER ?= 1200
fuzz: $(VENV)/.test-installed
	@dir=$$(mktemp -d -t napkin-fuzz.XXXXXX); \
	run() { NAPKIN_FUZZ_TALLY=1 NAPKIN_FUZZ_REPORT=$$dir NAPKIN_FUZZ_CASES=$$1 $(BIN)/python -m pytest -q -n 2 \
	  -p no:cacheprovider --basetemp=$$dir/tmp-$$2 tests/fuzz/$$2 >$$dir/$$2.log 2>&1 || tail -n 30 $$dir/$$2.log; }; \
	run $(FUZZ_CLI) test_cli_fuzz.py; run $(FUZZ_WEB) test_web_fuzz.py; run $(FUZZ_LEDGER) test_ledger_fuzz.py; \
	$(BIN)/python -m tests.fuzz.summary $$dir; rc=$$?; rm -rf $$dir; exit $$rc

clean:
	rm -rf $(VENV) build site .pytest_cache .hypothesis

$(VENV)/.docs-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e ".[docs]"
	touch $@

# The documentation site, built offline from docs/ into site/ (mkdocs.yml; the formula reference from
# the docstrings of napkin.formulas). Open site/index.html, or serve it for search: python -m http.server -d site
docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# README.md is generated from docs/index.md, the site's home page (each page holds real command output).
readme: | $(BIN)/python
	$(BIN)/python docs/readme.py
