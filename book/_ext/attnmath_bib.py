"""One citation style: author-year, "et al." for three authors or more and for BibTeX's "and
others", every work dated by its entry in ``book/references.bib``.

The chapters cite author-year ("Bridle (1990)"), but pybtex's styles label the bibliography's
entries "[Bri90]" or "[1]". This extension registers the pybtex style ``attnmath``: pybtex's
``unsrt`` formatting, sorted by author, year and title, with labels such as "Bridle, 1990",
"Dao et al., 2022" ("a", "b" added when two would be equal); ``_config.yml`` selects it with
``bibtex_default_style: attnmath``. It also registers the citation style ``attnmath``
(``bibtex_reference_style: attnmath``): sphinxcontrib-bibtex's ``author_year`` with the same
"et al.", plain as in the labels. Both read an author list that ends in BibTeX's "and others"
as "et al." ("Brown et al., 2020"; the entry "Tom B. Brown et al."), where pybtex's templates
would print "Brown and others".

A year written by hand beside a work's name is checked against the work's entry:
:func:`year_slips` finds "FlashAttention-2 (Dao, 2023)" or 'Dao, "FlashAttention-2" (2023)' where
the entry says 2024, in the chapters and in the library's docstrings
(``tests/book/test_bib_labels.py``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field as dataclass_field

from pybtex.backends.plaintext import Backend as PlainText
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import FieldIsMissing, field, first_of, node, optional, sentence, tag
from sphinxcontrib.bibtex.plugin import register_plugin as register_citation_style
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.template import join  # pybtex's join, with "et al."

#: How a list of authors is cut short, in the labels, the citations and the entries.
ET_AL = " et al."


#: pybtex's "text" backend, made once: ``render_as("text")`` looks the backend up among every
#: installed package's entry points on each call (10 ms; 3 s for the book's bibliography).
_PLAIN_TEXT = PlainText()


@functools.lru_cache(maxsize=4096)  # pure; the same names and titles are decoded many times
def _plain(latex: str) -> str:
    """``latex`` as the reader sees it: accents and other escapes decoded to Unicode ("P{\\'e}rez" is
    "Pérez", "--" an en dash), braces dropped; the decoding pybtex gives the bibliography's entries."""
    return Text.from_latex(latex).render(_PLAIN_TEXT)


def is_others(person) -> bool:
    """Whether ``person`` is BibTeX's "and others" at the end of an author list."""
    return not person.first_names and " ".join(person.prelast_names + person.last_names).lower() == "others"


def author_year(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    others = bool(persons) and is_others(persons[-1])
    last = [_plain(" ".join(p.prelast_names + p.last_names)) for p in persons]
    last = last[:-1] if others else last
    if others:
        names = f"{last[0]}{ET_AL}"
    elif not last:
        names = _plain(entry.fields.get("title", "Anonymous"))
    elif len(last) == 1:
        names = last[0]
    elif len(last) == 2:
        names = f"{last[0]} and {last[1]}"
    else:
        names = f"{last[0]}{ET_AL}"
    return f"{names}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [author_year(entry) for entry in sorted_entries]
        counts, seen = Counter(labels), Counter()
        for label in labels:
            if counts[label] > 1:
                seen[label] += 1
                label = f"{label}{chr(ord('a') + seen[label] - 1)}"
            yield label


@node
def names_et_al(children, data, role, name, sep="", sep2=None, last_sep=None, other=None):
    """The persons of ``role``, each formatted by ``name(style, person)`` and joined as
    sphinxcontrib-bibtex's ``names`` joins them, an author list that ends in "and others" cut to
    "First et al." (all its names before "et al." where ``other`` is None: a full list)."""
    assert not children
    persons = data["entry"].persons.get(role)
    if not persons:
        raise FieldIsMissing(role, data["entry"])
    others = is_others(persons[-1])
    shown = [name(data["style"], p).format_data(data) for p in (persons[:-1] if others else persons)]
    if not others:
        return join(sep=sep, sep2=sep2, last_sep=last_sep, other=other)[shown].format_data(data)
    if other is not None or len(shown) == 1:
        return Text(shown[0], ET_AL)
    return Text(Text(sep).join(shown), "," + ET_AL)


def _entry_name(style, person):
    return style.format_name(person, style.abbreviate_names)


def _citation_name(style, person):
    return style.person.style_plugin.format(person, style.person.abbreviate)


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "attnmath_authoryear"
    default_sorting_style = "author_year_title"

    def format_names(self, role, as_sentence=True):
        formatted = names_et_al(role, name=_entry_name, sep=", ", sep2=" and ", last_sep=", and ")
        return sentence[formatted] if as_sentence else formatted


@dataclass
class EtAlPersons(PersonStyle):
    """sphinxcontrib-bibtex's persons of a citation, with "and others" read as "et al." and
    "et al." plain, as the bibliography's labels write it."""

    other: object = dataclass_field(default_factory=lambda: Text(ET_AL))

    def names(self, role: str, full: bool):
        return names_et_al(role=role, name=_citation_name, sep=self.sep, sep2=self.sep2,
                           last_sep=self.last_sep, other=None if full else self.other)

    def author_or_editor_or_title(self, full: bool):
        return first_of[optional[self.names("author", full)], optional[self.names("editor", full)],
                        tag("em")[field("title")]]


@dataclass
class AuthorYearCitations(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's ``author_year`` citations with :class:`EtAlPersons`."""

    person: PersonStyle = dataclass_field(default_factory=EtAlPersons)


register_plugin("pybtex.style.labels", "attnmath_authoryear", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "attnmath", AuthorYearStyle)
register_citation_style("sphinxcontrib.bibtex.style.referencing", "attnmath", AuthorYearCitations)


def _short_title(entry) -> str | None:
    """A work's short name, the part of its title before a colon ("FlashAttention-2"), if it
    is a name of at most three words."""
    head = _plain(entry.fields.get("title", "")).split(":")[0].strip()
    return head if ":" in _plain(entry.fields.get("title", "")) and len(head.split()) <= 3 else None


def year_slips(text: str, entries) -> list[str]:
    """Hand-written years that contradict ``references.bib``: a work's short name followed in its
    sentence by its first author and another year ("FlashAttention-2 ... (Dao, 2023)") or by a
    year in brackets ('"FlashAttention-2" (2023)') that no work of that name has. ``entries``:
    pybtex entries by key."""
    years: dict[str, set[str]] = {}
    for entry in entries.values():
        years.setdefault(_short_title(entry), set()).add(entry.fields.get("year", ""))
    slips = []
    for key, entry in entries.items():
        short, year = _short_title(entry), entry.fields.get("year", "")
        persons = entry.persons.get("author") or []
        if not short or not persons or not year or short not in text:
            continue
        author = re.escape(_plain(" ".join(persons[0].prelast_names + persons[0].last_names)))
        name = rf"(?<![\w-]){re.escape(short)}(?![\w-])"
        cited = rf"(?:\(|\b){author}(?: et al\.| and \w+)?,?\s*\(?(\d{{4}})\b"
        for match in re.finditer(rf"{name}[\"”']?(?:\s*\((\d{{4}})\)|[^.\n]{{0,60}}?{cited})", text):
            found, bracketed = match.group(1) or match.group(2), match.group(1) is not None
            if found != year and not (bracketed and found in years[short]):
                slips.append(f"{key} ({short}) is dated {year} in references.bib, {found} in "
                             f"{match.group(0)!r}")
    return slips


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}
