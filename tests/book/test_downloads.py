"""What a reader takes away from the built book: a chapter notebook that runs on its own in
JupyterLab, the exercise notebooks, and the whole book as a PDF."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from build import ROOT, book_html, is_notebook, toc_files  # tests/book/build.py

pytestmark = pytest.mark.slow

CHAPTERS = [d for d in toc_files() if re.match(r"book/\d\d_", d) and is_notebook(d)]
MYST = re.compile(r"^(`{3,}|:{3,})\{[\w:-]+\}|\{(cite|ref|eq|numref|doc|prf:ref|download|math)"
                  r"(:\w+)?\}`|^\([\w:.-]+\)=\s*$", re.M)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return book_html(tmp_path_factory)


def _downloaded(built: Path, doc: str) -> Path:
    path = built / "_sources" / f"{doc}.ipynb"
    assert path.exists(), f"the download menu's notebook {path.relative_to(built)} is missing"
    return path


def _macros() -> set[str]:
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return set(config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"])


@pytest.mark.parametrize("doc", CHAPTERS)
def test_downloaded_chapter_is_plain_jupyter_markdown(built, doc):
    nb = nbformat.read(_downloaded(built, doc), as_version=4)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    left = sorted({m.group(0).strip() for m in MYST.finditer(markdown)})
    assert not left, f"{doc}: MyST syntax JupyterLab does not render: {left[:8]}"
    defined = set(re.findall(r"\\newcommand\{\\(\w+)\}", markdown))
    used = {m for m in _macros() if re.search(rf"\\{m}(?![A-Za-z])", markdown)}
    assert used <= defined, f"{doc}: macros used but not defined in the notebook: {used - defined}"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert not re.search(r"^\s*(from figstyle import|import figstyle)", code, re.M), \
        f"{doc}: the notebook imports a file of the book (book/figstyle.py)"
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "book" / "references.bib").read_text(), re.M))
    shown = sorted(k for k in keys if re.search(rf"(?<![\w/.-]){re.escape(k)}(?![\w/.-])", markdown))
    assert not shown, f"{doc}: citations left as BibTeX keys: {shown}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_a_downloaded_chapter_runs_on_its_own(built, tmp_path, doc):
    """Each chapter's notebook, alone in an empty folder outside the repository, runs from top to
    bottom (the data it reads travels in it); the first draws its figures in the book's style."""
    from nbclient import NotebookClient

    assert ROOT not in tmp_path.resolve().parents
    target = tmp_path / Path(doc).name
    shutil.copy(_downloaded(built, doc), target.with_suffix(".ipynb"))
    nb = nbformat.read(target.with_suffix(".ipynb"), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{doc}: {errors[0].ename}: {errors[0].evalue}"
    if doc != CHAPTERS[0]:
        return
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if "image/svg+xml" in o.get("data", {})]
    assert figures, f"{doc}: the notebook drew no figure in the book's style (SVG)"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_links_its_exercise_notebook_and_the_book_serves_it(built, doc):
    html = (built / f"{doc}.html").read_text()
    links = re.findall(r'href="([^"]+\.ipynb)"', html)
    exercise = [h for h in links if "_downloads/" in h]
    assert exercise, f"{doc}: no link to its exercise notebook"
    for href in exercise:
        served = (built / Path(doc).parent / href).resolve()
        assert served.exists(), f"{doc}: {href} is not in the built book"
        assert json.loads(served.read_text())["nbformat"] == 4


@pytest.mark.needs("chromium")
def test_whole_book_pdf_has_every_chapter(built, tmp_path):
    """``make pdf`` (book/_ext/make_pdf.py) prints this run's HTML build: one PDF with every
    chapter's title as a heading, and the library's code."""
    from pypdf import PdfReader

    out = tmp_path / "book.pdf"
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "_ext" / "make_pdf.py"), "--html", str(built),
                           "--out", str(out)], capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reader = PdfReader(out)
    assert len(reader.pages) > 50, f"the PDF has only {len(reader.pages)} pages"
    # Every page of the table of contents is a heading of the PDF, in its outline (bookmarks).
    headings = [_letters(entry.title) for entry in _outline(reader.outline)]
    missing = [doc for doc in toc_files() if not any(_letters(_title(doc)) in h for h in headings)]
    assert not missing, f"chapters whose title is not a heading of the PDF: {missing}"
    text = _letters(" ".join(page.extract_text() or "" for page in reader.pages[:60]))
    assert _letters("def softmax(") in text, "the PDF shows no library code"
    # A link to another page of the book is a link within the PDF, not to the printing server.
    pages = {f"/{doc}.html" for doc in toc_files()}
    outward = [uri for uri in _link_uris(reader) if urlsplit(uri).path in pages]
    assert not outward, f"links between the book's pages that leave the PDF: {outward[:5]}"


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


def _title(doc: str) -> str:
    source = (ROOT / f"{doc}.md").read_text()
    return re.search(r"^# (.+)$", source, re.M).group(1)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())
