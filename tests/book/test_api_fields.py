"""Every field of a public NamedTuple of ``attnmath`` is documented with a ``#:`` comment, which
autodoc renders on the API pages (in place of "Alias for field number N"); a field holding an
array names its shape in the legend of the library (``(B, H, L, D)`` ...)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from sphinx.pycode import ModuleAnalyzer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lib" / "attnmath"
ARRAY_TYPES = re.compile(r"ndarray|Array|Tensor")
SHAPE = re.compile(r"``\([^`]*\)``")


def _is_namedtuple(node: ast.ClassDef) -> bool:
    return any(isinstance(b, ast.Name) and b.id == "NamedTuple" for b in node.bases)


def _public_namedtuples() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """``(module, class, [(field, annotation)])`` for every public NamedTuple, read from the source."""
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and _is_namedtuple(node) and not node.name.startswith("_"):
                fields = [(s.target.id, ast.unparse(s.annotation)) for s in node.body
                          if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                found.append((path.stem, node.name, fields))
    return found


NAMEDTUPLES = _public_namedtuples()


def _field_docs(module: str) -> dict[tuple[str, str], str]:
    analyzer = ModuleAnalyzer.for_file(str(PACKAGE / f"{module}.py"), f"attnmath.{module}")
    return {key: " ".join(lines).strip() for key, lines in analyzer.find_attr_docs().items()}


def test_the_package_has_namedtuples_to_check():
    assert len(NAMEDTUPLES) > 20
    assert sum(len(fields) for _, _, fields in NAMEDTUPLES) > 150


@pytest.mark.parametrize("module, cls, fields", NAMEDTUPLES, ids=[f"{m}.{c}" for m, c, _ in NAMEDTUPLES])
def test_every_field_is_documented_and_arrays_name_their_shape(module, cls, fields):
    docs = _field_docs(module)
    missing = [name for name, _ in fields if not docs.get((cls, name))]
    assert not missing, f"attnmath.{module}.{cls}: fields without a `#:` comment: {missing}"
    shapeless = [name for name, annotation in fields
                 if ARRAY_TYPES.search(annotation) and not SHAPE.search(docs[(cls, name)])]
    assert not shapeless, f"attnmath.{module}.{cls}: array fields with no ``(shape)`` comment: {shapeless}"


@pytest.mark.parametrize("module, cls, fields", NAMEDTUPLES, ids=[f"{m}.{c}" for m, c, _ in NAMEDTUPLES])
def test_the_source_reading_finds_the_runtime_fields(module, cls, fields):
    try:
        imported = importlib.import_module(f"attnmath.{module}")
    except ImportError as error:  # an optional dependency (torch, triton) is missing
        pytest.skip(f"attnmath.{module} does not import here: {error}")
    assert getattr(imported, cls)._fields == tuple(name for name, _ in fields)


def test_an_undocumented_field_is_reported(tmp_path):
    source = ("from typing import NamedTuple\nimport numpy as np\n\n"
              "class Pair(NamedTuple):\n    #: Left ``(B, L)``.\n    a: np.ndarray\n    b: np.ndarray\n")
    path = tmp_path / "pair.py"
    path.write_text(source)
    docs = ModuleAnalyzer.for_file(str(path), "pair").find_attr_docs()
    assert ("Pair", "a") in docs and ("Pair", "b") not in docs


def _api_entries(modules: list[str]) -> str:
    """The autodoc directives of the API reference's entries that carry ``#:`` comments in
    ``modules``: each public NamedTuple with its fields, and every other public attribute with a
    ``#:`` comment (the rest of a module's page, its functions, carries none)."""
    entries = []
    for module in modules:
        tuples = sorted(c for m, c, _ in NAMEDTUPLES if m == module)
        entries += [f".. autoclass:: attnmath.{module}.{cls}\n   :members:\n" for cls in tuples]
        for cls, name in sorted(_field_docs(module)):
            if cls in tuples or name.startswith("_") or cls.startswith("_"):
                continue
            kind, owner = ("autoattribute", f"{cls}.") if cls else ("autodata", "")
            entries.append(f".. {kind}:: attnmath.{module}.{owner}{name}\n")
    return "\n".join(entries)


def _build_api_text(tmp_path: Path, entries: str) -> str:
    """The plain text Sphinx makes of the autodoc directives ``entries``, with the book's autodoc
    set-up (autodoc, napoleon and the book's listing extension)."""
    from sphinx.application import Sphinx

    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['sphinx.ext.autodoc', 'sphinx.ext.napoleon', 'attnmath_listing']\n")
    (source / "index.rst").write_text("API\n===\n\n" + entries)
    app = Sphinx(str(source), str(source), str(tmp_path / "out"), str(tmp_path / "doctrees"), "text",
                 status=None, warning=None, freshenv=True)
    app.build()
    return (tmp_path / "out" / "index.txt").read_text()


def test_the_api_reference_shows_each_fields_comment_and_no_alias_line(tmp_path):
    modules = sorted({m for m, _, _ in NAMEDTUPLES if m != "flash_triton"})
    text = " ".join(_build_api_text(tmp_path, _api_entries(modules)).split())
    assert "Alias for field number" not in text
    # napoleon reads a first line "X: Y" of an attribute's comment as type X, description Y
    assert " Type: " not in text, "a field comment's first line has a colon: napoleon takes it for a type"
    for module in modules:
        for (cls, field), doc in _field_docs(module).items():
            if any(c == cls for m, c, _ in NAMEDTUPLES if m == module):
                words = re.sub(r"``|:\w+:`~?|`|\"", "", doc).split()[:2]
                shown = " ".join(words) in text.replace('"', "")
                assert shown, f"{module}.{cls}.{field}: {doc!r} is not shown"
