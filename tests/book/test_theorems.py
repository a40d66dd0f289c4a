"""One status per theorem: a theorem is proved below its statement, a part that is only tested is
said once, in the theorem ({theorem-status}), and every other mention of such a theorem shows that
status with {thm} (book/_ext/attnmath_theorems.py). No build is needed: the check reads the
sources, as the book build does.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_theorems as theorems  # noqa: E402  (book/_ext/attnmath_theorems.py)

PARTLY = ("````{prf:theorem} Partly tested\n:label: thm-p\n\nA statement.\n\n"
          ":::{theorem-status} thm-p\n:proved: the bound\n:tested: the equality, on small inputs\n:::\n"
          "````\n\n```{prf:proof}\nIt holds by {prf:ref}`thm-p` itself.\n```\n\n")


def test_the_book_keeps_one_status_per_theorem():
    sources = {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "book").glob("*.md"))}
    assert theorems.status_problems(sources) == []
    statuses = re.findall(r"^:::\{theorem-status\} ([\w-]+)", "".join(sources.values()), re.M)
    assert "thm-multihead-rank" in statuses and len(statuses) == len(set(statuses))
    assert "{thm}`thm-multihead-rank`" in sources["book/05_multihead.md"]


def test_a_plain_reference_to_a_partly_tested_theorem_outside_it_is_found():
    assert theorems.status_problems({"a.md": PARTLY}) == []
    elsewhere = PARTLY + "As {prf:ref}`thm-p` shows, it is reached.\n"
    problems = theorems.status_problems({"a.md": elsewhere, "b.md": "And {prf:ref}`thm-p` again.\n"})
    assert len(problems) == 2 and all("{thm}`thm-p`" in p for p in problems)
    assert theorems.status_problems({"a.md": PARTLY + "As {thm}`thm-p` shows.\n"}) == []


def test_a_status_outside_its_theorem_and_a_theorem_without_proof_are_found():
    stray = ":::{theorem-status} thm-q\n:proved: all of it\n:::\n"
    no_proof = "```{prf:lemma} Alone\n:label: lem-a\n\nTrue.\n```\n\nSome text.\n"
    problems = theorems.status_problems({"a.md": stray + no_proof})
    assert any("thm-q stands outside that theorem" in p for p in problems)
    assert any("lem-a has no proof below it" in p for p in problems)


def test_the_status_reads_as_the_role_shows_it():
    status = {"proved": "the inequality, for every input.", "tested": "the equality, on $L \\le 12$"}
    assert theorems.status_words(status) == ("proved: the inequality, for every input; "
                                             "tested, not proved: the equality, on $L \\le 12$")
