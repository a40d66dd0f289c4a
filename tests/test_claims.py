"""The claim markers are well formed, so the book's appendix "Claims and errata" can be built from them.

The appendix itself runs the claim tests when the book is built (book/_ext/attnmath_claims.py),
except in the build of a test run that runs every claim test itself (tests/book/build.py); these
tests check that choice and what the appendix relies on: every marker names a known source, a
verdict of ``claims.VERDICTS``, a correction or caveat where the verdict needs one, the domain
its test covers, a chapter of the book, and a Correction box that exists in that chapter.
"""

import dataclasses
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from claims import CHAPTERS, DISTINCT, IN_SUITE, NOT_VERIFIABLE, RUN_BY_THE_SUITE, UNVERIFIABLE, VERDICTS, \
    Claim, claim_tests_without_assertions, collect_claims, collect_markers, draws_with_hypothesis, \
    inconsistent_groups, is_book_source, near_identical_claims, paper_source, run_claim_tests, \
    runs_every_claim_test

SEEDS = {"000", "001", "002", "003", "004"}
ROOT = Path(__file__).resolve().parents[1]
BIB = (ROOT / "book" / "references.bib").read_text()


def _labels(chapter):
    return set(re.findall(r"^\(([\w-]+)\)=$", (ROOT / "book" / f"{chapter}.md").read_text(), re.M))


def test_every_claim_marker_is_well_formed():
    markers = collect_markers(Path(__file__).parent)
    assert markers, "no claim markers found"
    for m in markers:
        if is_book_source(m.source):
            assert len(m.source.partition(":")[2].strip()) > 3, f"{m.test}: say which data the statement is about"
            assert m.verdict in ("verified", "verified on"), f"{m.test}: the book's own statement is {m.verdict}"
            assert m.quote and len(m.quote) > 10, f"{m.test}: a statement of the book quotes its sentence (quote=...)"
        elif paper_source(m.source):
            key, where = paper_source(m.source)
            assert f"{{{key}," in BIB, f"{m.test}: no entry {key!r} in book/references.bib"
            assert where, f"{m.test}: say where in {key} the claim is made (a section, table or equation)"
            assert not m.quote, f"{m.test}: quote= is for the book's own statements"
        else:
            assert m.source and re.match(r"^\d{3}( .+)?$", m.source), f"{m.test}: source {m.source!r} must start with a document number"
            assert m.source[:3] in SEEDS, f"{m.test}: unknown source document {m.source[:3]}"
            assert not m.quote, f"{m.test}: quote= is for the book's own statements"
        assert m.text and len(m.text) > 10, f"{m.test}: the claim text is missing"
        assert m.verdict in VERDICTS, f"{m.test}: verdict {m.verdict!r} is not one of {VERDICTS}"
        assert m.chapter in CHAPTERS, f"{m.test}: chapter {m.chapter!r} is not a chapter of the book"
        assert m.domain and len(m.domain) > 15, f"{m.test}: the marker must say what its test spans (domain=...)"
        if m.verdict in ("corrected", "clarified"):
            assert m.correction, f"{m.test}: a {m.verdict} claim must state the correction or caveat"
            assert m.box, f"{m.test}: a {m.verdict} claim must name its Correction box (box=...)"
        else:
            assert not m.correction, f"{m.test}: a {m.verdict} claim has no correction"


def test_every_correction_box_a_marker_names_exists_in_its_chapter():
    for c in collect_claims(Path(__file__).parent):
        if c.box:
            assert c.box in _labels(c.chapter), f"{c.source} {c.text!r}: no box ({c.box})= in book/{c.chapter}.md"


def _prose(chapter):
    """A chapter's prose on one line: its paragraphs, captions and alt texts, white space collapsed."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import attnmath_numbers

    source = (ROOT / "book" / f"{chapter}.md").read_text()
    return " ".join(" ".join(text for _, text, kind in attnmath_numbers.prose_lines(source)).split())


def test_each_statement_of_the_book_quotes_a_sentence_of_its_chapter():
    # The registry and the text cannot drift apart: a rewritten sentence fails here until its
    # marker (and so its test) follows it.
    own = [m for m in collect_markers(Path(__file__).parent) if is_book_source(m.source)]
    assert own, "no statement of the book about its data is registered"
    prose = {}
    for m in own:
        text = prose.setdefault(m.chapter, _prose(m.chapter))
        assert " ".join(m.quote.split()) in text, f"{m.test}: book/{m.chapter}.md does not say {m.quote!r}"


def test_the_appendix_shows_the_books_statements_apart_from_the_sources_claims():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import attnmath_claims as ext

    test = "tests/book/test_x.py::test_a"
    own = Claim("book: book/data/x.json", "the rates sit between 1 and 2", "verified", None, "08_flash",
                None, ((test, "every row"),), quote="sit between the two")
    assert own.about_data and not Claim("003 §1", "x", "verified", None, "01_softmax", None, ()).about_data
    claim, verdict, _ = ext.claim_row(own, {test: "passed"})
    assert "about book/data/x.json" in claim and "“sit between the two”" in claim
    assert "*Checked:* the rates sit between 1 and 2" in claim and "`verified`" in verdict
    assert ext.found_in("book: fig-x") == "about fig-x"


def test_markers_of_one_claim_agree_and_each_claim_is_one_row():
    assert inconsistent_groups(Path(__file__).parent) == []
    claims = collect_claims(Path(__file__).parent)
    keys = [(c.source, c.text) for c in claims]
    assert len(keys) == len(set(keys)), "a claim appears in two rows"


def test_claims_are_in_chapter_order():
    order = list(CHAPTERS)
    chapters = [order.index(c.chapter) for c in collect_claims(Path(__file__).parent)]
    assert chapters == sorted(chapters)


def test_unverifiable_claims_say_why_and_every_verdict_has_a_test():
    for c in NOT_VERIFIABLE:
        assert c.reason and len(c.reason) > 40 and not c.tests
        assert c.chapter in CHAPTERS
        assert c.verdict == UNVERIFIABLE, f"{c.text!r}: a claim with no test has no verdict ({c.verdict})"
        if c.box:
            assert c.box in _labels(c.chapter), f"{c.text!r}: no box ({c.box})= in book/{c.chapter}.md"
    for c in collect_claims(Path(__file__).parent):
        assert (c.verdict == UNVERIFIABLE) == (not c.tests), f"{c.source} {c.text!r}: {c.verdict} with {len(c.tests)} tests"


def test_every_claim_test_asserts():
    assert claim_tests_without_assertions(Path(__file__).parent) == []


def test_a_claim_test_that_asserts_nothing_is_found(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sample.py").write_text(
        "import pytest\n"
        "def _check(x):\n    assert x\n"
        "def _show(x):\n    print(x)\n"
        "@pytest.mark.claim('001 X', 'checked by a helper', 'verified', domain='one case')\n"
        "def test_helper():\n    _check(1)\n"
        "@pytest.mark.claim('001 X', 'an error is checked', 'verified', domain='one case')\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n"
        "@pytest.mark.claim('001 X', 'only shown', 'verified', domain='one case')\n"
        "def test_shown():\n    _show(1)\n")
    assert claim_tests_without_assertions(tmp_path / "tests") == ["tests/test_sample.py::test_shown"]


def test_near_identical_claims_get_the_same_verdict_and_one_chapter_lists_them_once():
    claims = collect_claims(Path(__file__).parent)
    for a, b in near_identical_claims(claims):
        assert a.verdict == b.verdict, (
            f"{a.source} {a.text!r} is {a.verdict} but the near-identical {b.source} {b.text!r} is "
            f"{b.verdict}: give them one verdict, or say in claims.DISTINCT how they differ")
        assert (a.source, a.chapter) != (b.source, b.chapter), (
            f"{a.source} {a.text!r} and {b.text!r}: one claim in two rows of {a.chapter}; use one text")


def test_each_declared_distinct_pair_names_two_near_identical_claims():
    claims = collect_claims(Path(__file__).parent)
    for first, second, why in DISTINCT:
        a = [c for c in claims if c.text.startswith(first)]
        b = [c for c in claims if c.text.startswith(second) and c not in a]
        assert len(a) == 1 and len(b) == 1, f"DISTINCT names no single pair: {first!r}, {second!r}"
        assert len(why) > 30, "say what separates the two claims"
        # the declaration is needed (the pair counts as near-identical without it) and it works
        assert near_identical_claims([a[0], b[0]], distinct=()) == [(a[0], b[0])]
        assert near_identical_claims([a[0], b[0]]) == []


def test_near_identical_claims_are_found_and_different_claims_are_not():
    def claim(text, verdict="verified"):
        return Claim("001 X", text, verdict, None, "01_softmax", None, (("t", "d"),))

    same = [claim("Sliding-window attention costs $O(nw)$"), claim("Sliding window attention: $O(nw)$ complexity")]
    assert len(near_identical_claims(same)) == 1
    other = [claim("Softmax preserves the order of the logits"), claim("The softmax Jacobian is $J = \\operatorname{diag}(p) - p p^\\top$")]
    assert near_identical_claims(other) == []


def test_the_run_reports_each_claim_tests_outcome_and_a_failure_is_not_hidden(tmp_path):
    # What the book build relies on: a failing claim test (or one failing case of a parametrised
    # test) is reported as failed, so the appendix's extension turns it into a build error.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sample.py").write_text(
        "import pytest\n"
        "@pytest.mark.claim('001 X', 'a true claim', 'verified')\n"
        "def test_true():\n    assert 1 + 1 == 2\n"
        "@pytest.mark.claim('001 X', 'a false claim', 'verified')\n"
        "def test_false():\n    assert 1 + 1 == 3\n"
        "@pytest.mark.claim('001 X', 'true for most n', 'verified')\n"
        "@pytest.mark.parametrize('n', [1, 2, 3])\n"
        "def test_partly(n):\n    assert n != 2\n"
        "def test_not_a_claim():\n    assert False\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    claim: a claim\n")
    outcomes = run_claim_tests(tmp_path, timeout=120)
    assert outcomes == {"tests/test_sample.py::test_true": "passed",
                        "tests/test_sample.py::test_false": "failed",
                        "tests/test_sample.py::test_partly": "failed"}


#: Plain-text maths that the appendix would show as typed: a superscript, an identifier with a
#: subscript, a function call, a comparison, an integer range, minus infinity, a times sign.
ASCII_MATH = re.compile(r"\^|\b[A-Za-z]+_\w|\b(?:O|sqrt|softmax|exp|log|phi|elu|diag|rank|min|max|Var)\("
                        r"|<=|>=|!=|\d\.\.\d|-inf\b|\w x \w")


def test_claim_strings_write_their_maths_in_tex():
    # The appendix renders the markers' strings as MyST: maths in $...$ (typeset by MathJax),
    # code in backticks. Anything else is shown as typed.
    claims = collect_claims(Path(__file__).parent)
    for c in claims:
        for text in (c.source, c.text, c.correction, c.reason, *(d for _, d in c.tests)):
            if not text:
                continue
            assert text.count("$") % 2 == 0, f"unbalanced $ in {text!r}"
            prose = re.sub(r"\$[^$]*\$|`[^`]*`", "", text)
            assert not ASCII_MATH.search(prose), f"maths outside $...$ in {text!r}"
    # The check finds what it is meant to find.
    assert all(ASCII_MATH.search(t) for t in ("O(n^2)", "d_k", "sqrt(d)", "j <= i", "n in 1..8", "-inf"))


def test_the_appendix_shows_a_narrowed_verdict_with_the_domain_it_holds_on():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import attnmath_claims as ext

    assert set(ext.BADGE) == {*VERDICTS, UNVERIFIABLE}
    test = "tests/attnmath/test_x.py::test_a"
    narrowed = Claim("001 X", "a claim", "verified on", None, "01_softmax", None, ((test, "three sizes"),))
    claim, verdict, evidence = ext.claim_row(narrowed, {test: "passed"})
    assert "*Verified on:* three sizes" in claim and "`verified on`" in verdict
    assert "passed" in evidence and "three sizes" not in evidence
    full = dataclasses.replace(narrowed, verdict="verified")
    claim, verdict, evidence = ext.claim_row(full, {test: "failed"})
    assert "Verified on" not in claim and "*Domain:* three sizes" in evidence and "FAILED" in evidence


def test_a_domain_says_hypothesis_exactly_when_its_test_draws_with_hypothesis():
    # A domain that no longer matches its test (a fixed case called "hypothesis", or a test
    # widened without saying so) misleads the reader of the appendix.
    for m in collect_markers(Path(__file__).parent):
        says = "hypothesis" in m.domain
        assert says == draws_with_hypothesis(m.test, ROOT), (
            f"{m.test}: the domain {'says' if says else 'does not say'} hypothesis, the test "
            f"{'does not draw' if says else 'draws'} with it")


def test_the_selected_tests_hold_every_claim_test_only_when_none_is_missing(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text(
        "import pytest\n"
        "@pytest.mark.claim('001 X', 'one claim', 'verified', domain='one case')\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_one(n):\n    assert n\n"
        "@pytest.mark.claim('001 X', 'another claim', 'verified', domain='one case')\n"
        "def test_two():\n    assert True\n"
        "def test_plain():\n    assert True\n")
    every = ["tests/test_a.py::test_one[1]", "tests/test_a.py::test_one[2]", "tests/test_a.py::test_two"]
    assert runs_every_claim_test(every + ["tests/test_a.py::test_plain"], tests)
    assert runs_every_claim_test(every[1:], tests), "one case of a parametrised test selects it"
    assert not runs_every_claim_test(every[:2] + ["tests/test_a.py::test_plain"], tests)
    assert not runs_every_claim_test(["tests/test_a.py::test_two"], tests)
    assert not runs_every_claim_test([], tests)
    assert runs_every_claim_test([], tmp_path / "no_tests"), "no claim test: nothing to run"
    with pytest.raises(TypeError, match="test_ids"):
        runs_every_claim_test("tests/test_a.py::test_two", tests)


class _App:
    """What the appendix's extension reads and writes of a Sphinx application."""

    def __init__(self):
        self.env = SimpleNamespace(found_docs={"book/claims"}, attnmath_claim_record=None)


def _start(monkeypatch, env_vars: dict[str, str]):
    """The appendix's extension at the start of a clean build with ``env_vars`` set: the claim
    runs it started, its warnings and the outcomes it recorded."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import attnmath_claims as ext

    for name in ("ATTNMATH_SKIP_CLAIM_TESTS", IN_SUITE):
        monkeypatch.delenv(name, raising=False)
    for name, value in env_vars.items():
        monkeypatch.setenv(name, value)
    started, warned = [], []
    monkeypatch.setattr(ext.subprocess, "Popen", lambda args, **kw: started.append(args) or object())
    monkeypatch.setattr(ext.logger, "warning", lambda message, **kw: warned.append(message))
    app = _App()
    try:
        assert ext.start_tests(app, app.env, set(), set(), set()) == ["book/claims"]
    finally:
        ext._KEPT.pop(id(app), None)
        ext._PENDING.pop(id(app), None)
    return started, warned, getattr(app.env, "attnmath_claim_outcomes", None)


def test_a_build_for_a_run_of_every_claim_test_runs_none_and_says_who_ran_them(monkeypatch):
    tests = {m.test for m in collect_markers(Path(__file__).parent)}
    started, warned, outcomes = _start(monkeypatch, {})
    assert len(started) == 1 and "run_claim_tests" in " ".join(started[0]), "a clean build runs them"
    started, warned, outcomes = _start(monkeypatch, {IN_SUITE: "1"})
    assert started == [] and warned == []
    assert outcomes == {t: RUN_BY_THE_SUITE for t in tests}
    started, warned, outcomes = _start(monkeypatch, {"ATTNMATH_SKIP_CLAIM_TESTS": "1", IN_SUITE: "1"})
    assert started == [] and outcomes == {t: "not run" for t in tests}
    assert len(warned) == len(tests), "a draft that skips them warns for each, so -W fails"

    import attnmath_claims as ext

    test = sorted(tests)[0]
    row = ext.claim_row(Claim("001 X", "a claim", "verified", None, "01_softmax", None, ((test, "d"),)),
                        {test: RUN_BY_THE_SUITE})
    assert "`run by the test suite`" in row[2] and "not run" not in row[2]


def test_the_suites_book_build_leaves_the_claim_tests_to_the_suite_only_when_it_runs_them(monkeypatch):
    sys.path.insert(0, str(ROOT / "tests" / "book"))
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import build
    import build_book

    monkeypatch.setenv(IN_SUITE, "1")  # a variable left in the caller's environment counts for nothing
    for in_suite in (False, True):
        command, env = build.build_command(Path("/tmp/out"), in_suite)
        assert command[1:] == [str(ROOT / "book" / "_ext" / "build_book.py"), *build_book.COMMAND,
                               "--path-output", "/tmp/out"], "make book's command"
        assert (env.get(IN_SUITE) == "1") == in_suite
    makefile = (ROOT / "Makefile").read_text()
    assert "book/_ext/build_book.py" in makefile and IN_SUITE not in makefile, "make book runs them"
