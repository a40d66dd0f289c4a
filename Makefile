# The Mathematics of Attention. Every target creates the virtual environment if it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

.PHONY: help book pdf test test-fast exercises lab bench grade clean

help:
	@echo "make book       build the HTML book, every chapter executed (_build/html/index.html)"
	@echo "make pdf        the whole book as one PDF, printed by Chromium (_build/pdf/book.pdf)"
	@echo "make test       run the whole test suite (library, book build, exercises)"
	@echo "make test-fast  the test suite without the slow book, browser and nbgrader tests"
	@echo "make exercises  regenerate exercises/ from solutions/ with nbgrader"
	@echo "make lab        open JupyterLab on the exercises"
	@echo "make bench      run the benchmarks and print their figures"
	@echo "make grade ASSIGNMENT=01_softmax SUBMISSIONS=path [OUT=grading-output] [JOBS=n] [DB=url]"
	@echo "                grade submissions: gradebook, grades.csv, feedback, summary (attngrade)"

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

$(BOOK_OK): $(STAMP) $(BOOK_SOURCES)
	$(BIN)/jupyter-book build . -n -W --keep-going
	@touch $(BOOK_OK)

# Not part of `make book`: a single-page build printed to PDF by headless Chromium (no LaTeX).
pdf: $(STAMP)
	$(BIN)/python book/_ext/make_pdf.py --out _build/pdf/book.pdf

# Tests run in parallel (pytest-xdist, one worker per CPU); tests that share one throw-away build
# are kept on one worker (tests/conftest.py schedules them). The slowest tests are listed last.
PYTEST := $(BIN)/python -m pytest -n auto --durations=15

test: $(STAMP)
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

exercises: $(STAMP)
	@for a in solutions/*/; do a=$$(basename $$a); \
	  $(BIN)/nbgrader generate_assignment $$a --force --log-level=WARN || exit 1; done
	@echo "exercises/ regenerated from solutions/"

# The student's JupyterLab: its own Jupyter config folder hides nbgrader's instructor tools
# (formgrader, create assignment, course and assignment lists); `--allow-root` only as root.
LAB_CONFIG := $(VENV)/student-lab-config
STUDENT_LAB_HIDES := formgrader create-assignment course-list assignment-list menu
$(LAB_CONFIG)/labconfig/page_config.json: $(STAMP) Makefile
	@mkdir -p $(dir $@)
	@printf '{"disabledExtensions": {%s}}\n' \
	  "$$(for x in $(STUDENT_LAB_HIDES); do printf '"@jupyter/nbgrader:%s": true, ' $$x; done | sed 's/, $$//')" > $@

lab: $(LAB_CONFIG)/labconfig/page_config.json
	JUPYTER_CONFIG_DIR=$(CURDIR)/$(LAB_CONFIG) $(BIN)/jupyter lab exercises $(LAB_ARGS) \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

OUT ?= grading-output
grade: $(STAMP)
	@test -n "$(ASSIGNMENT)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=01_softmax SUBMISSIONS=path [OUT=grading-output] [JOBS=n] [DB=url]"; exit 2; }
	$(BIN)/attngrade "$(ASSIGNMENT)" "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(DB),--db "$(DB)")

clean:
	rm -rf _build .pytest_cache .hypothesis
