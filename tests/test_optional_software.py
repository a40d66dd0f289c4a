"""The suite on a machine without the optional software: skipped with one reason, or failed under CI.

The README's ``make test`` must pass on a fresh machine that has only what the README requires.
These tests run the browser group and the PostgreSQL gradebook tests in a child pytest with
Chromium and PostgreSQL hidden, and check both policies of ``tests/conftest.py``: outside CI every
such test is skipped (none errors, nothing is built) with one line naming what is missing and how
to install it; under ``CI=true`` every such test fails (both groups in one child run, each
test's outcome read from its JUnit report).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]


def run_hidden(paths: list[str], ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in {"CI", "ATTNGRADE_TEST_PG_URL", "ATTNMATH_BOOK_HTML", "PYTEST_ADDOPTS",
                        "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT"}}
    env["ATTNMATH_CHROMIUM"] = ""  # hides Chromium wherever it is installed
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/bin"
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", *paths, "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def counts(output: str) -> dict[str, int]:
    last = [line for line in output.splitlines() if line.strip()][-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", last)}


def test_without_chromium_or_postgres_the_groups_are_skipped_with_one_line_each():
    proc = run_hidden(["tests/browser", "tests/grading/test_postgres.py"], ci=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    n = counts(out)
    assert n.get("skipped", 0) > 0 and not n.get("failed") and not n.get("error") and not n.get("errors"), n
    assert not n.get("passed"), f"a test ran without its requirement: {n}"
    reasons = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    # one summary line per missing requirement, each saying how to get it
    assert len(reasons) == 2, reasons
    assert any("Chromium not found" in r and "apt-get install chromium" in r for r in reasons), reasons
    assert any("PostgreSQL" in r and "apt-get install postgresql" in r for r in reasons), reasons
    assert "book built in" not in out, "the book was built for skipped browser tests"


#: The groups that need optional software, each with the words of its missing-software line.
GROUPS = {"tests/browser": "Chromium not found", "tests/grading/test_postgres.py": "no PostgreSQL server"}


def outcomes(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """Each group's tests in a JUnit report: ``group -> [(outcome, message)]``, the outcome being
    passed, skipped, failure or error."""
    found: dict[str, list[tuple[str, str]]] = {group: [] for group in GROUPS}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        group = next((g for g in GROUPS if module.startswith(g.removesuffix(".py"))), None)
        assert group is not None, f"a test outside the groups: {case.get('classname')}::{case.get('name')}"
        ends = [(e.tag, e.get("message", "")) for e in case if e.tag in ("failure", "error", "skipped")]
        found[group].extend(ends or [("passed", "")])
    return found


def test_under_ci_a_missing_requirement_fails_each_group(tmp_path):
    # Both groups in one child run; the JUnit report says which test of which group did what.
    junit = tmp_path / "junit.xml"
    proc = run_hidden([*GROUPS, f"--junitxml={junit}"], ci=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    n = counts(out)
    assert not n.get("skipped") and not n.get("passed"), n
    for group, ends in outcomes(junit).items():
        # pytest counts a failure in set-up as an error: either way the run fails
        assert ends and all(outcome in ("failure", "error") for outcome, _ in ends), (group, ends[:5])
        assert all(GROUPS[group] in message and "required under CI=true" in message
                   for _, message in ends), (group, ends[:5])
