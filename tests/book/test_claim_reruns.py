"""Which claim tests a build of the book runs again (book/_ext/attnmath_claims.py).

A clean build runs every claim test; a later one runs the tests of what changed (a test file, a
chapter) and keeps the other outcomes of the last build, unless the library or the shared test
code changed, which runs them all again. These tests check that choice on made-up markers and
the digests it rests on, without building the book.
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
    run, kept = ext.tests_to_run(MARKERS, INPUTS, None, set())
    assert run == TESTS and kept == {}


def test_nothing_changed_runs_nothing_and_keeps_every_outcome():
    outcomes = {t: ("failed" if i % 4 == 0 else "passed") for i, t in enumerate(TESTS)}
    run, kept = ext.tests_to_run(MARKERS, INPUTS, _record(outcomes), set())
    assert run == [] and kept == outcomes  # a failed outcome is kept, so the build fails again


def test_a_change_to_the_library_or_the_shared_test_code_runs_every_test():
    for name in ext.SHARED_INPUTS:
        run, kept = ext.tests_to_run(MARKERS, INPUTS, _record(**{name: "an older digest"}), set())
        assert run == TESTS and kept == {}, name


@settings(max_examples=60, deadline=None)
@given(chapters=st.sets(st.sampled_from(CHAPTERS)), files=st.sets(st.sampled_from(FILES)),
       new=st.sets(st.sampled_from(TESTS)))
def test_a_later_build_runs_exactly_the_tests_of_what_changed(chapters, files, new):
    """``chapters`` edited, ``files`` edited, ``new``: tests the last build did not run."""
    record = _record(outcomes={t: "passed" for t in TESTS if t not in new},
                     **{f: "an older digest" for f in files})
    run, kept = ext.tests_to_run(MARKERS, INPUTS, record, chapters)
    expected = {m.test for m in MARKERS if m.chapter in chapters or m.test.partition("::")[0] in files} | new
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


def test_a_chapter_saved_again_unchanged_is_no_edit_and_an_edited_one_is(tmp_path):
    sources = {doc: tmp_path / f"{doc}.md" for doc in CHAPTERS}
    for doc, path in sources.items():
        path.write_text(f"# {doc}\n")
    first: dict[str, str] = {}
    assert ext.edited_chapters(sources, None, first) == set(CHAPTERS), "a clean build: every chapter is new"
    record = {"inputs": first, "outcomes": {}}
    sources["02_attention"].write_text("# 02_attention\n")  # saved again, same text
    sources["04_masking"].write_text("# 04_masking\n\nA new sentence.\n")
    read = {doc: sources[doc] for doc in ("02_attention", "04_masking")}  # Sphinx reads what is newer
    second: dict[str, str] = {}
    assert ext.edited_chapters(read, record, second) == {"04_masking"}
    assert second["chapter 01_softmax"] == first["chapter 01_softmax"], "an unread chapter keeps its digest"
    assert second["chapter 04_masking"] != first["chapter 04_masking"]
    record = {"inputs": second, "outcomes": {}}
    assert ext.edited_chapters(read, record, {}) == set(), "the edit is recorded: the next build has none"


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
    assert [(m.test, m.verdict) for m in collect_markers(tests)] == [("tests/test_x.py::test_one", "verified")]
    write("corrected")  # the same size: the modification time tells
    os.utime(marked, ns=(marked.stat().st_atime_ns, marked.stat().st_mtime_ns + 10**9))
    assert [m.verdict for m in collect_markers(tests)] == ["corrected"]
    write("corrected", '\n\n@pytest.mark.claim("001 §2", "b", "verified", chapter="01_softmax")\n'
                       'def test_two():\n    pass\n')
    assert [m.test for m in collect_markers(tests)] == ["tests/test_x.py::test_one", "tests/test_x.py::test_two"]
    marked.unlink()
    assert collect_markers(tests) == []
