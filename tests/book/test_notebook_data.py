"""A downloaded chapter carries what it reads (book/_ext/attnmath_notebook.py): the data files its
code names, in a cell that lays them out as the repository does, and its citations as text."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_notebook import (  # noqa: E402
    DATA_ROOT,
    Resolver,
    data_cell,
    data_files,
    inline_figstyle,
    markdown_cell,
    standalone_notebook,
)


def _repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "book" / "data").mkdir(parents=True)
    (root / "bench" / "results").mkdir(parents=True)
    (root / "book" / "data" / "curve.npz").write_bytes(bytes(range(256)) * 4)
    (root / "bench" / "results" / "memory.json").write_text('{"D": 64}')
    (root / "bench" / "results" / "unused.json").write_text("{}")
    return root


def test_data_files_are_those_the_code_names(tmp_path):
    root = _repository(tmp_path)
    code = ('json.loads((repo_root() / "bench" / "results" / "memory.json").read_text())\n'
            'load(Path("data") / "curve.npz")')
    assert data_files(code, root) == {"bench/results/memory.json": b'{"D": 64}',
                                      "book/data/curve.npz": bytes(range(256)) * 4}
    assert data_files("print('no data')", root) == {}


def test_the_data_cell_lays_out_the_repository_and_works_from_the_chapter_folder(tmp_path, monkeypatch):
    root = _repository(tmp_path)
    files = data_files('"memory.json" "curve.npz"', root)
    where = tmp_path / "reader" / "attnmath-data"
    monkeypatch.setenv(DATA_ROOT, str(where))
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # run twice, as a reader may: the same folder
        exec(compile(data_cell(files, "book"), "<data cell>", "exec"), {})
        assert Path.cwd() == where / "book"
        assert (Path("data") / "curve.npz").read_bytes() == bytes(range(256)) * 4
        assert (where / "bench" / "results" / "memory.json").read_text() == '{"D": 64}'
    assert os.environ[DATA_ROOT] == str(where)


def test_standalone_notebook_puts_the_data_cell_before_the_chapters_code(tmp_path):
    root = _repository(tmp_path)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('x = load(Path("data") / "curve.npz")')])
    standalone_notebook(nb, root / "book", {"R": r"\mathbb{R}"})
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert "_files = {" in nb.cells[1].source and "'book/data/curve.npz'" in nb.cells[1].source
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    standalone_notebook(plain, root / "book", {})
    assert [c.source for c in plain.cells] == ["x = 1"]


def test_citations_read_as_author_and_year(tmp_path):
    bib = tmp_path / "references.bib"
    bib.write_text("@article{smith2020, author = {Smith, Ann and Jones, Bo}, title = {T}, year = {2020}}\n"
                   "@article{lee2019, author = {Lee, C. and Wu, D. and Xu, E.}, title = {U},\n"
                   "  year = {2019}}\n")
    resolver = Resolver(bibliography=bib)
    text = markdown_cell("As {cite:t}`smith2020` found {cite:p}`smith2020, lee2019`; {cite:p}`absent`.",
                         tmp_path, resolver)
    assert text == "As Smith and Jones (2020) found (Smith and Jones, 2020; Lee et al., 2019); (absent)."


def test_every_import_of_the_figure_style_is_replaced_by_its_text():
    import ast

    style = "TILE_KINDS = 3\n\ndef use_book_style():\n    return TILE_KINDS"
    cells = [
        "import numpy as np\nfrom figstyle import use_book_style  # one style\nuse_book_style()",
        "from figstyle import (TILE_KINDS,  # the kinds\n                      use_book_style)  # a style\nx = 1",
        "import figstyle\nfigstyle = None",
        "x = 1\n%matplotlib inline\nfrom figstyle import use_book_style",  # IPython syntax: one line
    ]
    for source in cells:
        out = inline_figstyle(source, style)
        assert "from figstyle" not in out and "import figstyle" not in out, out
        assert out.count("def use_book_style") == 1, out
        if "%" not in out:
            ast.parse(out)
    assert inline_figstyle("x = 1", style) == "x = 1"
