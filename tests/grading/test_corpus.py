"""The faulty and hostile corpus: one command grades it all, and every row is what it deserves."""

from __future__ import annotations

import re

import pytest

import gradingkit as gk
from attngrade.grader import STATUSES

CASES = gk.corpus_cases()
SOFTMAX = [c for c in CASES if c.assignment == "01_softmax"]


def test_the_corpus_covers_every_kind_of_fault():
    assert len(CASES) >= 65
    assert len({c.assignment for c in CASES}) >= 3, "cases in assignments other than 01_softmax"
    assert sum(c.kind == "honest" for c in CASES) >= 10 and sum(c.kind == "cheat" for c in CASES) >= 15
    statuses = {c.status for c in CASES}
    missing = set(STATUSES) - {"ambiguous"} - statuses  # "ambiguous" is a layout's: test_layouts.py
    assert not missing, f"statuses not covered: {missing}"
    words = " ".join(c.description.lower() for c in CASES)
    for topic in (
        "runaway",
        "crash",
        "resource abuse",
        "tampering",
        "cheating in the kernel",
        "calling the reference",
        "malformed",
        "missing",
        "benign noise",
        "fork bomb",
        "sigterm",
        "segmentation fault",
        "gigabyte",
        "skip-execution",
        "schema_version",
        "input transformer",
        "ast transformer",
        "hidden_tests.py",
        "gradebook",
        "added cell",
        "redefin",
        "globals()",
        "multiprocessing",
        "float32",
        "image outputs",
        "importlib",
        "subprocess",
        "meta_path",
        "mmap",
        "thread",
        "child process",
    ):
        assert topic in words, f"no corpus case about {topic!r}"


def test_the_batch_completes_with_one_row_per_submission(corpus_run):
    for assignment, (_, proc) in corpus_run.runs.items():
        assert proc.returncode == 0, f"{assignment}: {proc.stderr[-3000:]}"
    assert sorted(corpus_run.rows) == sorted(c.name for c in CASES)
    points = {assignment: gk.max_points(assignment) for assignment in {c.assignment for c in CASES}}
    for case in CASES:
        row = corpus_run.rows[case.name]
        assert row["status"] in STATUSES
        assert float(row["max_score"]) == points[case.assignment], "points come from the release"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_submission_gets_the_score_and_status_it_deserves(corpus_run, case):
    row = corpus_run.rows[case.name]
    got = {gid: float(row[gid]) for gid in case.expect}
    assert got == case.expect, f"{case.name}: {row['status']} {row['reason']}"
    status = case.status
    isolation = corpus_run.summaries[case.assignment]["isolation"]
    if case.status_without_nproc and "RLIMIT_NPROC" not in isolation["rlimits"]:
        status = case.status_without_nproc
    assert row["status"] == status, f"{case.name}: {row['reason']}"
    assert float(row["score"]) == sum(case.expect.values())
    if case.reason:
        assert case.reason in row["reason"], f"{case.name}: reason {row['reason']!r}"
    if case.status != "graded":
        assert row["reason"], "a failure is never silent"


def test_progress_shows_one_line_per_student_and_a_count(corpus_run):
    lines = [ln for ln in corpus_run.proc.stdout.splitlines() if re.match(r"\[\s*\d+/\d+\]", ln)]
    assert len(lines) == len(SOFTMAX)
    assert lines[-1].startswith(f"[{len(SOFTMAX)}/{len(SOFTMAX)}]")
    for case in SOFTMAX:
        assert any(f"] {case.name} " in ln and re.search(r"\d+\.\d\ds", ln) for ln in lines), case.name
    assert re.search(rf"done: {len(SOFTMAX)} graded", corpus_run.proc.stdout)


def test_the_summary_lists_every_submission_that_is_not_plainly_graded(corpus_run):
    summary = corpus_run.summary
    flagged = {f["student"]: f["status"] for f in summary["flagged"]}
    expected = {c.name: c.status for c in SOFTMAX if c.status != "graded"}
    assert set(flagged) == set(expected)
    assert {k: v for k, v in flagged.items() if k != "09_fork_bomb"} == {
        k: v for k, v in expected.items() if k != "09_fork_bomb"
    }
    assert sum(summary["statuses"].values()) == len(SOFTMAX)
    assert [p["grade_id"] for p in summary["parts"]] == [
        "test_stable_softmax",
        "test_softmax_jacobian",
        "test_softmax_vjp",
    ]
    for part in summary["parts"]:
        assert sum(part["distribution"].values()) == part["graded"]
    assert summary["isolation"]["mode"]
    page = (corpus_run.out / "summary.html").read_text()
    assert "data:image/png;base64," in page
    for case in SOFTMAX:
        if case.status != "graded":
            assert case.name in page


def test_every_submission_has_feedback_and_a_log(corpus_run):
    for case in CASES:
        out = corpus_run.runs[case.assignment][0]
        assert (out / "feedback" / f"{case.name}.html").is_file()
        assert (out / "logs" / f"{case.name}.log").is_file()
