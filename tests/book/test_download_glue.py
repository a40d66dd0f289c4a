"""A chapter's download carries its glued values when the build executes the chapter afresh, not
only when it takes its outputs from the execution cache (book/_ext/attnmath_html.py,
``page_glue`` of book/_ext/attnmath_notebook.py).

myst-nb writes a notebook it has just executed into its output folder without the outputs of
``glue(..., display=False)``; they are in the page's ``.glue.json`` beside it. A book of one page,
built once with an empty execution cache, shows it: its download must read as its page.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

CONF = f"""\
import sys
sys.path.insert(0, {str(ROOT / "book" / "_ext")!r})
extensions = ["myst_nb", "attnmath_html"]
root_doc = "page"
exclude_patterns = ["_build", "cache"]
nb_execution_mode = "cache"
nb_execution_cache_path = "cache"
"""

PAGE = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---
# A page

```{code-cell} python
from myst_nb import glue
glue("answer", 6 * 7, display=False)
glue("third", 1 / 3, display=False)
print("a cell with an output of its own")
```

The answer is {glue:text}`answer`, a third is {glue:text}`third:.2f`.
"""


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory) -> tuple[Path, str]:
    """The one-page book built once, its page executed by myst-nb (the cache is empty): the HTML
    folder and the build's log."""
    folder = tmp_path_factory.mktemp("glue_book")
    (folder / "conf.py").write_text(CONF)
    (folder / "page.md").write_text(PAGE)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", ".", "_build/html"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    return folder / "_build" / "html", log


def test_a_page_executed_afresh_has_its_glued_values_in_its_download(fresh_build):
    html, log = fresh_build
    assert "Executing notebook" in log, "the page was not executed while read"
    nb = nbformat.read(html / "_sources" / "page.ipynb", as_version=4)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "The answer is 42, a third is 0.33." in prose, prose
    assert "answer" not in prose.replace("The answer is", "") and "third:" not in prose, prose
