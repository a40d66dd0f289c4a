"""Student feedback shows the task and per-part results, never the hidden tests or their inputs."""

from __future__ import annotations

import html
import re

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
    assert len(pages) == len(corpus_run.cases)
    for page in pages:
        text = page.read_text().replace(page.stem, "STUDENT")  # case names mention what they try
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
    assert "no credit: calls a reference implementation" in page
    page = (corpus_run.out / "feedback" / "32_truncated_json.html").read_text()
    assert "could not be read" in page
    page = (corpus_run.out / "feedback" / "06_segfault.html").read_text()
    assert "crashed" in page and "SIGSEGV" in page
