"""Figure, table and equation numbers without reading every page back after an edit.

With ``numfig``, Sphinx numbers the figures, tables, code listings and equations of the whole
book after every read (``TocTreeCollector.assign_figure_numbers``): it loads every page's doctree
from disk and walks it, also when one chapter changed. This book's API pages are 3 MB doctrees
each, so a rebuild after a one-line edit spent 12-27 s (on a loaded machine) unpickling 75 MB of
pages that had not changed.

This extension keeps, for each page, what that walk looks at: the sequence of its sections (by
anchor), its toctrees (their documents) and its numbered elements (type and id), in document
order. The sequence is taken from the doctree as Sphinx stores it (``write_doctree``), kept in
Sphinx's environment and dropped with the page (``env-purge-doc``). Numbering then walks these
sequences instead of the doctrees, with Sphinx's own rules: the same numbers, in the same order,
and the same list of pages whose numbers changed (they are written again). A page without a
sequence (an environment from before this extension) is read from disk as before.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.environment.collectors.toctree import TocTreeCollector
from sphinx.util import url_re

#: What Sphinx's numbering would do without this extension, for the tests that compare both.
SPHINX_ASSIGN_FIGURE_NUMBERS = TocTreeCollector.assign_figure_numbers


def figure_type(env, node: nodes.Element) -> str | None:
    """The numbered type of ``node`` ("figure", "table", "code-block", "displaymath" ...), by
    the rule of Sphinx's numbering: the first domain that knows it; a standard element only with
    a caption."""
    for domain in env.domains.values():
        figtype = domain.get_enumerable_node_type(node)
        if domain.name == "std" and not domain.get_numfig_title(node):
            continue
        if figtype:
            return figtype
    return None


def enumerables(env, doctree: nodes.Element) -> list[tuple]:
    """What numbering walks in ``doctree``, in order: ``("section", anchor)`` ... ``("end",)``,
    ``("toctree", documents)`` and ``("figure", type, id)``."""
    events: list[tuple] = []

    def walk(node: nodes.Element) -> None:
        for sub in node.children:
            if isinstance(sub, nodes.section):
                events.append(("section", sub["ids"][0]))
                walk(sub)
                events.append(("end",))
            elif isinstance(sub, addnodes.toctree):
                events.append(("toctree", tuple(doc for _title, doc in sub["entries"])))
            elif isinstance(sub, nodes.Element):
                figtype = figure_type(env, sub)
                if figtype and sub["ids"]:
                    events.append(("figure", figtype, sub["ids"][0]))
                walk(sub)

    walk(doctree)
    return events


def _store(env) -> dict[str, list[tuple]]:
    if not hasattr(env, "attnmath_enumerables"):
        env.attnmath_enumerables = {}
    return env.attnmath_enumerables


def _events_of(env, docname: str) -> list[tuple]:
    store = _store(env)
    if docname not in store:  # not recorded when it was read: from its stored doctree
        store[docname] = enumerables(env, env.get_doctree(docname))
    return store[docname]


def assign_figure_numbers(self, env) -> list[str]:
    """Sphinx's ``assign_figure_numbers`` on the recorded sequences: the numbers of every page
    (``env.toc_fignumbers``); returns the pages whose numbers changed."""
    generated = frozenset(env.domains["std"]._virtual_doc_names)
    depth = env.config.numfig_secnum_depth
    old, env.toc_fignumbers = env.toc_fignumbers, {}
    counters: dict[str, dict[tuple[int, ...], int]] = {}
    assigned: set[str] = set()

    def walk_doc(docname: str, secnum: tuple[int, ...]) -> None:
        if docname in assigned:
            return
        assigned.add(docname)
        secnumbers = env.toc_secnumbers.get(docname, {})
        stack = [secnum]
        for event in _events_of(env, docname):
            if event[0] == "section":
                anchor = "#" + event[1]
                own = secnumbers.get(anchor) if anchor in secnumbers else secnumbers.get("")
                stack.append(own or stack[-1])
            elif event[0] == "end":
                stack.pop()
            elif event[0] == "toctree":
                for sub in event[1]:
                    if not (url_re.match(sub) or sub == "self" or sub in generated):
                        walk_doc(sub, stack[-1])
            else:
                _, figtype, figure_id = event
                key = stack[-1][:depth]
                counter = counters.setdefault(figtype, {})
                counter[key] = counter.get(key, 0) + 1
                numbers = env.toc_fignumbers.setdefault(docname, {}).setdefault(figtype, {})
                numbers[figure_id] = (*key, counter[key])

    if not env.config.numfig:
        return []
    walk_doc(env.config.root_doc, ())
    return [docname for docname, numbers in env.toc_fignumbers.items() if numbers != old.get(docname)]


def record_on_write(app) -> None:
    """Keep each page's sequence from the doctree that Sphinx stores for it."""
    builder = app.builder
    write_doctree = builder.write_doctree

    def write_and_record(docname, doctree, *args, **kwargs):
        _store(builder.env)[docname] = enumerables(builder.env, doctree)
        return write_doctree(docname, doctree, *args, **kwargs)

    builder.write_doctree = write_and_record


def purge(app, env, docname) -> None:
    _store(env).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    _store(env).update({d: e for d, e in _store(other).items() if d in docnames})


def setup(app):
    TocTreeCollector.assign_figure_numbers = assign_figure_numbers
    app.connect("builder-inited", record_on_write)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
