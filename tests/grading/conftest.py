"""Fixtures of the grading tests: an empty gradebook to copy, the isolation level, the corpus run
(built once per run, in the background from the start: ``build_corpus``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gradingkit as gk  # noqa: E402


def _stamp_gradebook(folder: Path) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{folder / 'empty.db'}", course_id="attnmath"):
        pass


def _empty_gradebook(factory: pytest.TempPathFactory) -> Path:
    from support import shared_build  # tests/support.py

    bindir = os.path.dirname(sys.executable)  # alembic, which nbgrader runs, is there
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    return shared_build(factory, "empty-gradebook", _stamp_gradebook) / "empty.db"


@pytest.fixture(scope="session")
def empty_gradebook(tmp_path_factory) -> Path:
    """A new nbgrader gradebook, made once per run for every xdist worker (stamping one runs
    alembic, which is slow; ``support.shared_build``): copy it per test, never write to it."""
    return _empty_gradebook(tmp_path_factory)


@pytest.fixture(scope="session")
def isolation(tmp_path_factory):
    from attngrade.sandbox import Limits, detect_isolation

    return detect_isolation(
        "auto",
        jobs=2,
        limits=Limits(timeout=10),
        hidden=[str(gk.ROOT / "nbgrader_config.py"), str(gk.SOLUTIONS)],
        tmp_root=str(tmp_path_factory.mktemp("sandbox")),
    )


class CorpusRun:
    """One ``attngrade`` batch per assignment of the corpus.

    ``rows`` and ``all_cases`` cover every assignment; ``cases``, ``out``, ``proc``, ``summary``
    and ``db_url`` are 01_softmax's batch.
    """

    def __init__(self, runs: dict, cases, db_urls: dict):
        self.runs, self.all_cases = runs, cases
        self.cases = [c for c in cases if c.assignment == "01_softmax"]
        self.db_url = db_urls["01_softmax"]
        self.rows = {}
        self.summaries = {}
        for assignment, (out, proc) in runs.items():
            if (out / "grades.csv").is_file():
                self.rows.update(gk.read_grades(out))
            summary = out / "summary.json"
            self.summaries[assignment] = json.loads(summary.read_text()) if summary.is_file() else {}
        self.out, self.proc = runs["01_softmax"]
        self.summary = self.summaries["01_softmax"]


#: The corpus batch's time limit per phase (the grader's default is 30 s) and its jobs (the grader's
#: default is one per CPU). The runaways (01-03, 161) wait for the limit, 01 with a CPU busy all
#: the while, 02 three times over. Of the others, 47 (a returned array of 288 MB) takes the longest:
#: 1.5 s in all on a quiet machine, 3.1 s with three busy processes beside the batch; 167's memory
#: case waits 3 s for an answer that never comes. Four jobs on two CPUs: the others go on while
#: runaways wait.
CORPUS_TIMEOUT, CORPUS_JOBS = 8, 4


def build_corpus(factory: pytest.TempPathFactory):
    """The shared build ``corpus``: every corpus case built in nbgrader's layout under
    ``folder/<assignment>/submitted`` and graded by one ``attngrade`` command per assignment into
    ``folder/<assignment>/out`` and ``gradebook.db``; each command's exit status and output in
    ``folder/<assignment>/proc.json``."""

    def build(base: Path) -> None:
        empty = _empty_gradebook(factory)
        cases = gk.corpus_cases()
        for assignment in sorted({c.assignment for c in cases}):
            submitted = base / assignment / "submitted"
            for case in cases:
                if case.assignment == assignment:
                    gk.build_case(case, assignment, submitted)
            db_url = gk.copy_gradebook(empty, base / assignment / "gradebook.db")
            proc = gk.run_attngrade(
                assignment, submitted, "--out", base / assignment / "out", "--db", db_url,
                "--jobs", str(CORPUS_JOBS), "--timeout", str(CORPUS_TIMEOUT),
            )
            (base / assignment / "proc.json").write_text(json.dumps(
                {"args": proc.args, "returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}))

    return build


@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory) -> CorpusRun:
    """Every corpus case graded by one ``attngrade`` command per assignment, once per test run
    for every xdist worker (the shared build ``corpus``, started in the background as soon as the
    tests are collected: tests/conftest.py)."""
    from support import shared_build  # tests/support.py

    base = shared_build(tmp_path_factory, "corpus", build_corpus(tmp_path_factory))
    cases = gk.corpus_cases()
    runs, db_urls = {}, {}
    for assignment in sorted({c.assignment for c in cases}):
        ran = json.loads((base / assignment / "proc.json").read_text())
        runs[assignment] = (base / assignment / "out", subprocess.CompletedProcess(**ran))
        db_urls[assignment] = f"sqlite:///{base / assignment / 'gradebook.db'}"
    return CorpusRun(runs, cases, db_urls)
