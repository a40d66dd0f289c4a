# The Mathematics of Attention. Every target creates the virtual environment if it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

.PHONY: help book pdf test test-fast exercises lab lab-work bench grade clean

help:
	@echo "make book       build the HTML book, every chapter executed (_build/html/index.html)"
	@echo "make pdf        the whole book as one PDF, laid out by paged.js (_build/pdf/book.pdf)"
	@echo "make test       run the whole test suite (library, book build, exercises)"
	@echo "make test-fast  the test suite without the slow book, browser and nbgrader tests"
	@echo "make exercises  regenerate exercises/ from solutions/ with nbgrader"
	@echo "make lab        open JupyterLab on your own copy of the exercises (work/)"
	@echo "make bench      run the benchmarks and print their figures"
	@echo "make grade ASSIGNMENT=01_softmax SUBMISSIONS=path [OUT=grading-output] [JOBS=n] [DB=url] [ARGS=\"...\"]"
	@echo "                grade submissions: gradebook, grades.csv, feedback, summary (attngrade);"
	@echo "                ARGS: any other attngrade options, e.g. ARGS=\"--export canvas --roster r.csv\""

$(STAMP): requirements.txt pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

# What the book is built from: a build is skipped when none of these changed since the last
# successful one (jupyter-book's own cache then re-executes only the chapters that changed).
BOOK_OK := _build/.book-ok
BOOK_SOURCES := _config.yml _toc.yml requirements.txt $(shell find book lib tests exercises solutions \
	-type f -not -path '*/__pycache__/*' -not -path '*/.ipynb_checkpoints/*' \
	-not -path 'tests/browser/artifacts/*' -not -name '*.pyc' 2>/dev/null)

book: $(BOOK_OK)
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# MathJax's server-side package (npm, package-lock.json) typesets the book's formulas when it is
# built (book/_ext/attnmath_mathjax.py); without Node.js, MathJax typesets them in the browser.
NODE_OK := node_modules/.installed
$(NODE_OK): package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --no-audit --no-fund --loglevel=error && touch $@ || \
	  echo "npm ci failed: the book's formulas will be typeset in the browser"; \
	else echo "Node.js not found: the book's formulas will be typeset in the browser"; fi

# book/_ext/build_book.py runs `jupyter-book build . -n -W --keep-going`, 2 s sooner. BOOK_OK
# keeps a digest of the sources it was built from: a file saved again unchanged builds nothing.
BOOK_DIGEST = $$(printf '%s\n' $(sort $(BOOK_SOURCES) package-lock.json $(wildcard $(NODE_OK))) \
	| xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1)
$(BOOK_OK): $(STAMP) $(BOOK_SOURCES) | $(NODE_OK)
	@digest=$(BOOK_DIGEST); \
	if [ "$$(cat $(BOOK_OK) 2>/dev/null)" = "$$digest" ]; then \
	  echo "The book's sources read as they did at its last build: nothing to build."; touch $(BOOK_OK); \
	else $(BIN)/python book/_ext/build_book.py && echo "$$digest" > $(BOOK_OK); fi

# Not part of `make book`: the HTML book (built by `make book` if out of date) laid out as a
# printed book by paged.js (npm, package-lock.json) and printed to one PDF by headless Chromium
# (no LaTeX, no second build).
pdf: $(BOOK_OK) | $(NODE_OK)
	$(BIN)/python book/_ext/make_pdf.py --html _build/html --out _build/pdf/book.pdf

# Tests run in parallel (pytest-xdist, one worker per CPU); tests that share one throw-away build
# are kept on one worker (tests/conftest.py schedules them). The slowest tests are listed last.
PYTEST := $(BIN)/python -m pytest -n auto --durations=30

test: $(STAMP) | $(NODE_OK)
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

exercises: $(STAMP)
	@for a in solutions/*/; do a=$$(basename $$a); \
	  $(BIN)/nbgrader generate_assignment $$a --force --log-level=WARN || exit 1; done
	@echo "exercises/ regenerated from solutions/ (students work in their own copy, work/, which this never touches)"

# The student's JupyterLab works in work/ (ignored by git). `lab-work` copies the release there
# file by file and never replaces a file that exists: new assignments arrive, a student's
# notebooks stay as they are. It also writes the start page, work/README.md, which links each
# exercise to its chapter of the built book (served by the lab at /static/, after `make book`).
# The lab's own Jupyter config folder turns nbgrader's instructor tools off: their lab plugins
# (page_config.json) and the formgrader, course-list and assignment-list server extensions. It
# also turns off JupyterLab's announcements plugin, whose first-start pop-up asking to fetch
# Jupyter news covers the notebook (and whose update check goes online).
# Copies still as released get this Python's kernelspec and language_info (attngrade.lab),
# so JupyterLab finds nothing to change when it opens them.
WORK ?= work
LAB_CONFIG := $(VENV)/student-lab-config
STUDENT_LAB_HIDES := $(addprefix @jupyter/nbgrader:,formgrader create-assignment course-list assignment-list menu) \
  @jupyterlab/apputils-extension:announcements
STUDENT_LAB_SERVER_OFF := formgrader course_list assignment_list
$(LAB_CONFIG)/labconfig/page_config.json: $(STAMP) Makefile
	@mkdir -p $(dir $@) $(LAB_CONFIG)/lab/user-settings/@jupyterlab/docmanager-extension
	@printf '{"disabledExtensions": {%s}}\n' \
	  "$$(for x in $(STUDENT_LAB_HIDES); do printf '"%s": true, ' $$x; done | sed 's/, $$//')" > $@
	@printf '{"ServerApp": {"jpserver_extensions": {%s}, "extra_static_paths": ["%s"]}}\n' \
	  "$$(for x in $(STUDENT_LAB_SERVER_OFF); do printf '"nbgrader.server_extensions.%s": false, ' $$x; done | sed 's/, $$//')" \
	  "$(CURDIR)/_build/html" > $(LAB_CONFIG)/jupyter_server_config.json
	@printf '{"defaultViewers": {"markdown": "Markdown Preview"}}\n' \
	  > $(LAB_CONFIG)/lab/user-settings/@jupyterlab/docmanager-extension/plugin.jupyterlab-settings

lab-work:
	@mkdir -p "$(WORK)"
	@cd exercises && find . -type f -not -path '*/.ipynb_checkpoints/*' | sort | while IFS= read -r f; do \
	  to="$(abspath $(WORK))/$${f#./}"; \
	  if [ ! -e "$$to" ]; then mkdir -p "$$(dirname "$$to")" && cp "$$f" "$$to" && echo "new: $(WORK)/$${f#./}"; fi; \
	done
	@$(BIN)/python -m attngrade.lab exercises "$(WORK)"
	@{ echo "# Your exercises"; echo; \
	  echo "Your notebooks live in this folder: nothing replaces them. Open one, replace each"; \
	  echo "\`raise NotImplementedError()\`, then *Run All*: the last cell lists every part as passed,"; \
	  echo "failed (with what is wrong) or not attempted. The chapter links need the built book"; \
	  echo "(\`make book\`). This page is rewritten by \`make lab\`: keep your notes elsewhere."; echo; \
	  echo "| exercise | chapter |"; echo "| --- | --- |"; \
	  for d in exercises/*/; do a=$$(basename "$$d"); nb=$$(cd "$$d" && ls *.ipynb | head -n 1); \
	    title=$$(sed -n 's/^# //p' "book/$$a.md" | head -n 1); \
	    echo "| [$$a/$$nb]($$a/$$nb) | [$${title:-$$a}](/static/book/$$a.html) |"; done; } > "$(WORK)/README.md"

lab: $(LAB_CONFIG)/labconfig/page_config.json lab-work
	JUPYTER_CONFIG_DIR=$(abspath $(LAB_CONFIG)) $(BIN)/jupyter lab $(WORK) \
	  --LabApp.default_url=/lab/tree/README.md $(LAB_ARGS) \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# ARGS goes to attngrade as the shell reads it (quote a path with spaces inside it): every option
# of `attngrade --help` (--export, --roster, --column, --points, --return, --force, ...).
OUT ?= grading-output
grade: $(STAMP)
	@test -n "$(ASSIGNMENT)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=01_softmax SUBMISSIONS=path [OUT=grading-output] [JOBS=n] [DB=url] [ARGS=\"--export canvas --roster r.csv\"]"; exit 2; }
	$(BIN)/attngrade "$(ASSIGNMENT)" "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(DB),--db "$(DB)") $(ARGS)

clean:
	rm -rf _build .pytest_cache .hypothesis
