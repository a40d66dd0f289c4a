"""Per-student variants (attngrade.variants): each student's parameters drawn from the course
secret and their id, the same on the release, the visible checks, the hidden tests and similarity.

One real attngrade run (module-scoped, ``graded``): alice answers 01_softmax in her own style for
her temperature, bob hands in alice's notebook (his temperature differs), carol the solution for
hers. The rest are unit-level: every variant of every assignment that has them, its solution
rendered for it, a classmate's answer for another value, the release and the visible checks read
from a student's folder.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import types

import nbformat
import numpy as np
import pytest

import gradingkit as gk
from attngrade.codeprint import code_print
from attngrade.notebooks import answer_cells
from attngrade.release import release_class
from attngrade.similarity import compare_part, part_scores, variant_note
from attngrade.spec import SECRET_ENV, _autograded_student, check_outputs, compute_outputs, load_parts, make_cases, \
    run_hidden_tests, visible_cases
from attngrade.variants import VARIANT_FILE, Param, Variants, render_notebook, statement_cells
from attngrade.visible import check_part

SECRET = "variants test secret"
VARIED = [a for a in gk.ASSIGNMENTS if any(p.variants for p in load_parts(gk.SOLUTIONS / a / "hidden_tests.py").values())]


def _variants(assignment):
    return next(p.variants for p in load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").values() if p.variants)


def _answers(assignment, values):
    """The solution's answers rendered for ``values``, defined in a namespace of their own."""
    nb = nbformat.read(gk.SOLUTIONS / assignment / gk.notebook_name(assignment), as_version=4)
    ns: dict = {}
    exec("import math\nimport numpy as np", ns)
    for src in answer_cells(render_notebook(nb, _variants(assignment), values)).values():
        exec(src, ns)
    return ns


def _student_with(variants, values, taken=()):
    """A student id whose variant under SECRET is ``values``."""
    return next(s for s in (f"student{i}" for i in range(2000)) if s not in taken
                and variants.draw(SECRET, s) == values)


def _passes(part, cases, fn) -> bool:
    return check_outputs(part, cases, compute_outputs(fn, cases))[0]


def test_three_assignments_have_variants_and_a_draw_is_deterministic_and_spread():
    assert len(VARIED) >= 3, VARIED
    assert not {"08_flash", "15_recurrence", "16_programmable", "17_triton_flash"} & set(VARIED)
    for assignment in VARIED:
        v = _variants(assignment)
        assert v.assignment == assignment
        assert v.draw(None, "alice") == v.draw(SECRET, None) == v.default()
        drawn = [v.draw(SECRET, f"s{i}") for i in range(40)]
        assert drawn == [v.draw(SECRET, f"s{i}") for i in range(40)], "the same secret and id, the same variant"
        assert len({json.dumps(d, sort_keys=True) for d in drawn}) >= 3, "students get different variants"
        assert drawn != [v.draw("another secret", f"s{i}") for i in range(40)]


@pytest.mark.parametrize("assignment", VARIED)
def test_each_variant_s_solution_passes_and_a_classmate_s_fails_where_the_parameter_matters(assignment):
    v = _variants(assignment)
    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    (param,) = v.params
    values = [v.default(), *({param.name: c} for c in param.choices)]
    answers = [_answers(assignment, x) for x in values]
    taken: list = []
    for mine, own in zip(values, answers):
        student = None if mine == v.default() else _student_with(v, mine, taken)
        taken.append(student)
        for gid, part in parts.items():
            hidden, visible = make_cases(part, SECRET, student), visible_cases(part, mine if part.variants else None)
            assert _passes(part, hidden, own[part.function]) and _passes(part, visible, own[part.function]), \
                (assignment, mine, gid)
            if part.variants is None:
                continue
            for theirs, other in zip(values, answers):  # a classmate's answer, right for their variant
                if theirs != mine:
                    assert not _passes(part, hidden, other[part.function]), (assignment, gid, mine, theirs)
                    assert not _passes(part, visible, other[part.function]), (assignment, gid, mine, theirs)


@pytest.mark.parametrize("assignment", VARIED)
def test_the_task_text_states_the_value_and_the_source_holds_the_default(assignment):
    v = _variants(assignment)
    nb = nbformat.read(gk.SOLUTIONS / assignment / gk.notebook_name(assignment), as_version=4)
    cells = statement_cells(nb)
    assert cells and {n for _, names in cells for n in (names or [p.name for p in v.params])} == \
        {p.name for p in v.params}, "every parameter is stated"
    assert render_notebook(nb, v, v.default()) == nb, "the source states the default variant (course copy)"
    release = nbformat.read(gk.EXERCISES / assignment / gk.notebook_name(assignment), as_version=4)
    assert [release.cells[i].source for i, _ in statement_cells(release)] == [nb.cells[i].source for i, _ in cells]
    assert not (gk.EXERCISES / assignment / VARIANT_FILE).exists(), "the default release has no variant file"
    param = v.params[0]
    other = render_notebook(nb, v, {param.name: param.choices[-1]})
    for i, _ in cells:
        assert f"**{param.text(param.choices[-1])}**" in other.cells[i].source
        assert f"**{param.text(param.default)}**" not in other.cells[i].source


def test_a_variant_file_is_checked_and_bad_parameters_are_refused(tmp_path):
    v = Variants("demo", (Param("window", default=4, choices=(2, 3), says="the window $w$"),))
    assert v.read(tmp_path) == {"window": 4}
    v.write(tmp_path, {"window": 3}, "alice")
    assert v.read(tmp_path) == {"window": 3}
    (tmp_path / VARIANT_FILE).write_text(json.dumps({"assignment": "demo", "values": {"window": 7}}))
    with pytest.raises(ValueError, match="window = 7"):
        v.read(tmp_path)
    (tmp_path / VARIANT_FILE).write_text("{not json")
    with pytest.raises(ValueError, match=VARIANT_FILE):
        v.read(tmp_path)
    with pytest.raises(ValueError, match="choices"):
        Param("w", default=1, choices=(2,), says="")
    with pytest.raises(ValueError, match="student"):
        v.draw(SECRET, "")


def test_the_release_writes_each_student_s_notebook_and_file_and_the_visible_checks_read_it(tmp_path):
    v = _variants("01_softmax")
    alice = _student_with(v, {"temperature": 0.5})
    bob = _student_with(v, {"temperature": 2.0})
    with pytest.raises(ValueError, match="secret"):
        release_class(gk.EXERCISES, ["01_softmax"], [alice], "", tmp_path)
    with pytest.raises(ValueError, match="student id"):
        release_class(gk.EXERCISES, ["01_softmax"], ["../x"], SECRET, tmp_path)
    listed = release_class(gk.EXERCISES, ["01_softmax", "03_gradients"], [alice, bob], SECRET, tmp_path)
    rows = list(csv.DictReader(listed.open()))
    assert {(r["student"], r["value"]) for r in rows} == {(alice, "0.5"), (bob, "2.0")}
    folder = tmp_path / alice / "01_softmax"
    assert v.read(folder) == {"temperature": 0.5} and not (tmp_path / alice / "03_gradients" / VARIANT_FILE).exists()
    nb = nbformat.read(folder / "softmax.ipynb", as_version=4)
    assert all("**0.5**" in nb.cells[i].source for i, _ in statement_cells(nb))
    mine, classmate = _answers("01_softmax", {"temperature": 0.5}), _answers("01_softmax", {"temperature": 2.0})
    for fn in ("stable_softmax", "softmax_jacobian", "softmax_vjp"):
        check_part(types.SimpleNamespace(), fn, mine[fn], folder=folder)
        with pytest.raises(AssertionError):
            check_part(types.SimpleNamespace(), fn, classmate[fn], folder=folder)
    check_part(types.SimpleNamespace(), "stable_softmax", classmate["stable_softmax"], folder=tmp_path / bob / "01_softmax")


def test_stock_autograde_grades_the_student_of_its_folder(tmp_path, monkeypatch):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    shutil.copytree(gk.SOLUTIONS / "01_softmax", tmp_path / "solutions" / "01_softmax",
                    ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    v = _variants("01_softmax")
    alice = _student_with(v, {"temperature": 0.25})
    folder = tmp_path / "autograded" / alice / "01_softmax"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    assert _autograded_student(tmp_path, "01_softmax") == alice
    assert _autograded_student(tmp_path, "02_attention") is None
    (folder / VARIANT_FILE).write_text(json.dumps({"assignment": "01_softmax", "values": {"temperature": 4.0}}))
    mine, classmate = _answers("01_softmax", {"temperature": 0.25}), _answers("01_softmax", {"temperature": 4.0})
    run_hidden_tests("01_softmax", "test_stable_softmax", mine)  # the id decides, not the file
    with pytest.raises(AssertionError, match="hidden tests of stable_softmax failed"):
        run_hidden_tests("01_softmax", "test_stable_softmax", classmate)
    monkeypatch.chdir(tmp_path)
    assert _autograded_student(tmp_path, "01_softmax") is None


HONEST = [
    "def stable_softmax(x, axis=-1):\n    t = {T}\n    m = np.max(x, axis=axis, keepdims=True)\n"
    "    e = np.exp((x - m) / t)\n    return e / np.sum(e, axis=axis, keepdims=True)\n",
    "def stable_softmax(x, axis=-1):\n    z = np.asarray(x, dtype=np.float64) / {T}\n    z = z - z.max(axis, keepdims=True)\n"
    "    out = np.exp(z)\n    out /= out.sum(axis, keepdims=True)\n    return out\n",
    "def stable_softmax(x, axis=-1):\n    a = np.moveaxis(np.array(x, float), axis, -1)\n"
    "    b = np.exp((a - a.max(-1)[..., None]) * (1 / {T}))\n    return np.moveaxis(b / b.sum(-1)[..., None], -1, axis)\n",
    "def stable_softmax(x, axis=-1):\n    scaled = x / {T}\n    peak = np.amax(scaled, axis=axis, keepdims=True)\n"
    "    w = np.exp(scaled - peak)\n    total = w.sum(axis=axis, keepdims=True)\n    return w / total\n",
]
COPIED = ("def stable_softmax(x, axis=-1):\n    temperature = {T}\n    work = np.asarray(x)\n"
          "    if work.dtype == np.float16:\n        work = work.astype(np.float32)\n"
          "    top = np.max(work, axis=axis, keepdims=True)\n    ex = np.exp((work - top) / temperature)\n"
          "    return ex / ex.sum(axis=axis, keepdims=True)\n")


def test_a_difference_only_in_the_parameter_is_no_difference_and_a_copy_across_variants_is_named():
    literals = {0.5: "VARIANT_temperature", 2.0: "VARIANT_temperature"}
    a, b = COPIED.format(T=0.5), COPIED.format(T=2.0)
    assert set(code_print(a).features) != set(code_print(b).features)
    assert set(code_print(a, literals).features) == set(code_print(b, literals).features)
    variants = {"params": {"temperature": [1.0, 0.25, 0.5, 2.0, 4.0]},
                "values": {"ann": {"temperature": 0.5}, "ben": {"temperature": 2.0}}}
    assert "ben's answer writes ann's temperature 0.5, not ben's own 2" in variant_note("ann", "ben", a, a, variants)
    assert variant_note("ann", "ben", a, b, variants) == ""  # each wrote their own value
    same = "def stable_softmax(x, axis=-1):\n    return np.exp(x) / np.exp(x).sum(axis, keepdims=True)\n"
    assert "the same code for two variants (temperature 0.5 and 2)" in variant_note("ann", "ben", same, same, variants)
    assert variant_note("ann", "ann2", same, same, {**variants, "values": {"ann": {"temperature": 0.5},
                                                                          "ann2": {"temperature": 0.5}}}) == ""
    answers = {f"h{i}": code.format(T=t) for i, (code, t) in enumerate(zip(HONEST, [0.25, 0.5, 2.0, 4.0]))}
    values = {f"h{i}": {"temperature": t} for i, t in enumerate([0.25, 0.5, 2.0, 4.0])}
    answers.update(ann=a, ben=a, cid=COPIED.format(T=4.0))
    values.update(ann={"temperature": 0.5}, ben={"temperature": 2.0}, cid={"temperature": 4.0})
    given = {"params": variants["params"], "values": values}
    groups, _, _ = compare_part("test_stable_softmax", answers, variants=given)
    noted = {(p.student_a, p.student_b): p.note for g in groups for p in g.pairs if p.note}
    assert groups and set(groups[0].students) >= {"ann", "ben"}, [g.students for g in groups]
    assert ("ann", "ben") in noted and "ben's answer writes ann's" in noted[("ann", "ben")], noted
    assert all(a in ("ann", "ben") and b in ("ann", "ben") for a, b in noted), "honest answers get no note"
    with_variants = part_scores("test_stable_softmax", answers, variants=given)
    without = part_scores("test_stable_softmax", answers)
    assert with_variants.of("ann", "cid")[0] == with_variants.of("ann", "ben")[0], "only the value differs: a copy"
    assert without.of("ann", "cid")[0] < without.of("ann", "ben")[0]


# ----------------------------------------------------------------------------- one attngrade run

ALICE = {
    "stable_softmax": "def stable_softmax(x, axis=-1):\n    temp = {T}\n    arr = np.asarray(x)\n"
                      "    if arr.dtype == np.float16:\n        arr = arr.astype(np.float32)\n"
                      "    top = arr.max(axis=axis, keepdims=True)\n    w = np.exp((arr - top) / temp)\n"
                      "    return w / w.sum(axis=axis, keepdims=True)\n",
    "softmax_jacobian": "def softmax_jacobian(z):\n    temp = {T}\n    p = stable_softmax(np.asarray(z, dtype=float))\n"
                        "    return (np.eye(p.shape[0]) * p[:, None] - p[:, None] * p[None, :]) / temp\n",
    "softmax_vjp": "def softmax_vjp(p, g):\n    temp = {T}\n    dot = (p * g).sum(axis=-1)[..., None]\n"
                   "    return p * (g - dot) / temp\n",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from attngrade.pipeline import Options, grade_class
    from attngrade.sandbox import Limits

    v = _variants("01_softmax")
    alice = _student_with(v, {"temperature": 0.5})
    bob = _student_with(v, {"temperature": 4.0})
    carol = _student_with(v, {"temperature": 2.0})
    base = tmp_path_factory.mktemp("variants")
    release_class(gk.EXERCISES, ["01_softmax"], [alice, bob, carol], SECRET, base / "releases")
    own = {s: nbformat.read(base / "releases" / s / "01_softmax" / "softmax.ipynb", as_version=4) for s in (alice, carol)}
    ids = {g: c.metadata["nbgrader"]["grade_id"] for c in own[alice].cells for g in ALICE
           if c.cell_type == "code" and c.source.startswith(f"def {g}(")}
    hers = gk.fill_any(own[alice], {ids[g]: src.format(T=0.5) for g, src in ALICE.items()})
    folder = base / "flat"
    folder.mkdir()
    nbformat.write(hers, folder / f"{alice}.ipynb")
    nbformat.write(hers, folder / f"{bob}.ipynb")  # bob hands in alice's notebook
    source = nbformat.read(gk.SOLUTIONS / "01_softmax" / "softmax.ipynb", as_version=4)
    solution = {g: src for g, src in answer_cells(render_notebook(source, v, {"temperature": 2.0})).items()
                if g in ids.values()}
    nbformat.write(gk.fill_any(own[carol], solution), folder / f"{carol}.ipynb")
    out = folder.parent / "out"
    old = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = SECRET
    try:
        opts = Options("01_softmax", str(folder), out, jobs=2, limits=Limits(timeout=30), no_gradebook=True,
                       autograded_dir=str(out / "autograded"), say=lambda *a: None)
        assert grade_class(opts) == 0
    finally:
        if old is None:
            del os.environ[SECRET_ENV]
        else:
            os.environ[SECRET_ENV] = old
    return types.SimpleNamespace(out=out, alice=alice, bob=bob, carol=carol, rows=gk.read_grades(out))


def test_the_grader_draws_each_student_s_variant_and_a_classmate_s_answer_scores_zero(graded):
    rows, full = graded.rows, gk.max_points("01_softmax")
    assert float(rows[graded.alice]["score"]) == full, rows[graded.alice]
    assert float(rows[graded.carol]["score"]) == full, rows[graded.carol]
    assert float(rows[graded.bob]["score"]) == 0, rows[graded.bob]
    assert {rows[s]["status"] for s in (graded.alice, graded.bob, graded.carol)} == {"graded"}, \
        "a student's own release (its statement cells) is no change to flag"


def test_similarity_names_the_answer_copied_across_variants(graded):
    rows = list(csv.DictReader((graded.out / "similarity.csv").open(newline="", encoding="utf-8")))
    pair = next(r for r in rows if {r["student_a"], r["student_b"]} == {graded.alice, graded.bob})
    assert pair["listed"] == "yes"
    assert f"{graded.bob}'s answer writes {graded.alice}'s temperature 0.5" in pair["variants"], pair
    page = (graded.out / "summary.html").read_text(encoding="utf-8")
    assert "sim-variant" in page and "temperature 0.5" in page
    assert np.isfinite(float(pair["score"]))
