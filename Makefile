# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet -c constraints.txt
# Extra packages the tests need beyond the [test] extra: the CPU build of PyTorch
# (pinned by constraints.txt) and the trainer frameworks the ledger callbacks plug into.
TEST_EXTRA := torch==2.13.0 "transformers>=4.40" "accelerate>=1.1" "lightning>=2.2"

.PHONY: demo test chromium clean readme docs

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
