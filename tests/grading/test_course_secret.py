"""A course secret changes every hidden case's inputs, and nothing else: the public hidden tests
reveal the kinds of cases, not their inputs, and the solution keeps full marks."""

from __future__ import annotations

import contextlib
import io
import re
import warnings

import numpy as np
import pytest

import gradingkit as gk
from attngrade.notebooks import cell_grade_id
from attngrade.spec import check_outputs, compute_outputs, course_secret, load_parts, make_cases


def _solution_namespace(assignment: str) -> dict:
    """The release's setup and answer cells with the solution's answers, run (no checks)."""
    answers, namespace = gk.solution_answers(assignment), {}
    for cell in gk.release(assignment).cells:
        gid = cell_grade_id(cell)
        if cell.cell_type != "code" or (gid or "").startswith("test_"):
            continue
        source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", answers.get(gid, cell.source), flags=re.S)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, gid or "cell", "exec"), namespace)  # noqa: S102 - our own notebooks
    return namespace


def _inputs(case) -> list:
    return [v for v in (*case.args, *case.kwargs.values()) if isinstance(v, np.ndarray) and v.size > 1]


@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_a_secret_draws_other_inputs_of_the_same_kinds_and_the_solution_passes_them(assignment):
    namespace = _solution_namespace(assignment)
    for gid, part in load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").items():
        public, secret = make_cases(part), make_cases(part, "course secret")
        assert make_cases(part, "course secret")[0].label == secret[0].label, "the same secret, the same cases"
        shape = [(c.label, c.kind, c.tol, c.max_peak_bytes) for c in public]
        assert [(c.label, c.kind, c.tol, c.max_peak_bytes) for c in secret] == shape, gid
        arrays = [(a, b) for p, s in zip(public, secret) for a, b in zip(_inputs(p), _inputs(s)) if a.shape == b.shape]
        random = [(a, b) for a, b in arrays if len(np.unique(a)) > 2]
        if random:  # a part whose inputs are all constructed (no draw) has nothing to hide
            assert any(not np.array_equal(a, b) for a, b in random), (gid, "the secret changes the drawn inputs")
        fn = namespace[part.function]
        passed, reason = check_outputs(part, secret, compute_outputs(fn, secret))
        assert passed, (gid, reason)


def test_the_secret_comes_from_the_environment_or_the_course_root(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNGRADE_COURSE_SECRET", raising=False)
    assert course_secret(tmp_path) is None
    (tmp_path / ".attngrade-secret").write_text("  from the file \nsecond line\n")
    assert course_secret(tmp_path) == "from the file"
    monkeypatch.setenv("ATTNGRADE_COURSE_SECRET", "from the environment")
    assert course_secret(tmp_path) == "from the environment"
    assert ".attngrade-secret" in (gk.ROOT / ".gitignore").read_text().split()


@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_each_case_of_a_part_has_a_label_of_its_own(assignment):
    """The grader names a failed case by its label: feedback and statistics find its kind by it."""
    for gid, part in load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py").items():
        labels = [c.label for c in make_cases(part)]
        assert len(labels) == len(set(labels)), (gid, sorted({x for x in labels if labels.count(x) > 1}))
