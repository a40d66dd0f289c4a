"""The built book served on loopback and read in headless Chromium, as a reader would.

Fixtures:

* ``site``: the book, built once per test run (``tests/book/build.py``), served over HTTP on
  127.0.0.1 by a thread of this process.
* ``browser``: headless Chromium driven by Playwright. It uses the system's Chromium
  (``/usr/bin/chromium``, Debian's ``chromium`` package, or ``ATTNMATH_CHROMIUM``); Playwright's
  own browser downloads are never used.
* ``reader``: opens pages and records everything that went wrong while loading them.
* ``snapshots``: each page loaded once per worker (for each viewport and theme) and read by
  every script the test modules registered (``read_with``); tests that read the same page
  share that load. Screenshots are taken where a test reads them, or when a test fails.

Screenshots go to ``tests/browser/artifacts/`` or to ``$ATTNMATH_ARTIFACTS``.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from build import book_html  # tests/book/build.py

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from headless_chromium import ARGS, HOW_TO_GET, find_chromium  # noqa: E402  (book/_ext)

DESKTOP = {"width": 1280, "height": 900}

# After the load event: wait until MathJax (if the page loads it) has typeset the page and the
# fonts it asked for are in, so that what is checked is what a reader sees.
_SETTLE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  if (document.fonts) await document.fonts.ready;
  return true;
}"""


def chromium_path() -> str:
    path = find_chromium()
    if path is None:  # tests/conftest.py skips (or, under CI, fails) before this is reached
        pytest.fail(f"Chromium not found ({HOW_TO_GET})", pytrace=False)
    return path


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots are written: $ATTNMATH_ARTIFACTS, else tests/browser/artifacts/."""
    path = Path(os.environ.get("ATTNMATH_ARTIFACTS") or Path(__file__).parent / "artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".ipynb": "application/x-ipynb+json", ".woff": "font/woff"}

    def log_message(self, *args):
        pass


@dataclass
class Site:
    root: Path  # the HTML folder
    base: str  # http://127.0.0.1:PORT/

    def url(self, path: str) -> str:
        return self.base + path.lstrip("/")

    def file_for(self, url: str) -> Path | None:
        """The file that serves ``url``, or None if the URL is not on this site."""
        if not url.startswith(self.base):
            return None
        rel = unquote(urlsplit(url).path)[len(urlsplit(self.base).path):]
        if rel == "" or rel.endswith("/"):
            rel += "index.html"
        return self.root / rel


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    html = book_html(tmp_path_factory)
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(root=html, base=f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright  # pinned in requirements.txt

    executable = chromium_path()
    with sync_playwright() as p:
        # Playwright starts the browser with a fresh temporary profile and removes it afterwards.
        b = p.chromium.launch(executable_path=executable, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Visit:
    """One page load and everything that went wrong during it."""

    url: str
    page: object  # playwright Page, open until the reader closes it
    status: int | None = None
    problems: list[str] = field(default_factory=list)


class Reader:
    def __init__(self, browser, site: Site):
        self.browser = browser
        self.site = site
        self._contexts = []

    def open(self, path_or_url: str, viewport=DESKTOP, expect: str | None = None) -> Visit:
        """Load a page and let it settle; ``expect``: the page it redirects to."""
        url = path_or_url if path_or_url.startswith("http") else self.site.url(path_or_url)
        context = self.browser.new_context(viewport=viewport, service_workers="block")
        self._contexts.append(context)
        page = context.new_page()
        visit = Visit(url=url, page=page)
        here = urlsplit(self.site.base).netloc

        def route(r):
            target = urlsplit(r.request.url)
            if target.scheme in ("http", "https", "ws", "wss") and target.netloc != here:
                visit.problems.append(f"request off the site (the book must work offline): {r.request.url}")
                r.abort()
            else:
                r.continue_()

        context.route("**/*", route)
        page.on("console", lambda m: m.type == "error" and visit.problems.append(
            f"console error: {m.text} ({m.location.get('url', '')}:{m.location.get('lineNumber', '')})"))
        page.on("pageerror", lambda e: visit.problems.append(f"uncaught exception: {e}"))
        pending = set()
        page.on("request", lambda r: pending.add(r))
        page.on("requestfinished", lambda r: pending.discard(r))
        page.on("requestfailed", lambda r: (pending.discard(r), visit.problems.append(
            f"request failed: {r.url} ({r.failure})")))
        page.on("response", lambda r: r.status >= 400 and visit.problems.append(
            f"HTTP {r.status}: {r.url}"))
        response = page.goto(url, wait_until="load", timeout=60_000)
        visit.status = response.status if response else None
        if expect:
            page.wait_for_url(self.site.url(expect), timeout=30_000)
            page.wait_for_load_state("load")
        page.evaluate(_SETTLE)
        # Figures load when a reader scrolls near them (loading="lazy"); the checks look at
        # every figure, so load them all now.
        page.evaluate("() => document.querySelectorAll('img[loading=lazy]')"
                      ".forEach((img) => { img.loading = 'eager'; })")
        page.wait_for_function("() => Array.from(document.images).every((img) => img.complete)",
                               timeout=30_000)
        deadline = time.monotonic() + 30
        while pending and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        visit.problems += [f"request still unanswered after 30 s: {r.url}" for r in pending]
        return visit

    def discard(self, visit: Visit) -> None:
        """Close the page of ``visit`` (and its browser context) now."""
        context = visit.page.context
        self._contexts.remove(context)
        context.close()

    def close(self):
        for context in self._contexts:
            context.close()
        self._contexts.clear()


#: Scripts that read a loaded page without changing it, by name (registered by the test modules
#: with :func:`read_with`): a :class:`Snapshot` runs them all on one load of a page.
SCRIPTS: dict[str, str] = {}


def read_with(name: str, script: str) -> str:
    """Register ``script`` (a JavaScript function of no argument) for every snapshot; ``name``."""
    if SCRIPTS.get(name, script) != script:
        raise ValueError(f"read_with: another script is already registered as name={name!r}")
    SCRIPTS[name] = script
    return name


@dataclass
class Snapshot:
    """What one load of a page showed: its status, its problems, and each registered script's result."""

    path: str
    viewport: dict
    dark: bool
    status: int | None
    problems: list[str]
    data: dict[str, object]

    def shoot(self, reader: Reader, file: Path, full: bool) -> Path:
        """A screenshot of the page as this snapshot saw it (loaded again: only a failing test asks)."""
        visit = reader.open(self.path, viewport=self.viewport)
        if self.dark:
            _darken(visit.page)
        visit.page.screenshot(path=str(file), full_page=full)
        return file


def _darken(page) -> None:
    page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
    page.wait_for_timeout(200)


class Snapshots:
    """Each page loaded once per worker for each viewport and theme, read by every registered
    script, and remembered: the tests that look at the same page share that load."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self._taken: dict[tuple, Snapshot] = {}

    def get(self, path: str, viewport=DESKTOP, dark: bool = False) -> Snapshot:
        key = (path, tuple(sorted(viewport.items())), dark)
        if key not in self._taken:
            visit = self.reader.open(path, viewport=viewport)
            if dark:
                _darken(visit.page)
            data = {name: visit.page.evaluate(script) for name, script in SCRIPTS.items()}
            self.reader.discard(visit)
            self._taken[key] = Snapshot(path, dict(viewport), dark, visit.status, visit.problems, data)
        return self._taken[key]


@pytest.fixture(scope="session")
def snapshots(session_reader) -> Snapshots:
    return Snapshots(session_reader)


@pytest.fixture
def reader(browser, site):
    r = Reader(browser, site)
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(scope="session")
def session_reader(browser, site):
    r = Reader(browser, site)
    try:
        yield r
    finally:
        r.close()



@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """``item.rep_setup``, ``rep_call``, ``rep_teardown``: so a fixture can see whether its test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
