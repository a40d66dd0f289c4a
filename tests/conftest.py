"""What the whole suite shares: optional system software, and builds shared by pytest-xdist workers.

**Optional software.** A test that needs software the README lists as optional carries
``@pytest.mark.needs("chromium")`` (or ``"postgres"``); every test under ``tests/browser/`` needs
Chromium without saying so. Outside CI a missing requirement skips those tests with one line that
says what is missing and how to get it; under ``CI=true`` it fails them, so that CI can never pass
by skipping a whole group.

Builds that several test modules share across pytest-xdist workers are in ``tests/support.py``:
the book (``tests/book/build.py``), the nbgrader course with every assignment generated
(``nbgrader_course``), its stock nbgrader autograde (``stock_autograde``) and the grading
corpus's batch (``corpus_run``, tests/grading/conftest.py). Each is built once per run, and
started as soon as the tests are collected when a selected test needs it, so that it is built
while other tests run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Under pytest-xdist the suite runs one worker per CPU (`-n auto`), so a worker's own math-library
# threads only take CPU time from the other workers, and OpenMP's threads spin while they wait
# for work: tests/attnmath alone took 95 CPU seconds with torch's default threads and 76 with one,
# on 2 CPUs. Set before torch or NumPy is imported; the processes a test starts (the book's
# kernels, nbgrader's, the grader's) inherit it. A value set by the caller is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

# Every Python process the suite starts begins with tests/startup/sitecustomize.py (it keeps
# jsonschema from building parsers no schema here uses: one CPU second per process), and so does
# this one from here on.
STARTUP = ROOT / "tests" / "startup"
if str(STARTUP) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP), os.environ.get("PYTHONPATH")]))
sys.modules.setdefault("rfc3987_syntax", None)
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from headless_chromium import HOW_TO_GET, find_chromium  # noqa: E402  (book/_ext)
from hypothesis import settings  # noqa: E402

# Under CI the property tests draw the same examples on every run (derandomized, no example
# database), so a landing is decided by the code, not by the draw; elsewhere each run draws anew.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def in_ci() -> bool:
    """True under CI (``CI=true``, as .ci/run is run): optional software is required there."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def find_postgres() -> str | None:
    """The URL of a PostgreSQL server for the gradebook tests, from ``$ATTNGRADE_TEST_PG_URL``."""
    return os.environ.get("ATTNGRADE_TEST_PG_URL") or None


#: requirement -> (finder, what is missing and how to get it)
OPTIONAL = {
    "chromium": (find_chromium,
                 f"Chromium not found: the browser tests need it ({HOW_TO_GET})"),
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


# pytest-xdist: the tests that share an expensive session- or module-scoped build run on one
# worker, so each is built once per run (xdist's own ``--dist loadgroup`` cannot be used: with
# pytest 9 its group suffix is lost). A group is one or more files; every other test is
# scheduled on its own. The builds made in the background (the book, the stock autograde, the
# corpus batch) are shared through a file lock instead (tests/support.py), so their tests may
# run on every worker.
XDIST_GROUP_FILES = {
    # one nbgrader course graded by stock nbgrader and attngrade
    "tests/grading/test_nbgrader.py": "grading-nbgrader",
    # each mistake's one Run All, read by two tests (_mistake_run); the fresh mistakes' measures,
    # read by two tests (measured_corpus): caches of the module, so one worker each
    "tests/grading/test_visible_checks.py": "grading-visible",
    "tests/grading/test_mistakes.py": "grading-mistakes",
    # fresh and forked kernels under nbgrader's executor, one kernel server (module fixture)
    "tests/exercises/test_forked_kernels.py": "forked-kernels",
    # the PDF printed from this run's book, and read once (module fixtures of test_pdf.py)
    "tests/book/test_pdf.py": "book-pdf",
    # one interpreted Triton kernel process and one compiled (fixtures of tests/attnmath)
    "tests/attnmath/test_flash_triton.py": "triton-kernels",
    "tests/attnmath/test_conformance.py": "triton-kernels",
}
#: Groups that run where their tests stand, not first: the PDF waits for the book (so one worker
#: waits for it while the other goes on), and the forked-kernels tests spend most of their 15 s
#: waiting on purpose (a cell past its timeout, a kernel that dies), which leaves a CPU idle if
#: they run beside a long wait of the other worker. The other
#: groups go out first, the largest first, so that their long set-ups run beside the many short tests.
XDIST_IN_PLACE = {"book-pdf", "forked-kernels"}


def xdist_scope(nodeid: str) -> str:
    """The scheduling unit of a test: its group, or the test itself."""
    path = nodeid.partition("::")[0]
    return XDIST_GROUP_FILES.get(path, nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:  # once, before the first unit goes out
                self._ordered = True
                for scope in schedule_order(self.workqueue, self.collection):
                    self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


def schedule_order(units: dict[str, dict], collection: list[str]) -> list[str]:
    """The order in which the scheduling units ``units`` (scope -> its tests) go out: the groups
    not in ``XDIST_IN_PLACE``, the largest first, then every other unit where its first test
    stands in ``collection`` (the tests that read the book last, pytest_collection_modifyitems)."""
    position: dict[str, int] = {}
    for index, nodeid in enumerate(collection):
        position.setdefault(xdist_scope(nodeid), index)
    early = set(XDIST_GROUP_FILES.values()) - XDIST_IN_PLACE
    return sorted(units, key=lambda scope: (scope not in early, -len(units[scope]) if scope in early else 0,
                                            position.get(scope, len(collection))))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture of the test is set up, so a skipped browser test builds no book.
    for need in requirements_of(item):
        finder, message = OPTIONAL[need]
        if finder() is None:
            if in_ci():
                pytest.fail(f"{message} (required under CI=true)", pytrace=False)
            pytest.skip(message)


#: Fixtures that mean "this test reads the book built in this run" (tests/book, tests/browser).
BOOK_FIXTURES = {"built", "site"}
SOLUTIONS = ROOT / "solutions"


def _generate_course(folder: Path) -> None:
    from attngrade.course import make_course

    assignments = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))
    make_course(folder, assignments, SOLUTIONS)


@pytest.fixture(scope="session")
def nbgrader_course(tmp_path_factory) -> Path:
    """A throw-away nbgrader course with every assignment of ``solutions/`` generated by one
    ``nbgrader generate_assignment`` run, once per test run for every xdist worker. Read it;
    to submit or grade, take a copy (``support.course_copy``)."""
    from support import shared_build  # tests/support.py

    return shared_build(tmp_path_factory, "nbgrader-course", _generate_course) / "course"


def _grade_stock(factory: pytest.TempPathFactory):
    """The build of ``stock_autograde``: the generated course (``nbgrader_course``'s shared
    build, waited for or made) autograded by stock nbgrader (tests/stock_autograde.py)."""
    from stock_autograde import grade_all  # tests/stock_autograde.py
    from support import shared_build  # tests/support.py

    return lambda folder: grade_all(shared_build(factory, "nbgrader-course", _generate_course) / "course", folder)


@pytest.fixture(scope="session")
def stock_autograde(tmp_path_factory) -> dict:
    """Every assignment's solution, untouched release and samples autograded by one stock
    ``nbgrader autograde`` for the whole run, whatever the xdist workers: assignment -> its
    ``stock_autograde.GradedCourse``, or nbgrader's error for that assignment."""
    from stock_autograde import NAME, read_graded  # tests/stock_autograde.py
    from support import shared_build  # tests/support.py

    return read_graded(shared_build(tmp_path_factory, NAME, _grade_stock(tmp_path_factory)))


def _will_run(item: pytest.Item, found: dict[str, bool]) -> bool:
    """Whether the optional software ``item`` needs is here (else it is skipped, or fails in CI)."""
    for need in requirements_of(item):
        if need not in found:
            found[need] = OPTIONAL[need][0]() is not None
    return all(found[need] for need in requirements_of(item))


#: Fixtures built in the background from the start of the run (pytest_collection_finish): the
#: tests that use them go last, in this order, so that the other tests run meanwhile.
BACKGROUND_FIXTURES = ({"stock_autograde", "corpus_run"}, BOOK_FIXTURES)


def background_rank(fixturenames) -> int:
    """0 for a test that needs no background build, else 1 + the last build it needs."""
    names = set(fixturenames)
    return max((rank + 1 for rank, fixtures in enumerate(BACKGROUND_FIXTURES) if fixtures & names), default=0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that read a build made in the background go last (in the order they were
    collected): those of the stock autograde and the corpus batch, then those of the book, so
    that every other test runs while they are built (pytest_collection_finish)."""
    items.sort(key=lambda item: background_rank(getattr(item, "fixturenames", ())))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the shared builds that a selected test will use at once, in the first xdist worker,
    so that they run while the other tests do: the book (tests/book/build.py) in one thread, and
    the grading builds (``_grading_builds``) one after the other in another."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0" or session.config.option.collectonly:
        return
    needed, found = set(), {}
    for item in session.items:
        if _will_run(item, found):
            needed |= set(getattr(item, "fixturenames", ()))
    factory = session.config._tmp_path_factory
    # The first getbasetemp() empties and creates this worker's folder (xdist names one per
    # worker): it runs here, once, before any build thread or test could make that call at the
    # same time and remove what the other one had just made.
    factory.getbasetemp()
    from support import start_in_order  # tests/support.py

    start_in_order(factory, _grading_builds(factory, needed))
    if BOOK_FIXTURES & needed:
        if str(ROOT / "tests" / "book") not in sys.path:
            sys.path.insert(0, str(ROOT / "tests" / "book"))
        from build import start_in_background as start_book  # tests/book/build.py

        start_book(factory, [item.nodeid for item in session.items if _will_run(item, found)],
                   pdf="pdf_path" in needed)


def _grading_builds(factory: pytest.TempPathFactory, needed: set[str]) -> list[tuple[str, object]]:
    """The grading builds the selected tests use (their fixtures ``needed``), in the order their
    tests run: the generated course, its stock autograde, the corpus batch (tests/grading)."""
    builds: list[tuple[str, object]] = []
    if {"nbgrader_course", "stock_autograde"} & needed:
        builds.append(("nbgrader-course", _generate_course))
    if "stock_autograde" in needed:
        from stock_autograde import NAME  # tests/stock_autograde.py

        builds.append((NAME, _grade_stock(factory)))
    if "corpus_run" in needed:
        from grading.conftest import build_corpus  # tests/grading/conftest.py

        builds.append(("corpus", build_corpus(factory)))
    return builds


def pytest_sessionfinish(session: pytest.Session) -> None:
    if "support" in sys.modules and hasattr(sys.modules["support"], "stop_started"):
        sys.modules["support"].stop_started()  # the background builds, with their processes
    if "build" in sys.modules and hasattr(sys.modules["build"], "stop_background_build"):
        sys.modules["build"].stop_background_build()  # a book build this process started itself


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
