"""Headless Chromium for the book's tools and tests: where it is, and how it is started.

One lookup and one set of flags for ``make pdf`` (``make_pdf.py``), ``bench/bench_pages.py`` and
the browser tests (``tests/browser``, ``tests/conftest.py``). Not a Sphinx extension.
"""

from __future__ import annotations

import os
import shutil

#: Headless, no sandbox (root in containers), and none of Chromium's own network traffic: the
#: book is read offline, and on a closed network those background connections only stall.
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

HOW_TO_GET = "apt-get install chromium, or set ATTNMATH_CHROMIUM=/path/to/chromium"


def find_chromium() -> str | None:
    """``$ATTNMATH_CHROMIUM`` if set (an empty value hides Chromium), else chromium on ``PATH``."""
    if "ATTNMATH_CHROMIUM" in os.environ:
        path = os.environ["ATTNMATH_CHROMIUM"]
        return path if path and os.access(path, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")
