"""Helpers for tests in several folders (``tests/`` is on ``sys.path`` through ``tests/conftest.py``).

``shared_build(tmp_path_factory, name, build)`` runs ``build(folder)`` once per test run, even when
pytest-xdist spreads the tests over several worker processes: the first worker to ask builds under
a file lock, the others wait and reuse the folder (or get the same error without building again).
"""

from __future__ import annotations

import json
import os
import shutil
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
