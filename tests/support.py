"""Helpers for tests in several folders (``tests/`` is on ``sys.path`` through ``tests/conftest.py``).

``shared_build(tmp_path_factory, name, build)`` runs ``build(folder)`` once per test run, even when
pytest-xdist spreads the tests over several worker processes: the first worker to ask builds under
a file lock, the others wait and reuse the folder (or get the same error without building again).
``start_in_background`` makes that first request from a forked child process, as soon as the tests are
collected, so that the build runs while other tests do (``start_in_order``: several builds one
after the other).

``course_copy`` gives a test a course of its own from the nbgrader course that every assignment
is generated into once per run (the ``nbgrader_course`` fixture of ``tests/conftest.py``).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock


def shared_build(tmp_path_factory: pytest.TempPathFactory, name: str,
                 build: Callable[[Path], object]) -> Path:
    """``folder`` after ``build(folder)`` ran once for the whole run, whatever the xdist workers.

    Under xdist every worker has its own ``basetemp`` below one common parent; the folder, its
    lock and its outcome file live in that parent. Without xdist the parent is private to this
    run as well. An exception in ``build`` is recorded and raised again (as ``RuntimeError``) for
    every later caller instead of building again.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / f"shared-{name}"
    outcome = base / f"shared-{name}.json"
    with FileLock(str(base / f"shared-{name}.lock")):
        if not outcome.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            try:
                build(folder)
                result = {"ok": True}
            except Exception as exc:  # recorded for the other workers, then raised
                result = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                          "trace": traceback.format_exc()[-6000:]}
            outcome.write_text(json.dumps(result))
        result = json.loads(outcome.read_text())
    if not result["ok"]:
        raise RuntimeError(f"shared build {name!r} failed: {result['error']}")
    return folder


def start_in_background(tmp_path_factory: pytest.TempPathFactory, name: str,
                        build: Callable[[Path], object]) -> multiprocessing.process.BaseProcess:
    """``shared_build(tmp_path_factory, name, build)`` in a forked child, started now; a test
    that asks for the same build later waits for it. A failure is recorded by ``shared_build``
    and raised in the tests that ask."""
    return start_in_order(tmp_path_factory, [(name, build)])


#: The background builds started by this process (forked children, each its own process group).
_STARTED: list[multiprocessing.process.BaseProcess] = []


def start_in_order(tmp_path_factory: pytest.TempPathFactory,
                   builds: list[tuple[str, Callable[[Path], object]]]) -> multiprocessing.process.BaseProcess:
    """``start_in_background`` for several builds ((name, build) pairs), one after the other in
    one forked child process: each waits for the one before it, so that they take one CPU
    between them. A process, not a thread: tracemalloc counts every thread's allocations, and
    the tests that measure peak memory in this process must not count a build's (a book build's
    captured log alone is megabytes). The results travel by ``shared_build``'s files."""

    def run() -> None:
        os.setpgrp()  # the build's own subprocesses go with it when it is stopped (stop_started)
        for name, build in builds:
            try:
                shared_build(tmp_path_factory, name, build)
            except RuntimeError:
                pass

    context = multiprocessing.get_context("fork")  # forked: the builds are closures, not pickled
    child = context.Process(target=run, name="shared-" + "+".join(name for name, _ in builds), daemon=True)
    child.start()
    _STARTED.append(child)
    return child


def stop_started() -> None:
    """End the background builds still running when the session ends (an interrupted or ``-x``
    run), with the processes they started."""
    for child in _STARTED:
        if child.is_alive() and child.pid is not None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            child.join(timeout=5)


def course_copy(course: Path, target: Path, assignment: str) -> Path:
    """``target/course``: ``assignment``'s source and release, and the gradebook, copied from the
    generated ``course``, with a configuration that names the new place; what nbgrader writes
    there (submissions, autograded notebooks, grades) stays there."""
    new = target / "course"
    for step in ("source", "release"):
        shutil.copytree(course / step / assignment, new / step / assignment)
    shutil.copy2(course / "gradebook.db", new / "gradebook.db")
    config = (course / "nbgrader_config.py").read_text()
    if str(course) not in config:
        raise ValueError(f"course_copy: {course}/nbgrader_config.py does not name its own folder (course={course})")
    (new / "nbgrader_config.py").write_text(config.replace(str(course), str(new)))
    return new
