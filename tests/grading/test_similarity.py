"""Similarity evidence (attngrade.similarity): planted copies rank above every honest pair.

The class in ``similarity/stable_softmax/`` is 30 honest answers to Part 1 of ``01_softmax``,
written independently (loops, einsum, log-sum-exp, a pairwise-difference formula, helpers,
a class, in-place work, ...), and 7 planted copies of some of them (``planted.json``): renamed
variables, reordered functions, changed comments and whitespace, one with a dead helper.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attngrade import similarity as S

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLASS = HERE / "similarity"
sys.path.insert(0, str(CLASS))

from similarity_class import ANSWERS, PART, PLANTED, rename  # noqa: E402


def _course() -> dict:
    release = json.loads((ROOT / "exercises/01_softmax/softmax.ipynb").read_text())
    solution = json.loads((ROOT / "solutions/01_softmax/softmax.ipynb").read_text())
    return S.course_code(release, solution)


COURSE = _course()


def _planted(a: str, b: str) -> bool:
    return PLANTED.get(a, [None])[0] == b or PLANTED.get(b, [None])[0] == a


def test_class_is_thirty_honest_answers_and_seven_copies():
    honest = [s for s in ANSWERS if s not in PLANTED]
    assert len(honest) == 30 and len(PLANTED) == 7
    assert all(orig in ANSWERS for orig, _ in PLANTED.values())
    assert len({ANSWERS[s][PART] for s in honest}) == 30  # distinct texts


def test_every_planted_pair_ranks_above_every_honest_pair_and_only_they_pass():
    everything = S.run(ANSWERS, COURSE, threshold=0.0)
    planted = [p for p in everything.pairs if _planted(p.student_a, p.student_b)]
    honest = [p for p in everything.pairs if not _planted(p.student_a, p.student_b)]
    assert len(planted) == len(PLANTED)  # each copy is found with its original
    assert min(p.score for p in planted) > max(p.score for p in honest)
    listed = S.run(ANSWERS, COURSE).pairs
    assert {(p.student_a, p.student_b) for p in listed} == {(p.student_a, p.student_b) for p in planted}
    assert all(p.score >= S.THRESHOLD for p in listed)
    assert [p.score for p in listed] == sorted((p.score for p in listed), reverse=True)


def test_the_dead_helper_copy_contains_all_of_the_original():
    (pair,) = [p for p in S.run(ANSWERS, COURSE).pairs if {p.student_a, p.student_b} == {"c4", "s12"}]
    original = pair.share_b if pair.student_b == "s12" else pair.share_a
    copy = pair.share_a if pair.student_b == "s12" else pair.share_b
    assert original == pytest.approx(1.0) and copy < 0.8  # the helper is code the original lacks
    assert pair.marks_a and pair.marks_b


def _pair_scores() -> list:
    return [[p.student_a, p.student_b, p.score] for p in S.run(ANSWERS, COURSE, 0.0).pairs]


def test_scores_do_not_depend_on_the_hash_seed():
    # This process against a child with another hash seed: PYTHONHASHSEED as this process was
    # given it (or a random one, the default) against a fixed seed that differs from it.
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    script = ("import json,sys; sys.path.insert(0, sys.argv[1]); import test_similarity as t;"
              "print(json.dumps(t._pair_scores()))")
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", script, str(HERE)], env=env, capture_output=True,
                          text=True, check=True, cwd=HERE)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == json.loads(json.dumps(_pair_scores()))


def test_the_solution_and_starter_code_are_not_evidence():
    solution = COURSE["solution"][PART]
    answers = {"ann": {PART: solution}, "bob": {PART: solution}, "cy": {PART: COURSE["release"][PART]}}
    result = S.run(answers, COURSE, threshold=0.0)
    assert result.pairs == []
    (info,) = result.parts
    assert sorted(info.short) == ["ann", "bob", "cy"] and info.compared == 0


def test_forced_short_code_is_not_evidence_but_a_long_copy_is():
    forced = "def softmax_vjp(p, g):\n    return p * (g - np.sum(p * g, axis=-1, keepdims=True))\n"
    loop = (
        "def softmax_vjp(p, g):\n    out = np.empty_like(p)\n    for idx in np.ndindex(p.shape[:-1]):\n"
        "        row, grad = p[idx], g[idx]\n        dot = 0.0\n        for k in range(row.shape[0]):\n"
        "            dot += row[k] * grad[k]\n        out[idx] = row * (grad - dot)\n    return out\n"
    )
    copied = loop.replace("row", "pr").replace("grad", "gr").replace("dot", "acc")
    answers = {"a": {"softmax_vjp": forced}, "b": {"softmax_vjp": forced},
               "c": {"softmax_vjp": loop}, "d": {"softmax_vjp": copied}}
    result = S.run(answers, COURSE)
    assert [(p.student_a, p.student_b) for p in result.pairs] == [("c", "d")]
    assert result.parts[0].short == ["a", "b"]


@settings(max_examples=25, deadline=None)
@given(student=st.sampled_from(sorted(s for s in ANSWERS if s not in PLANTED)), salt=st.integers(0, 10**6))
def test_a_renamed_copy_of_any_honest_answer_is_listed(student, salt):
    code = ANSWERS[student][PART]
    renamed = rename(code, salt)
    assert renamed != code or "_" not in renamed
    result = S.run({"orig": {PART: code}, "copy": {PART: renamed}}, COURSE)
    assert [(p.student_a, p.student_b) for p in result.pairs] == [("copy", "orig")]
    assert result.pairs[0].score >= S.THRESHOLD


def test_section_escapes_student_text_and_marks_shared_passages():
    evil = "<script>alert(1)</script>"
    code = ANSWERS["s03"][PART] + f"# </pre>{evil}\n"
    result = S.run({evil: {PART: code}, "b&b": {PART: ANSWERS["c2"][PART]}}, COURSE)
    section = S.render_section(result)
    assert evil not in section and "&lt;script&gt;" in section and "b&amp;b" in section
    assert section.count("<mark>") >= 2 and "</pre>&lt;script" not in section
    assert "<pre>" in section and "Evidence for you only" in section


def test_csv_lists_pairs_and_no_field_can_become_a_formula(tmp_path):
    code = ANSWERS["s03"][PART]
    names = ["=HYPERLINK(\"x\")", "+1", "-2", "@SUM(A1)"]
    answers = {n: {PART: code} for n in names}
    result = S.run(answers, COURSE)
    path = S.write_csv(tmp_path / "pairs.csv", result)
    rows = list(csv.reader(path.open(newline="")))
    assert rows[0] == S.CSV_HEADER and len(rows) == 1 + 6
    for row in rows[1:]:
        assert row[2][0] == "'" and row[3][0] == "'"
        assert float(row[1]) >= S.THRESHOLD


def test_shards_compared_together_give_the_whole_class(tmp_path):
    students = sorted(ANSWERS)
    shards = [students[0::2], students[1::2]]
    for i, share in enumerate(shards, 1):
        S.write_answers(tmp_path / f"out-{i}" / "similarity", "01_softmax",
                        {s: ANSWERS[s] for s in share}, COURSE)
    assignment, course, merged = S.load_answers([tmp_path / "out-1", tmp_path / "out-2"])
    assert assignment == "01_softmax" and merged == ANSWERS and course == COURSE
    assert S.main([str(tmp_path / "out-1"), str(tmp_path / "out-2"), "--out", str(tmp_path / "all")]) == 0
    rows = list(csv.reader((tmp_path / "all/similarity.csv").open(newline="")))
    whole = S.run(ANSWERS, COURSE).pairs
    assert [(r[2], r[3]) for r in rows[1:]] == [(p.student_a, p.student_b) for p in whole]
    assert "Similar answers" in (tmp_path / "all/similarity.html").read_text()
    S.write_answers(tmp_path / "out-3", "01_softmax", {students[0]: ANSWERS[students[0]]}, COURSE)
    with pytest.raises(ValueError, match="two hosts"):
        S.load_answers([tmp_path / "out-1", tmp_path / "out-3"])


def test_update_answers_keeps_unchanged_students_and_drops_those_gone(tmp_path):
    S.write_answers(tmp_path, "01_softmax", {"a": {PART: "x = 1"}, "b": {PART: "y = 2"}}, COURSE)
    merged = S.update_answers(tmp_path, "01_softmax", {"c": {PART: "z = 3"}}, {"a", "c"}, COURSE)
    assert merged == {"a": {PART: "x = 1"}, "c": {PART: "z = 3"}}
    assert S.load_answers([tmp_path])[2] == merged


def test_answers_of_reads_code_answer_cells_by_grade_id():
    solution = json.loads((ROOT / "solutions/01_softmax/softmax.ipynb").read_text())
    got = S.answers_of(solution, ["stable_softmax", "softmax_vjp", "jacobian_proof"])
    assert set(got) == {"stable_softmax", "softmax_vjp"}  # the written part is markdown
    assert got["softmax_vjp"].startswith("def softmax_vjp")


def test_task_code_takes_inline_and_fenced_code():
    text = "Use `np.max(x, axis=axis)` here.\n```python\nz = x - m\n```\nand `e / s`."
    assert S.task_code(text).splitlines() == ["z = x - m", "np.max(x, axis=axis)", "e / s"]


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="threshold"):
        S.run(ANSWERS, COURSE, threshold=1.5)
    with pytest.raises(TypeError, match="threshold"):
        S.compare_part(PART, {}, threshold="high")
    with pytest.raises(TypeError, match="answers"):
        S.compare_part(PART, [("a", "code")])
    with pytest.raises(TypeError, match="markdown"):
        S.task_code(None)


def test_for_class_keeps_answers_and_a_shard_host_only_writes_them(tmp_path):
    share = {s: ANSWERS[s] for s in ("s03", "c2", "s07")}
    assert S.for_class(tmp_path / "a", "01_softmax", COURSE, share, set(share), compare=False) is None
    assert S.load_answers([tmp_path / "a"])[2] == share
    result = S.for_class(tmp_path / "b", "01_softmax", COURSE, share, set(share), compare=True)
    assert [(p.student_a, p.student_b) for p in result.pairs] == [("c2", "s03")]


def test_add_to_summary_puts_the_section_in_the_page_and_the_count_in_the_json(tmp_path):
    (tmp_path / "summary.html").write_text("<html><body><h1>Grading summary</h1></body></html>")
    (tmp_path / "summary.json").write_text(json.dumps({"assignment": "01_softmax"}))
    result = S.run({s: ANSWERS[s] for s in ("s03", "c2", "s07")}, COURSE)
    S.add_to_summary(tmp_path, result)
    page = (tmp_path / "summary.html").read_text()
    assert page.index("<h1>Grading summary") < page.index("id='similarity'") < page.index("</body>")
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["similarity"]["pairs"] == 1 and data["similarity"]["parts"][PART]["compared"] == 3
    assert (tmp_path / "similarity.csv").is_file()


def test_a_huge_answer_is_compared_by_its_first_characters_only():
    code = ANSWERS["s03"][PART]
    huge = code + "\n" + "# padding\n" * (S.MAX_CHARS // 10)
    result = S.run({"a": {PART: code}, "b": {PART: huge}}, COURSE)
    assert result.parts[0].cut == ["b"]
    assert [(p.student_a, p.student_b) for p in result.pairs] == [("a", "b")]
    assert len(result.pairs[0].code_b) == S.MAX_CHARS


def test_names_and_code_that_are_not_utf8_are_shown_not_fatal(tmp_path):
    odd, code = "caf\udce9", ANSWERS["s03"][PART] + "# \udcff\u202e\n"
    result = S.run({odd: {PART: code}, "bob": {PART: ANSWERS["c2"][PART]}}, COURSE)
    html_path, csv_path = S.write_report(tmp_path, result, "odd")
    page = html_path.read_text(encoding="utf-8")
    assert "caf\\xe9" in page
    assert "caf\\xe9" in csv_path.read_text(encoding="utf-8")
    S.write_answers(tmp_path, "01_softmax", {odd: {PART: code}}, COURSE)
    assert S.load_answers([tmp_path])[2] == {odd: {PART: code}}


def _spec():
    import nbformat
    from types import SimpleNamespace

    release = nbformat.read(str(ROOT / "exercises/01_softmax/softmax.ipynb"), as_version=4)
    return SimpleNamespace(name="01_softmax", release=release, source_path=ROOT / "solutions/01_softmax/softmax.ipynb")


def _result_with(spec, student, code, *, rebuilt=True):
    from types import SimpleNamespace

    nb = json.loads(json.dumps(spec.release))
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == PART:
            cell["source"] = code
    return SimpleNamespace(student=student, notebook=nb if rebuilt else None), SimpleNamespace(notebook=nb)


def test_class_step_compares_a_class_of_three_and_not_of_two(tmp_path):
    spec = _spec()
    made = [_result_with(spec, s, ANSWERS[s][PART], rebuilt=s != "c2") for s in ("s03", "c2", "s07")]
    results, prepared = [r for r, _ in made], {r.student: p for r, p in made}
    (tmp_path / "summary.html").write_text("<html><body></body></html>")
    (tmp_path / "summary.json").write_text("{}")
    said = []
    found = S.class_step(tmp_path, spec, results, prepared, everyone=3, say=said.append)
    assert [(p.student_a, p.student_b) for p in found.pairs] == [("c2", "s03")]  # c2 from its submission
    assert "id='similarity'" in (tmp_path / "summary.html").read_text() and said
    assert S.class_step(tmp_path, spec, results[:2], prepared, everyone=2, say=said.append) is None
    assert S.class_step(tmp_path, spec, results, prepared, everyone=3, enabled=False, say=said.append) is None


def test_class_step_on_a_shard_host_keeps_the_answers_for_the_final_step(tmp_path):
    spec = _spec()
    made = [_result_with(spec, s, ANSWERS[s][PART]) for s in ("s03", "c2")]
    said = []
    assert S.class_step(tmp_path, spec, [r for r, _ in made], {}, everyone=6, shard=(1, 2), say=said.append) is None
    assert set(S.load_answers([tmp_path])[2]) == {"s03", "c2"}
    assert "python -m attngrade.similarity" in said[0] and not (tmp_path / "similarity.csv").exists()


def test_grading_command_adds_the_section_csv_and_lms_file_and_students_see_none_of_it(tmp_path):
    import gradingkit as gk
    import nbformat

    rel, solution = gk.release("01_softmax"), gk.solution_answers("01_softmax")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, uid, student in (("annaa", 101, "s03"), ("bobb", 102, "c2"), ("cyc", 103, "s07")):
        nb = gk.fill_any(rel, {**solution, PART: ANSWERS[student][PART]})
        nbformat.write(nb, subs / f"{name}_{uid}_{uid + 900}_softmax.ipynb")
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Softmax\n    Points Possible,,,,,8\n"
                      "Anna A,101,,,A,\nBo B,102,,,A,\nCy C,103,,,A,\nDee D,104,,,A,\n")
    out = tmp_path / "out"
    proc = gk.run_attngrade("01_softmax", subs, "--out", out, "--no-gradebook", "--jobs", "2",
                            "--export", "canvas", "--roster", roster)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.reader((out / "similarity.csv").open(newline="")))
    assert [r[2:4] for r in rows[1:]] == [["annaa", "bobb"]] and rows[1][0] == PART
    page = (out / "summary.html").read_text()
    assert "id='similarity'" in page and "<mark>" in page
    assert json.loads((out / "summary.json").read_text())["similarity"]["pairs"] == 1
    for student, other in (("annaa", "bobb"), ("bobb", "annaa")):
        text = (out / "feedback" / f"{student}.html").read_text()
        assert "similar" not in text.lower() and other not in text
    grades = gk.read_grades(out)
    assert {s: r["status"] for s, r in grades.items()} == dict.fromkeys(("annaa", "bobb", "cyc"), "graded")
    lms = list(csv.reader((out / "canvas.csv").open(newline="")))
    assert lms[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_softmax"]
    assert {r[1]: r[5] for r in lms[2:]} == {"101": grades["annaa"]["total"], "102": grades["bobb"]["total"],
                                             "103": grades["cyc"]["total"], "104": ""}
    bad = gk.run_attngrade("01_softmax", subs, "--out", tmp_path / "o2", "--roster", roster)
    assert bad.returncode == 2 and "--export" in bad.stderr and not (tmp_path / "o2").exists()
