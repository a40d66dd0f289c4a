"""Absolute words are earned: every "always", "never", "only", "nothing", "all", "whole", "cannot"
and "provable" of the chapters and the glossary is backed by a theorem, a claim test, a citation
or a worked solution (book/_ext/attnmath_words.py, book/absolute_words.yml). No build is needed:
the check reads the MyST sources, as the book build does for every build.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_words as words  # noqa: E402  (book/_ext/attnmath_words.py)

NO_CLAIMS = words.ClaimIndex(frozenset(), {}, frozenset())


def uses(source: str, ledger=(), claims=NO_CLAIMS) -> list[tuple[str, str | None]]:
    """``(word, backing)`` of each use in a made-up page."""
    return [(u.word, u.backing) for u in words.source_uses(source, "book/99_test.md", list(ledger), claims)]


def test_every_absolute_word_of_the_book_is_backed_by_something_that_exists():
    ledger = words.load_ledger()
    found = words.uses(ROOT, ledger)
    assert len({u.path for u in found}) >= 15, "the chapters and the glossary are read"
    unbacked = [str(u) for u in found if u.backing is None]
    assert not unbacked, "back these (book/absolute_words.yml) or rewrite them:\n" + "\n".join(unbacked)
    assert not words.bad_backings(found, words.claim_index(ROOT))
    assert not words.stale_entries(found, ledger), "ledger entries that back nothing"


def test_a_use_is_backed_by_its_theorem_proof_solution_or_the_references_of_its_sentence():
    source = ("```{prf:theorem} A title that holds always\n:label: thm-a\n\nIt never fails.\n```\n\n"
              "```{prf:proof}\nNothing is left.\n```\n\n"
              "```{exercise} Show it\n:label: ex-a\n\nShow that it always holds.\n```\n\n"
              "```{solution} ex-a\n:class: dropdown\n\nIt cannot fail.\n```\n\n"
              "It is only fast {cite:p}`key2020, other`. It holds for all $n$ ({prf:ref}`thm-b`).\n"
              "The rest is never backed.\n")
    assert uses(source) == [("always", "theorem thm-a"), ("never", "theorem thm-a"),
                            ("nothing", "theorem thm-a"), ("always", "solution ex-a"),
                            ("cannot", "solution ex-a"), ("only", "cite key2020"),
                            ("all", "theorem thm-b"), ("never", None)]


def test_quotations_maths_code_negations_hedges_and_compounds_are_not_uses():
    source = ('The source says "it always converges", which is wrong, and `all(x)` is code.\n'
              "For $\\forall$ all-ones vectors, not only this; not always; almost all of it; 6 in all.\n"
              "<!-- never -->\n")
    assert uses(source) == []


def test_a_ledger_entry_backs_the_use_its_context_names_and_a_claim_quote_only_its_own_words():
    source = "The cache never grows. It is exact and nothing is lost, but all of it moves.\n"
    ledger = [{"file": "book/99_test.md", "word": "never", "context": "cache never grows",
               "by": "definition eq-x"}]
    claims = words.ClaimIndex(frozenset(), {"book/99_test.md": [("nothing is lost", "tests/t.py::test_x")]},
                              frozenset({"tests/t.py::test_x"}))
    assert uses(source, ledger, claims) == [("never", "definition eq-x"),
                                            ("nothing", "claim tests/t.py::test_x"), ("all", None)]


def test_a_box_that_a_claim_marker_names_backs_the_words_inside_it():
    source = "(corr-x)=\n:::{admonition} Correction: it is only so\n:class: warning\n\nIt never is.\n:::\n"
    claims = words.ClaimIndex(frozenset({"corr-x"}), {}, frozenset())
    assert uses(source, claims=claims) == [("only", "claim corr-x"), ("never", "claim corr-x")]
    assert uses(source) == [("only", None), ("never", None)]


def test_an_entry_that_backs_nothing_or_is_malformed_is_an_error(tmp_path):
    ledger = [{"file": "book/99_test.md", "word": "never", "context": "it never moves", "by": "cite k"}]
    found = words.source_uses("It never moves {cite:p}`k`.\n", "book/99_test.md", ledger, NO_CLAIMS)
    assert found[0].backing == "cite k" and not found[0].from_ledger
    assert words.stale_entries(found, ledger) == ledger, "the sentence's citation already backs it"
    for bad, error in (('by: "lemma x"', "kind"), ('by: "cite"', "kind"), ('context: "it moves"', "word")):
        entry = {"file": "book/01_softmax.md", "word": "never", "context": "it never moves", "by": "cite k"}
        key, _, value = bad.partition(": ")
        entry[key] = value.strip('"')
        path = tmp_path / "ledger.yml"
        path.write_text(f"- {entry!r}\n".replace("'", '"'))
        with pytest.raises(ValueError, match=error):
            words.load_ledger(path)


def test_a_backing_that_names_nothing_is_found():
    found = [words.Use("book/01_softmax.md", 1, "never", "x", "theorem thm-does-not-exist"),
             words.Use("book/01_softmax.md", 2, "only", "y", "cite no-such-key"),
             words.Use("book/01_softmax.md", 3, "all", "z", "theorem thm-softmax-jacobian")]
    bad = words.bad_backings(found, words.claim_index(ROOT))
    assert len(bad) == 2 and "thm-does-not-exist" in bad[0] and "no-such-key" in bad[1]
