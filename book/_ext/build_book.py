"""``make book``'s build command: Jupyter Book's own ``jupyter-book build``, started without the
one import that costs the build seconds and gives it nothing.

jsonschema (which Jupyter Book uses to check ``_config.yml`` and nbformat to check notebooks)
imports the optional package ``rfc3987_syntax`` when it is installed, to check the "iri" string
format, and that package compiles a Lark grammar on import: about 1 s of CPU on a quiet machine
and 2 s on a loaded one, in each process that imports jsonschema. Neither the book's configuration
nor a notebook has an "iri" field. Marking the package as absent makes jsonschema skip that one
format check, which it does by design when the package is not installed.

    python book/_ext/build_book.py [jupyter-book build arguments]   # as `make book` runs it

:data:`COMMAND` is the command ``make book`` runs (``bench/bench_rebuild.py`` runs the same).
"""

from __future__ import annotations

import sys

#: The arguments of ``jupyter-book`` for the book, as ``make book`` builds it.
COMMAND = ("build", ".", "-n", "-W", "--keep-going")


def skip_iri_grammar() -> None:
    """Have jsonschema find ``rfc3987_syntax`` absent (call before jsonschema is imported)."""
    sys.modules.setdefault("rfc3987_syntax", None)


def main(argv: list[str] | None = None) -> None:
    skip_iri_grammar()
    from jupyter_book.cli.main import main as jupyter_book

    jupyter_book(args=list(COMMAND if argv is None else argv), prog_name="jupyter-book")


if __name__ == "__main__":
    main(sys.argv[1:] or None)
