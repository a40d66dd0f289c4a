"""The whole book as a PDF (``make pdf``, book/_ext/make_pdf.py), read as a printed book is read.

The PDF is printed once per run from this run's HTML build (``support.shared_build``), in the
background right after the book is built when the run reads the PDF (tests/conftest.py). Its pages
are read with PDFium (pypdfium2): the text of each page and of its head and foot margins, and
pages rendered to images, on which the title page, the contents and the chapter openings are
checked as a reader sees them, and every page is checked for blank pages and for code boxes
with nothing in them; the text of each chapter's pages holds every line of its code and every
table cell of its HTML page.
"""

from __future__ import annotations

import collections
import html
import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import yaml
from build import ROOT, book_html, print_pdf, toc_files  # tests/book/build.py

sys.path.insert(0, str(ROOT / "tests"))
import support  # noqa: E402  (tests/support.py)

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import make_pdf  # noqa: E402  (book/_ext/make_pdf.py)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs("chromium"),
    pytest.mark.skipif(not make_pdf.PAGED_JS.exists(),
                       reason="Node.js with node_modules/pagedjs (make book runs npm ci) is not installed"),
]

MM = 72 / 25.4  # PDF points per millimetre
#: The head and foot margins of print_book.css (22 mm), where the running head and the number are.
MARGIN = 22 * MM
#: The top of the text area, where a chapter's title stands on its first page.
TOP = 45 * MM
#: Background of a code box (print_book.css, div.highlight), as rendered.
CODE_BOX = np.array([245, 245, 242])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return book_html(tmp_path_factory)


@pytest.fixture(scope="module")
def pdf_path(built, tmp_path_factory) -> Path:
    folder = support.shared_build(tmp_path_factory, "pdf", lambda folder: print_pdf(folder, built))
    return folder / "book.pdf"


@pytest.fixture(scope="module")
def book(pdf_path):
    """The PDF read by PDFium (pypdfium2) and by pypdf, and per page the text of its head and
    foot margins, of the top of its text area, and of its body."""
    import pypdfium2 as pdfium
    from pypdf import PdfReader

    document = pdfium.PdfDocument(str(pdf_path))
    pages = []
    for page in document:
        width, height = page.get_size()
        text = page.get_textpage()
        full = text.get_text_range()
        bands = [text.get_text_bounded(0, height - MARGIN, width, height),
                 text.get_text_bounded(0, 0, width, MARGIN),
                 text.get_text_bounded(0, height - MARGIN - TOP, width, height - MARGIN)]
        tall = stretched(text, full, height, bands)
        head, foot, top = ("".join(c for c in band if c not in tall) for band in bands)
        head, foot = head.strip(), foot.strip()
        # The page's text in reading order, less the margins' lines, which come first.
        lines = full.splitlines()
        while lines and lines[0].strip() and lines[0].strip() in (head, foot):
            lines.pop(0)
        pages.append({"head": head, "foot": foot, "top": top, "body": "\n".join(lines).strip()})
    return document, pages, PdfReader(pdf_path)


def stretched(text, full: str, height: float, bands: list[str]) -> set[str]:
    """The characters of ``bands`` that the page ``text`` (its whole text ``full``) draws taller
    than the page: the piece of a delimiter that MathJax stretches over a tall formula, which
    PDFium places by the box of its unclipped drawing, and so in every band of its page."""
    odd = {c for band in bands for c in band if not c.isascii()}
    tall = set()
    for i, c in enumerate(full):
        if c in odd:
            _left, bottom, _right, top = text.get_charbox(i)
            if top - bottom > height:
                tall.add(c)
    return tall


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


#: What the check of the printed text ignores: white space (PDFium spaces the text by the gaps
#: it measures, and the printed lines wrap), zero-width spaces (the HTML's places where a long
#: name may break, not printed) and hyphens (a hyphen that breaks a word at a line end is
#: printed, and PDFium reads one as U+FFFE or U+0002; those of the page's text are not told
#: apart from it).
UNCOUNTED = re.compile(r"[\s\u200b\-\u00ad\u2010\x02\ufffe]")


def squeezed(text: str) -> str:
    """``text`` without what the check ignores: UNCOUNTED, and pictographs (the status page's
    check mark emoji), which print without text when no font of the machine draws them."""
    return "".join(c for c in UNCOUNTED.sub("", text) if unicodedata.category(c) != "So")


#: What the claims appendix's compact print form (book/_static/claims.css, @media print) hides
#: or cuts short on paper by design: its tables' header rows, and each test's name, domain and
#: date, one line each, ending in an ellipsis where longer.
SHORTENED_IN_PRINT = ("table.claims-table thead", ".claim-test", ".claim-domain",
                      ".claim-verified-on")


def listed_texts(built: Path, doc: str) -> list[str]:
    """What page ``doc`` of the HTML build prints to the letter, in reading order: every line of
    every listing or output (``<pre>``) and the text of every table cell (each piece between
    its formulas, which print as drawings), less what print_book.js leaves out and what the
    print styles shorten (SHORTENED_IN_PRINT), squeezed."""
    from bs4 import BeautifulSoup

    page = BeautifulSoup((built / f"{doc}.html").read_text(), "html.parser")
    article = page.select_one("article.bd-article")
    for element in article.select(", ".join(make_pdf.UNPRINTED + SHORTENED_IN_PRINT)):
        element.decompose()
    texts = []
    for element in article.select("pre, td, th"):
        if element.name == "pre":
            pieces = element.get_text().split("\n")
        else:
            for formula in element.select("mjx-container"):
                formula.replace_with("\n")
            pieces = element.get_text().split("\n")
        texts.extend(piece for piece in map(squeezed, pieces) if piece)
    return texts


def missing(texts: list[str], printed: str) -> list[str]:
    """The items of ``texts`` that ``printed`` holds fewer times than ``texts`` has them (a
    line that a page shows twice must be printed twice), once per time short, in the order of
    ``texts``. The order of the printed text is not asked for: PDFium reads a page's formulas
    after its text, and so a table cell's pieces apart from the formulas between them."""
    wanted = collections.Counter(texts)
    short = {text: count - printed.count(text) for text, count in wanted.items()}
    found = []
    for text in texts:
        if short[text] > 0:
            found.append(text)
            short[text] -= 1
    return found


def headings(built: Path, doc: str) -> list[str]:
    """The headings of page ``doc`` of the HTML build as text, with their numbers; a heading
    quoted inside a table (the claims appendix quotes the chapters') is not one of the page's."""
    page = (built / f"{doc}.html").read_text()
    article = page[page.index('class="bd-article"'):page.index("</article>")]
    article = re.sub(r"<table\b.*?</table>", "", article, flags=re.S)
    found = []
    for match in re.finditer(r"<h([1-6])[^>]*>(.*?)</h\1>", article, re.S):
        text = re.sub(r'<a class="headerlink".*?</a>', "", match.group(2), flags=re.S)
        found.append(" ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split()))
    return found


def chapter_titles(built: Path) -> dict[str, str]:
    """The heading of every printed page of the HTML build, with its chapter number."""
    return {doc: headings(built, doc)[0] for doc in make_pdf.printed_docs(toc_files())}


def openings(reader, titles: dict[str, str]) -> dict[str, int]:
    """The index of the page on which each chapter starts: where its heading's bookmark (a
    top-level entry of the outline) leads."""
    top_level = {_letters(entry.title): reader.get_destination_page_number(entry)
                 for entry in reader.outline if not isinstance(entry, list)}
    return {doc: top_level[_letters(title)] for doc, title in titles.items() if _letters(title) in top_level}


def contents_entries(text: str) -> list[tuple[str, int]]:
    """The lines of the contents that end in a page number, as (letters of all the text since the
    last such line, number): a part's caption or a title's first line is joined to what follows."""
    entries, pending = [], ""
    for line in text.splitlines():
        match = re.match(r"^(.*?)\s*(\d+)$", line.strip())
        if match and match.group(1):
            entries.append((_letters(pending + match.group(1)), int(match.group(2))))
            pending = ""
        else:
            pending += line
    return entries


def image(document, index: int, scale: float = 1.0) -> np.ndarray:
    """Page ``index`` rendered at ``scale`` pixels per point, as an RGB array."""
    bitmap = document[index].render(scale=scale)
    return np.asarray(bitmap.to_pil().convert("RGB"))


def ink(rgb: np.ndarray) -> np.ndarray:
    """Where something is printed: pixels clearly darker than the paper (a mean of the three
    channels under 200). Channel by channel, as every check on pixels here: a reduction over
    the last axis of an image is many times slower."""
    return rgb[..., 0].astype(np.uint16) + rgb[..., 1] + rgb[..., 2] < 600


def paper(rgb: np.ndarray) -> np.ndarray:
    """Where the page is bare: every channel at least 250."""
    return np.minimum(np.minimum(rgb[..., 0], rgb[..., 1]), rgb[..., 2]) >= 250


def _bands(rows: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive True in ``rows``, as (first, end)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], rows.astype(int), [0]])))
    return list(zip(edges[::2], edges[1::2]))


def empty_boxes(rgb: np.ndarray) -> list[tuple[int, int]]:
    """Rows (first, end) of a box with nothing in it: code-box background without code anywhere
    on the page, or an edge of a box alone at the foot or head of the text area (the piece that
    a page break leaves when it splits a box before its first line or after its last)."""
    bare = paper(rgb)
    top, bottom, edge = int(MARGIN), rgb.shape[0] - int(MARGIN), int(8 * MM)
    found = []
    # A box's rows are mostly not paper (background, border, or code drawn on it).
    for a, b in _bands(2 * (~bare).sum(axis=1) > rgb.shape[1]):
        columns = np.flatnonzero(~bare[a:b].all(axis=0))
        inside = slice(columns[0] + 4, columns[-1] - 3)  # within its coloured side borders
        if ink(rgb[a:b, inside]).any() or a < top - 2 or b > bottom + 2:
            continue
        side = slice(columns[0], columns[0] + 3)  # where the box's left border runs on
        alone_at_foot = (b > bottom - edge and bare[b:bottom, inside].all()
                         and bare[a - 6:a - 2, side].all())
        alone_at_head = (a < top + edge and bare[top:a, inside].all()
                         and bare[b + 2:b + 6, side].all())
        if alone_at_foot or alone_at_head or (_code_box(rgb[a:b]).mean(axis=1) > 0.5).sum() >= 3:
            found.append((a, b))
    return found


def _code_box(rgb: np.ndarray) -> np.ndarray:
    """Where the pixels of ``rgb`` have a code box's background (each channel within 2)."""
    near = [np.abs(rgb[..., c].astype(np.int16) - CODE_BOX[c]) <= 2 for c in range(3)]
    return near[0] & near[1] & near[2]


def test_title_page_and_contents(built, book):
    """Page 1 is a title page (the book's title, author and licence, no running head, no page
    number, nothing else); the contents follow and list every printed page of the book with the
    page number at whose foot it starts."""
    document, pages, reader = book
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    title = pages[0]
    assert _letters(title["body"]).startswith(_letters(config["title"])), title["body"][:200]
    assert not title["head"] and not title["foot"], "the title page has a running head or a page number"
    assert len(title["body"].split()) <= 30, f"the title page carries body text: {title['body'][:300]}"
    picture = image(document, 0)
    marks = np.argwhere(ink(picture))
    assert len(marks), "the title page renders blank"
    centre = (marks[:, 1].min() + marks[:, 1].max()) / 2
    assert abs(centre - picture.shape[1] / 2) < 0.03 * picture.shape[1], "the title page is not centred"

    titles = chapter_titles(built)
    starts = openings(reader, titles)
    assert sorted(starts) == sorted(titles), \
        f"chapters without an opening page: {sorted(set(titles) - set(starts))}"
    first_chapter = min(starts.values())
    # PDFium reads the contents' lines letter by letter; pypdf reads them as lines.
    front = "\n".join(reader.pages[i].extract_text() for i in range(1, first_chapter))
    assert front.lstrip().startswith("Contents"), front[:200]
    entries = contents_entries(front)
    listed = {}
    for doc, heading in titles.items():
        numbers = [n for entry, n in entries if entry.endswith(_letters(heading))]
        assert numbers, f"the contents do not list {heading!r} with a page number"
        listed[doc] = numbers[0]
    for doc, number in listed.items():
        foot = pages[starts[doc]]["foot"]
        assert foot == str(number), \
            f"{titles[doc]!r}: the contents say page {number}, it starts on a page numbered {foot!r}"
    contents = image(document, 1)
    marks = np.argwhere(ink(contents))
    assert marks[:, 1].max() > contents.shape[1] - 25 * MM - 5, \
        "the contents' page numbers are not set at the right margin"
    assert not ink(contents[: int(MARGIN)]).any() and not ink(contents[-int(MARGIN):]).any(), \
        "the contents carry a running head or a page number"


def test_chapters_open_pages_with_numbers_and_running_heads(built, book):
    """Each chapter starts at the top of a new page without a running head; every page after the
    front matter has its number at the foot (counted from the title page, as a PDF reader counts),
    and every page that is not a chapter's first has that chapter's title as running head."""
    document, pages, reader = book
    titles = chapter_titles(built)
    starts = openings(reader, titles)
    by_page = {index: doc for doc, index in starts.items()}
    first = min(starts.values())
    current = None
    for index in range(first, len(pages)):
        page = pages[index]
        assert page["foot"] == str(index + 1), f"page {index + 1} is numbered {page['foot']!r}"
        if index in by_page:
            current = by_page[index]
            assert not page["head"], f"{titles[current]!r} opens under a running head {page['head']!r}"
            assert _letters(titles[current]) in _letters(page["top"]), \
                f"{titles[current]!r} does not stand at the top of its first page: {page['top'][:200]!r}"
        else:
            assert _letters(page["head"]) == _letters(titles[current]), \
                f"page {index + 1} of {titles[current]!r} has the running head {page['head']!r}"
    # The opening as printed: nothing in the head margin, the title in large type at the top of
    # the text, the number at the foot.
    for doc in list(starts)[2:4]:
        picture = image(document, starts[doc])
        top = int(MARGIN)
        assert not ink(picture[:top]).any(), f"{doc}: the opening page has a running head"
        assert ink(picture[-top:]).any(), f"{doc}: the opening page has no page number"
        rows = np.flatnonzero(ink(picture[top:-top]).any(axis=1))
        assert rows[0] < 25 * MM, f"{doc}: the chapter title is not at the top of its page"
        heading = _bands(ink(picture[top:-top]).any(axis=1))[0]
        assert heading[1] - heading[0] > 12, f"{doc}: the chapter title is not set in large type"


def test_no_blank_page_or_empty_box(book):
    """Every page prints something in its text area, and no box (a code box, or the piece of any
    box that a page break leaves) is empty."""
    document, pages, reader = book
    blank, empty = [], []
    for index in range(len(pages)):
        picture = image(document, index)
        top = int(MARGIN)
        if not ink(picture[top:-top]).any():
            blank.append(index + 1)
        if empty_boxes(picture):
            empty.append(index + 1)
    assert not blank, f"blank pages: {blank}"
    assert not empty, f"pages with an empty box or piece of one: {empty}"


def test_every_line_of_code_and_table_cell_is_printed(built, book):
    """Every line of every listing and output and the text of every table cell of each printed
    page is in the text of the PDF pages of that page's chapter, as many times as the page has
    it: a page break that splits a code box or a table loses nothing."""
    document, pages, reader = book
    starts = sorted(openings(reader, chapter_titles(built)).items(), key=lambda item: item[1])
    ends = [start for _, start in starts[1:]] + [len(pages)]
    lost = {}
    for (doc, start), end in zip(starts, ends):
        printed = squeezed(" ".join(page["body"] for page in pages[start:end]))
        gone = missing(listed_texts(built, doc), printed)
        if gone:
            lost[doc] = gone
    assert not lost, "lines of code or table cells missing from the PDF: " + "; ".join(
        f"{doc}: {len(gone)}, {gone[:4]}" for doc, gone in lost.items())


def test_lost_and_repeated_lines_are_found():
    """The check finds a text that is not printed and one printed fewer times than the page has
    it; it ignores white space, hyphens and pictographs, and passes texts printed in any order
    with other text between them."""
    printed = squeezed("x = 1\nsome prose\nax.legend()\nplt.show()\nax.legend()\nnon-\nfinite \u2705")
    assert missing(["nonfinite", "x=1", "ax.legend()", "ax.legend()", "plt.show()"], printed) == []
    assert missing(["ax.legend()", "x=1", "ax.legend()", "ax.legend()"], printed) == ["ax.legend()"]
    assert missing(["pad=padding_mask(lengths,5)", "x=1"], printed) == ["pad=padding_mask(lengths,5)"]
    assert squeezed("a -\tb\u00ad c\u200bd \u2705") == "abcd"


def test_a_stretched_delimiter_is_in_no_band():
    """A character drawn taller than the page is left out of the margins' text; one of the same
    kind at its own size, or one outside the bands, is not looked at."""

    class Text:
        boxes = {1: (0, -112, 2, 3205), 2: (0, 10, 6, 20), 3: (0, -112, 2, 3205)}

        def get_charbox(self, index):
            return self.boxes[index]

    assert stretched(Text(), "a⎜√⎟", 842, ["69⎜", "√ 2"]) == {"⎜"}
    assert stretched(Text(), "a⎜√⎟", 4000, ["69⎜", "√ 2"]) == set()


def test_empty_box_is_found():
    """The check finds a box of code background without code, and the edge of a box alone at
    the foot or head of the text area; it passes a box with code, a rule mid-page, and a box that
    a page break splits between lines (its left border runs on from its edges)."""
    page = np.full((842, 595, 3), 255, dtype=np.uint8)
    page[200:240, 50:545] = CODE_BOX
    page[250:252, 50:545] = CODE_BOX  # a line of that colour (a shadow's) is not a box
    page[400:401, 50:545] = 220  # a rule between paragraphs
    page[760:761, 50:545] = 220  # the top edge of a box whose content went to the next page
    page[760:761, 50:52] = (16, 134, 16)  # with its coloured left border
    page[70:71, 50:545] = 220  # the bottom edge of a box whose content stayed on the page before
    assert empty_boxes(page) == [(70, 71), (200, 240), (760, 761)]
    page[210:215, 60:200] = 30
    page[71:90, 50:52] = 220  # the edges have box below, above: split between lines
    page[740:760, 50:52] = 220
    page[75:80, 60:200] = 30
    page[745:750, 60:200] = 30
    assert empty_boxes(page) == []


#: The most of a page's text area that may stand empty under its last line, on a page that is
#: not the last of its chapter.
MOST_EMPTY = 0.30


def empty_below(rgb: np.ndarray) -> float:
    """The share of the text area (between the head and foot margins) of the page ``rgb`` that
    lies empty under the last thing printed in it: the hole that a figure or a box leaves when
    it does not fit and goes to the next page."""
    top, bottom = int(MARGIN * rgb.shape[0] / (297 * MM)), rgb.shape[0] - int(MARGIN * rgb.shape[0] / (297 * MM))
    rows = np.flatnonzero(ink(rgb[top:bottom]).any(axis=1))
    return 1.0 if not len(rows) else (bottom - top - 1 - rows[-1]) / (bottom - top)


def test_no_page_in_a_chapter_is_left_a_third_empty(built, book):
    """Every page but the last of its chapter is filled to its foot: at most MOST_EMPTY of its
    text area stands empty under its last line (a figure that does not fit moves after the
    text that follows it, as printed books float their figures)."""
    document, pages, reader = book
    starts = sorted(openings(reader, chapter_titles(built)).values())
    lasts = {start - 1 for start in starts[1:]} | {len(pages) - 1}
    holes = [(index + 1, round(share, 2)) for index in range(starts[0], len(pages))
             if index not in lasts and (share := empty_below(image(document, index, 0.25))) > MOST_EMPTY]
    assert not holes, f"pages left more than {MOST_EMPTY:.0%} empty (page, share): {holes}"


def test_an_empty_foot_is_measured():
    """The measure gives the share of the text area under the last ink, whatever the scale."""
    for scale in (1.0, 0.25):
        height, width = round(842 * scale), round(595 * scale)
        area = height - 2 * int(MARGIN * scale)
        page = np.full((height, width, 3), 255, dtype=np.uint8)
        page[: int(MARGIN * scale) - 2, 10:20] = 0  # the running head is not the text
        page[-int(MARGIN * scale) + 2:, 10:20] = 0  # nor is the page number
        assert empty_below(page) == 1.0
        last = int(MARGIN * scale) + area // 4
        page[int(MARGIN * scale): last + 1, 40:80] = 0
        assert empty_below(page) == pytest.approx(0.75, abs=2 / area)


def test_title_metadata_and_bookmarks_read_as_the_headings(built, book):
    """The PDF's title is the book's; every heading's bookmark reads as the heading, words
    apart where a line of it wrapped ("the 1/√D scaling", not "1/√Dscaling")."""
    document, pages, reader = book
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert reader.metadata.title == config["title"]
    marks = {" ".join(m.title.split()) for m in _outline(reader.outline)}
    unread = [h for doc in make_pdf.printed_docs(toc_files()) for h in headings(built, doc)
              if h not in marks]
    assert not unread, f"headings whose bookmark reads otherwise: {unread[:10]}"


def test_outline_links_and_api_appendix(built, book):
    """Bookmarks name every printed page, once each and without doubled text; links between
    pages stay within the PDF; the API reference is a short appendix (its index page), not the
    modules' pages."""
    document, pages, reader = book
    marks = [" ".join(m.title.split()) for m in _outline(reader.outline)]
    doubled = [m for m in marks if _is_doubled(m)]
    assert not doubled, f"bookmarks with doubled text: {doubled[:5]}"
    # Every heading of every printed page is a bookmark: no page, and no part of one, is lost.
    printed = {_letters(m) for m in marks}
    missing = [h for doc in make_pdf.printed_docs(toc_files()) for h in headings(built, doc)
               if _letters(h) not in printed]
    assert not missing, f"headings of the book without a bookmark: {missing[:10]}"
    text = _letters(" ".join(p["body"] for p in pages[:80]))
    assert _letters("def softmax(") in text, "the PDF shows no library code"
    documents = {f"/{doc}.html" for doc in toc_files()}
    outward = [uri for uri in _link_uris(reader) if urlsplit(uri).path in documents]
    assert not outward, f"links between the book's pages that leave the PDF: {outward[:5]}"
    starts = sorted(openings(reader, chapter_titles(built)).items(), key=lambda item: item[1])
    api = [i for i, (doc, _) in enumerate(starts) if doc == make_pdf.OMITTED_UNDER.rstrip("/")][0]
    length = (starts[api + 1][1] if api + 1 < len(starts) else len(pages)) - starts[api][1]
    assert length <= 3, f"the API reference fills {length} pages"
    modules = [doc for doc in toc_files() if doc not in make_pdf.printed_docs(toc_files())]
    assert modules, "the API reference has no module pages to leave out"


def _is_doubled(text: str) -> bool:
    """A text that repeats itself: "x x", "xx", or a formula's drawing and its spoken form."""
    words = text.split()
    half = len(words) // 2
    squeezed = text.replace(" ", "")
    return bool(words) and (words[:half] == words[half:] and half > 0 or
                            len(squeezed) > 1 and squeezed[: len(squeezed) // 2] * 2 == squeezed)


def test_doubled_bookmark_is_found():
    assert _is_doubled("Softmax Softmax") and _is_doubled("√D√D")
    assert not _is_doubled("2.5. Why divide by √D: the variance") and not _is_doubled("aa b")


def _link_uris(reader):
    for page in reader.pages:
        for annotation in page.get("/Annots") or []:
            action = annotation.get_object().get("/A")
            if action is not None and action.get("/URI"):
                yield str(action["/URI"])


def _outline(entries):
    for entry in entries:
        if isinstance(entry, list):
            yield from _outline(entry)
        else:
            yield entry
