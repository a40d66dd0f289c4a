"""A downloaded chapter reads as its page and carries what it reads (book/_ext/attnmath_notebook.py):
glued values, numbers of theorems, exercises, figures and equations, citations as text, the book's
helpers in one folded cell, and the data files its code names beside it (or fetched, or named in a
clear error). These tests need no book build; tests/book/test_downloads.py opens the built ones."""

from __future__ import annotations

import io
import re
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_notebook import (  # noqa: E402
    MARK,
    Resolver,
    chapter_zip,
    data_cell,
    data_files,
    drop_imports,
    install_cell,
    markdown_cell,
    myst_text,
    standalone_notebook,
)


def _repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "book" / "data").mkdir(parents=True)
    (root / "bench" / "results").mkdir(parents=True)
    (root / "book" / "data" / "curve.npz").write_bytes(bytes(range(256)) * 4)
    (root / "bench" / "results" / "memory.json").write_text('{"D": 64}')
    (root / "bench" / "results" / "unused.json").write_text("{}")
    (root / "book" / "figstyle.py").write_text("STYLE = 'book'\n\ndef use_book_style():\n    return STYLE\n")
    return root


def _env():
    """A Sphinx environment as the resolver reads it: one chapter with a theorem, an exercise,
    a figure and an equation."""
    labels = {"fig-curve": ("book/03_x", "fig-curve", "The curve."), "sec-a": ("book/03_x", "sec-a", "A section")}
    domains = {"std": SimpleNamespace(labels=labels),
               "math": SimpleNamespace(equations={"eq-a": ("book/03_x", 1)})}
    return SimpleNamespace(
        proof_list={"thm-a": {"docname": "book/03_x", "countertype": "theorem", "realtype": "lemma"}},
        sphinx_exercise_registry={"ex-a": {"docname": "book/03_x"}},
        toc_fignumbers={"book/03_x": {"theorem": {"thm-a": (3, 1)}, "exercise": {"ex-a": (3, 2)},
                                      "figure": {"fig-curve": (3, 4)},
                                      "displaymath": {"equation-eq-a": (3, 5)}}},
        get_domain=domains.__getitem__, titles={},
        config=SimpleNamespace(numfig_format={"figure": "Fig. %s"}, math_eqref_format="Eq. {number}"))


def _glue_output(name: str, text: str):
    prefix = "application/papermill.record/"
    return nbformat.v4.new_output("display_data", data={f"{prefix}text/plain": text},
                                  metadata={"scrapbook": {"name": name, "mime_prefix": prefix}})


def test_the_text_reads_as_the_page_glued_values_and_numbers_written_in(tmp_path):
    resolver = Resolver(_env(), glue={"peak": "1.7502174377441406", "n": "4096", "dev": "'H100'"},
                        docname="book/03_x")
    source = ("Peaks at {glue:text}`peak:.2f` times for $n =$ {glue:text}`n:,` on the {glue:text}`dev`. "
              "By {prf:ref}`thm-a`, {numref}`fig-curve`, {numref}`Figure %s <fig-curve>`, {eq}`eq-a`, "
              "{ref}`sec-a` and {thm}`thm-a`.\n\n"
              "```{prf:lemma} Products\n:label: thm-a\n\nA sentence.\n```\n\n"
              "```{prf:proof}\nIt ends here.\n```\n\n"
              "```{exercise} Try\n:label: ex-a\n\nDo it.\n```\n\n"
              "```{solution} ex-a\n:class: dropdown\n\nDone.\n```\n\n"
              "```{interactive} curve\n```\n")
    text = markdown_cell(source, tmp_path, resolver)
    assert text.startswith("Peaks at 1.75 times for $n =$ 4,096 on the H100. By Lemma 3.1, Fig. 3.4, "
                           "Figure 3.4, Eq. 3.5, A section and Lemma 3.1."), text
    assert "**Lemma 3.1 (Products).**" in text and "**Exercise 3.2 (Try).**" in text
    assert r"It ends here. $\square$" in text and "<summary>Solution to Exercise 3.2</summary>" in text
    assert "interactive" not in text and "{" not in text.replace(r"\square", "")


def test_a_value_that_was_not_glued_is_left_for_the_download_test_to_name(tmp_path):
    assert markdown_cell("at {glue:text}`missing:.2f` times", tmp_path, Resolver()) == "at missing:.2f times"


def test_citations_read_as_author_and_year(tmp_path):
    bib = tmp_path / "references.bib"
    bib.write_text("@article{smith2020, author = {Smith, Ann and Jones, Bo}, title = {T}, year = {2020}}\n"
                   "@article{lee2019, author = {Lee, C. and Wu, D. and Xu, E.}, title = {U},\n"
                   "  year = {2019}}\n")
    resolver = Resolver(bibliography=bib)
    text = markdown_cell("As {cite:t}`smith2020` found {cite:p}`smith2020, lee2019`; {cite:p}`absent`.",
                         tmp_path, resolver)
    assert text == "As Smith and Jones (2020) found (Smith and Jones, 2020; Lee et al., 2019); (absent)."


def test_data_files_are_those_the_code_names(tmp_path):
    root = _repository(tmp_path)
    code = ('json.loads((repo_root() / "bench" / "results" / "memory.json").read_text())\n'
            'load(Path("data") / "curve.npz")')
    assert data_files(code, root) == {"bench/results/memory.json": b'{"D": 64}',
                                      "book/data/curve.npz": bytes(range(256)) * 4}
    assert data_files("print('no data')", root) == {}


def _run_data_cell(files, where: Path, monkeypatch, source=None):
    monkeypatch.chdir(where)
    exec(compile(data_cell(files, "book", "03_x.ipynb", source), "<data cell>", "exec"), {})


def test_the_data_cell_finds_the_files_of_the_zip_beside_the_notebook(tmp_path, monkeypatch):
    root = _repository(tmp_path)
    files = data_files('"memory.json" "curve.npz"', root)
    unpacked = tmp_path / "reader"
    with zipfile.ZipFile(io.BytesIO(chapter_zip("{}", "03_x.ipynb", files, "book", "03_x"))) as archive:
        assert sorted(archive.namelist()) == ["03_x/bench/results/memory.json", "03_x/book/03_x.ipynb",
                                              "03_x/book/data/curve.npz"]
        archive.extractall(unpacked)
    for _ in range(2):  # run twice, as a reader may: the same folder
        _run_data_cell(files, unpacked / "03_x" / "book", monkeypatch)
        assert Path.cwd() == (unpacked / "03_x" / "book").resolve()
        assert (Path("data") / "curve.npz").read_bytes() == bytes(range(256)) * 4
        assert (Path.cwd().parent / "bench" / "results" / "memory.json").read_text() == '{"D": 64}'


def test_the_data_cell_fetches_missing_files_from_the_repository(tmp_path, monkeypatch):
    root = _repository(tmp_path)
    files = data_files('"curve.npz"', root)
    alone = tmp_path / "alone"
    alone.mkdir()
    _run_data_cell(files, alone, monkeypatch, source=root.as_uri() + "/")
    assert Path.cwd() == (alone / "attnmath-data" / "book").resolve()
    assert (Path("data") / "curve.npz").read_bytes() == bytes(range(256)) * 4
    assert (Path.cwd().parent / "bench").is_dir()  # the chapters' repo_root() looks for bench/ and book/


def test_the_data_cell_without_its_files_says_what_to_download(tmp_path, monkeypatch):
    files = data_files('"curve.npz"', _repository(tmp_path))
    alone = tmp_path / "alone"
    alone.mkdir()
    with pytest.raises(FileNotFoundError, match=r"book/data/curve\.npz.*\.zip download.*book/03_x\.ipynb"):
        _run_data_cell(files, alone, monkeypatch)


def test_standalone_notebook_reads_as_the_page_and_carries_the_books_helpers(tmp_path):
    root = _repository(tmp_path)
    code = ('from figstyle import use_book_style  # the style\nfrom myst_nb import glue\nimport numpy as np\n'
            'x = load(Path("data") / "curve.npz")\nglue("peak", 1.7502, display=False)')
    cell = nbformat.v4.new_code_cell(code, outputs=[_glue_output("peak", "1.7502")])
    cell.metadata["mystnb"] = {"figure": {"caption": "Peak {glue:text}`peak:.1f`.", "name": "fig-curve"}}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T\n\nAt {glue:text}`peak:.2f`."), cell])
    standalone_notebook(nb, root / "book", {"R": r"\mathbb{R}"}, Resolver(_env(), docname="book/03_x"),
                        name="03_x")
    kinds = [(c.cell_type, c.source.split("\n")[0]) for c in nb.cells]
    assert [k for k, _ in kinds] == ["markdown", "markdown", "code", "code", "code", "markdown"], kinds
    assert r"\newcommand{\R}{\mathbb{R}}" in nb.cells[0].source and "`book/data/curve.npz`" in nb.cells[0].source
    assert nb.cells[1].source == "# T\n\nAt 1.75."  # the title, then the data cell, folded
    assert nb.cells[2].source.startswith("# The data files this chapter reads")
    assert nb.cells[2].metadata["jupyter"] == {"source_hidden": True}
    helpers, chapter = nb.cells[3], nb.cells[4]
    assert helpers.metadata["jupyter"] == {"source_hidden": True}
    assert "def use_book_style" in helpers.source and "def glue(" in helpers.source
    assert "import figstyle" not in chapter.source and "from myst_nb" not in chapter.source
    assert "import numpy as np" in chapter.source
    assert nb.cells[5].source == "**Fig. 3.4.** Peak 1.8."
    assert nb.metadata[MARK] == {"data": ["book/data/curve.npz"]}
    namespace: dict = {}
    exec(compile(helpers.source, "<helpers>", "exec"), namespace)
    assert namespace["use_book_style"]() == "book" and namespace["glue"]("x", 1, display=False) is None


def test_a_chapter_without_data_or_macros_keeps_its_cells(tmp_path):
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    standalone_notebook(plain, _repository(tmp_path) / "book", {})
    assert [c.source for c in plain.cells] == ["x = 1"]


def test_with_a_public_repository_the_notebook_installs_the_library_and_fetches_its_data(tmp_path):
    from IPython.core.inputtransformer2 import TransformerManager

    root = _repository(tmp_path)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('load("curve.npz")')])
    repository = {"install": "attnmath @ git+https://github.com/o/r@main",
                  "raw": "https://raw.githubusercontent.com/o/r/main/"}
    standalone_notebook(nb, root / "book", {"R": "x"}, repository=repository, name="03_x")
    install, data = nb.cells[1].source, nb.cells[2].source
    assert install == install_cell(repository["install"]) and "git+https://github.com/o/r@main" in nb.cells[0].source
    compile(TransformerManager().transform_cell(install), "<install cell>", "exec")  # IPython's %pip
    assert "DATA_SOURCE = 'https://raw.githubusercontent.com/o/r/main/'" in data


def test_every_import_of_the_books_modules_is_replaced():
    import ast

    cells = [
        "import numpy as np\nfrom figstyle import use_book_style  # one style\nuse_book_style()",
        "from figstyle import (TILE_KINDS,  # the kinds\n                      use_book_style)  # a style\nx = 1",
        "import figstyle\nfigstyle = None",
        "x = 1\n%matplotlib inline\nfrom figstyle import use_book_style",  # IPython syntax: one line
    ]
    for source in cells:
        out, found = drop_imports(source)
        assert found == {"figstyle"} and "from figstyle" not in out and "import figstyle" not in out, out
        if "%" not in out:
            ast.parse(out)
    assert drop_imports("from myst_nb import glue\n") == ("# myst_nb: in the folded cell at the top\n", {"myst_nb"})
    # an import the stand-in does not provide stays
    assert drop_imports("from myst_nb import glue, other") == ("from myst_nb import glue, other", set())
    assert drop_imports("x = 1") == ("x = 1", set())


def test_the_md_download_is_the_same_notebook_in_myst(tmp_path):
    import jupytext

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Text $x$."),
                                         nbformat.v4.new_code_cell("x = 1", outputs=[_glue_output("a", "1")])])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    text = myst_text(nb)
    assert re.search(r"```\{code-cell\}( ipython3)?\nx = 1\n```", text), text
    again = jupytext.reads(text, fmt="md:myst")
    assert [(c.cell_type, c.source) for c in again.cells] == [("markdown", "Text $x$."), ("code", "x = 1")]
