"""The built book served on loopback and read in headless Chromium, as a reader would.

Fixtures:

* ``site``: the book, built once per test run (``tests/book/build.py``), served over HTTP on
  127.0.0.1 by a thread of this process.
* ``browser``: headless Chromium driven by Playwright. It uses the system's Chromium
  (``/usr/bin/chromium``, Debian's ``chromium`` package, or ``ATTNMATH_CHROMIUM``); Playwright's
  own browser downloads are never used.
* ``reader``: opens pages and records everything that went wrong while loading them.
* ``snapshots``: each page loaded once per test run (for each viewport; the dark theme is read
  from the desktop load) and read by every script the test modules registered (``read_with``);
  tests that read the same page share that load, on whichever xdist worker they run. Screenshots are taken where a test reads them, or when a test fails.

Screenshots go to ``tests/browser/artifacts/`` or to ``$ATTNMATH_ARTIFACTS``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book"))
from build import book_html  # tests/book/build.py
from support import shared_build  # tests/support.py

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


@contextlib.contextmanager
def serve(folder: Path):
    """``folder`` served over HTTP on 127.0.0.1 by a thread of this process, as a :class:`Site`."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(root=folder, base=f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    with serve(book_html(tmp_path_factory)) as served:
        yield served


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

    def open(self, path_or_url: str, viewport=DESKTOP, expect: str | None = None,
             before: tuple[str, ...] = ()) -> Visit:
        """Load a page and let it settle; ``expect``: the page it redirects to; ``before``:
        scripts run in the page before any of its own (``add_init_script``)."""
        url = path_or_url if path_or_url.startswith("http") else self.site.url(path_or_url)
        context = self.browser.new_context(viewport=viewport, service_workers="block")
        self._contexts.append(context)
        for script in before:
            context.add_init_script(script)
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
#: Scripts run in every snapshot's page before its own scripts, by the name of the script that
#: reads what they recorded (:func:`read_with`'s ``before``).
BEFORE: dict[str, str] = {}


def read_with(name: str, script: str, before: str | None = None) -> str:
    """Register ``script`` (a JavaScript function of no argument) for every snapshot; ``name``.
    ``before``: a script run in the page before any of the page's own, which records what
    ``script`` reads after the load (what the page showed at its first paint, say)."""
    if SCRIPTS.get(name, script) != script or BEFORE.get(name, before) != before:
        raise ValueError(f"read_with: another script is already registered as name={name!r}")
    SCRIPTS[name] = script
    if before is not None:
        BEFORE[name] = before
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
            darken(visit.page)
        visit.page.screenshot(path=str(file), full_page=full)
        return file


def darken(page) -> None:
    """Switch ``page`` to the dark theme as the theme's own switch does, and return when the
    transitions that starts (colours fading over) have ended."""
    page.evaluate("""async () => {
      document.documentElement.dataset.theme = 'dark';
      await Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition)
        .map((a) => a.finished.catch(() => null)));
    }""")


#: The viewports at which a page is read in the dark theme too, in the same load as the light one.
DARK_TOO = (DESKTOP,)

# A registered script (put in for __SCRIPT__) run under a MutationObserver of the whole document:
# its result, and what it changed and left changed. A script runs without a break, so every
# record taken at its end is its own (none of the page's timers can run in between); a probe
# added and removed again, or an attribute set and put back, changes nothing.
_WATCHED = """() => {
  const observer = new MutationObserver(() => {});
  observer.observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true,
                              characterData: true, characterDataOldValue: true});
  const result = (__SCRIPT__)();
  const records = observer.takeRecords();
  observer.disconnect();
  const nodes = new Map(), attributes = new Map(), texts = new Map();
  const first = (map, key, value) => { if (!map.has(key)) map.set(key, value); };
  for (const r of records) {
    if (r.type === 'attributes') {
      first(attributes, r.target, new Map());
      first(attributes.get(r.target), r.attributeName, r.oldValue);
    }
    if (r.type === 'characterData') first(texts, r.target, r.oldValue);
    r.removedNodes.forEach((n) => first(nodes, n, 'removed'));
    r.addedNodes.forEach((n) => first(nodes, n, 'added'));
  }
  const name = (n) => (n.nodeName || '').toLowerCase() + (n.id ? '#' + n.id : '');
  const changed = [];
  nodes.forEach((was, n) => { if ((was === 'added') === n.isConnected) changed.push(`${name(n)} ${was}`); });
  attributes.forEach((old, n) => old.forEach((value, attr) => {
    if (n.isConnected && n.getAttribute(attr) !== value) changed.push(`${name(n)}: attribute ${attr}`); }));
  texts.forEach((value, n) => { if (n.isConnected && n.data !== value) changed.push(`text in ${name(n.parentNode || n)}`); });
  return [result, changed.slice(0, 5)];
}"""


class Snapshots:
    """Each page loaded once per test run for each viewport, whatever the xdist workers (the
    first to ask loads it, and the others read what it wrote: ``support.shared_build``), read by
    every registered script, and remembered: the tests that look at the same page share that load.

    The dark theme is read from the light load (at the viewports of ``DARK_TOO``, or where a test
    asks for it): the scripts read the light page, the theme is switched as a reader switches it
    (``darken``), and they read the page again. That is the page a load in the dark theme reads,
    because the scripts change nothing in it: each runs under a MutationObserver (``_WATCHED``),
    and one that leaves the page changed fails every test that reads that page.
    """

    def __init__(self, reader: Reader, tmp_path_factory: pytest.TempPathFactory):
        self.reader = reader
        self.factory = tmp_path_factory
        self._taken: dict[tuple, Snapshot] = {}

    def get(self, path: str, viewport=DESKTOP, dark: bool = False) -> Snapshot:
        key = (path, tuple(sorted(viewport.items())), dark)
        if key not in self._taken:
            themes = (False, True) if dark or viewport in DARK_TOO else (False,)
            name = "snapshot-" + re.sub(r"[^\w.-]", "_", f"{path}-{viewport['width']}x{viewport['height']}"
                                                           f"{'-dark' if True in themes else ''}")
            folder = shared_build(self.factory, name, functools.partial(self._load, path, viewport, themes))
            for theme in themes:
                self._taken[(path, key[1], theme)] = self._saved(folder / f"{_theme(theme)}.json")
        return self._taken[key]

    def _saved(self, file: Path) -> Snapshot:
        """The snapshot saved in ``file``, its URLs on this process's server: each xdist worker
        serves the book on a port of its own, and the page may have been read by the other."""
        text = file.read_text()
        return Snapshot(**json.loads(text.replace(json.loads(text)["base"], self.reader.site.base))["snapshot"])

    def _load(self, path: str, viewport: dict, themes: tuple[bool, ...], folder: Path) -> None:
        """Load ``path`` once and write a snapshot of it for each theme of ``themes`` into ``folder``."""
        visit = self.reader.open(path, viewport=viewport, before=tuple(BEFORE.values()))
        try:
            for dark in themes:
                if dark:
                    darken(visit.page)
                data = _read(visit.page, path)
                shot = Snapshot(path, dict(viewport), dark, visit.status, list(visit.problems), data)
                saved = {"base": self.reader.site.base, "snapshot": asdict(shot)}
                (folder / f"{_theme(dark)}.json").write_text(json.dumps(saved))
        finally:
            self.reader.discard(visit)


def _read(page, path: str) -> dict[str, object]:
    """Every registered script's result on ``page``; a script that changes the page stops the read."""
    data = {}
    for name, script in SCRIPTS.items():
        data[name], changed = page.evaluate(_WATCHED.replace("__SCRIPT__", script))
        if changed:
            raise AssertionError(f"{path}: the script registered with read_with as {name!r} changed the "
                                 f"page it read ({changed}); it must only read it")
    return data


def _theme(dark: bool) -> str:
    return "dark" if dark else "light"


@pytest.fixture(scope="session")
def snapshots(session_reader, tmp_path_factory) -> Snapshots:
    return Snapshots(session_reader, tmp_path_factory)


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
