"""The small things a reader meets: the search page ranks the chapters before the back matter
(book/_static/search_scorer.js), every page names an icon that the book serves (no favicon 404),
and every proof ends with its mark (book/_static/attnmath.css)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.slow

CHAPTER = re.compile(r"/book/(\d\d_[a-z_]+|closing)\.html$")
_RESULTS = """() => Array.from(document.querySelectorAll('#search-results ul.search > li > a'))
  .map((a) => new URL(a.href).pathname)"""


@pytest.mark.parametrize("query,first", [("online softmax", "/book/08_flash.html"),
                                         ("paged KV cache", "/book/13_serving.html")])
def test_search_ranks_the_chapters_before_the_back_matter(reader, query, first):
    visit = reader.open(f"search.html?q={query.replace(' ', '+')}")
    visit.page.wait_for_selector("#search-results ul.search > li", timeout=30_000)
    visit.page.wait_for_function("() => !document.querySelector('#search-progress')?.textContent"
                                 ".includes('Preparing')", timeout=30_000)
    found = visit.page.evaluate(_RESULTS)
    assert found and found[0] == first, f"{query!r}: the first results are {found[:5]}"
    chapters = [i for i, path in enumerate(found) if CHAPTER.search(path)]
    others = [i for i, path in enumerate(found) if not CHAPTER.search(path)]
    assert not others or not chapters or max(chapters) < min(others), \
        f"{query!r}: a page of the back matter comes before a chapter: {found}"
    assert any(path.endswith("/book/glossary.html") for path in found), f"{query!r}: the glossary is not found"


def test_every_proof_ends_with_its_mark_and_the_page_names_its_icon(reader, site):
    visit = reader.open("book/03_gradients.html")
    marks = visit.page.evaluate("""() => Array.from(document.querySelectorAll('div.proof.admonition#proof'))
      .map((proof) => getComputedStyle(proof.lastElementChild, '::after').content)""")
    assert len(marks) >= 3 and set(marks) == {'"\u220e"'}, marks
    icon = visit.page.evaluate("() => document.querySelector('link[rel~=icon]')?.href")
    assert icon, "the page names no icon: the browser asks for /favicon.ico, which is not served"
    assert site.file_for(icon) is not None and site.file_for(icon).is_file(), f"{urlsplit(icon).path} is not served"
    assert not [p for p in visit.problems if "favicon" in p], visit.problems
