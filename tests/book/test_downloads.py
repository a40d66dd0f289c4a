"""What a reader takes away from the built book: a chapter notebook that runs on its own in
JupyterLab, and the exercise notebooks (the whole book as a PDF: tests/book/test_pdf.py)."""

from __future__ import annotations

import contextlib
import json
import os
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


@pytest.mark.parametrize("doc", CHAPTERS)
def test_a_downloaded_chapter_runs_on_its_own(built, kernels, tmp_path, doc):
    """Each chapter's notebook, alone in an empty folder outside the repository, runs from top to
    bottom (the data it reads travels in it); the first draws its figures in the book's style."""
    target = tmp_path / f"{Path(doc).name}.ipynb"
    shutil.copy(_downloaded(built, doc), target)
    assert str(ROOT) not in target.read_text(), f"{doc}: the notebook names a path in the repository"
    outputs = _run_alone(nbformat.read(target, as_version=4), tmp_path, kernels)
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
