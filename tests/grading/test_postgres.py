"""The gradebook on a real PostgreSQL server (``ATTNGRADE_TEST_PG_URL``; ``.ci/run`` starts one),
and one class graded by four indexed workers into it, then merged (``attngrade.merge``).

Each run uses a schema of its own (``search_path``), dropped afterwards, so the database named by
the URL is left as it was.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

import gradingkit as gk

PG_URL = os.environ.get("ATTNGRADE_TEST_PG_URL")
pytestmark = pytest.mark.needs("postgres")  # skipped without a server, failed under CI (tests/conftest.py)


@contextlib.contextmanager
def _schema():
    """A URL of the test server whose tables go to a new schema, dropped afterwards."""
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


@pytest.fixture
def pg_schema_url():
    with _schema() as url:
        yield url


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


#: The indexed workers of one class: (share, the variables its engine gives it). Shares 1 and 2
#: run as pods of a Kubernetes Indexed Job (completions 4: the manifest passes JOB_COMPLETIONS),
#: shares 3 and 4 as tasks of a Slurm array that starts at 1 (--array=1-4): both give share k.
WORKERS = [
    (1, {"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "4"}),
    (2, {"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "4"}),
    (3, {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1",
         "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_STEP": "1"}),
    (4, {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1",
         "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_STEP": "1"}),
]
_ENGINE_VARIABLES = {name for _, env in WORKERS for name in env}


def _class_of_four_shares(folder: Path) -> list[str]:
    """Twelve students, three in each share of four: right answers, unanswered notebooks, and
    two groups of one planted mistake each (for the statistics and the similarity)."""
    from attngrade.pipeline import shard_of
    from test_statistics import _answers, _mistake

    names = [f"student_{i:02d}" for i in range(60)]
    students = []
    for k in range(1, 5):
        students += [s for s in names if shard_of(s, 4) == k][:3]
    rel = gk.release("01_softmax")
    kinds = [gk.fill_any(rel, _answers(None)), rel, gk.fill_any(rel, _answers(_mistake("the global-max softmax"))),
             gk.fill_any(rel, _answers(_mistake("a VJP for one row only")))]
    for i, student in enumerate(sorted(students)):
        nbformat.write(kinds[i % len(kinds)], folder / f"{student}.ipynb")
    return sorted(students)


def _attngrade(folder: Path, out: Path, db: str, autograded: Path, extra: dict, shard: list) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in _ENGINE_VARIABLES}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return subprocess.Popen(
        [sys.executable, "-m", "attngrade", "01_softmax", str(folder), "--out", str(out), "--db", db, "--jobs", "1",
         "--autograded-dir", str(autograded), *shard],
        cwd=gk.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(proc: subprocess.Popen) -> str:
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stdout[-2000:] + stderr[-3000:]
    return stdout


def _scores(db: str) -> dict:
    from nbgrader.api import Gradebook

    from attngrade.gradebook import database_url

    with Gradebook(database_url(db), course_id="attnmath") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("01_softmax")}


def _without_seconds(out: Path) -> list:
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    drop = rows[0].index("seconds")
    return [[cell for i, cell in enumerate(row) if i != drop] for row in rows]


#: What summary.json says of the class (the rest is the run's: times, jobs, shares, when).
CLASS_KEYS = ("assignment", "submissions", "max_score", "statuses", "parts", "flagged", "statistics",
              "similarity", "warnings", "late_policy", "gradebook_errors")


def _class_summary(out: Path) -> dict:
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = [{k: v for k, v in row.items() if k != "seconds"} for row in data["results"]]
    return {**{k: data.get(k) for k in CLASS_KEYS}, "results": rows}


def _section(out: Path, heading: str) -> str:
    page = (out / "summary.html").read_text(encoding="utf-8")
    start = page.index(heading)
    return page[start:page.index("<h2", start + len(heading))]


def _feedback(out: Path) -> dict:
    return {p.name: re.sub(r"<p><small>Generated [^<]*</small></p>", "", p.read_text(encoding="utf-8"))
            for p in sorted((out / "feedback").glob("*.html"))}


def test_four_indexed_workers_and_the_merge_give_one_hosts_results(tmp_path, empty_gradebook):
    """N = 4 workers with a Kubernetes Indexed Job's or a Slurm array's variables and
    ``--shard auto``, two at a time, into one PostgreSQL gradebook; then
    ``python -m attngrade.merge``: grades, gradebook, statistics, similarity and reports equal
    one host's, graded into a gradebook of its own (SQLite: a fresh PostgreSQL one costs 15 s)."""
    from attngrade.pipeline import shard_of

    folder = tmp_path / "class"
    folder.mkdir()
    students = _class_of_four_shares(folder)
    one_db = gk.copy_gradebook(empty_gradebook, tmp_path / "one.db")
    _finish(_attngrade(folder, tmp_path / "one", one_db, tmp_path / "one-autograded", {}, []))
    with _schema() as shared_db:
        started = time.monotonic()
        for pair in (WORKERS[:2], WORKERS[2:]):  # two at a time: the machine has two cores
            procs = [_attngrade(folder, tmp_path / f"out-{k}", shared_db, tmp_path / "autograded", env,
                                ["--shard", "auto"]) for k, env in pair]
            for (k, _), proc in zip(pair, procs):
                assert f"share {k}/4 of {len(students)}" in _finish(proc)
        graded = time.monotonic() - started
        merged = subprocess.run(
            [sys.executable, "-m", "attngrade.merge", *(str(tmp_path / f"out-{k}") for k, _ in WORKERS),
             "--out", str(tmp_path / "merged")], cwd=gk.ROOT, capture_output=True, text=True, timeout=600)
        print(f"4 indexed workers, 2 at a time: {graded:.1f} s; the merge: {time.monotonic() - started - graded:.1f} s")
        assert merged.returncode == 0, merged.stdout[-2000:] + merged.stderr[-3000:]
        assert _scores(shared_db) == _scores(one_db) and len(_scores(one_db)) == len(students)
    for k, _ in WORKERS:
        assert set(gk.read_grades(tmp_path / f"out-{k}")) == {s for s in students if shard_of(s, 4) == k}
    one, whole = tmp_path / "one", tmp_path / "merged"
    assert _without_seconds(whole) == _without_seconds(one)
    assert _class_summary(whole) == _class_summary(one)
    summary = _class_summary(one)
    assert summary["statistics"]["missed_most"] and summary["similarity"]["groups"] >= 1
    for name in ("statistics.csv", "similarity.csv", "statistics.png"):
        assert (whole / name).read_bytes() == (one / name).read_bytes(), name
    for heading in ("<h2 id='missed'>", "<h2>Scores per part</h2>", "<h2>Flagged"):
        assert _section(whole, heading) == _section(one, heading), heading
    assert _feedback(whole) == _feedback(one) and len(_feedback(one)) == len(students)
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
