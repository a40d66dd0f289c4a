"""``make book`` builds only when the book's sources read differently from its last build: the
Makefile's recipe, run with a stand-in for the build command (no book is built here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("sha256sum") is None,
                                reason="needs make and sha256sum")


def make_book(tmp_path: Path) -> tuple[str, list[str]]:
    """``make book`` with the build command replaced by one that logs its arguments."""
    bindir = tmp_path / "bin"
    if not bindir.exists():
        bindir.mkdir()
        (bindir / "python").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "builds.log"}\n')
        (bindir / "python").chmod(0o755)
        for name in ("stamp", "node-ok"):
            (tmp_path / name).write_text("")
    done = subprocess.run(["make", "--no-print-directory", "book", f"BIN={bindir}",
                           f"BOOK_OK={tmp_path / 'book-ok'}", f"STAMP={tmp_path / 'stamp'}",
                           f"NODE_OK={tmp_path / 'node-ok'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    log = tmp_path / "builds.log"
    return done.stdout, log.read_text().splitlines() if log.exists() else []


def test_the_book_is_built_once_then_only_when_its_sources_read_differently(tmp_path):
    out, builds = make_book(tmp_path)
    assert builds == ["book/_ext/build_book.py"]
    digest = (tmp_path / "book-ok").read_text().strip()
    assert len(digest) == 64
    # a source newer than the last build, with the same text (a file saved again): no build
    os.utime(tmp_path / "book-ok", (0, 0))
    out, builds = make_book(tmp_path)
    assert builds == ["book/_ext/build_book.py"] and "nothing to build" in out
    assert (tmp_path / "book-ok").stat().st_mtime > 0 and (tmp_path / "book-ok").read_text().strip() == digest
    # up to date: make itself has nothing to do
    out, builds = make_book(tmp_path)
    assert len(builds) == 1 and "nothing to build" not in out
    # sources that read differently from the last build: built again
    (tmp_path / "book-ok").write_text("the digest of other sources\n")
    os.utime(tmp_path / "book-ok", (0, 0))
    out, builds = make_book(tmp_path)
    assert builds == ["book/_ext/build_book.py"] * 2
    assert (tmp_path / "book-ok").read_text().strip() == digest


def test_a_failed_build_records_nothing(tmp_path):
    make_book(tmp_path)
    (tmp_path / "bin" / "python").write_text("#!/bin/sh\nexit 3\n")
    (tmp_path / "book-ok").write_text("older\n")
    os.utime(tmp_path / "book-ok", (0, 0))
    done = subprocess.run(["make", "--no-print-directory", "book", f"BIN={tmp_path / 'bin'}",
                           f"BOOK_OK={tmp_path / 'book-ok'}", f"STAMP={tmp_path / 'stamp'}",
                           f"NODE_OK={tmp_path / 'node-ok'}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert (tmp_path / "book-ok").read_text() == "older\n"
