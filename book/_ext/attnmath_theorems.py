"""The ``attnmath-theorems`` directive: a table of the book's theorems, propositions, lemmas and
corollaries in reading order, each with its number (as in the text, e.g. "Theorem 2.1"), its
title and a link to it. The entries come from sphinx-proof's record of its directives
(``env.proof_list``) once every page is read, so the list follows the chapters by itself.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

KINDS = ("theorem", "proposition", "lemma", "corollary")


class theorem_list(nodes.General, nodes.Element):
    """Placeholder, filled in when the page is resolved."""


class TheoremList(SphinxDirective):
    has_content = False

    def run(self):
        # The titles' formulas are added when the page is resolved; an empty formula in the
        # placeholder tells Sphinx now that the page has mathematics, so that it loads MathJax.
        return [theorem_list("", nodes.math("", ""))]


def _titles(env, docname):
    """Label -> title of the proof directives of one page."""
    titles = {}
    for node in env.get_doctree(docname).findall(nodes.Element):
        label = node.get("label") if "realtype" in node.attributes else None
        if label:
            titles[label] = node.get("title") or ""
    return titles


def fill_theorem_lists(app, doctree, fromdocname):
    lists = list(doctree.findall(theorem_list))
    if not lists:
        return
    env = app.env
    order = {doc: i for i, doc in enumerate(_reading_order(env))}
    entries = [e for e in getattr(env, "proof_list", {}).values()
               if e["realtype"] in KINDS and not e["nonumber"]]
    entries.sort(key=lambda e: (order.get(e["docname"], len(order)),
                                env.toc_fignumbers.get(e["docname"], {}).get(e["countertype"], {})
                                .get(e["label"], ())))
    table = nodes.table(classes=["theorem-list"])
    group = nodes.tgroup(cols=2)
    table += group
    group += nodes.colspec(colwidth=1)
    group += nodes.colspec(colwidth=4)
    body = nodes.tbody()
    group += body
    titles = {}
    for entry in entries:
        doc = entry["docname"]
        if doc not in titles:
            titles[doc] = _titles(env, doc)
        number = ".".join(map(str, env.toc_fignumbers.get(doc, {}).get(entry["countertype"], {})
                              .get(entry["label"], ())))
        name = f"{entry['realtype'].title()} {number}".strip()
        ref = make_refnode(app.builder, fromdocname, doc, entry["label"], nodes.Text(name))
        row = nodes.row()
        first = nodes.entry()
        first += nodes.paragraph("", "", ref)
        second = nodes.entry()
        second += _title_paragraph(titles[doc].get(entry["label"], ""))
        row += first
        row += second
        body += row
    for placeholder in lists:
        placeholder.replace_self(table if entries else nodes.paragraph("", "No theorems."))


def _title_paragraph(title: str) -> nodes.paragraph:
    """A theorem's title as written in the text, without its parentheses; ``$...$`` as maths."""
    title = title.strip()
    if title.startswith("(") and title.endswith(")"):
        title = title[1:-1]
    para = nodes.paragraph()
    for i, part in enumerate(re.split(r"\$([^$]+)\$", title)):
        if part:
            para += nodes.math(part, part) if i % 2 else nodes.Text(part)
    return para


def _reading_order(env):
    """Documents in the order of the table of contents (the master toctree, depth first)."""
    order, seen = [], set()

    def walk(doc):
        if doc in seen:
            return
        seen.add(doc)
        order.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)

    walk(env.config.root_doc)
    return order


def setup(app):
    app.add_node(theorem_list)
    app.add_directive("attnmath-theorems", TheoremList)
    app.connect("doctree-resolved", fill_theorem_lists)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
