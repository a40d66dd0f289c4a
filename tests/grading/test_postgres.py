"""The gradebook on a real PostgreSQL server (``ATTNGRADE_TEST_PG_URL``; ``.ci/run`` starts one).

Each run uses a schema of its own (``search_path``), dropped afterwards, so the database named by
the URL is left as it was.
"""

from __future__ import annotations

import os
import uuid

import nbformat
import pytest

import gradingkit as gk

PG_URL = os.environ.get("ATTNGRADE_TEST_PG_URL")
pytestmark = pytest.mark.needs("postgres")  # skipped without a server, failed under CI (tests/conftest.py)


@pytest.fixture
def pg_schema_url():
    import sqlalchemy

    from attngrade.gradebook import database_url

    schema = "attngrade_test_" + uuid.uuid4().hex[:10]
    admin = sqlalchemy.create_engine(database_url(PG_URL))
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def test_grading_into_postgresql(pg_schema_url, tmp_path):
    rel = gk.release("01_softmax")
    folder = tmp_path / "flat"
    folder.mkdir()
    nbformat.write(gk.fill_any(rel, gk.solution_answers("01_softmax")), folder / "alice_softmax.ipynb")
    nbformat.write(rel, folder / "bob_softmax.ipynb")
    (folder / "carol_softmax.ipynb").write_text("{ not json")
    proc = gk.run_attngrade(
        "01_softmax", folder, "--out", tmp_path / "out", "--db", pg_schema_url, "--jobs", "2"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = gk.read_grades(tmp_path / "out")
    assert {s: r["status"] for s, r in rows.items()} == {
        "alice": "graded",
        "bob": "graded",
        "carol": "malformed",
    }

    from nbgrader.api import Gradebook

    from attngrade.gradebook import database_url

    with Gradebook(database_url(pg_schema_url), course_id="attnmath") as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions("01_softmax")}
        assert scores == {"alice": 8.0, "bob": 0.0, "carol": 0.0}
        assert gb.find_assignment("01_softmax").max_score == 10.0
        assert gb.find_submission_notebook("softmax", "01_softmax", "carol").flagged
    # A second run over the same database updates, it does not duplicate.
    proc = gk.run_attngrade(
        "01_softmax", folder, "--out", tmp_path / "out2", "--db", pg_schema_url, "--jobs", "2"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with Gradebook(database_url(pg_schema_url), course_id="attnmath") as gb:
        assert len(gb.assignment_submissions("01_softmax")) == 3
