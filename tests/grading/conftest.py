"""Fixtures of the grading tests: an empty gradebook to copy, the isolation level, the corpus run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gradingkit as gk  # noqa: E402


@pytest.fixture(scope="session")
def empty_gradebook(tmp_path_factory) -> Path:
    """A new nbgrader gradebook (stamping one runs alembic, which is slow): copy it per test."""
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("gradebook") / "empty.db"
    with Gradebook(f"sqlite:///{path}", course_id="attnmath"):
        pass
    return path


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
    def __init__(self, out, db_url, cases, proc):
        self.out, self.db_url, self.cases, self.proc = out, db_url, cases, proc
        self.rows = gk.read_grades(out) if (out / "grades.csv").is_file() else {}
        summary = out / "summary.json"
        self.summary = json.loads(summary.read_text()) if summary.is_file() else {}


@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory, empty_gradebook) -> CorpusRun:
    """Every corpus case built in nbgrader's layout and graded by one ``attngrade`` command."""
    base = tmp_path_factory.mktemp("corpus")
    submitted = base / "submitted"
    cases = gk.corpus_cases()
    for case in cases:
        gk.build_case(case, "01_softmax", submitted)
    db_url = gk.copy_gradebook(empty_gradebook, base / "gradebook.db")
    out = base / "out"
    proc = gk.run_attngrade(
        "01_softmax", submitted, "--out", out, "--db", db_url, "--jobs", "2", "--timeout", "5"
    )
    return CorpusRun(out, db_url, cases, proc)
