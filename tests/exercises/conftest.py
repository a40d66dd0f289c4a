"""Fixtures for the exercise tests: a throw-away nbgrader course built from the repository.

Every assignment in ``solutions/`` is generated once per run into a temporary course
(``nbgrader_course``, tests/conftest.py). One stock ``nbgrader autograde`` of every assignment's
solution, release and samples, shared by every xdist worker and started in the background as
soon as the tests are collected, gives the scores the ``graded`` tests read (the
``stock_autograde`` fixture of tests/conftest.py, tests/stock_autograde.py). The release-sync
check reads ``nbgrader_course`` itself and never waits for the autograde.
"""

from __future__ import annotations

import pytest

from stock_autograde import (  # noqa: F401  (tests/stock_autograde.py; the tests import them from here)
    AUTOGRADE_ARGS, ASSIGNMENTS, ROOT, SAMPLES, SOLUTIONS, GradedCourse, forked_kernels, notebook_name)

EXERCISES = ROOT / "exercises"


@pytest.fixture(scope="session", params=ASSIGNMENTS)
def graded(request, stock_autograde) -> GradedCourse:
    """The generated assignment, with the solution, the untouched release and every sample
    submitted and autograded."""
    result = stock_autograde[request.param]
    if isinstance(result, str):
        raise RuntimeError(f"nbgrader autograde failed for {request.param}: {result}")
    return result
