"""Pages that paste what a chapter's notebook glued: its tables as the book's own tables, and the
page read again whenever the notebook is.

myst-nb lets a page show values that another notebook glued (``{glue:text}`08_flash.ipynb::key```,
or the ``glue`` directive with ``:doc:``); it pastes them from that notebook's ``.glue.json``
when the page is written. Two things are missing for a page of records that a chapter computes
(chapter 8's data appendix, ``book/flash_gpu_data.md``):

- **Tables.** Across pages myst-nb pastes only plain text, HTML and images. A table glued as
  Markdown (``glue(key, Markdown(...))``) would come as a raw HTML string that the theme does not
  wrap in its box that scrolls a wide table by itself, and that the print styles do not know.
  :class:`PasteMarkdown` parses such a value (GitHub-flavoured Markdown, as the chapter's own
  outputs are rendered with ``markdown_format: gfm``) into docutils nodes before myst-nb's own
  replacement runs, so that the pasted table is a table of the book like any other. Its class,
  ``pasted-table``, gives it fixed columns on paper: paged.js does not carry a table's column
  widths (book/_ext/print_book.js sets them as a ``colgroup``) to the part of it that a page
  break moves to the next page, so the widths come from the styles instead.
- **Staleness.** Sphinx does not know that the page depends on the notebook: after the notebook
  is executed again (its code or its data changed) the page would keep the old values. The
  page's sources are recorded when it is read, and every build that reads one of them reads the
  page again (``env-get-outdated``).
"""

from __future__ import annotations

from docutils import nodes
from docutils.core import publish_doctree
from myst_nb.ext.glue.crossref import read_glue_cache
from myst_nb.ext.glue.utils import PendingGlueReference
from myst_parser.parsers.docutils_ import Parser
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)
MARKDOWN = "text/markdown"


#: The class of a pasted table, which the print styles lay out (book/_static/attnmath.css).
TABLE_CLASS = "pasted-table"


def markdown_nodes(text: str) -> list[nodes.Node]:
    """The block nodes of ``text`` read as GitHub-flavoured Markdown (paragraphs, pipe tables),
    each table of class TABLE_CLASS."""
    tree = publish_doctree(text, parser=Parser(), settings_overrides={
        "myst_gfm_only": True, "report_level": 2, "halt_level": 5, "warning_stream": False})
    problems = [n.astext() for n in tree.findall(nodes.system_message)]
    if problems:
        raise ValueError("; ".join(problems))
    for table in tree.findall(nodes.table):
        table["classes"].append(TABLE_CLASS)
    return list(tree.children)


class PasteMarkdown(SphinxPostTransform):
    """A block ``glue`` of another notebook whose value is Markdown, as the nodes it reads as
    (before myst-nb's ReplacePendingGlueReferences, priority 5, pastes what remains)."""

    default_priority = 4

    def run(self, **kwargs):
        folder = self.env.mystnb_config.output_folder
        for node in list(self.document.findall(PendingGlueReference)):
            if node.inline or node.gtype == "text":
                continue
            output = read_glue_cache(folder, node.refdoc).get(node.key, {})
            text = output.get("data", {}).get(MARKDOWN)
            if text is None:
                continue
            try:
                node.replace_self(markdown_nodes(text))
            except ValueError as exc:
                logger.warning(f"glue {node.key!r} of {node.refdoc!r} does not read as Markdown: {exc}",
                               type="attnmath", subtype="pasted", location=node)


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
    app.add_post_transform(PasteMarkdown)
    app.connect("doctree-read", record_sources)
    app.connect("env-get-outdated", pages_to_reread)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
