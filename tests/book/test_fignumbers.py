"""Figure numbers from the recorded sequences (book/_ext/attnmath_fignumbers.py) are Sphinx's own:
a small numbered book is built, edited and built again, and after each build the numbers equal
those of Sphinx's numbering on the same environment, without loading one doctree."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors.toctree import TocTreeCollector

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_fignumbers as fig  # noqa: E402

INDEX = """Book
====

.. toctree::
   :numbered:

   one
   two
"""
FIGURE = """
.. figure:: img.png

   A caption {n}
"""
TABLE = """
.. table:: Table {n}

   = =
   a b
   = =
"""
CODE = """
.. code-block:: python
   :caption: listing {n}

   x = {n}
"""
MATH = """
.. math::
   :label: eq-{doc}-{n}

   x = {n}
"""


def chapter(doc: str, parts: list[str]) -> str:
    """A page with numbered things in sections, subsections and a nested toctree."""
    text = f"{doc.title()}\n{'=' * len(doc)}\n"
    for n, part in enumerate(parts):
        if n % 3 == 1:
            text += f"\nSection {n}\n{'-' * (8 + len(str(n)))}\n"
        text += part.format(n=n, doc=doc)
    return text


def build(src: Path, depth: int) -> Sphinx:
    (src / "conf.py").write_text(f"extensions = ['attnmath_fignumbers']\nnumfig = True\n"
                                 f"numfig_secnum_depth = {depth}\n")
    app = Sphinx(str(src), str(src), str(src / "_out"), str(src / "_doctrees"), "dummy",
                 status=io.StringIO(), warning=io.StringIO(), freshenv=False)
    app.build()
    return app


def sphinx_numbers(env: BuildEnvironment) -> dict:
    """The numbers Sphinx's own numbering gives the environment's doctrees."""
    kept = env.toc_fignumbers
    env.toc_fignumbers = {}
    fig.SPHINX_ASSIGN_FIGURE_NUMBERS(TocTreeCollector(), env)
    numbers, env.toc_fignumbers = env.toc_fignumbers, kept
    return numbers


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_numbers_equal_sphinxs_after_a_build_and_after_an_edit(tmp_path, depth, monkeypatch):
    (tmp_path / "img.png").write_bytes(b"")
    (tmp_path / "index.rst").write_text(INDEX)
    (tmp_path / "one.rst").write_text(chapter("one", [FIGURE, TABLE, CODE, MATH, FIGURE, CODE]))
    (tmp_path / "two.rst").write_text(chapter("two", [MATH, FIGURE, FIGURE, TABLE])
                                      + "\n.. toctree::\n\n   three\n")
    (tmp_path / "three.rst").write_text(chapter("three", [FIGURE, MATH, TABLE]))
    app = build(tmp_path, depth)
    first = app.env.toc_fignumbers
    assert first == sphinx_numbers(app.env)
    assert first["one"]["figure"] and first["three"]["table"] and first["two"]["displaymath"]
    # an edit: a figure and an equation more in the first chapter, the others unchanged
    (tmp_path / "one.rst").write_text(chapter("one", [FIGURE, FIGURE, TABLE, CODE, MATH, MATH, FIGURE, CODE]))
    app = build(tmp_path, depth)
    assert app.env.toc_fignumbers == sphinx_numbers(app.env) != first
    # the recorded sequences stand for the doctrees: numbering loads none of them
    monkeypatch.setattr(BuildEnvironment, "get_doctree", lambda *a: pytest.fail("a doctree was loaded"))
    before = app.env.toc_fignumbers
    assert fig.assign_figure_numbers(TocTreeCollector(), app.env) == []
    assert app.env.toc_fignumbers == before


def test_a_page_without_a_recorded_sequence_is_read_from_its_doctree(tmp_path):
    (tmp_path / "img.png").write_bytes(b"")
    (tmp_path / "index.rst").write_text(INDEX)
    (tmp_path / "one.rst").write_text(chapter("one", [FIGURE, TABLE]))
    (tmp_path / "two.rst").write_text(chapter("two", [FIGURE]))
    app = build(tmp_path, 1)
    expected = app.env.toc_fignumbers
    app.env.attnmath_enumerables.pop("two")
    app.env.toc_fignumbers = {}
    assert set(fig.assign_figure_numbers(TocTreeCollector(), app.env)) == {"one", "two"}
    assert app.env.toc_fignumbers == expected
    assert "two" in app.env.attnmath_enumerables
