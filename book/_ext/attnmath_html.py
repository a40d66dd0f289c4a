"""Small fixes to the HTML pages of the book, so that they load without errors in a browser.

Jupyter Book 1.x with Sphinx 7.4 writes the inline configuration scripts of ``sphinx_thebe``
(``const THEBE_JS_URL = ...``) and of ``sphinx_togglebutton`` twice into every page; the second
copy redeclares a ``const`` and the browser reports a ``SyntaxError``. This extension drops
repeated scripts from each page's list, keeping the first of each.

The download menu offers each chapter as an ``.ipynb`` notebook, copied by sphinx-book-theme
from ``_build/jupyter_execute/``. With ``execute_notebooks: cache``, myst-nb 1.4 writes that
notebook without the outputs it took from the execution cache; this extension merges them in
first, so that the downloaded notebook shows the same results as the page.
"""

from __future__ import annotations

from pathlib import Path


def _script_key(script):
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def drop_repeated_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def add_cached_outputs(app, pagename, templatename, context, doctree):
    config = getattr(app.env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or not config.execution_cache_path:
        return
    path = Path(config.output_folder) / f"{pagename}.ipynb"
    if not path.exists():
        return
    import nbformat
    from jupyter_cache import get_cache

    nb = nbformat.read(path, as_version=4)
    if any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"):
        return
    try:
        _, merged = get_cache(config.execution_cache_path).merge_match_into_notebook(nb)
    except KeyError:  # not in the cache: the page was built without executing it
        return
    nbformat.write(merged, path)


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    # before sphinx-book-theme copies the notebook for download (priority 501)
    app.connect("html-page-context", add_cached_outputs, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
