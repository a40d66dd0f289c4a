"""What the class missed (``attngrade.statistics``): a class of 40 with planted mistakes, whose
kinds must top the list, and the rules that read one part's result, on results made by hand.

The class is one ``attngrade`` run (module-scoped): 40 answers of 01_softmax built from the
solution, with one-bug answers from ``tests/grading/kind_mistakes`` planted in groups of 6, 4
and 4 students, and two single students with other mistakes that must rank below them. Which kind
of hidden case each mistake fails is found here, in this process, by calling the mistaken answer
on the hidden cases one at a time (never from the grader's results).
"""

from __future__ import annotations

import csv
import html
import json
import re
import types

import nbformat
import numpy as np
import pytest

import gradingkit as gk
from attngrade.grader import PartResult, Result
from attngrade.spec import Case, check_outputs, compute_outputs, course_secret, load_parts, make_cases
from attngrade.statistics import (
    WHOLE_PART,
    class_statistics,
    failed_case,
    failure_property,
    missed_most,
    results_from,
    records,
)
from kind_mistakes.m01_softmax import KIND_MISTAKES

ASSIGNMENT = "01_softmax"
#: (mistake's name, students who make it): three planted groups, then two single students.
PLANTED = [
    ("the global-max softmax", 6),
    ("a VJP for one row only", 4),
    ("a Jacobian of a squeezed softmax", 4),
    ("only axis 0 or the last axis", 1),
    ("float32 computed in float16", 1),
]
CLASS_SIZE = 40


def _mistake(name: str) -> dict:
    return next(m[3] for m in KIND_MISTAKES if m[1] == name)


def _answers(change: dict | None) -> dict[str, str]:
    answers = gk.solution_answers(ASSIGNMENT)
    for gid, (old, new) in (change or {}).items():
        assert answers[gid].count(old) == 1, (gid, old)
        answers[gid] = answers[gid].replace(old, new)
    return answers


def _first_failing_kind(change: dict) -> tuple[str, str]:
    """``(grade id, kind)`` of the first hidden case the mistaken answers fail, found by calling
    them here on each case of each part in turn (the course's own cases and seed)."""
    namespace = {"np": np}
    answers = _answers(change)
    for cell in gk.release(ASSIGNMENT).cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and gid in answers:
            exec(answers[gid], namespace)  # noqa: S102 - the course's own solution, one line changed
    spec_file = gk.SOLUTIONS / ASSIGNMENT / "hidden_tests.py"
    failing = []
    for gid, part in load_parts(spec_file).items():
        cases = make_cases(part, course_secret(gk.ROOT))
        for case in cases:
            with np.errstate(all="ignore"):
                passed, _ = check_outputs(part, [case], compute_outputs(namespace[part.function], [case]))
            if not passed:
                failing.append((gid, case.kind))
                break
    assert len(failing) == 1, f"a planted mistake must fail one part, not {failing}"
    return failing[0]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The class of 40 graded once; the mistakes' students, parts and kinds."""
    kinds = {name: _first_failing_kind(_mistake(name)) for name, _ in PLANTED}
    folder = tmp_path_factory.mktemp("class40")
    release = gk.release(ASSIGNMENT)
    students, who = iter(f"s{i:02d}" for i in range(1, CLASS_SIZE + 1)), {}
    for name, count in PLANTED:
        nb = gk.fill_any(release, _answers(_mistake(name)))
        for _ in range(count):
            student = next(students)
            who[student] = name
            nbformat.write(nb, folder / f"{student}.ipynb")
    right = gk.fill_any(release, _answers(None))
    for student in students:
        nbformat.write(right, folder / f"{student}.ipynb")
    out = folder / "out"
    proc = gk.run_attngrade(ASSIGNMENT, folder, "--out", out, "--no-gradebook", "--jobs", "2", "--no-similarity")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return types.SimpleNamespace(out=out, who=who, kinds=kinds)


def _points() -> dict[str, float]:
    from attngrade.grader import load_assignment, load_course

    return {p.grade_id: p.points for p in load_assignment(load_course(gk.ROOT), ASSIGNMENT).parts}


def test_the_planted_mistakes_kinds_top_the_list(planted):
    summary = json.loads((planted.out / "summary.json").read_text(encoding="utf-8"))
    top = [(m["grade_id"], m["kind"]) for m in summary["statistics"]["missed_most"]]
    groups = [name for name, count in PLANTED if count > 1]
    assert top == [planted.kinds[name] for name in groups]
    points = _points()
    for entry, name in zip(summary["statistics"]["missed_most"], groups):
        count = dict(PLANTED)[name]
        assert entry["failed"] == count
        assert entry["points_lost"] == count * points[entry["grade_id"]]
    # the page opens the section with the same three, in that order
    page = (planted.out / "summary.html").read_text(encoding="utf-8")
    section = page[page.index("<h2 id='missed'>"):]
    listed = re.findall(r"<li><b>(.*?)</b>", section[: section.index("</ol>")])
    assert [html.unescape(item).split(" (part ")[0] for item in listed] == [planted.kinds[n][1] for n in groups]
    assert "data:image/png;base64," in section and (planted.out / "statistics.png").stat().st_size > 1000


def test_statistics_csv_counts_every_student_once_per_part(planted):
    with open(planted.out / "statistics.csv", newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    by_kind = {(r["grade_id"], r["kind"]): r for r in rows}
    points = _points()
    for gid in points:
        part = by_kind[(gid, "")]
        failed = [n for n, (g, _) in planted.kinds.items() if g == gid]
        students = sum(c for n, c in PLANTED if n in failed)
        assert (int(part["students"]), int(part["failed"])) == (CLASS_SIZE, students)
        assert float(part["points_lost"]) == students * points[gid]
    for name, count in PLANTED:
        row = by_kind[planted.kinds[name]]
        same_kind = sum(c for n, c in PLANTED if planted.kinds[n] == planted.kinds[name])
        assert int(row["failed"]) == same_kind
        assert int(row["students"]) + int(row["not_reached"]) == CLASS_SIZE
        assert 0 < float(row["pass_rate"]) < 1
    # the failure messages are properties, never the values a check printed
    assert all(not re.search(r"\d\.\d|\[|\(\d", r["common_failures"]) for r in rows)


# ------------------------------------------------------------------ the rules, on results made by hand


def _spec():
    cases = [Case(label="a1", kind="small"), Case(label="a2", kind="small"), Case(label="b1", kind="large"),
             Case(kind="memory")]
    part = types.SimpleNamespace(grade_id="t1", function="f", points=4.0, cases=cases)
    return types.SimpleNamespace(name="demo", parts=[part])


def _result(student: str, detail: str | None, status: str = "graded") -> Result:
    passed = detail is None
    pr = PartResult(4.0 if passed else 0.0, 4.0, passed, "passed" if passed else "failed", detail or "passed")
    return Result(student, status, parts={"t1": pr})


def test_a_kind_counts_only_the_students_who_reached_it():
    results = [
        _result("p1", None), _result("p2", None),
        _result("f1", "a2: raised ValueError"),  # small failed: large and memory not reached
        _result("f2", "b1: NaN or inf in the output"),  # small passed, large failed
        _result("f3", "case 3: allocated 99999999 bytes, limit 8388608"),
        _result("f4", "timeout: the part ran past 30 s"),  # no case reached
        _result("m1", "not graded", status="missing"),  # not counted
    ]
    rows = {r.kind: r for r in class_statistics(_spec(), results)}
    assert (rows[""].students, rows[""].passed, rows[""].lost) == (6, 2, 16.0)
    assert (rows["small"].students, rows["small"].passed, rows["small"].failed) == (5, 4, 1)
    assert (rows["large"].students, rows["large"].passed, rows["large"].failed) == (4, 3, 1)
    assert (rows["memory"].students, rows["memory"].failed) == (3, 1)
    assert rows["memory"].failures == {"memory over the case's budget": 1}
    assert (rows[WHOLE_PART].failed, rows[WHOLE_PART].failures) == (1, {"time limit": 1})
    # equal losses: the order of the part's cases
    assert [r.kind for r in missed_most(list(rows.values()))] == ["small", "large", "memory"]


def test_the_kinds_that_lose_most_points_come_first():
    results = [_result(f"a{i}", "b1: shape (3, 4) != expected (3, 5)") for i in range(3)]
    results += [_result(f"b{i}", "a1: raised KeyError") for i in range(2)]
    results += [_result("c", "case 3: raised MemoryError")]
    top = missed_most(class_statistics(_spec(), results))
    assert [(r.kind, r.lost, r.failed) for r in top] == [("large", 12.0, 3), ("small", 8.0, 2), ("memory", 4.0, 1)]
    assert top[0].common() == [("shape", 3)]


@pytest.mark.parametrize("detail, expected", [
    ("n=5: raised ZeroDivisionError", "raised ZeroDivisionError"),
    ("n=5: raised MemoryError", "memory (raised MemoryError)"),
    ("n=5: loss 0.2513 != 0.3", "wrong values"),
    ("x: shape (3, 4) != expected (3, 5)", "shape"),
    ("x: output dtype <U3 is not numeric", "dtype"),
    ("x: NaN or inf in the output", "NaN or inf"),
    ("x: returned None", "returned None"),
    ("x: TypeError while checking: bad", "not an array or number"),
    ("x: changed its inputs", "changed its inputs"),
    ("x: value: 3 of 12 entries differ; worst at index (0, 1): 0.5 vs expected 0.50001 "
     "(max abs err 2.000e-09, max rel err 4.0e-09, rtol=1e-09, atol=1e-09)",
     "values just beyond the tolerance (up to 10 times it)"),
    ("x: value: 3 of 12 entries differ; worst at index (0, 1): 0.5 vs expected 0.9 "
     "(max abs err 4.000e-01, max rel err 4.0e-01, rtol=1e-09, atol=1e-09)",
     "wrong values (more than 10 times the tolerance)"),
    ("memory: the worker's cgroup reached 2048 MiB", "memory limit of the worker"),
    ("died: killed by SIGSEGV", "the process ended (crash or exit)"),
    ("failed (f is not defined)", "the function is not defined"),
    ("failed (its cell raised NameError)", "its cell raised NameError"),
    ("calls reference: cell 'x' imports torch", "no credit: calls a reference implementation"),
    ("forbidden: cell 'x' uses eval", "no credit: a construct answers may not use"),
])
def test_a_failure_is_named_by_its_property_only(detail, expected):
    assert failure_property(detail) == expected


def test_the_failing_case_is_found_by_label_or_index():
    cases = _spec().parts[0].cases
    assert failed_case(cases, "a2: raised ValueError") == 1
    assert failed_case(cases, "case 3: returned None") == 3
    assert failed_case(cases, "case 0: returned None") is None  # case 0 has a label
    assert failed_case(cases, "timeout: 30 s") is None


def test_results_come_back_from_their_records():
    results = [_result("p1", None), _result("f1", "a2: raised ValueError"), _result("m", "x", status="missing")]
    again = results_from(json.loads(json.dumps(records(results))))
    ordered = sorted(results, key=lambda r: r.student)
    assert [(r.student, r.status, r.parts) for r in again] == [(r.student, r.status, r.parts) for r in ordered]


def test_the_section_says_when_nothing_was_missed_and_kinds_are_plain_text(tmp_path):
    from attngrade.statistics import write_statistics

    spec = _spec()
    figures, section = write_statistics(tmp_path, spec, [_result("p1", None), _result("p2", None)])
    assert figures["missed_most"] == [] and "passed every hidden case" in "".join(section)
    assert not (tmp_path / "statistics.png").exists()
    spec.parts[0].cases[2].kind = "costs $5, not $6 <b>"  # neither mathtext nor HTML
    figures, section = write_statistics(tmp_path, spec, [_result("f1", "b1: raised KeyError")])
    assert figures["missed_most"][0]["kind"] == "costs $5, not $6 <b>" and "&lt;b&gt;" in "".join(section)
    assert (tmp_path / "statistics.png").stat().st_size > 1000
    _, section = write_statistics(tmp_path, spec, [_result("m", "x", status="missing")])
    assert "No graded submission" in "".join(section)
