# The Mathematics of Attention. Every target creates the virtual environment if it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)

.PHONY: help book test test-fast exercises lab bench grade clean

help:
	@echo "make book       build the HTML book, every chapter executed (_build/html/index.html)"
	@echo "make test       run the whole test suite (library, book build, exercises)"
	@echo "make test-fast  the test suite without the slow book and nbgrader tests"
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

book: $(STAMP)
	$(BIN)/jupyter-book build . -n -W --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

exercises: $(STAMP)
	@for a in solutions/*/; do a=$$(basename $$a); \
	  $(BIN)/nbgrader generate_assignment $$a --force --log-level=WARN || exit 1; done
	@echo "exercises/ regenerated from solutions/"

lab: $(STAMP)
	$(BIN)/jupyter lab exercises

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

OUT ?= grading-output
grade: $(STAMP)
	@test -n "$(ASSIGNMENT)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=01_softmax SUBMISSIONS=path [OUT=grading-output] [JOBS=n] [DB=url]"; exit 2; }
	$(BIN)/attngrade "$(ASSIGNMENT)" "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(DB),--db "$(DB)")

clean:
	rm -rf _build .pytest_cache .hypothesis
