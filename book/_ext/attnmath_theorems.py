r"""The book's theorems: one list, and one status per theorem.

``{attnmath-theorems}`` is a table of the book's theorems, propositions, lemmas and corollaries
in reading order, each with its number (as in the text, e.g. "Theorem 2.1"), its title, its
status and a link to it. The entries come from sphinx-proof's record of its directives
(``env.proof_list``) once every page is read, so the list follows the chapters by itself.

**One status per theorem.** A theorem is stated once, in its chapter, and proved below it. Where
the proof covers less than the statement, the theorem says so in its body, once::

    :::{theorem-status} thm-multihead-rank
    :proved: the inequality, for every input
    :tested: equality for generic inputs, on every random input with $L, S \le 12$
    :::

(``:proved:``, ``:tested:`` and ``:cited:`` are each optional; ``:tested:`` names the inputs the
tests span). Every other mention refers to the theorem by label with ``{thm}`label```, which
shows its number and that status, read from that one place: "Theorem 10.6 (proved: the
inequality, for every input; tested, not proved: ...)". A theorem without the directive is proved
for everything it states, and ``{thm}`` shows its number alone. :func:`status_problems` finds a
theorem with a partial status that is mentioned by a plain ``{prf:ref}`` outside its own
statement and proofs, a status directive outside its theorem, and a theorem with no proof below
it; the build warns about each (an error under ``-W``), as ``tests/book/test_theorems.py`` does
without a build.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

logger = logging.getLogger(__name__)

KINDS = ("theorem", "proposition", "lemma", "corollary")
#: The parts of a status, in the order they are shown, with the words that show them.
STATUS_PARTS = {"proved": "proved", "tested": "tested, not proved", "cited": "proved in"}


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
    group = nodes.tgroup(cols=3)
    table += group
    group += nodes.colspec(colwidth=1)
    group += nodes.colspec(colwidth=3)
    group += nodes.colspec(colwidth=3)
    statuses = getattr(env, "attnmath_theorem_status", {})
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
        third = nodes.entry()
        status = statuses.get(entry["label"])
        third += _title_paragraph(status_words(status) if status else "proved")
        row += first
        row += second
        row += third
        body += row
    for placeholder in lists:
        placeholder.replace_self(table if entries else nodes.paragraph("", "No theorems."))


def _title_paragraph(title: str) -> nodes.paragraph:
    """A theorem's title as written in the text, without its parentheses; ``$...$`` as maths."""
    title = title.strip()
    if title.startswith("(") and title.endswith(")"):
        title = title[1:-1]
    para = nodes.paragraph()
    para += _with_math(title)
    return para


def _with_math(text: str) -> list[nodes.Node]:
    """Text nodes, and a formula node for each ``$...$``."""
    return [nodes.math(part, part) if i % 2 else nodes.Text(part)
            for i, part in enumerate(re.split(r"\$([^$]+)\$", text)) if part]


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


# One status per theorem: {theorem-status} in the theorem, {thm} everywhere else.

class TheoremStatus(SphinxDirective):
    """``{theorem-status} <label>``: what of the theorem is proved and what only tested."""

    required_arguments = 1
    option_spec = {part: directives.unchanged_required for part in STATUS_PARTS}

    def run(self):
        label = self.arguments[0]
        status = {part: " ".join(self.options[part].split()) for part in STATUS_PARTS if part in self.options}
        if not status:
            raise self.error(f"theorem-status {label}: give :proved:, :tested: or :cited:")
        if not hasattr(self.env, "attnmath_theorem_status"):
            self.env.attnmath_theorem_status = {}
        self.env.attnmath_theorem_status[label] = {"docname": self.env.docname, **status}
        text = " ".join(f"*{STATUS_PARTS[part].capitalize()}:* {value.rstrip('.')}." for part, value in status.items())
        container = nodes.container()
        self.state.nested_parse(StringList([text], source=self.env.docname), self.content_offset, container)
        for paragraph in container.findall(nodes.paragraph):
            paragraph["classes"].append("theorem-status")
        return container.children


class theorem_status_ref(nodes.Inline, nodes.TextElement):
    """Placeholder after a ``{thm}`` reference: the theorem's status, filled in when resolved."""


def thm_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{thm}`label```: the theorem's number (sphinx-proof's ``{prf:ref}``) and its status."""
    env = inliner.document.settings.env
    refs, messages = env.get_domain("prf").role("ref")("prf:ref", rawtext, text, lineno, inliner,
                                                       options or {}, content or [])
    target = re.search(r"<([^<>]+)>\s*$", text)
    label = (target.group(1) if target else text).strip()
    # An empty formula tells Sphinx now that the page has mathematics (the status may have some).
    return [*refs, theorem_status_ref("", nodes.math("", ""), label=label)], messages


def status_words(status: dict) -> str:
    """A status as the ``{thm}`` role shows it: "proved: ...; tested, not proved: ..."."""
    return "; ".join(f"{STATUS_PARTS[part]}: {status[part].rstrip('.')}" for part in STATUS_PARTS if part in status)


def fill_status_refs(app, doctree, fromdocname):
    statuses = getattr(app.env, "attnmath_theorem_status", {})
    for node in list(doctree.findall(theorem_status_ref)):
        status = statuses.get(node["label"])
        if not status:
            node.parent.remove(node)
            continue
        node.replace_self(_with_math(f" ({status_words(status)})"))


def purge_status(app, env, docname):
    statuses = getattr(env, "attnmath_theorem_status", {})
    for label in [k for k, v in statuses.items() if v["docname"] == docname]:
        del statuses[label]


def merge_status(app, env, docnames, other):
    if not hasattr(env, "attnmath_theorem_status"):
        env.attnmath_theorem_status = {}
    env.attnmath_theorem_status.update({k: v for k, v in getattr(other, "attnmath_theorem_status", {}).items()
                                        if v["docname"] in docnames})


def status_problems(sources: dict[str, str]) -> list[str]:
    """What breaks "one status per theorem" in the pages ``{path: MyST source}``: a status outside
    its theorem, a theorem with no proof below it, and a plain ``{prf:ref}`` to a theorem with a
    status outside that theorem's statement and proof (``{thm}`` shows the status)."""
    from attnmath_numbers import SENTENCE, prose_blocks

    theorem_kinds = tuple(f"prf:{kind}" for kind in KINDS)
    problems, partial, refs = [], set(), []
    for path, source in sources.items():
        order, previous = [], None
        for number, text, kind, blocks in prose_blocks(source):
            if not text.strip():
                continue
            outer = (blocks[0].name, blocks[0].label) if blocks else None
            if outer != previous:
                order.append((number, outer))
                previous = outer
            names = [b.name for b in blocks]
            if "theorem-status" in names:
                status = next(b for b in blocks if b.name == "theorem-status")
                if not any(b.name in theorem_kinds and b.label == status.label for b in blocks):
                    problems.append(f"{path}:{number}: the status of {status.label} stands outside that theorem")
                partial.add(status.label)
            inside = any(n in theorem_kinds or n == "prf:proof" for n in names)
            for sentence in SENTENCE.finditer(text):
                for label in re.findall(r"\{prf:ref\}`(?:[^`<]*<)?([\w-]+)>?`", sentence.group(0)):
                    refs.append((path, number, label, inside))
        for i, (number, outer) in enumerate(order):
            if outer and outer[0] in theorem_kinds:
                following = order[i + 1][1] if i + 1 < len(order) else None
                if not following or following[0] != "prf:proof":
                    problems.append(f"{path}:{number}: {outer[1]} has no proof below it")
    problems += [f"{path}:{number}: {label} is only partly proved: refer to it as {{thm}}`{label}`, "
                 f"which shows its status" for path, number, label, inside in refs
                 if label in partial and not inside]
    return problems


def check_statuses(app, env, docnames):
    """Sphinx ``env-before-read-docs``: warn about each problem :func:`status_problems` finds in
    the chapters."""
    from attnmath_numbers import CHAPTER, ROOT

    sources = {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "book").glob("*.md"))
               if CHAPTER.match(p.relative_to(ROOT).as_posix()) or p.name in ("glossary.md", "theorems.md")}
    for problem in status_problems(sources):
        logger.warning(problem, type="attnmath", subtype="theorems")


def setup(app):
    app.add_node(theorem_list)
    app.add_node(theorem_status_ref)
    app.add_directive("attnmath-theorems", TheoremList)
    app.add_directive("theorem-status", TheoremStatus)
    app.add_role("thm", thm_role)
    app.connect("doctree-resolved", fill_theorem_lists)
    app.connect("doctree-resolved", fill_status_refs)
    app.connect("env-purge-doc", purge_status)
    app.connect("env-merge-info", merge_status)
    app.connect("env-before-read-docs", check_statuses)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
