"""Which claim tests a build of the book runs again (book/_ext/attnmath_claims.py).

A clean build runs every claim test; a later one runs the tests of the test files that changed
(an edited chapter runs none) and keeps the other outcomes of the last build, unless the library
or the shared test code changed, which runs them all again; the appendix is read again only when
a test runs or a digest changed. These tests check those choices on made-up markers and the
digests they rest on, without building the book.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tests"))
import attnmath_claims as ext  # noqa: E402  (book/_ext/attnmath_claims.py)
from claims import Marker  # noqa: E402  (tests/claims.py)

FILES = ["tests/attnmath/test_a.py", "tests/attnmath/test_b.py", "tests/attnmath/test_c.py"]
CHAPTERS = ["01_softmax", "02_attention", "04_masking"]


def _marker(file: str, name: str, chapter: str) -> Marker:
    return Marker("003 §1", f"claim {name}", "verified", None, "all", chapter, None, f"{file}::{name}", 1)


# Made-up markers: every test file holds tests of several chapters, one test has two markers.
MARKERS = [_marker(f, f"test_{i}_{j}", CHAPTERS[(i + j) % 3]) for i, f in enumerate(FILES) for j in range(3)]
MARKERS.append(_marker(FILES[0], "test_0_0", CHAPTERS[2]))
TESTS = sorted({m.test for m in MARKERS})
INPUTS = {**{name: f"digest of {name}" for name in ext.SHARED_INPUTS}, **{f: f"digest of {f}" for f in FILES}}


def _record(outcomes=None, **changed):
    return {"inputs": {**INPUTS, **changed},
            "outcomes": {t: "passed" for t in TESTS} if outcomes is None else outcomes}


def test_a_clean_build_runs_every_claim_test():
    run, kept = ext.tests_to_run(MARKERS, INPUTS, None)
    assert run == TESTS and kept == {}


def test_nothing_changed_runs_nothing_and_keeps_every_outcome():
    outcomes = {t: ("failed" if i % 4 == 0 else "passed") for i, t in enumerate(TESTS)}
    run, kept = ext.tests_to_run(MARKERS, INPUTS, _record(outcomes))
    assert run == [] and kept == outcomes  # a failed outcome is kept, so the build fails again


def test_a_change_to_the_library_or_the_shared_test_code_runs_every_test():
    for name in ext.SHARED_INPUTS:
        run, kept = ext.tests_to_run(MARKERS, INPUTS, _record(**{name: "an older digest"}))
        assert run == TESTS and kept == {}, name


@settings(max_examples=60, deadline=None)
@given(files=st.sets(st.sampled_from(FILES)), new=st.sets(st.sampled_from(TESTS)))
def test_a_later_build_runs_exactly_the_tests_of_what_changed(files, new):
    """``files`` edited, ``new``: tests the last build did not run. An edited chapter is not among
    the inputs: the claim tests check the library, whatever the chapter's text says."""
    record = _record(outcomes={t: "passed" for t in TESTS if t not in new},
                     **{f: "an older digest" for f in files})
    run, kept = ext.tests_to_run(MARKERS, INPUTS, record)
    expected = {m.test for m in MARKERS if m.test.partition("::")[0] in files} | new
    assert set(run) == expected
    assert set(kept) == set(TESTS) - expected and all(kept[t] == "passed" for t in kept)


def test_digests_follow_the_names_and_contents_of_the_python_files(tmp_path):
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    (lib / "pkg" / "a.py").write_text("x = 1\n")
    first = ext.digest(lib)
    (lib / "pkg" / "notes.txt").write_text("not code")
    (lib / "pkg" / "__pycache__").mkdir()
    (lib / "pkg" / "__pycache__" / "a.py").write_text("compiled")
    assert ext.digest(lib) == first, "only the Python sources count"
    (lib / "pkg" / "a.py").write_text("x = 2\n")
    assert ext.digest(lib) != first
    (lib / "pkg" / "a.py").write_text("x = 1\n")
    assert ext.digest(lib) == first
    (lib / "pkg" / "a.py").rename(lib / "pkg" / "b.py")
    assert ext.digest(lib) != first, "a renamed module is a change"
    assert ext.digest(tmp_path / "missing.py") == ""
    assert ext.digest(lib / "pkg" / "b.py") != ext.digest(lib)


def test_the_digests_cover_every_file_that_holds_claim_tests():
    markers = [_marker("tests/attnmath/test_softmax.py", "test_x", "01_softmax")]
    inputs = ext.claim_inputs(markers)
    assert set(inputs) == {*ext.SHARED_INPUTS, "tests/attnmath/test_softmax.py"}
    assert all(inputs.values()), "every input exists in the repository"


class _Env:
    """What :func:`start_tests` reads of Sphinx's environment."""

    def __init__(self, record):
        self.found_docs = {ext.DOCNAME, "book/04_masking"}
        self.attnmath_claim_record = record


def test_the_appendix_is_read_again_only_when_a_test_runs_or_a_digest_changed(monkeypatch):
    started = []
    monkeypatch.setattr(ext.subprocess, "Popen", lambda args, **kw: started.append(args) or object())
    markers = ext._claims_module().collect_markers(ext.ROOT / "tests")
    inputs = ext.claim_inputs(markers)
    outcomes = {m.test: "passed" for m in markers}
    app = object()
    try:
        same = _Env({"inputs": dict(inputs), "outcomes": dict(outcomes)})
        assert ext.start_tests(app, same, set(), {"book/04_masking"}, set()) == [] and not started
        assert ext._KEPT[id(app)] == outcomes  # the outcomes reported again, warnings included
        changed_file = markers[0].test.partition("::")[0]
        older = _Env({"inputs": {**inputs, changed_file: "an older digest"}, "outcomes": dict(outcomes)})
        assert ext.start_tests(app, older, set(), set(), set()) == [ext.DOCNAME] and len(started) == 1
        assert set(ext._KEPT[id(app)]) == {m.test for m in markers if not m.test.startswith(changed_file)}
    finally:
        ext._KEPT.pop(id(app), None)
        ext._PENDING.pop(id(app), None)


def test_the_markers_follow_every_edit_of_a_test_file_though_files_are_parsed_once(tmp_path):
    from claims import collect_markers

    tests = tmp_path / "tests"
    tests.mkdir()
    marked = tests / "test_x.py"

    def write(verdict: str, extra: str = "") -> None:
        marked.write_text(f'import pytest\n\n\n@pytest.mark.claim("001 §1", "a claim", "{verdict}", '
                          f'chapter="01_softmax")\ndef test_one():\n    pass\n{extra}')

    write("verified")
    (tests / "test_plain.py").write_text("def test_plain():\n    pass\n")
    one, two = "tests/test_x.py::test_one", "tests/test_x.py::test_two"
    assert [(m.test, m.verdict) for m in collect_markers(tests)] == [(one, "verified")]
    write("corrected")  # the same size: the modification time tells
    os.utime(marked, ns=(marked.stat().st_atime_ns, marked.stat().st_mtime_ns + 10**9))
    assert [m.verdict for m in collect_markers(tests)] == ["corrected"]
    write("corrected", '\n\n@pytest.mark.claim("001 §2", "b", "verified", chapter="01_softmax")\n'
                       'def test_two():\n    pass\n')
    assert [m.test for m in collect_markers(tests)] == [one, two]
    marked.unlink()
    assert collect_markers(tests) == []
