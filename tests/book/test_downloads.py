"""What a reader takes away from the built book: a chapter notebook that reads as its page and runs
on its own in JupyterLab (with its data files in a .zip), its MyST twin, and the exercise notebooks
(the whole book as a PDF: tests/book/test_pdf.py; the conversion without a build:
tests/book/test_notebook_data.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from build import ROOT, book_html, is_notebook, toc_files  # tests/book/build.py

pytestmark = pytest.mark.slow

CHAPTERS = [d for d in toc_files() if re.match(r"book/\d\d_", d) and is_notebook(d)]
MYST = re.compile(r"^(`{3,}|:{3,})\{[\w:-]+\}|\{[\w:-]+\}`[^`]*`|^\([\w:.-]+\)=\s*$", re.M)
#: What a placeholder left by the build looks like: "??" of an unresolved reference, a MyST
#: substitution, a long base64 run (data carried in a cell instead of as a file).
PLACEHOLDER = re.compile(r"\?\?|\{\{[^}]*\}\}|[A-Za-z0-9+/]{200,}")
NUMBERED = re.compile(r"^(?:`{3,}|:{3,})\{(prf:(?!proof)\w+|exercise)\}[^\n]*\n:label:\s*(\S+)", re.M)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return book_html(tmp_path_factory)


def _downloaded(built: Path, doc: str, suffix: str = ".ipynb") -> Path:
    path = built / "_sources" / f"{doc}{suffix}"
    assert path.exists(), f"the download menu's {suffix} {path.relative_to(built)} is missing"
    return path


def _macros() -> set[str]:
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return set(config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"])


def leftovers(text: str, source: str) -> list[str]:
    """What of the chapter's MyST ``source`` is left unrendered in a download's ``text``: glue
    names, roles, directives, targets, labels, placeholders, BibTeX keys."""
    glued = set(re.findall(r"\{glue(?::\w*)?\}`(\w+)", source)) | set(re.findall(r"\bglue\(\s*f?[\"'](\w+)", source))
    labels = set(re.findall(r"^\(([\w:.-]+)\)=", source, re.M)) | set(re.findall(r"^:label:\s*(\S+)", source, re.M))
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "book" / "references.bib").read_text(), re.M))
    words = sorted(w for w in glued | labels | keys if re.search(rf"(?<![\w/.-]){re.escape(w)}(?![\w/.-])", text))
    return words + sorted({m.group(0).strip()[:60] for m in MYST.finditer(text)}) + \
        sorted({m.group(0)[:60] for m in PLACEHOLDER.finditer(text)})


def _markdown(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("doc", CHAPTERS)
def test_a_downloaded_chapter_reads_as_its_page(built, doc):
    """The prose of the downloaded notebook, and of its MyST twin, holds every glued value as its
    number, every theorem and exercise with its number, no MyST left for JupyterLab to show raw,
    no placeholder; its data travel as files (the .zip), not in a cell."""
    import jupytext

    source = (ROOT / f"{doc}.md").read_text()
    nb = nbformat.read(_downloaded(built, doc), as_version=4)
    markdown = _markdown(nb)
    left = leftovers(markdown, source)
    assert not left, f"{doc}: left in the downloaded notebook's text: {left[:10]}"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert not re.search(r"[A-Za-z0-9+/]{200,}", code), f"{doc}: a code cell carries data as text"
    numbered = NUMBERED.findall(source)
    headings = re.findall(r"^\*\*(?:[A-Z][a-z]+) \d+\.\d+[ .]", markdown, re.M)
    assert len(headings) == len(numbered), f"{doc}: {len(numbered)} numbered blocks, {len(headings)} with a number"
    defined = set(re.findall(r"\\newcommand\{\\(\w+)\}", markdown))
    used = {m for m in _macros() if re.search(rf"\\{m}(?![A-Za-z])", markdown)}
    assert used <= defined, f"{doc}: macros used but not defined in the notebook: {used - defined}"
    assert not re.search(r"^\s*(from (figstyle|myst_nb) import|import figstyle)", code, re.M), \
        f"{doc}: the notebook imports a module of the book's build"
    twin = jupytext.reads(_downloaded(built, doc, ".md").read_text(), fmt="md:myst")
    assert [(c.cell_type, c.source) for c in twin.cells] == [(c.cell_type, c.source) for c in nb.cells], \
        f"{doc}: the .md download is not the same notebook as the .ipynb"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_the_download_menu_offers_what_is_written(built, doc):
    """A chapter's menu links its .ipynb, its MyST .md and, if its code reads data files, its
    .zip; the links lead to the files."""
    html = (built / f"{doc}.html").read_text()
    menu = re.search(r'<div class="dropdown dropdown-download-buttons">(.*?)</ul>', html, re.S).group(1)
    links = re.findall(r'href="([^"]+)"', menu)
    suffixes = sorted(Path(link).suffix for link in links)
    data = json.loads(_downloaded(built, doc).read_text())["metadata"]["attnmath_standalone"]["data"]
    assert suffixes == sorted([".ipynb", ".md"] + ([".zip"] if data else [])), f"{doc}: {links}"
    for link in links:
        assert (built / Path(doc).parent / link).resolve().is_file(), f"{doc}: {link} is not in the built book"


def test_a_page_that_is_not_a_notebook_offers_no_source_download(built):
    html = (built / "book" / "glossary.html").read_text()
    assert "download-source-button" not in html and not (built / "_sources" / "book" / "glossary.md").exists()


@pytest.fixture(scope="session")
def kernels():
    """A kernel server (book/_ext/attnmath_kernels.py) for this worker's downloaded chapters: each
    chapter's kernel is forked with NumPy, PyTorch and matplotlib imported already, and sees no
    more of the repository than a kernel started on its own in the same folder would
    (test_a_kernel_of_a_downloaded_chapter_cannot_see_the_book)."""
    from unittest import mock

    from attnmath_kernels import kernel_server

    with contextlib.ExitStack() as stack:
        with mock.patch.dict(os.environ, _reader_environment(), clear=True):
            sock = stack.enter_context(kernel_server())
        assert sock is not None, "the kernel server did not start"
        yield sock


def _reader_environment() -> dict[str, str]:
    """This process's environment without the repository's entries of PYTHONPATH, as a reader's
    JupyterLab would start a kernel."""
    env = dict(os.environ)
    kept = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep) if p and not _in_repository(p)]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def _in_repository(path: str) -> bool:
    return _within(path, ROOT)


def _within(path: str | Path, folder: str | Path) -> bool:
    resolved, folder = Path(path).resolve(), Path(folder).resolve()
    return resolved == folder or folder in resolved.parents


def _run_alone(nb: nbformat.NotebookNode, folder: Path, server: str) -> list:
    """Execute ``nb`` from top to bottom in ``folder`` (outside the repository) in a kernel forked
    by ``server``; the outputs of its code cells. A cell's error stops the run and is raised."""
    from attnmath_execute import _forked_kernel_manager  # book/_ext/attnmath_execute.py
    from nbclient import NotebookClient

    assert not _in_repository(str(folder))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(nb, timeout=300, kernel_name="python3", shutdown_kernel="immediate",
                   kernel_manager_class=_forked_kernel_manager(server),
                   resources={"metadata": {"path": str(folder)}}).execute(env=_reader_environment())
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def _unpacked(built: Path, doc: str, folder: Path) -> Path:
    """The chapter's notebook where a reader puts it: its .zip unpacked in ``folder`` (for a
    chapter that reads data files), else the .ipynb alone in ``folder``."""
    zipped = built / "_sources" / f"{doc}.zip"
    if not zipped.exists():
        return Path(shutil.copy(_downloaded(built, doc), folder / f"{Path(doc).name}.ipynb"))
    with zipfile.ZipFile(zipped) as archive:
        archive.extractall(folder)
    return folder / Path(doc).name / Path(doc).parent / f"{Path(doc).name}.ipynb"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_a_downloaded_chapter_runs_on_its_own(built, kernels, tmp_path, doc):
    """Each chapter's notebook, alone in an empty folder outside the repository (with the data
    files of its .zip beside it), runs from top to bottom; the first draws its figures in the
    book's style."""
    target = _unpacked(built, doc, tmp_path)
    assert str(ROOT) not in target.read_text(), f"{doc}: the notebook names a path in the repository"
    outputs = _run_alone(nbformat.read(target, as_version=4), target.parent, kernels)
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, f"{doc}: {errors[0].ename}: {errors[0].evalue}"
    if doc != CHAPTERS[0]:
        return
    figures = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert figures, f"{doc}: the notebook drew no figure in the book's style (SVG)"


#: What a kernel of a downloaded chapter finds of the repository: its folder, its Python
#: environment, module path and PYTHONPATH, and the file of every module it has loaded.
_LOOK = """import os, sys
print(os.getcwd())
print(sys.prefix)
print(repr([p or os.getcwd() for p in sys.path]))
print(repr(os.environ.get("PYTHONPATH", "").split(os.pathsep)))
print(repr(sorted({getattr(m, "__file__", None) or "" for m in list(sys.modules.values())})))"""


def test_a_kernel_of_a_downloaded_chapter_cannot_see_the_book(kernels, tmp_path):
    """The kernels the downloaded chapters run in: a notebook that imports a file of the book fails
    there, and nothing of the repository but the Python environment (.venv, with the library
    installed from lib/) is on its path or loaded."""
    import ast

    import attnmath_kernels
    from nbclient.exceptions import CellExecutionError

    cells = [_LOOK, "import figstyle  # book/figstyle.py", "print('imported')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with pytest.raises(CellExecutionError) as failed:
        _run_alone(nb, tmp_path, kernels)
    assert (failed.value.ename, failed.value.evalue) == ("ModuleNotFoundError", "No module named 'figstyle'")
    assert not nb.cells[2].outputs, "the cell after the failing import ran"
    cwd, prefix, path, pythonpath, files = nb.cells[0].outputs[0].text.splitlines()
    assert Path(cwd).resolve() == tmp_path.resolve()
    library = ROOT / "lib"  # the editable install of attnmath (requirements.txt's `-e .`)

    def of_the_repository(found: str) -> list[str]:
        return [p for p in ast.literal_eval(found)
                if os.path.isabs(p) and _in_repository(p) and not _within(p, prefix)]

    seen = of_the_repository(path) + of_the_repository(pythonpath)
    assert {Path(p).resolve() for p in seen} <= {library}, f"the kernel's path reaches the repository: {seen}"
    # the kernel server's own script stays in sys.modules as multiprocessing's `__mp_main__`
    server = Path(attnmath_kernels.__file__).resolve()
    loaded = [f for f in of_the_repository(files) if Path(f).resolve() != server]
    assert all(_within(f, library / "attnmath") for f in loaded), \
        f"the kernel loaded files of the repository besides the library: {loaded}"


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
