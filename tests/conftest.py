"""What the whole suite shares: optional system software, and builds shared by pytest-xdist workers.

**Optional software.** A test that needs software the README lists as optional carries
``@pytest.mark.needs("chromium")`` (or ``"postgres"``); every test under ``tests/browser/`` needs
Chromium without saying so. Outside CI a missing requirement skips those tests with one line that
says what is missing and how to get it; under ``CI=true`` it fails them, so that CI can never pass
by skipping a whole group.

Builds that several test modules share across pytest-xdist workers are in ``tests/support.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def in_ci() -> bool:
    """True under CI (``CI=true``, as .ci/run is run): optional software is required there."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def find_chromium() -> str | None:
    """``$ATTNMATH_CHROMIUM`` if set (an empty value hides Chromium), else chromium on ``PATH``."""
    if "ATTNMATH_CHROMIUM" in os.environ:
        path = os.environ["ATTNMATH_CHROMIUM"]
        return path if path and os.access(path, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def find_postgres() -> str | None:
    """The URL of a PostgreSQL server for the gradebook tests, from ``$ATTNGRADE_TEST_PG_URL``."""
    return os.environ.get("ATTNGRADE_TEST_PG_URL") or None


#: requirement -> (finder, what is missing and how to get it)
OPTIONAL = {
    "chromium": (find_chromium,
                 "Chromium not found: the browser tests need it (apt-get install chromium, "
                 "or set ATTNMATH_CHROMIUM=/path/to/chromium)"),
    "postgres": (find_postgres,
                 "no PostgreSQL server: set ATTNGRADE_TEST_PG_URL=postgresql://user@127.0.0.1/db "
                 "(apt-get install postgresql; .ci/run starts one on loopback)"),
}


def requirements_of(item: pytest.Item) -> list[str]:
    needs = [arg for mark in item.iter_markers("needs") for arg in mark.args]
    if BROWSER_DIR in Path(str(item.path)).parents:
        needs.append("chromium")
    unknown = set(needs) - set(OPTIONAL)
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: unknown requirement(s) {sorted(unknown)} in "
                                f"@pytest.mark.needs; known: {sorted(OPTIONAL)}")
    return sorted(set(needs))


_missing: dict[str, int] = {}

# Expensive session- or module-scoped fixtures: every test that uses one runs on the same
# pytest-xdist worker (``--dist loadgroup``), so each is built once per run.
XDIST_GROUP_BY_FIXTURE = {"corpus_run": "grading-corpus"}  # (tests/exercises groups its own, per assignment)
XDIST_GROUP_BY_FILE = {"tests/grading/test_nbgrader.py": "grading-nbgrader"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(True for _ in item.iter_markers("xdist_group")):
            continue
        group = XDIST_GROUP_BY_FILE.get(Path(str(item.path)).relative_to(ROOT).as_posix())
        for name in getattr(item, "fixturenames", ()):
            group = group or XDIST_GROUP_BY_FIXTURE.get(name)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture of the test is set up, so a skipped browser test builds no book.
    for need in requirements_of(item):
        finder, message = OPTIONAL[need]
        if finder() is None:
            if in_ci():
                pytest.fail(f"{message} (required under CI=true)", pytrace=False)
            _missing[need] = _missing.get(need, 0) + 1
            pytest.skip(message)


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for need, (finder, message) in OPTIONAL.items():
        found = finder()
        if need == "postgres" and found:
            found = "ATTNGRADE_TEST_PG_URL is set"
        lines.append(f"optional {need}: {found}" if found else
                     f"optional {need}: missing, its tests {'FAIL (CI)' if in_ci() else 'are skipped'}: "
                     f"{message}")
    return lines
