"""Student feedback shows the task and per-part results, never the hidden tests or their inputs."""

from __future__ import annotations

import html
import re

import nbformat
import numpy as np

import gradingkit as gk
from attngrade.spec import load_parts, make_cases
from attngrade import texmath


def _hidden_lines() -> list[str]:
    text = (gk.SOLUTIONS / "01_softmax" / "hidden_tests.py").read_text()
    return [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 12]


def _input_reprs() -> set[str]:
    """repr/str of every hidden case input that is more than a trivial number."""
    reprs = set()
    for part in load_parts(gk.SOLUTIONS / "01_softmax" / "hidden_tests.py").values():
        for case in make_cases(part):
            for value in (*case.args, *case.kwargs.values()):
                if isinstance(value, np.ndarray) and value.size > 1:
                    with np.printoptions(threshold=50):
                        for text in (repr(value), str(value), str(value.tolist())[:60]):
                            reprs.add(text)
                        reprs.add(repr(value.ravel()[:3].tolist())[1:-1])
    return {r for r in reprs if len(r) > 10}


def test_feedback_never_shows_hidden_tests_inputs_or_tracebacks(corpus_run):
    lines = _hidden_lines()
    reprs = _input_reprs()
    assert lines and reprs
    pages = sorted((corpus_run.out / "feedback").glob("*.html"))
    assert len(pages) == sum(1 for c in corpus_run.cases if c.assignment == "01_softmax")
    for page in pages:
        text = page.read_text().replace(page.stem, "STUDENT")  # case names mention what they try
        # The student's own code is theirs to see (it may name what it tried): leave it out here.
        text = re.sub(r"<pre class='code'>.*?</pre>", "", text, flags=re.S)
        plain = html.unescape(re.sub(r"<[^>]+>", " ", text))
        for line in lines:
            assert line not in text and line not in plain and html.escape(line) not in text, (page.name, line)
        for r in reprs:
            assert r not in plain, (page.name, r)
        for word in (
            "Traceback",
            "hidden_tests",
            "run_hidden_tests",
            "AssertionError",
            "expected",
            "float16",
            "/work/",
            "allocated",
        ):
            assert word not in plain or word in _release_text(), (page.name, word)


def _release_text() -> str:
    return " ".join(c.source for c in gk.release("01_softmax").cells if c.cell_type == "markdown")


def test_feedback_shows_the_task_points_and_a_short_reason(corpus_run):
    page = (corpus_run.out / "feedback" / "02_loop_in_function.html").read_text()
    assert "Part 1 — A stable softmax along any axis" in page
    assert "5 / 8" in page
    assert "failed (timed out" in page and "passed" in page
    page = (corpus_run.out / "feedback" / "08_allocate_50gb.html").read_text()
    assert "raised MemoryError" in page
    page = (corpus_run.out / "feedback" / "25_calls_attnmath.html").read_text()
    # attnmath is absent from the sandbox: the import fails, or the static check names the call.
    assert re.search(r"no credit: calls a reference implementation|its cell raised (ModuleNotFound|Import)Error", page)
    page = (corpus_run.out / "feedback" / "32_truncated_json.html").read_text()
    assert "could not be read" in page
    page = (corpus_run.out / "feedback" / "06_segfault.html").read_text()
    assert "crashed" in page and "SIGSEGV" in page


def test_feedback_names_the_kind_of_case_shows_the_code_and_renders_maths(tmp_path):
    rel = gk.release("01_softmax")
    right = gk.solution_answers("01_softmax")
    memory = dict(
        right,
        softmax_vjp="def softmax_vjp(p, g):\n"
        "    J = p[..., :, None] * (np.eye(p.shape[-1]) - p[..., None, :])  # the whole Jacobian\n"
        "    return np.einsum('...ij,...i->...j', J, g)\n",
        jacobian_proof="Differentiate $\\sum_j p_j = 1$, so $J = \\mathrm{diag}(p) - p\\,p^\\top$.",
    )
    raising = dict(right, stable_softmax="1 / 0\n\ndef stable_softmax(x, axis=-1):\n    return x\n")
    folder = tmp_path / "flat"
    folder.mkdir()
    for student, answers in {"memory": memory, "raising": raising}.items():
        nbformat.write(gk.fill_any(rel, answers), folder / f"{student}.ipynb")
    out = tmp_path / "out"
    proc = gk.run_attngrade("01_softmax", folder, "--out", out, "--no-gradebook", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (out / "feedback" / "memory.html").read_text()
    parts = load_parts(gk.SOLUTIONS / "01_softmax" / "hidden_tests.py").values()
    kinds = {c.kind for p in parts for c in make_cases(p)}
    assert "the kind of case that failed: memory limit on long rows" in page
    assert "memory limit on long rows" in kinds
    assert "np.einsum('...ij,...i->...j', J, g)" in _code_text(page)  # the student's own code
    assert page.count("Your code for part") == 1  # only for the failed part
    assert "<td>graded by your instructor</td>" in page  # an answered written part
    if texmath.typeset([("x", False)]).markup:  # Node.js typeset the task's maths into the page
        assert "<mjx-container" in page and "<script" not in page and "texnote" not in page
    else:  # verbatim TeX (no mangled "\,") for the local MathJax, loaded from beside the page
        assert "J = \\mathrm{diag}(p) - p\\,p^\\top" in page and "id='texnote'" in page
        assert "src='mathjax/tex-chtml.js'" in page and (out / "feedback" / "mathjax" / "tex-chtml.js").is_file()
    page = (out / "feedback" / "raising.html").read_text()
    assert "raised ZeroDivisionError" in page and "is not defined" not in page
    assert "Written answer: not answered: 0 of 2 points" in page
    assert "<td>graded by your instructor</td>" not in page and "Written answer: graded" not in page
    assert "up to" not in page  # nothing promised for an unanswered written part


def test_every_hidden_case_has_a_kind_that_gives_nothing_away():
    parts = 0
    for assignment in gk.ASSIGNMENTS:
        for part in load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").values():
            parts += 1
            cases = make_cases(part)
            for case in cases:
                assert case.kind.strip(), (assignment, part.grade_id, case.label)
                assert not re.search(r"[=(\[]|\d+\s*[x,]\s*\d+", case.kind), (assignment, case.kind)
            if len(cases) > 3:  # the feedback tells the kinds of a part's cases apart
                assert len({c.kind for c in cases}) > 1, (assignment, part.grade_id)
    assert parts >= 4 * len(gk.ASSIGNMENTS)


# ---- unit level: one page written from a hand-made result (no grading run) --------------------

import mathjax_node  # noqa: E402
import pytest  # noqa: E402

from attngrade import report  # noqa: E402
from attngrade.grader import PartResult, Result, load_assignment, load_course  # noqa: E402

needs_node = pytest.mark.skipif(not mathjax_node.renderer_available(),
                                reason="needs Node.js and node_modules/mathjax-full (make book installs them)")


def _code_text(page: str) -> str:
    """The text of a page's code blocks, as the student reads it."""
    blocks = re.findall(r"<pre class='code'>(.*?)</pre>", page, flags=re.S)
    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks)


@pytest.fixture(scope="module")
def softmax_spec():
    return load_assignment(load_course(gk.ROOT), "01_softmax")


def _page(spec, folder, code: str):
    """A page of a student whose first part failed, with ``code`` as its answer."""
    first = spec.parts[0]
    answer = report._answer_cell_of(spec, first.grade_id)
    result = Result("ana", "graded", file="ana_12_34_softmax.ipynb",
                    notebook=gk.fill_any(gk.release(spec.name), {answer: code}))
    for p in spec.parts:
        ok = p is not first
        result.parts[p.grade_id] = PartResult(p.points if ok else 0.0, p.points, ok,
                                              "passed" if ok else "failed (wrong values)", "case 0: x")
    return report.write_feedback(folder, spec, result).read_text(encoding="utf-8")


def test_code_shows_its_own_line_breaks_and_escapes_only_other_controls(tmp_path, softmax_spec):
    code = "def stable_softmax(x, axis=-1):\r\n\tm = x.max()  # \x1b[31m\u202e\n    return x - m\n"
    page = _page(softmax_spec, tmp_path, code)
    shown = _code_text(page)
    assert shown.splitlines() == ["def stable_softmax(x, axis=-1):", "    m = x.max()  # \\x1b[31m\\u202e",
                                  "    return x - m"]
    assert "\\x0a" not in page and "\\x0d" not in page and "\x1b" not in page and "\u202e" not in page
    block = report.code_html("s = '</pre><script>alert(1)</script>'\n")
    assert "<script" not in block and block.count("</pre>") == 1  # the code is text, never markup


def test_long_code_is_cut_with_a_note(tmp_path):
    block = report.code_html("x = 1\n" * 5000)
    assert _code_text(block).count("x = 1") == report.MAX_CODE_CHARS // 6
    assert f"({5000 * 6 - report.MAX_CODE_CHARS} more characters not shown)" in block


def _without_node(monkeypatch):
    monkeypatch.setattr(mathjax_node, "renderer_available", lambda: False)


def test_without_node_the_maths_stays_tex_and_the_page_says_so(tmp_path, softmax_spec, monkeypatch):
    _without_node(monkeypatch)
    page = _page(softmax_spec, tmp_path / "alone", "def stable_softmax(x, axis=-1):\n    return x\n")
    assert "id='texnote'" in page and html.escape(texmath.NOTE) in page
    assert html.escape("$$\nJ_{ij} = \\frac{\\partial p_i}{\\partial z_j}") in page
    assert "<mjx-container" not in page and "<script" not in page  # no MathJax beside it: none loaded
    (tmp_path / "served" / "mathjax").mkdir(parents=True)
    (tmp_path / "served" / "mathjax" / "tex-chtml.js").write_text("")
    page = _page(softmax_spec, tmp_path / "served", "def stable_softmax(x, axis=-1):\n    return x\n")
    assert "src='mathjax/tex-chtml.js'" in page and "getElementById('texnote')" in page


@needs_node
def test_with_node_the_page_carries_its_typeset_maths_and_fonts(tmp_path, softmax_spec, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(texmath, "_MEMORY", {})
    page = _page(softmax_spec, tmp_path / "a", "def stable_softmax(x, axis=-1):\n    return x\n")
    formulas = texmath.formulas_in(t for _, ts in report._task_sections(softmax_spec) for t in ts)
    assert page.count("<mjx-container") >= len(formulas) > 10
    assert "texnote" not in page and "<script" not in page
    prose = re.sub(r"<pre class='code'>.*?</pre>|<code>.*?</code>|<style>.*?</style>", "", page, flags=re.S)
    assert "$" not in prose  # every formula typeset, none left as TeX
    # Self-contained: every font the maths uses is inside the page, nothing is fetched.
    assert "data:font/woff;base64," in page and "MathJax_Math-Italic" not in page
    assert not re.search(r"url\((?!\"?data:)|\bsrc=|<link", page)
    # Node.js ran once for the assignment: the next page (another process: the disk cache) needs none.
    monkeypatch.setattr(texmath, "_MEMORY", {})
    monkeypatch.setattr(mathjax_node, "run_mathjax", lambda *a, **k: pytest.fail("MathJax ran again"))
    assert _page(softmax_spec, tmp_path / "b", "pass\n").count("<mjx-container") == page.count("<mjx-container")


@needs_node
def test_a_formula_mathjax_refuses_stays_tex_with_the_note(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    formulas = texmath.formulas_in(["$x \\in \\R^n$ and $\\notamacro{x}$ but `$code$`"])
    assert formulas == [("\\notamacro{x}", False), ("x \\in \\R^n", False)]  # code spans are no maths
    maths = texmath.typeset(formulas)
    assert list(maths.markup) == [("x \\in \\R^n", False)] and not maths.complete(formulas)
    assert maths.formula("$\\notamacro{x}$") == "$\\notamacro{x}$"
