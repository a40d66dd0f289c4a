"""Student feedback shows the task and per-part results, never the hidden tests or their inputs."""

from __future__ import annotations

import html
import re

import nbformat
import numpy as np

import gradingkit as gk
from attngrade.spec import load_parts, make_cases


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
    assert html.escape("np.einsum('...ij,...i->...j', J, g)") in page  # the student's own code
    assert page.count("Your code for part") == 1  # only for the failed part
    assert "<td>graded by your instructor</td>" in page  # an answered written part
    # Maths stays verbatim for the local MathJax (no mangled "\,"), loaded from beside the page.
    assert "J = \\mathrm{diag}(p) - p\\,p^\\top" in page
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
