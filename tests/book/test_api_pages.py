"""The API reference: an index page (``book/api.md``) and one page per public module of
``attnmath`` (``book/api/<module>.md``), each the heading and ``automodule`` that
``book/_ext/attnmath_listing.py`` writes, all in ``_toc.yml``. The fast tests read the sources;
the slow ones read the built pages."""

from __future__ import annotations

import html
import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_listing import (  # noqa: E402
    API_INDEX,
    api_page,
    module_summary,
    public_modules,
    write_api_pages,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import book_html  # noqa: E402  (tests/book/build.py)


def _skipped() -> list[str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return (config.get("sphinx", {}).get("config") or {}).get("attnmath_api_skip") or []


MODULES = public_modules(_skipped())
PAGES = sorted(p.stem for p in (ROOT / API_INDEX).glob("*.md"))
_WRITE = "run `python book/_ext/attnmath_listing.py --api-pages`"


def _toc_entry(entries, file):
    for entry in entries or []:
        if entry.get("file") == file:
            return entry
        found = _toc_entry(entry.get("sections"), file)
        if found is not None:
            return found
    return None


def test_every_public_module_has_an_api_page_and_no_other_page_is_there():
    assert len(MODULES) > 10
    missing = sorted(set(MODULES) - set(PAGES))
    assert not missing, f"modules without an API page: {missing} ({_WRITE})"
    stale = sorted(set(PAGES) - set(MODULES))
    assert not stale, f"API pages of no public module: {stale} (remove them from {API_INDEX}/ and _toc.yml)"


@pytest.mark.parametrize("module", PAGES)
def test_api_page_is_the_written_one(module):
    text = (ROOT / API_INDEX / f"{module}.md").read_text()
    assert text == api_page(module), f"{API_INDEX}/{module}.md was edited by hand: remove it and {_WRITE}"


def test_toc_lists_every_api_page_under_the_index():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entry = None
    for part in toc.get("parts", []):
        entry = entry or _toc_entry(part.get("chapters"), API_INDEX)
    assert entry is not None, f"_toc.yml has no {API_INDEX}"
    listed = [s.get("file") for s in entry.get("sections") or []]
    assert listed == [f"{API_INDEX}/{m}" for m in MODULES], (
        f"_toc.yml must list the API pages under {API_INDEX}, alphabetically: "
        f"missing {sorted(set(f'{API_INDEX}/{m}' for m in MODULES) - set(listed))}, "
        f"extra {sorted(set(listed) - set(f'{API_INDEX}/{m}' for m in MODULES))}")


def test_write_api_pages_writes_the_missing_pages_only(tmp_path):
    (tmp_path / API_INDEX).mkdir(parents=True)
    kept = tmp_path / API_INDEX / f"{MODULES[0]}.md"
    kept.write_text("left alone\n")
    written = write_api_pages(tmp_path)
    assert written == [f"{API_INDEX}/{m}.md" for m in MODULES[1:]]
    assert kept.read_text() == "left alone\n"
    assert all((tmp_path / w).read_text() == api_page(Path(w).stem) for w in written)
    assert write_api_pages(tmp_path) == []


@pytest.mark.parametrize("module", MODULES)
def test_module_summary_is_the_first_sentence_of_the_docstring(module):
    doc = importlib.import_module(f"attnmath.{module}").__doc__
    assert doc, f"attnmath.{module} has no docstring to summarise on the API index"
    summary = module_summary(doc)
    first_paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    assert summary and "\n" not in summary and summary.endswith(".")
    assert first_paragraph.startswith(summary)
    assert summary.count("`") % 2 == 0, f"the summary cuts a reST role in two: {summary!r}"


def test_module_summary_keeps_rest_and_stops_at_the_first_sentence():
    doc = """Why scores are divided by :math:`\\sqrt{D}`: variance. More
    text.

    Second paragraph.
    """
    assert module_summary(doc) == "Why scores are divided by :math:`\\sqrt{D}`: variance."
    assert module_summary("No full stop") == "No full stop"


# The built pages (the book is built once per test run, or taken from ATTNMATH_BOOK_HTML).

def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _words(rst: str) -> list[str]:
    """The words of reStructuredText outside its roles and literals (which render as markup)."""
    return re.sub(r":\w+:`[^`]*`|``[^`]*``|`[^`]*`", " ", rst).split()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return book_html(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_api_page_starts_with_the_module_docstring_and_documents_every_public_name(built, module):
    page = (built / API_INDEX / f"{module}.html").read_text()
    article = page[page.index('<article class="bd-article"'):]
    mod = importlib.import_module(f"attnmath.{module}")
    first = article.find('<dl class="py ')
    top = _text(article[:first if first >= 0 else len(article)])
    absent = [w for w in _words(mod.__doc__.strip().split("\n\n")[0]) if w not in top]
    assert not absent, (f"attnmath.{module}: the first paragraph of the module docstring is not "
                        f"at the top of its page (missing {absent[:5]})")
    # every public function and class (what a chapter's listing links to); constants have an
    # entry only where a ``#:`` comment documents them
    public = [n for n in mod.__all__ if inspect.isfunction(getattr(mod, n)) or inspect.isclass(getattr(mod, n))]
    missing = [n for n in public if f'id="attnmath.{module}.{n}"' not in article]
    assert public and not missing, f"attnmath.{module}: no entry on its API page for {missing}"


@pytest.mark.slow
def test_api_index_links_every_module_page_with_its_summary(built):
    page = (built / f"{API_INDEX}.html").read_text()
    article = page[page.index('<article class="bd-article"'):]
    name = API_INDEX.rsplit("/", 1)[-1]
    items = re.findall(r"<li\b.*?</li>", article, re.S)
    for module in MODULES:
        href = f'href="{name}/{module}.html#module-attnmath.{module}"'
        item = [i for i in items if href in i]
        assert item, f"the API index does not link to the page of attnmath.{module}"
        summary = module_summary(importlib.import_module(f"attnmath.{module}").__doc__)
        absent = [w for w in _words(summary) if w not in _text(item[0])]
        assert not absent, f"the API index does not give the summary of attnmath.{module}: {absent}"
