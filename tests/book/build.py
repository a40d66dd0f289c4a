"""Build the book once per test run; tests/book and tests/browser share the result.

``book_html(tmp_path_factory)`` builds the book as ``make book`` does (``book/_ext/build_book.py``,
``jupyter-book build . -n -W --keep-going``) into ``--path-output <tmp>`` the first time it is
called in a test run and returns the HTML folder; later calls return the same folder (or fail with
the same message) without building again, in every pytest-xdist worker (``tests/support.py``'s
``shared_build``).

``tests/conftest.py`` starts that build in the background as soon as the tests are collected
(``start_in_background``), when some selected test needs the book, and the PDF's print
(``print_pdf``, tests/book/test_pdf.py) right after it when a selected test reads the PDF. When the selected tests hold
every claim test, the build runs none of them (``claims.IN_SUITE``): the run itself does, and the
claims appendix says so; otherwise the build runs them, as ``make book`` does.

``ATTNMATH_BOOK_HTML=/path/to/_build/html`` skips the build and uses that folder, for example
the output of ``make book``, to rerun the book and browser tests quickly while writing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import support  # noqa: E402  (tests/support.py)
from claims import IN_SUITE, runs_every_claim_test  # noqa: E402  (tests/claims.py)
from support import shared_build  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from build_book import COMMAND  # noqa: E402  (book/_ext/build_book.py: make book's command)
from make_pdf import toc_files  # noqa: E402,F401  (book/_ext/make_pdf.py; the tests import it from here)
ENV_HTML = "ATTNMATH_BOOK_HTML"

_result: dict = {}
#: Whether this run's book build leaves the claim tests to the run (set by start_in_background).
_claims_in_suite = False


def is_notebook(doc: str, root: Path = ROOT) -> bool:
    """A MyST-Markdown notebook declares a kernel in its front matter; a plain page does not."""
    path = root / f"{doc}.md"
    if not path.exists():
        return (root / f"{doc}.ipynb").exists()
    text = path.read_text()
    if not text.startswith("---"):
        return False
    end = text.find("\n---", 3)
    return end > 0 and "kernelspec" in text[:end]


#: The build running in this process, so that the end of the session can stop it.
_RUNNING: dict[str, subprocess.Popen] = {}


def build_command(out: Path, claims_in_suite: bool) -> tuple[list[str], dict[str, str]]:
    """The command and environment of the build into ``out``: ``make book``'s, with the claim
    tests left to the test run when ``claims_in_suite``."""
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    env.pop(IN_SUITE, None)
    if claims_in_suite:
        env[IN_SUITE] = "1"
    command = [sys.executable, str(ROOT / "book" / "_ext" / "build_book.py"), *COMMAND,
               "--path-output", str(out)]
    return command, env


def _build(out: Path) -> Path:
    command, env = build_command(out, _claims_in_suite)
    start = time.perf_counter()
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as proc:
        _RUNNING["book"] = proc
        try:
            stdout, stderr = proc.communicate(timeout=1800)
        finally:
            _RUNNING.pop("book", None)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"book build failed after {seconds:.0f} s:\n{stdout[-6000:]}\n{stderr[-3000:]}")
    sys.stderr.write(f"\nbook built in {seconds:.0f} s into {out}\n")
    return out / "_build" / "html"


def print_pdf(folder: Path, html: Path) -> None:
    """The shared build ``pdf``: ``make pdf``'s print (book/_ext/make_pdf.py) of the HTML build
    ``html`` into ``folder/book.pdf``."""
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "_ext" / "make_pdf.py"),
                           "--html", str(html), "--out", str(folder / "book.pdf")],
                          capture_output=True, text=True, timeout=1200, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-3000:] + proc.stderr[-3000:])


def start_in_background(tmp_path_factory, test_ids=(), pdf: bool = False):
    """Start this run's book build now in a forked child (``support.start_in_order``), unless
    ``ATTNMATH_BOOK_HTML`` names a build; with ``pdf``, the PDF's print (``print_pdf``) follows it
    in that thread. ``test_ids``: the run's selected tests; when they hold every claim test, the
    build runs none of them."""
    global _claims_in_suite
    if os.environ.get(ENV_HTML):
        return None
    _claims_in_suite = runs_every_claim_test(test_ids, ROOT / "tests")

    def print_book(folder: Path) -> None:
        print_pdf(folder, shared_build(tmp_path_factory, "book", _build) / "_build" / "html")

    return support.start_in_order(tmp_path_factory, [("book", _build), *([("pdf", print_book)] if pdf else [])])


def stop_background_build() -> None:
    """End a build still running when the session ends (an interrupted or ``-x`` run)."""
    proc = _RUNNING.get("book")
    if proc is not None and proc.poll() is None:
        proc.kill()


def book_html(tmp_path_factory) -> Path:
    """The built book's HTML folder, built at most once per pytest process."""
    if "html" not in _result and "error" not in _result:
        given = os.environ.get(ENV_HTML)
        if given:
            html = Path(given).resolve()
            if not (html / "index.html").exists():
                _result["error"] = f"{ENV_HTML}={given} has no index.html"
            else:
                _result["html"] = html
        else:
            try:
                out = shared_build(tmp_path_factory, "book", _build)
                _result["html"] = out / "_build" / "html"
            except RuntimeError as exc:
                _result["error"] = str(exc)
    if "error" in _result:
        # The whole log once; every later test that needs the book names the failure briefly.
        message = _result["error"]
        _result["error"] = message.splitlines()[0] + " (the log is in the first test that needed the book)"
        pytest.fail(message, pytrace=False)
    return _result["html"]
