"""``make book``'s build command (book/_ext/build_book.py): Jupyter Book's own command, started
without the IRI grammar that jsonschema would compile, and checking notebooks and the book's
configuration all the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "book" / "_ext"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=EXT, capture_output=True, text=True, timeout=120)


def test_jupyter_books_imports_skip_the_iri_grammar_and_still_validate():
    done = _python(
        "import sys, build_book; build_book.skip_iri_grammar()\n"
        "import jsonschema, nbformat, jupyter_book.config\n"
        "assert 'lark' not in sys.modules, 'the grammar was compiled'\n"
        "assert 'iri' not in jsonschema.FormatChecker().checkers\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "nb.cells[0]['execution_count'] = 'one'\n"
        "try:\n    nbformat.validate(nb)\nexcept nbformat.ValidationError:\n    print('invalid')\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "invalid", "a notebook is still validated"


def test_the_command_is_jupyter_books_build_of_the_book_with_the_readmes_flags():
    sys.path.insert(0, str(EXT))
    import build_book

    assert build_book.COMMAND == ("build", ".", "-n", "-W", "--keep-going")
    done = subprocess.run([sys.executable, str(EXT / "build_book.py"), "build", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--keep-going" in done.stdout and "--nitpick" in done.stdout
    assert "build_book.py" in (ROOT / "Makefile").read_text()
