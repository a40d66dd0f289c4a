"""A page that pastes another page's glued values is read again whenever that page is.

myst-nb lets a page show values that another notebook glued (``{glue:text}`08_flash.ipynb::key```,
or the ``glue`` directive with ``:doc:``); it pastes them from that notebook's ``.glue.json``
when the page is written. Sphinx does not know that the page depends on the notebook, so after the
notebook is executed again (its code or its data changed) the page would keep the old values.
This extension records, for each page, the documents whose values it pastes, and reads the page
again in every build that reads one of them (``env-get-outdated``). The data appendix of chapter 8
(``book/flash_gpu_data.md``) is such a page.
"""

from __future__ import annotations

from myst_nb.ext.glue.utils import PendingGlueReference


def record_sources(app, doctree):
    """Remember the documents whose glued values this page pastes."""
    sources = {node["refdoc"] for node in doctree.findall(PendingGlueReference)}
    store = app.env.__dict__.setdefault("attnmath_pasted_from", {})
    store.pop(app.env.docname, None)
    if sources:
        store[app.env.docname] = sources


def pages_to_reread(app, env, added, changed, removed):
    """The pages that paste from a document this build reads."""
    read = set(added) | set(changed)
    store = getattr(env, "attnmath_pasted_from", {})
    return sorted(page for page, sources in store.items() if sources & read and page not in read)


def purge(app, env, docname):
    getattr(env, "attnmath_pasted_from", {}).pop(docname, None)


def merge(app, env, docnames, other):
    store = env.__dict__.setdefault("attnmath_pasted_from", {})
    for page, sources in getattr(other, "attnmath_pasted_from", {}).items():
        if page in docnames:
            store[page] = sources


def setup(app):
    app.connect("doctree-read", record_sources)
    app.connect("env-get-outdated", pages_to_reread)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
