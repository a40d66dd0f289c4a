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


def test_two_hosts_grade_one_class_into_one_postgresql_gradebook(pg_schema_url, tmp_path):
    """``--shard 1/2`` and ``--shard 2/2`` at once, as two grading hosts would run them."""
    import subprocess
    import sys

    from attngrade.cli import shard_of

    rel = gk.release("01_softmax")
    right = gk.fill_any(rel, gk.solution_answers("01_softmax"))
    folder = tmp_path / "flat"
    folder.mkdir()
    students = [f"student_{i:02d}" for i in range(8)]
    for i, student in enumerate(students):
        nbformat.write(right if i % 2 == 0 else rel, folder / f"{student}.ipynb")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "attngrade", "01_softmax", str(folder),
             "--out", str(tmp_path / f"host{i}"), "--db", pg_schema_url, "--jobs", "1", "--shard", f"{i}/2",
             "--autograded-dir", str(tmp_path / "autograded")],
            cwd=gk.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in (1, 2)
    ]
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stdout[-2000:] + stderr[-2000:]
    shares = [set(gk.read_grades(tmp_path / f"host{i}")) for i in (1, 2)]
    assert shares[0].isdisjoint(shares[1]) and shares[0] | shares[1] == set(students)
    assert shares[0] == {s for s in students if shard_of(s, 2) == 1}
    from nbgrader.api import Gradebook

    from attngrade.gradebook import database_url

    with Gradebook(database_url(pg_schema_url), course_id="attnmath") as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions("01_softmax")}
    assert scores == {s: (8.0 if i % 2 == 0 else 0.0) for i, s in enumerate(students)}
    assert {p.name for p in (tmp_path / "autograded").iterdir()} == set(students)


def test_hosts_record_an_assignment_one_at_a_time(pg_schema_url):
    """While one grading host records an assignment (``_recording_alone``), a second host waits
    to record the same one, and records another assignment at once."""
    import threading

    from attngrade.gradebook import _recording_alone

    entered = {name: threading.Event() for name in ("same", "other")}

    def second_host(name: str, assignment: str) -> None:
        with _recording_alone(pg_schema_url, assignment):
            entered[name].set()

    with _recording_alone(pg_schema_url, "01_softmax"):
        threads = [threading.Thread(target=second_host, args=("same", "01_softmax"), daemon=True),
                   threading.Thread(target=second_host, args=("other", "02_attention"), daemon=True)]
        for t in threads:
            t.start()
        assert entered["other"].wait(60), "another assignment waited for the lock"
        assert not entered["same"].wait(1.0), "the same assignment was recorded by two hosts at once"
    assert entered["same"].wait(60), "the second host never recorded the assignment"
    for t in threads:
        t.join(60)
