"""Run first in every Python process the test suite starts: ``tests/conftest.py`` puts this folder
first on ``PYTHONPATH``, and Python's ``site`` imports the first ``sitecustomize`` it finds.

It keeps jsonschema from importing ``rfc3987_syntax``. requirements.txt installs that module
(jupyter-events asks for ``jsonschema[format-nongpl]``), jsonschema imports it whenever it is
there, and importing it builds 38 parsers: about one CPU second in each process that imports
nbformat (``import nbformat`` takes 1.1 s with it and 0.15 s without, on the 2-core machine these
figures come from). The suite starts about 30 such processes: nbgrader and its alembic runs,
JupyterLab, the kernel servers, the book build. What the module serves is jsonschema's check of the
"iri" and "iri-reference" formats, and no schema installed here uses either, so nothing else
changes. Then the ``sitecustomize`` this one stands in front of runs, if there is one.
"""

import importlib.machinery
import importlib.util
import os
import sys

sys.modules.setdefault("rfc3987_syntax", None)  # `import rfc3987_syntax` raises ImportError

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE])
if _spec is not None and _spec.loader is not None:
    _next = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_next)
