"""Similarity evidence (attngrade.similarity): planted copies rank above every honest pair.

Two kinds of class: ``similarity/stable_softmax/`` (30 honest answers to Part 1 of ``01_softmax``
and 13 planted copies: renamed, reordered, commented, padded with a dead helper, a loop turned
into a comprehension, helpers inlined, NumPy rewritten as lists ...), on which the method was
tuned; and ``similarity/probe/`` (three parts, 14 honest answers and 8 disguised copies each,
written by someone else and never used to tune), the acceptance test. The functions that decide
are called directly; one test runs the grading command.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attngrade import similarity as S
from attngrade import similarity_page as SP
from attngrade.codeprint import code_print, feature_hash

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLASS = HERE / "similarity"
sys.path.insert(0, str(CLASS))

from similarity_class import ANSWERS, PART, PLANTED, original, probe_class, probe_parts, rename  # noqa: E402


def _course(assignment: str = "01_softmax") -> dict:
    release = json.loads(next((ROOT / "exercises" / assignment).glob("*.ipynb")).read_text())
    solution = json.loads(next((ROOT / "solutions" / assignment).glob("*.ipynb")).read_text())
    return S.course_code(release, solution)


COURSE = _course()


@functools.cache
def _class_run() -> S.Similarity:
    return S.run(ANSWERS, COURSE)


def _scores(part: str, answers: dict, course: dict) -> S.PartScores:
    return S.part_scores(part, answers, boilerplate=[course["release"][part], course["task"]],
                         solution=course["solution"][part])


def _planted_and_honest(found: S.PartScores, planted: dict) -> tuple[list, list]:
    """Scores of (copy, its original) pairs, and of pairs of answers with different originals."""
    copies, honest = [], []
    for i, a in enumerate(found.students):
        for j, b in enumerate(found.students[i + 1:], i + 1):
            item = (float(found.score[i, j]), a, b)
            if planted.get(a) == b or planted.get(b) == a:
                copies.append(item)
            elif original(a, planted) != original(b, planted):
                honest.append(item)
    return copies, honest


SOURCES = {copy: how[0] for copy, how in PLANTED.items()}


def test_class_is_thirty_honest_answers_and_thirteen_copies():
    honest = [s for s in ANSWERS if s not in PLANTED]
    assert len(honest) == 30 and len(PLANTED) == 13
    assert all(orig in ANSWERS for orig, _ in PLANTED.values())
    assert len({ANSWERS[s][PART] for s in ANSWERS}) == 43  # distinct texts


def test_every_planted_pair_ranks_above_every_honest_pair_and_is_listed():
    found = _scores(PART, {s: a[PART] for s, a in ANSWERS.items()}, COURSE)
    copies, honest = _planted_and_honest(found, SOURCES)
    assert len(copies) == len(PLANTED)
    assert min(copies)[0] > max(honest)[0], (min(copies), max(honest))
    listed = {(p.student_a, p.student_b): p for p in _class_run().pairs}
    assert all((a, b) in listed for _, a, b in copies)
    lowest_copy = min(listed[(a, b)].z for _, a, b in copies)
    assert all(p.z < lowest_copy for (a, b), p in listed.items() if original(a, PLANTED) != original(b, PLANTED))
    assert all(p.z >= S.MIN_Z and p.score >= S.MIN_SCORE for p in listed.values())


@pytest.mark.parametrize("key", probe_parts())
def test_probe_every_planted_pair_ranks_above_every_honest_pair(key):
    answers, planted = probe_class(key)
    assignment, part = key.split("/")
    found = _scores(part, answers, _course(assignment))
    copies, honest = _planted_and_honest(found, planted)
    assert len(copies) == len(planted) and found.info.short == []
    assert min(copies)[0] > max(honest)[0], (min(copies), max(honest))


def test_copies_of_one_answer_are_one_group_with_each_distinct_answer_shown_once():
    groups = {g.students: g for g in _class_run().groups}
    for root in {orig for orig, _ in PLANTED.values()}:
        members = tuple(sorted([root, *(c for c, (o, _) in PLANTED.items() if o == root)]))
        assert members in groups, (members, list(groups))
    trio = groups[("c2", "c8", "s03")]  # c2 is s03 renamed: one answer shown for both
    assert sorted(names for names, _, _ in trio.answers) == [("c2", "s03"), ("c8",)]
    assert len(trio.pairs) == 3 and trio.z == max(p.z for p in trio.pairs)


def test_ten_students_who_share_an_answer_are_one_group_and_the_csv_has_their_45_pairs(tmp_path):
    answers = {s: ANSWERS[s] for s in ANSWERS if s not in PLANTED}
    answers.update({f"copy{i}": {PART: rename(ANSWERS["s28"][PART], i)} for i in range(9)})
    result = S.run(answers, COURSE)
    (group,) = [g for g in result.groups if "s28" in g.students]
    assert len(group.students) == 10 and len(group.pairs) == 45 and len(group.answers) == 1
    rows = list(csv.DictReader(S.write_csv(tmp_path / "s.csv", result).open(newline="")))
    mine = [r for r in rows if r["group"] == str(result.groups.index(group) + 1)]
    assert len(mine) == 45 and {r["group_size"] for r in mine} == {"10"} and {r["listed"] for r in mine} == {"yes"}
    assert "10 students handed in this same code" in SP.render_section(result)


def test_forced_answers_that_many_share_are_not_listed_but_a_rare_copy_is():
    # The class: 39 students, most with one of a few two-line answers the task forces.
    forced = ["return p * (g - (p * g).sum(axis=-1, keepdims=True))",
              "s = np.sum(g * p, axis=-1, keepdims=True)\n    return p * (g - s)",
              "dot = (p * g).sum(-1, keepdims=True)\n    return p * g - p * dot"]
    answers = {f"st{i:02d}": {"softmax_vjp": f"def softmax_vjp(p, g):\n    {forced[i % 3]}\n"} for i in range(37)}
    loop = ("def softmax_vjp(p, g):\n    out = np.empty_like(p)\n    for idx in np.ndindex(p.shape[:-1]):\n"
            "        row, grad = p[idx], g[idx]\n        acc = 0.0\n        for k in range(row.shape[0]):\n"
            "            acc += row[k] * grad[k]\n        out[idx] = row * (grad - acc)\n    return out\n")
    answers["rare"] = {"softmax_vjp": loop}
    answers["copy"] = {"softmax_vjp": rename(loop, 7).replace("acc += row", "# sum it up\n            acc += row")}
    result = S.run(answers, COURSE)
    assert [g.students for g in result.groups] == [("copy", "rare")]
    assert all(p.student_a in ("copy", "rare") or not p.listed for p in result.near)


def test_the_dead_helper_copy_contains_all_of_the_original():
    (pair,) = [p for p in _class_run().pairs if {p.student_a, p.student_b} == {"c4", "s12"}]
    assert (pair.student_a, pair.student_b) == ("c4", "s12")
    assert pair.share_b == pytest.approx(1.0) and pair.share_a < 0.8  # the helper is c4's own code
    assert pair.marks_a and pair.marks_b


def _structure(code: str) -> set:
    found = code_print(code)
    return set(found.features) - found.surface


UNIT = """import numpy as np

def helper(v):
    '''Shift by the row maximum.'''
    return v - v.max(axis=-1, keepdims=True)

def solve(x, w):
    y = np.exp(helper(x @ w))  # the scores
    total = np.sum(y, axis=-1, keepdims=True)
    if total.shape[0] > 1:
        total += 1e-12
    return y / total
"""


@pytest.mark.parametrize("disguise", [
    lambda c: c.replace("'''Shift by the row maximum.'''", "pass").replace("# the scores", "# new comment\n"),
    lambda c: c.replace("total", "acc").replace("(v)", "(vals)").replace("v -", "vals -").replace("v.max", "vals.max"),
    lambda c: c[c.index("def solve"):] + "\n\n" + c[:c.index("def solve")],  # functions reordered
    lambda c: c.replace("v.max(axis=-1, keepdims=True)", "np.amax(v, keepdims=True, axis=-1)"),
    lambda c: c.replace("np.sum(y, axis=-1, keepdims=True)", "y.sum(keepdims=True, axis=-1)"),
    lambda c: c.replace("total.shape[0] > 1", "1 < total.shape[0]").replace("x @ w", "np.matmul(x, w)"),
    lambda c: c.replace("total += 1e-12", "total = total + 1e-12"),
], ids=["comments", "renamed", "reordered", "amax", "method", "operands", "augmented"])
def test_a_disguise_that_changes_nothing_keeps_every_normalised_feature(disguise):
    copy = disguise(UNIT)
    assert copy != UNIT and _structure(copy) == _structure(UNIT)


@pytest.mark.parametrize("first, second, canonical", [
    ("def f(xs):\n    out = []\n    for x in xs:\n        out.append(math.exp(x - 1))\n    return out\n",
     "def f(xs):\n    return [math.exp(t - 1) for t in xs]\n", "COLLECT exp((V - 1))"),
    ("def s(v):\n    return v - v.max()\n\ndef f(x):\n    return np.exp(s(x))\n",
     "def f(x):\n    return np.exp(x - np.max(x))\n", "exp((V - max(V)))"),
    ("def f(x):\n    m = np.max(x)\n    e = np.exp(x - m)\n    return e / e.sum()\n",
     "def f(x):\n    m = max(x)\n    e = [math.exp(t - m) for t in x]\n    return [t / sum(e) for t in e]\n",
     "(exp((V - max(V))) / sum(exp((V - max(V)))))"),
    ("def f(x):\n    t = 0.0\n    for v in x:\n        t += v * v\n    return t\n",
     "def f(x):\n    return np.sum(x * x)\n", "sum((V * V))"),
], ids=["loop-comprehension", "helper-inlined", "numpy-lists", "accumulator"])
def test_a_rewrite_shares_its_expanded_expression_with_the_original(first, second, canonical):
    assert feature_hash(canonical) in _structure(first) & _structure(second)


@settings(max_examples=20, deadline=None)
@given(student=st.sampled_from(sorted(ANSWERS)), salt=st.integers(0, 10**6))
def test_renaming_changes_no_feature(student, salt):
    code = ANSWERS[student][PART]
    assert set(code_print(rename(code, salt)).features) == set(code_print(code).features)


def _pair_scores() -> list:
    answers = {s: ANSWERS[s] for s in ("s03", "c2", "c8", "s12", "c4", "s26", "c7")}
    return [[p.student_a, p.student_b, p.score, p.z] for p in S.run(answers, COURSE).pairs]


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
    result = S.run(answers, COURSE)
    assert result.groups == [] and result.near == []
    (info,) = result.parts
    assert sorted(info.short) == ["ann", "bob", "cy"] and info.compared == 0


def test_code_that_does_not_parse_is_compared_by_its_tokens():
    broken = ANSWERS["s18"][PART].replace("for val in line:", "for val in line")  # no colon
    renamed = broken.replace("line", "row").replace("total", "acc").replace("answer", "out")
    answers = {s: ANSWERS[s] for s in ANSWERS if s not in PLANTED}
    answers.update({"a": {PART: broken}, "b": {PART: renamed}})
    answers.pop("s18")
    result = S.run(answers, COURSE)
    assert ("a", "b") in [g.students for g in result.groups]
    assert result.parts[0].unparsed == ["a", "b"]


def test_hostile_code_gives_features_in_bounded_time():
    helpers = "\n".join(f"def h{i}(a):\n" + "    a = h{0}(a) + h{0}(a)\n".format(i - 1) * 20 + "    return a"
                        for i in range(1, 30))
    started = time.process_time()
    for code in ("x = " + "(" * 3000 + "1" + ")" * 3000, "x = " + "f(" * 500 + "1" + ")" * 500, helpers,
                 "y = 1\x00\nz = '\udcff'\n"):
        assert code_print(code).features
    assert time.process_time() - started < 5


def test_section_escapes_student_text_and_marks_shared_passages():
    evil = "<script>alert(1)</script>"
    code = ANSWERS["s03"][PART] + f"# </pre>{evil}\n"
    result = S.run({evil: {PART: code}, "b&b": {PART: ANSWERS["c2"][PART]}}, COURSE)
    section = SP.render_section(result)
    assert evil not in section and "&lt;script&gt;" in section and "b&amp;b" in section
    assert section.count("<mark>") >= 2 and "</pre>&lt;script" not in section
    assert "<pre>" in section and "Evidence for you only" in section and "<select>" in section


def _fake_groups(n: int) -> S.Similarity:
    groups = []
    for i in range(n):
        a, b = f"a{i:03d}", f"b{i:03d}"
        pair = S.Pair(f"part{i % 3}", a, b, 0.9 - i / 1000, 0.9, 0.9, 40 - i / 10, True, "x = 1\n" * 80,
                      "y = 2\n", ((0, 5),), ((0, 3),))
        groups.append(S.Group(pair.part, (a, b), [pair], [((a,), pair.code_a, pair.marks_a),
                                                          ((b,), pair.code_b, pair.marks_b)]))
    return S.Similarity(groups, [S.PartInfo(f"part{i}", compared=300) for i in range(3)])


def test_the_page_opens_the_first_groups_and_shows_the_rest_on_demand_up_to_a_cap():
    section = SP.render_section(_fake_groups(300))
    assert section.count("class='sim-group'") == SP.MAX_GROUPS
    before_more = section[:section.index("class='sim-more'")]
    assert before_more.count("class='sim-group'") == SP.FIRST
    assert section.count("class='sim-more'") == -(-(SP.MAX_GROUPS - SP.FIRST) // SP.STEP)
    assert f"{300 - SP.MAX_GROUPS} less unusual groups are in the CSV only" in section
    assert section.count("<option value='part") == 3 and "data-score='90.0'" in section
    assert f"{80 - SP.MAX_LINES} more lines" in section


def test_csv_lists_pairs_and_no_field_can_become_a_formula(tmp_path):
    code = ANSWERS["s03"][PART]
    names = ["=HYPERLINK(\"x\")", "+1", "-2", "@SUM(A1)"]
    answers = {n: {PART: rename(code, i)} for i, n in enumerate(names)}
    answers.update({s: ANSWERS[s] for s in ANSWERS if s not in PLANTED and s != "s03"})
    result = S.run(answers, COURSE)
    path = S.write_csv(tmp_path / "pairs.csv", result)
    rows = list(csv.reader(path.open(newline="")))
    first = [r for r in rows[1:] if r[1] == "1"]  # the most unusual group: the four copies
    assert rows[0] == S.CSV_HEADER and len(first) == 6 and {r[9] for r in first} == {"yes"}
    assert all(r[5][0] == "'" and r[6][0] == "'" for r in first)
    assert {n for r in first for n in r[5:7]} == {"'" + n for n in names}


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
    whole = _class_run()
    listed = [(r[5], r[6]) for r in rows[1:] if r[9] == "yes"]
    assert listed == [(p.student_a, p.student_b) for g in whole.groups for p in g.pairs]
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
    with pytest.raises(ValueError, match="min_score"):
        S.run(ANSWERS, COURSE, min_score=1.5)
    with pytest.raises(TypeError, match="min_z"):
        S.compare_part(PART, {}, min_z="high")
    with pytest.raises(TypeError, match="answers"):
        S.compare_part(PART, [("a", "code")])
    with pytest.raises(TypeError, match="markdown"):
        S.task_code(None)
    with pytest.raises(TypeError, match="code"):
        code_print(b"x = 1")


def test_for_class_keeps_answers_and_a_shard_host_only_writes_them(tmp_path):
    share = {s: ANSWERS[s] for s in ("s03", "c2", "s07")}
    assert S.for_class(tmp_path / "a", "01_softmax", COURSE, share, set(share), compare=False) is None
    assert S.load_answers([tmp_path / "a"])[2] == share
    result = S.for_class(tmp_path / "b", "01_softmax", COURSE, share, set(share), compare=True)
    assert [g.students for g in result.groups] == [("c2", "s03")]


def test_add_to_summary_puts_the_section_in_the_page_and_the_figures_in_the_json(tmp_path):
    (tmp_path / "summary.html").write_text("<html><body><h1>Grading summary</h1></body></html>")
    (tmp_path / "summary.json").write_text(json.dumps({"assignment": "01_softmax"}))
    result = S.run({s: ANSWERS[s] for s in ("s03", "c2", "s07")}, COURSE)
    S.add_to_summary(tmp_path, result)
    page = (tmp_path / "summary.html").read_text()
    assert page.index("<h1>Grading summary") < page.index("id='similarity'") < page.index("</body>")
    data = json.loads((tmp_path / "summary.json").read_text())["similarity"]
    assert data["groups"] == 1 and data["pairs"] == 1 and data["parts"][PART]["compared"] == 3
    assert (tmp_path / "similarity.csv").is_file()


def test_a_huge_answer_is_compared_by_its_first_characters_only():
    code = ANSWERS["s03"][PART]
    huge = code + "\n" + "# padding\n" * (S.MAX_CHARS // 10)
    result = S.run({"a": {PART: code}, "b": {PART: huge}, "c": ANSWERS["s07"]}, COURSE)
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
    assert [g.students for g in found.groups] == [("c2", "s03")]  # c2 from its submission
    assert "id='similarity'" in (tmp_path / "summary.html").read_text() and "1 groups" in said[0]
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
    grades = gk.read_grades(out)
    ids = {name: next(s for s in grades if s.startswith(name)) for name in ("annaa", "bobb", "cyc")}
    rows = list(csv.reader((out / "similarity.csv").open(newline="")))
    assert [r[5:7] for r in rows[1:] if r[9] == "yes"] == [[ids["annaa"], ids["bobb"]]] and rows[1][0] == PART
    page = (out / "summary.html").read_text()
    assert "id='similarity'" in page and "<mark>" in page
    assert json.loads((out / "summary.json").read_text())["similarity"]["groups"] == 1
    for student, other in (("annaa", "bobb"), ("bobb", "annaa")):
        text = (out / "feedback" / f"{ids[student]}.html").read_text()
        assert "similar" not in text.lower() and other not in text
    assert {s: r["status"] for s, r in grades.items()} == dict.fromkeys(ids.values(), "graded")
    lms = list(csv.reader((out / "canvas.csv").open(newline="")))
    assert lms[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Softmax"]  # the roster's column
    graded = {r[1]: r[5] for r in lms[2:]}  # on the roster's scale (tests/grading/test_export.py)
    assert graded["104"] == "" and all(float(graded[uid]) > 0 for uid in ("101", "102", "103"))
    bad = gk.run_attngrade("01_softmax", subs, "--out", tmp_path / "o2", "--roster", roster)
    assert bad.returncode == 2 and "--export" in bad.stderr and not (tmp_path / "o2").exists()
