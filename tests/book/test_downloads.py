"""What a reader takes away from the built book: a chapter notebook that runs on its own in
JupyterLab, and the exercise notebooks (the whole book as a PDF: tests/book/test_pdf.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

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
