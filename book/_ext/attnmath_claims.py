"""The appendix "Claims and errata": verdicts shown next to the outcome of their tests, in one build.

Before Sphinx reads the chapters, this extension starts the tests that carry a
``@pytest.mark.claim`` marker (``tests/claims.py``: ``pytest -m claim -p no:cacheprovider`` in a
subprocess, about 20 s for all), which run while Sphinx reads, and keeps the outcome of each. A
clean build runs them all; a later build (``make book`` after an edit) runs only those whose
outcome may have changed: all of them when the library, the shared test code or the test
settings changed, else the tests of each changed test file (an edited chapter changes no outcome:
the tests check the library), and it keeps the other outcomes of the last build, recorded in
Sphinx's environment with a digest of what they depend on. The directives below then write the
appendix from the markers and those outcomes:

* ``{claims-summary}``: the counts of each verdict and of the tests that decided them;
* ``{claims-table} <chapter>``: one row per claim that the chapter repeats (source, claim, the
  correct statement, a link to the chapter's Correction box, the verdict as a badge, and each
  test with its outcome and the domain it covers);
* ``{claims-tests}``: every claim test's source, folded, so each row can link to its test.

The appendix is a tool as well as a list. Every row carries its chapter, verdict and source as
classes (``claim-chapter-01_softmax``, ``claim-verdict-corrected``, ``claim-source-textbook-chapter``),
and the parts of its cells theirs (``claim-part claim-domain`` ...). ``{claims-summary}`` adds a
filter by chapter, verdict and source (a form of three menus that ``_static/claims_filter.js``,
loaded on this page only, shows and runs, offline and from the keyboard; the choice is kept in the
page's address). ``_static/claims.css`` styles it, and prints the tables compactly: the filter
left out, each test and each domain on one line, cut short where it is longer.

A claim test that fails, errors, is skipped or does not run is reported as a Sphinx warning, so
the build with ``-W`` fails, in every build until it passes. The page is re-read
(``env-get-outdated``) whenever a test runs or what the page shows may have changed (a digest
differs), so its outcomes are never older than the build. ``ATTNMATH_SKIP_CLAIM_TESTS=1`` skips
the run for quick drafts: every outcome then reads "not run" and the build warns. A test run that
runs every claim test itself builds its book with ``claims.IN_SUITE`` set (tests/book/build.py):
that build runs none, each outcome reads "run by the test suite", and a failure is the suite's.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
DOCNAME = "book/claims"
BADGE = {"verified": "success", "verified on": "primary", "corrected": "danger",
         "clarified": "info", "not verifiable here": "secondary"}
#: The five texts the claims are found in, by the number a marker's source starts with
#: (``tests/claims.py``), under the names the landing page describes them by (book/intro.md).
SOURCE_NAMES = {"000": "the reference sheet", "001": "the interview summary",
                "002": "the deep-dive survey", "003": "the textbook chapter", "004": "the lecture notes"}
OUTCOME = {"passed": "{bdg-success-line}`passed`", "failed": "{bdg-danger}`FAILED`",
           "error": "{bdg-danger}`ERROR`", "skipped": "{bdg-warning}`skipped`",
           "not run": "{bdg-warning}`not run`",
           "run by the test suite": "{bdg-info-line}`run by the test suite`"}


def _claims_module():
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    import claims

    return claims


def _name(test: str) -> str:
    """The test's function name with break opportunities after underscores (never cut off)."""
    return test.partition("::")[2].replace("_", "_\u200b")


def _label(test: str) -> str:
    return "claimtest-" + test.partition("::")[2].replace("_", "-")


def found_in(source: str) -> str:
    """A marker's source (``"003 §5.3"``) as a reader names it: "found in the textbook chapter, §5.3";
    the book's own statements (``"book: book/data/flash_gpu.json"``): "about book/data/flash_gpu.json"."""
    if _claims_module().is_book_source(source):
        return "about " + _cell(source.partition(":")[2]).strip()
    if paper := _claims_module().paper_source(source):
        return f"found in {{cite:t}}`{paper[0]}`" + (f", {_cell(paper[1])}" if paper[1] else "")
    number, _, section = source.partition(" ")
    if number not in SOURCE_NAMES:
        raise ValueError(f"source {source!r} does not start with one of {sorted(SOURCE_NAMES)}")
    return f"found in {SOURCE_NAMES[number]}" + (f", {_cell(section)}" if section.strip() else "")


def _cell(text: str) -> str:
    """One line of a table cell (the markers' strings are MyST: maths in ``$...$``)."""
    return " ".join(text.split())


#: The kinds of source a row's claim is found in, as the filter names them: the five texts by
#: the number their markers' sources start with, then the papers and the book's own data.
SOURCE_KEYS = {**{n: name.removeprefix("the ").replace(" ", "-") for n, name in SOURCE_NAMES.items()},
               "paper": "paper", "book": "book"}
SOURCE_LABELS = {**{key: SOURCE_NAMES[n] for n, key in SOURCE_KEYS.items() if n in SOURCE_NAMES},
                 "paper": "a published paper", "book": "the book's own data"}


def source_key(source: str) -> str:
    """The kind of a marker's source (:data:`SOURCE_KEYS`): ``textbook-chapter`` for ``"003 §5.3"``."""
    claims = _claims_module()
    if claims.is_book_source(source):
        return "book"
    if claims.paper_source(source):
        return "paper"
    return SOURCE_KEYS[source.partition(" ")[0]]


def slug(text: str) -> str:
    """``verified on`` as ``verified-on``: a class name's part."""
    return re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-")


def row_classes(claim) -> list[str]:
    """The classes of a claim's row, by which the filter finds it."""
    return ["claim-row", f"claim-chapter-{claim.chapter}", f"claim-verdict-{slug(claim.verdict)}",
            f"claim-source-{source_key(claim.source)}"]


def mark_parts(paragraph: nodes.paragraph, first: str) -> None:
    """Wrap each part of a cell (the parts are separated by ``<br>``) in an inline of classes
    ``claim-part claim-<label>``, the label being its italic head ("Domain:" -> ``claim-domain``);
    a part without one is ``claim-<first>`` (the claim, or a test)."""
    parts, current = [], []
    for child in list(paragraph.children):
        if isinstance(child, nodes.raw) and child.astext().strip() == "<br>":
            parts.append(current)
            current = []
        current.append(child)
    parts.append(current)
    paragraph.children = []
    for part in parts:
        words = [n for n in part if not (isinstance(n, nodes.raw) or not n.astext().strip())]
        head = words[0].astext().strip() if words else ""
        labelled = words and isinstance(words[0], nodes.emphasis) and head.endswith(":")
        # the head's words before a comma: "This chapter, about figure fig-x:" -> this-chapter (a class
        # name never carries a figure's or a text's own words)
        label = slug(head.rstrip(":").split(",")[0]) if labelled else first
        inline = nodes.inline("", "", *part, classes=["claim-part", f"claim-{label}"])
        paragraph += inline


#: The claim tests still running, per application: a Python process that runs them
#: (:func:`claims.run_claim_tests`) while Sphinx reads and executes the chapters.
_PENDING: dict[int, subprocess.Popen] = {}
_RUNNER = ("import json, sys; sys.path.insert(0, sys.argv[1]); import claims; "
           "only = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None; "
           "print(json.dumps(claims.run_claim_tests(sys.argv[2], only=only)))")

#: What every claim test depends on besides its own file: a change here runs them all again.
SHARED_INPUTS = ("lib", "tests/conftest.py", "tests/support.py", "tests/claims.py", "pyproject.toml",
                 "requirements.txt", "book/data")


def digest(path: Path) -> str:
    """A digest of the file ``path``, or of the names and contents of the Python files and data
    records (``.json``, ``.npz``) under the folder ``path`` ("" when there is nothing)."""
    if path.is_dir():  # Python code, and the records the book's statements are checked against
        files = sorted(p for p in path.rglob("*") if p.suffix in (".py", ".json", ".npz")
                       and "__pycache__" not in p.parts)
    else:
        files = [path] if path.is_file() else []
    h = hashlib.sha256()
    for file in files:
        h.update(file.relative_to(path if path.is_dir() else path.parent).as_posix().encode())
        h.update(b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest() if files else ""


def claim_inputs(markers) -> dict[str, str]:
    """A digest of everything the claim tests' outcomes depend on: the shared inputs and each
    file that holds claim tests."""
    names = [*SHARED_INPUTS, *sorted({m.test.partition("::")[0] for m in markers})]
    return {name: digest(ROOT / name) for name in names}


def tests_to_run(markers, inputs: dict[str, str], record: dict | None):
    """The claim tests this build runs, and the outcomes it keeps from the last build.

    Every test, when the last build recorded none (a clean build) or a shared input changed;
    otherwise the tests of a changed test file.
    """
    tests = sorted({m.test for m in markers})
    if not record or any(record["inputs"].get(n) != inputs[n] for n in SHARED_INPUTS):
        return tests, {}
    run = {m.test for m in markers
           if record["inputs"].get(m.test.partition("::")[0]) != inputs[m.test.partition("::")[0]]}
    run |= {t for t in tests if t not in record["outcomes"]}
    return sorted(run), {t: record["outcomes"][t] for t in tests if t not in run}


def start_tests(app, env, added, changed, removed):
    """Start the claim tests that this build needs in the background (see :func:`tests_to_run`)."""
    claims = _claims_module()
    markers = claims.collect_markers(ROOT / "tests")
    reread = [DOCNAME] if DOCNAME in env.found_docs else []
    skipped = "not run" if os.environ.get("ATTNMATH_SKIP_CLAIM_TESTS") else (
        claims.RUN_BY_THE_SUITE if os.environ.get(claims.IN_SUITE) else None)
    if skipped:
        env.attnmath_claim_record = None
        _record(app, {m.test: skipped for m in markers})
        return reread
    inputs = claim_inputs(markers)
    record = getattr(env, "attnmath_claim_record", None)
    run, kept = tests_to_run(markers, inputs, record)
    if not run and record and record["inputs"] == inputs:
        reread = []  # the same tests, sources and outcomes: the page would read the same
    env.attnmath_claim_record = {"inputs": inputs, "outcomes": {}}
    _KEPT[id(app)] = kept
    if run:
        logger.info(f"running {len(run)} of {len(kept) + len(run)} claim tests (pytest -m claim) "
                    f"while the chapters are read ...")
        args = [] if not kept else [json.dumps(run)]
        _PENDING[id(app)] = subprocess.Popen(
            [sys.executable, "-c", _RUNNER, str(ROOT / "tests"), str(ROOT), *args], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    else:
        logger.info(f"the {len(kept)} claim tests' outcomes are those of the last build (nothing they test changed)")
    return reread


#: Outcomes kept from the last build, per application, until the new ones are in.
_KEPT: dict[int, dict[str, str]] = {}


def claim_outcomes(app) -> dict[str, str]:
    """The outcome of every claim test, waiting for the run that :func:`start_tests` started."""
    if id(app) in _KEPT:
        outcomes = _KEPT.pop(id(app))
        proc = _PENDING.pop(id(app), None)
        if proc is not None:
            out, err = proc.communicate()
            if proc.returncode != 0:
                app.env.attnmath_claim_record = None
                raise RuntimeError(f"the claim tests did not run (exit {proc.returncode}):\n{err[-3000:]}")
            outcomes = {**outcomes, **json.loads(out.strip().splitlines()[-1])}
        _record(app, outcomes)
        if app.env.attnmath_claim_record is not None:
            app.env.attnmath_claim_record["outcomes"] = dict(outcomes)
    return getattr(app.env, "attnmath_claim_outcomes", {})


def _record(app, outcomes: dict[str, str]) -> None:
    claims = _claims_module()
    for problem in claims.inconsistent_groups(ROOT / "tests"):
        logger.warning(f"claim markers: {problem}", type="attnmath", subtype="claims")
    for test, outcome in sorted(outcomes.items()):
        if outcome not in ("passed", claims.RUN_BY_THE_SUITE):
            logger.warning(f"claim test {test}: {outcome}", type="attnmath", subtype="claims")
    app.env.attnmath_claim_outcomes = outcomes


def wait_for_tests(app, env):
    """Every build reports its claim tests' outcomes, also one that does not read the appendix."""
    claim_outcomes(app)


def claim_row(c, outcomes: dict[str, str]) -> list[str]:
    """The ``list-table`` lines of one claim: the claim with its correction, caveat, narrower
    domain ("verified on") or reason, the verdict badge, and each test with its outcome."""
    if c.about_data:
        claim = f"*This chapter, {found_in(c.source)}:* “{_cell(c.quote or '')}” <br> *Checked:* {_cell(c.text)}"
    elif _claims_module().paper_source(c.source):
        claim = f"*A paper's claim, {found_in(c.source)}:* {_cell(c.text)}"
    else:
        claim = f"*A common claim, {found_in(c.source)}:* {_cell(c.text)}"
    if c.correction:
        head = "Correct statement" if c.verdict == "corrected" else "Caveat"
        claim += f" <br> *{head}:* {_cell(c.correction)}"
    narrowed = c.verdict == "verified on"
    if narrowed:
        claim += " <br> *Verified on:* " + "; ".join(_cell(d) for _, d in c.tests if d)
    if c.box:
        claim += f" {{ref}}`(Correction box) <{c.box}>`"
    if c.reason:
        claim += f" <br> *Not tested here:* {_cell(c.reason)}"
    evidence = []
    for test, domain in c.tests:
        outcome = OUTCOME.get(outcomes.get(test, "not run"), "not run")
        line = f"{{ref}}`{_name(test)} <{_label(test)}>` {outcome}"
        if domain and not narrowed:
            line += f" <br> *Domain:* {_cell(domain)}"
        evidence.append(line)
    return [f"* - {claim}", f"  - {{bdg-{BADGE[c.verdict]}}}`{c.verdict}`",
            f"  - {' <br> '.join(evidence) if evidence else '—'}"]


class _ClaimsDirective(SphinxDirective):
    def _parse(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=DOCNAME), self.content_offset, container)
        return container.children

    @property
    def outcomes(self) -> dict[str, str]:
        return claim_outcomes(self.env.app)


class ClaimsSummary(_ClaimsDirective):
    def run(self):
        claims = _claims_module()
        everything = claims.collect_claims(ROOT / "tests")
        papers = [c for c in everything if claims.paper_source(c.source)]
        rows = [c for c in everything if not c.about_data and c not in papers]
        own = [c for c in everything if c.about_data]
        counts = {v: sum(c.verdict == v for c in rows) for v in (*claims.VERDICTS, claims.UNVERIFIABLE)}
        tests = sorted({t for c in everything for t, _ in c.tests})
        passed = sum(self.outcomes.get(t) == "passed" for t in tests)
        parts = ", ".join(f"{{bdg-{BADGE[v]}}}`{v}` {n}" for v, n in counts.items())
        ran = (f"The {len(tests)} claim tests ran in the test suite that made this build."
               if tests and all(self.outcomes.get(t) == claims.RUN_BY_THE_SUITE for t in tests)
               else f"In this build {passed} of the {len(tests)} claim tests passed.")
        mine = ", ".join(f"{{bdg-{BADGE[v]}}}`{v}` {n}" for v in claims.VERDICTS
                         if (n := sum(c.verdict == v for c in own)))
        cited = ", ".join(f"{{bdg-{BADGE[v]}}}`{v}` {n}" for v in claims.VERDICTS
                          if (n := sum(c.verdict == v for c in papers)))
        parts += f". {len(papers)} claims of published papers: {cited or 'none'}"
        summary = self._parse([f"{len(rows)} claims of the five texts: {parts}. {len(own)} statements "
                               f"of the book about its own data: {mine or 'none'}. {ran}"])
        return [*summary, nodes.raw("", filter_form(everything), format="html")]


class ClaimsTable(_ClaimsDirective):
    required_arguments = 1

    def run(self):
        claims = _claims_module()
        chapter = self.arguments[0]
        found = [c for c in claims.collect_claims(ROOT / "tests") if c.chapter == chapter]
        lines = []
        for rows, head, none in (
                ([c for c in found if not c.about_data], "Claim (and the text or paper it is found in)",
                 "No claim of the five texts ({ref}`sec-sources`) is repeated in this chapter."),
                ([c for c in found if c.about_data], "Statement of this chapter, checked against its data or code",
                 "")):
            if not rows:
                lines += [none, ""] if none else []
                continue
            lines += [":::{list-table}", ":header-rows: 1", ":class: claims-table", ":widths: 58 12 30",
                      "", f"* - {head}", "  - Verdict", "  - Tests in this build"]
            for c in rows:
                lines += claim_row(c, self.outcomes)
            lines += [":::", ""]
        return [self._marked(self._parse(lines), found)]

    def _marked(self, parsed, found) -> nodes.container:
        """The chapter's tables in a container of class ``claims-chapter``, each row and each
        part of its cells with its classes (:func:`row_classes`, :func:`mark_parts`)."""
        box = nodes.container("", *parsed, classes=["claims-chapter", f"claim-chapter-{self.arguments[0]}"])
        tables = list(box.findall(nodes.table))
        kinds = [c for c in (False, True) if any(x.about_data == c for x in found)]
        for table, about_data in zip(tables, kinds):
            rows = [c for c in found if c.about_data == about_data]
            body = next(table.findall(nodes.tbody))
            for row, claim in zip(body.children, rows):
                row["classes"] += row_classes(claim)
                entries = list(row.findall(nodes.entry))
                for entry, first in zip(entries, ("claim", "verdict", "test")):
                    for para in entry.findall(nodes.paragraph):
                        mark_parts(para, first)
        return box


def _test_source(test: str) -> str:
    path, _, name = test.partition("::")
    stat = (ROOT / path).stat()
    return _functions(ROOT / path, stat.st_mtime_ns, stat.st_size)[name]


@functools.lru_cache(maxsize=256)
def _functions(path: Path, mtime_ns: int, size: int) -> dict[str, str]:
    """The source of each test function of ``path``, decorators included (parsed once a version)."""
    source = path.read_text()
    lines = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            found.setdefault(node.name, "\n".join(lines[start - 1:node.end_lineno]))
    return found


class ClaimsTests(_ClaimsDirective):
    def run(self):
        claims = _claims_module()
        tests = sorted({t for c in claims.collect_claims(ROOT / "tests") for t, _ in c.tests},
                       key=lambda t: (t.partition("::")[0], t))
        lines = []
        for test in tests:
            fence = "````"
            body = _test_source(test)
            outcome = OUTCOME.get(self.outcomes.get(test, "not run"), "not run")
            lines += [f"({_label(test)})=", f"::::{{dropdown}} {_name(test)} {outcome}",
                      f"`{test}`", "", f"{fence}text", *body.splitlines(), fence, "::::", ""]
        return [nodes.container("", *self._parse(lines), classes=["claims-tests"])]


def _options(name: str, label: str, counts: dict[str, int], labels: dict[str, str]) -> str:
    options = "".join(f'<option value="{html.escape(key)}">{html.escape(labels[key])} ({n})</option>'
                      for key, n in counts.items() if n)
    return (f'<label>{label} <select name="{name}"><option value="">all ({sum(counts.values())})'
            f'</option>{options}</select></label>')


def filter_form(claims: list) -> str:
    """The filter of the appendix (run by ``_static/claims_filter.js``, which shows it): three
    menus, chapter, verdict and source, each option with its number of rows, a button that shows
    every row again, and the number of rows shown, read out when it changes."""
    module = _claims_module()
    chapters = {ch: sum(c.chapter == ch for c in claims) for ch in module.CHAPTERS}
    chapter_labels = {ch: f"{int(ch[:2])}. {title}" for ch, title in module.CHAPTERS.items()}
    verdicts = {slug(v): sum(c.verdict == v for c in claims) for v in BADGE}
    sources = {key: sum(source_key(c.source) == key for c in claims) for key in SOURCE_LABELS}
    return ('<form class="claims-filter" role="search" aria-label="Filter the claims" hidden>'
            + _options("chapter", "Chapter", chapters, chapter_labels)
            + _options("verdict", "Verdict", verdicts, {slug(v): v for v in BADGE})
            + _options("source", "Found in", sources, SOURCE_LABELS)
            + '<button type="reset">Show all</button>'
            + f'<output class="claims-filter-count" aria-live="polite">{len(claims)} rows</output>'
            + '</form>')


def add_assets(app, pagename, templatename, context, doctree):
    """The filter's script and the appendix's styles, on the appendix only."""
    if pagename == DOCNAME:
        app.add_css_file("claims.css")
        app.add_js_file("claims_filter.js", loading_method="defer")


def setup(app):
    app.connect("html-page-context", add_assets)
    app.connect("env-get-outdated", start_tests)
    app.connect("env-updated", wait_for_tests)
    app.add_directive("claims-summary", ClaimsSummary)
    app.add_directive("claims-table", ClaimsTable)
    app.add_directive("claims-tests", ClaimsTests)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
