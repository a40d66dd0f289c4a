"""The chapters keep the notation of ``book/notation.md``: a letter used in a second sense is
declared where it is used and listed on the notation page.

The page's tables *Sizes* and *Symbols* give each letter its sense ($P$, the attention weights;
$s$, the score scale; $M$, a boolean mask, ...). Its table *Second senses* lists each other
sense a chapter gives one of those letters: the letter, the sense, the chapter and a piece of
the chapter's text that declares it. :func:`undeclared_senses` finds the definitions of the
page's letters in a chapter's prose ("let $P$ be", "write $s = \\dots$", "denote", "call",
"$P$ workers") and reports each one whose sentence names no word of the letter's sense on the
page and that the table does not list for the chapter; :func:`missing_declarations` reports a
listed sense whose declaration the chapter no longer contains. ``tests/book/test_notation.py``
runs both without a build.

The page's forms are also the only forms: :data:`SLIPS` are the ways of writing that it rules
out, each with the form it uses instead (a boolean mask $M$ is never added to scores, its
additive form is $\\mathrm{bias}_M$; the $d$ of a gradient is italic, $dQ$).
:func:`notation_slips` finds them in the prose and mathematics of the chapters and the notation
page and in the library's docstrings, which the API reference renders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from attnmath_numbers import CHAPTER, ROOT, SENTENCE, prose_lines

NOTATION = ROOT / "book" / "notation.md"
#: Words of a sense that do not tell senses apart.
_STOP = {"the", "a", "an", "of", "with", "and", "or", "one", "its", "per"}
_CELL_LETTER = re.compile(r"\$([A-Za-z])(?:\$|\s*=)")
_DEFINE_AFTER = (r"(?:\b(?:[Ll]et|[Ww]rite|[Dd]enote|[Cc]all|[Cc]onsider)\s+\$({0})"
                 r"(?=[\s=$,\\]))")
_DEFINE_BEFORE = (r"(?:\$({0})\$\s+(?:denotes|stands for|workers|elements|FLOP/s|bytes/s|"
                  r"is the number|be the number))")


@dataclass(frozen=True)
class Definition:
    """A definition of a letter of the notation page in a chapter: file, line, letter, sentence."""

    path: str
    line: int
    letter: str
    sentence: str

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: ${self.letter}$ is given a sense that book/notation.md "
                f"does not list for this chapter: {self.sentence.strip()[:120]}")


def _table(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first Markdown table after ``## heading``, as lists of cells."""
    if f"## {heading}\n" not in text:
        raise ValueError(f"book/notation.md has no section '## {heading}'")
    lines = text.split(f"## {heading}\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        body.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return body


def global_senses(text: str) -> dict[str, set[str]]:
    """Letter -> the words that name its sense (the first two words of its meaning in the tables
    *Sizes* and *Symbols*, all of which a sentence must contain), and its formula as written
    there without spaces (``o=pv``), which a sentence may contain instead."""
    senses: dict[str, set[str]] = {}
    for heading in ("Sizes", "Symbols"):
        for row in _table(text, heading):
            letters = _CELL_LETTER.findall(row[0] + " ")
            meaning = re.sub(r"\*\*|\$[^$]*\$|`[^`]*`", "", row[1]).split("(")[0]
            pieces = meaning.split(";")
            if len(pieces) != len(letters):
                pieces = meaning.split(",")
            if len(pieces) != len(letters):
                pieces = [meaning] * len(letters)
            formulas = {f.replace(" ", "").lower()
                        for f in re.findall(r"\$([^$]*=[^$]*)\$", row[0] + row[1])}
            for letter, piece in zip(letters, pieces):
                words = [w.lower() for w in re.findall(r"[A-Za-z/'-]+", piece)
                         if w.lower() not in _STOP]
                senses.setdefault(letter, set()).update({" ".join(words[:2])}, formulas)
    return senses


def second_senses(text: str) -> list[dict]:
    """The rows of *Second senses*: ``letter``, ``sense``, ``chapter`` (two digits), ``declared``."""
    rows = []
    for letter, sense, chapter, declared in _table(text, "Second senses"):
        rows.append({"letter": letter.strip("$"), "sense": sense, "chapter": f"{int(chapter):02d}",
                     "declared": declared.strip().strip("`")})
    return rows


def definitions(source: str, path: str, letters: set[str]) -> list[Definition]:
    """The definitions of ``letters`` in the prose of a MyST source, with their sentences."""
    alternatives = "|".join(sorted(map(re.escape, letters)))
    pattern = re.compile(_DEFINE_AFTER.format(alternatives) + "|"
                         + _DEFINE_BEFORE.format(alternatives))
    found = []
    lines = [(n, text) for n, text, kind in prose_lines(source) if kind == "prose"]
    for n, text in lines:
        for match in pattern.finditer(text):
            sentence = next(s.group(0) for s in SENTENCE.finditer(text)
                            if s.start() <= match.start() < max(s.end(), s.start() + 1))
            found.append(Definition(path, n, match.group(1) or match.group(2), sentence))
    return found


def undeclared_senses(path: Path, root: Path = ROOT, notation: Path = NOTATION) -> list[Definition]:
    """Definitions of the page's letters in a chapter that are neither its sense nor listed."""
    text = notation.read_text()
    senses = global_senses(text)
    relative = path.resolve().relative_to(root).as_posix()
    listed = {row["letter"] for row in second_senses(text)
              if relative.startswith(f"book/{row['chapter']}_")}
    result = []
    for item in definitions(path.read_text(), relative, set(senses)):
        words = senses[item.letter]
        sentence = item.sentence.lower()
        if item.letter in listed or any(
                w in sentence.replace(" ", "") if "=" in w
                else all(part[:5] in sentence for part in w.split()) for w in words):
            continue
        result.append(item)
    return result


#: Forms the notation page rules out: (pattern, what to write instead).
SLIPS = (
    (re.compile(r"softmax[^$\n]*\n?[^$\n]*?\+\s*M(?![A-Za-z])"),
     r"a boolean mask added to the scores inside a softmax: add its additive form, \mathrm{bias}_M"),
    (re.compile(r"e\^\{[^}$]*\+\s*M_"),
     r"a boolean mask added to a score in an exponent: add (\mathrm{bias}_M)_{ij}"),
    (re.compile(r"\\mathrm\s*\{?\s*d\s*\}?\s*[A-Z]"),
     "an upright d of a gradient: the notation page writes dQ, dK, dV in italic"),
)


def notation_slips(text: str, path: str) -> list[str]:
    """Each use in ``text`` of a form that :data:`SLIPS` rules out, as ``path:line: ...``."""
    found = []
    for pattern, instead in SLIPS:
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path}:{line}: {instead}: {' '.join(match.group(0).split())[-60:]!r}")
    return found


def missing_declarations(root: Path = ROOT, notation: Path = NOTATION) -> list[dict]:
    """Rows of *Second senses* whose chapter does not contain the declaring text."""
    missing = []
    for row in second_senses(notation.read_text()):
        chapters = [p for p in (root / "book").glob(f"{row['chapter']}_*.md")
                    if CHAPTER.match(p.relative_to(root).as_posix())]
        if len(chapters) != 1 or row["declared"] not in chapters[0].read_text():
            missing.append(row)
    return missing
