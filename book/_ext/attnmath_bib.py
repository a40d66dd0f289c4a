"""The bibliography's labels in the citations' author-year form.

The chapters cite author-year (``bibtex_reference_style: author_year``: "Bridle (1990)"), but
pybtex's styles label the bibliography's entries "[Bri90]" or "[1]". This extension registers the
pybtex style ``attnmath``: pybtex's ``unsrt`` formatting, sorted by author, year and title, with
labels such as "Bridle, 1990", "Dao et al., 2022" ("a", "b" added when two would be equal).
``_config.yml`` selects it with ``bibtex_default_style: attnmath``.
"""

from __future__ import annotations

from collections import Counter

from pybtex.backends.plaintext import Backend as PlainText
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


#: pybtex's "text" backend, made once: ``render_as("text")`` looks the backend up among every
#: installed package's entry points on each call (10 ms; 3 s for the book's bibliography).
_PLAIN_TEXT = PlainText()


def _plain(latex: str) -> str:
    """``latex`` as the reader sees it: accents and other escapes decoded to Unicode ("P{\\'e}rez" is
    "Pérez", "--" an en dash), braces dropped; the decoding pybtex gives the bibliography's entries."""
    return Text.from_latex(latex).render(_PLAIN_TEXT)


def author_year(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    last = [_plain(" ".join(p.prelast_names + p.last_names)) for p in persons]
    others = bool(last) and last[-1].lower() == "others"  # "and others" in BibTeX: et al.
    last = last[:-1] if others else last
    if others:
        names = f"{last[0]} et al."
    elif not last:
        names = _plain(entry.fields.get("title", "Anonymous"))
    elif len(last) == 1:
        names = last[0]
    elif len(last) == 2:
        names = f"{last[0]} and {last[1]}"
    else:
        names = f"{last[0]} et al."
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


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "attnmath_authoryear"
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "attnmath_authoryear", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "attnmath", AuthorYearStyle)


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}
