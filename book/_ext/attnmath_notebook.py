"""The chapter notebook a reader downloads: the page as JupyterLab shows it, and code that runs on
its own.

A chapter's source is MyST Markdown: its Markdown cells hold Sphinx directives (``literalinclude``,
``prf:theorem``, ``exercise``, admonitions), roles (``{cite:p}``, ``{eq}``, ``{glue:text}``) and the
book's TeX macros, none of which JupyterLab knows. :func:`standalone_notebook` rewrites those
cells as plain Markdown that reads as the page does:

- the values the chapter's code glues into its text are written in, formatted as on the page
  (read from myst-nb's glue file of the page, :func:`page_glue`, or the executed notebook's outputs);
- theorems, exercises, figures and equations carry the numbers of the page ("Theorem 3.1",
  "Exercise 1.1", "Fig. 3.2", "Eq. 3.4"), and references to them read the same; a figure's
  caption follows its cell;
- includes are expanded into code blocks (laid out as on the page), admonitions become quotes,
  citations read "Vaswani et al. (2017)", and the macros are defined in a first cell.

What the book's build gives its chapters travels in one folded cell: the figure style
(``book/figstyle.py``) and a stand-in for myst-nb's ``glue``, so the notebook needs no file of the
book. The data files a chapter reads (``book/data``, ``bench/results``) travel as files: the
chapter's ``.zip`` download holds the notebook and its files laid out as the repository, and a
short first code cell finds them there, fetches them from the public repository when the book
names one, or says where to get them.
"""

from __future__ import annotations

import ast
import io
import posixpath
import re
import zipfile
from pathlib import Path

from attnmath_listing import listing

MARK = "attnmath_standalone"  # notebook metadata key: this notebook was already converted

_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
_TARGET = re.compile(r"^\((?P<label>[\w:.-]+)\)=\s*$")
_LABELLED = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$")

_PROOF_KINDS = {"algorithm", "assumption", "axiom", "conjecture", "corollary", "criterion",
                "definition", "example", "lemma", "observation", "property", "proposition",
                "remark", "theorem"}
#: Directives that only the page shows: the interactive figures (their static figure is in the
#: notebook), lists the build fills in.
_PAGE_ONLY = {"interactive", "bibliography", "nb-exec-table", "tableofcontents"}


class Resolver:
    """Numbers, titles and glued values of the book's labels, read from the Sphinx environment
    ``env`` (of the page ``docname``) and the executed notebook's ``glue`` values if given."""

    def __init__(self, env=None, bibliography: Path | None = None, glue: dict | None = None,
                 docname: str | None = None):
        self.env = env
        self.bibliography = bibliography  # a BibTeX file: citations as "Bridle (1990)"
        self.glue = dict(glue or {})  # glue key -> its text/plain output
        self.docname = docname
        self._labels: dict[str, str] | None = None

    def citation(self, key: str) -> tuple[str, str]:
        """``(names, year)`` of a BibTeX key, as the book's bibliography labels it; the key itself
        when there is no bibliography or the key is not in it."""
        if self._labels is None:
            self._labels = {}
            if self.bibliography is not None and Path(self.bibliography).is_file():
                from attnmath_bib import author_year
                from pybtex.database import parse_file

                for name, entry in parse_file(str(self.bibliography)).entries.items():
                    self._labels[name] = author_year(entry)
        names, _, year = self._labels.get(key, key).rpartition(", ")
        return (names, year) if names else (key, "")

    def equation(self, label: str) -> str:
        """An equation's number, "3.4"; the label when it is not known."""
        env = self.env
        try:
            docname, _ = env.get_domain("math").equations[label]
            numbers = env.toc_fignumbers[docname]["displaymath"][f"equation-{label}"]
            return ".".join(map(str, numbers))
        except (AttributeError, KeyError, TypeError):
            return label

    def equation_reference(self, label: str) -> str:
        """A reference to an equation as the page writes it (``math_eqref_format``: "Eq. 3.4")."""
        number = self.equation(label)
        form = getattr(getattr(self.env, "config", None), "math_eqref_format", None) or "({number})"
        return form.format(number=number)

    def number(self, label: str) -> tuple[str, str] | None:
        """``("Theorem %s", "3.1")`` for a theorem (any sphinx-proof kind), an exercise or a
        figure of the book; None when the label is not one of them or has no number."""
        env = self.env
        if env is None or not label:
            return None
        proof = (getattr(env, "proof_list", None) or {}).get(label)
        exercise = (getattr(env, "sphinx_exercise_registry", None) or {}).get(label)
        if proof:
            form, doc, counter = proof["realtype"].title() + " %s", proof["docname"], proof["countertype"]
        elif exercise:
            form, doc, counter = "Exercise %s", exercise["docname"], "exercise"
        else:
            try:
                doc, label, _ = env.get_domain("std").labels[label]
            except (AttributeError, KeyError):
                return None
            form, counter = (env.config.numfig_format or {}).get("figure", "Fig. %s"), "figure"
        numbers = getattr(env, "toc_fignumbers", {}).get(doc, {}).get(counter, {}).get(label)
        return (form, ".".join(map(str, numbers))) if numbers else None

    def numbered(self, label: str) -> str | None:
        """"Theorem 3.1", "Exercise 1.1", "Fig. 3.2"; None when the label has no number."""
        found = self.number(label)
        return found[0] % found[1] if found else None

    def title(self, label: str) -> str:
        """A section's title (a figure's caption); else its number; else the label itself."""
        try:
            return self.env.get_domain("std").labels[label][2] or label
        except (AttributeError, KeyError):
            return self.numbered(label) or label

    def document_title(self, target: str) -> str:
        """The title of the page ``target`` (a path relative to this page, as ``{doc}`` takes)."""
        here = posixpath.dirname(self.docname or "")
        docname = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(here, target))
        try:
            return self.env.titles[docname].astext()
        except (AttributeError, KeyError):
            return target

    def glued(self, body: str) -> str | None:
        """A ``{glue:text}`key:format``` value as the page shows it; None when not glued."""
        key, _, spec = body.partition(":")
        if key not in self.glue:
            return None
        from myst_nb.core.variables import format_plain_text

        return format_plain_text(self.glue[key], spec)


def glue_values(nb) -> dict[str, str]:
    """The ``text/plain`` of every value the executed notebook ``nb`` glued, by its key."""
    values = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = (output.get("metadata") or {}).get("scrapbook")
            text = (output.get("data") or {}).get(f"{(record or {}).get('mime_prefix', '')}text/plain")
            if record and text is not None:
                values[record["name"]] = text
    return values


def page_glue(folder, docname: str) -> dict[str, str]:
    """The ``text/plain`` of every value the page ``docname`` glued, by its key, from the file
    myst-nb writes into its output ``folder`` each time it reads the page
    (``<docname>.glue.json``), whether it executed the page or took its outputs from the cache.
    The executed notebook myst-nb writes beside it holds them only in the second case: a page
    executed afresh is written with its glue outputs taken out (:func:`glue_values` finds none)."""
    from myst_nb.ext.glue.crossref import read_glue_cache

    saved = read_glue_cache(str(folder), docname)
    return {key: output["data"]["text/plain"] for key, output in saved.items()
            if "text/plain" in (output.get("data") or {})}


def _reference(role: str, text: str | None, target: str, resolver: Resolver) -> str:
    """A cross-reference as the page shows it: numbered blocks by their number."""
    found = resolver.number(target) if role in ("numref", "prf:ref", "thm", "ref") else None
    if role == "numref" and found and text:
        return text.replace("%s", found[1]).replace("{number}", found[1])
    if text:
        return text
    if role == "doc":
        return resolver.document_title(target)
    if found and role != "ref":
        return found[0] % found[1]
    return resolver.title(target)


def _role(match, resolver: Resolver) -> str:
    role, body = match.group("role"), match.group("body")
    labelled = _LABELLED.match(body)
    text, target = (labelled.group("text"), labelled.group("target")) if labelled else (None, body)
    if role == "math":
        return f"${body}$"
    if role in ("glue", "glue:", "glue:text"):
        value = resolver.glued(body)
        return body if value is None else value  # left as it was: the download test names it
    if role == "eq":
        return resolver.equation_reference(target)
    if role.startswith("cite"):
        cited = [resolver.citation(k.strip()) for k in body.split(",") if k.strip()]
        if role == "cite:t":
            return "; ".join(f"{names} ({year})" if year else names for names, year in cited)
        return "(" + "; ".join(f"{names}, {year}" if year else names for names, year in cited) + ")"
    if role in ("ref", "numref", "prf:ref", "thm", "doc"):
        return _reference(role, text, target, resolver)
    if role == "download":
        return text or posixpath.basename(target)
    if text is not None:
        return text
    return f"`{body}`" if role in ("py:obj", "py:func", "py:class", "mod") else body


def _parse_block(lines: list[str], start: int):
    """The directive that starts at ``lines[start]``: name, argument, options, body, end."""
    match = _FENCE.match(lines[start])
    fence = match.group("fence")
    end = start + 1
    while end < len(lines) and lines[end].strip() != fence:
        end += 1
    body = lines[start + 1:end]
    options = {}
    while body and _OPTION.match(body[0]):
        option = _OPTION.match(body[0])
        options[option.group("key")] = option.group("value")
        body = body[1:]
    return match.group("name"), match.group("arg").strip(), options, body, end + 1


def _listing(path: Path, options: dict) -> str:
    """An included file or object as the page shows it (``attnmath_listing.listing``)."""
    return listing(path.read_text(), options.get("pyobject")).code


def _with_end_mark(lines: list[str]) -> list[str]:
    """A proof's lines with the end-of-proof mark after its last sentence (on a line of its own
    after a display, a list or a code block)."""
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    last = lines[-1].strip() if lines else ""
    if last and not last.startswith(("$$", "```", ">", "|", "-", "*", "<")) and not last.endswith("$$"):
        lines[-1] += r" $\square$"
        return lines
    return [*lines, "", r"$\square$"]


def _theorem_status(options: dict) -> list[str]:
    from attnmath_theorems import STATUS_PARTS

    return [" ".join(f"*{STATUS_PARTS[part].capitalize()}:* {value.rstrip('.')}."
                     for part, value in options.items() if part in STATUS_PARTS)]


def _directive(name: str, arg: str, options: dict, body: list[str], folder: Path,
               resolver: Resolver) -> list[str]:
    """The Markdown lines of one directive (its body converted already, except code)."""
    kind = name.split(":")[-1]
    inner = _convert_lines(body, folder, resolver)
    if name == "literalinclude":
        return ["```python", *_listing((folder / arg).resolve(), options).rstrip("\n").split("\n"), "```"]
    if name == "math":
        label = options.get("label")
        return ["$$", *body, *([rf"\tag{{{resolver.equation(label)}}}"] if label else []), "$$"]
    if name in ("code-block", "code", "code-cell"):
        return [f"```{arg or 'python'}", *body, "```"]
    if name.startswith("prf:") and kind == "proof":
        return ["*Proof.*", "", *_with_end_mark(inner)]
    if name.startswith("prf:") and kind in _PROOF_KINDS or name == "exercise":
        heading = resolver.numbered(options.get("label", "")) or kind.capitalize()
        return [f"**{heading}{f' ({arg})' if arg else ''}.**", "", *inner]
    if name == "solution":
        of = resolver.numbered(arg)
        return [f"<details><summary>Solution{f' to {of}' if of else ''}</summary>", "", *inner, "", "</details>"]
    if name == "theorem-status":
        return _theorem_status(options)
    if name in _PAGE_ONLY:
        return []
    title = arg or kind.capitalize()  # admonition, note, tip, ...: a quotation, its title in bold
    return [f"> **{title}**", ">", *[f"> {x}" if x else ">" for x in inner]]


def _convert_lines(lines: list[str], folder: Path, resolver: Resolver) -> list[str]:
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if _TARGET.match(line):
            i += 1
            continue
        if not _FENCE.match(line):
            out.append(line)
            i += 1
            continue
        name, arg, options, body, i = _parse_block(lines, i)
        block = _directive(name, arg, options, body, folder, resolver)
        if block:
            out += [*block, ""]
    return [_ROLE.sub(lambda m: _role(m, resolver), line) for line in out]


def markdown_cell(source: str, folder: Path, resolver: Resolver | None = None) -> str:
    """A MyST Markdown cell's ``source`` as plain (JupyterLab) Markdown."""
    lines = _convert_lines(source.split("\n"), folder, resolver or Resolver())
    text = "\n".join(lines)
    text = re.sub(r"^(\$\$)\s*\([\w:.-]+\)\s*$", r"\1", text, flags=re.M)  # $$ (label)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def figure_caption(cell, folder: Path, resolver: Resolver) -> str | None:
    """The caption of a code cell's figure (myst-nb's ``figure`` metadata) as the page shows it
    under the figure, "**Fig. 3.2.** ..."; None for a cell without one."""
    figure = (cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}
    caption = str(figure.get("caption") or "").strip()
    if not caption:
        return None
    text = markdown_cell(caption, folder, resolver)
    name = resolver.numbered(str(figure.get("name") or ""))
    return f"**{name}.** {text}" if name else f"*{text}*"


def macro_definitions(macros: dict) -> str:
    """MathJax macros (``{"R": "\\mathbb{R}"}``, or ``[body, nargs]``) as ``\\newcommand``s."""
    defs = []
    for name, body in sorted(macros.items()):
        if isinstance(body, (list, tuple)):
            defs.append(rf"\newcommand{{\{name}}}[{body[1]}]{{{body[0]}}}")
        else:
            defs.append(rf"\newcommand{{\{name}}}{{{body}}}")
    return "".join(defs)


DATA_FOLDERS = ("book/data", "bench/results")  # the repository's folders of files chapters read


def data_files(code: str, root: Path) -> dict[str, bytes]:
    """The files of the repository ``root``'s data folders that ``code`` names (as a string
    ``"memory.json"``), by their path in the repository."""
    found = {}
    for folder in DATA_FOLDERS:
        for path in sorted((root / folder).glob("*")):
            if path.is_file() and re.search(rf"[\"']{re.escape(path.name)}[\"']", code):
                found[f"{folder}/{path.name}"] = path.read_bytes()
    return found


_DATA_CELL = '''\
# The data files this chapter reads, laid out as in the course's repository.
# They come beside this notebook in the chapter's .zip download; where they
# are not found, they are fetched from the repository when the book names one.
# The chapter's code then runs from its folder, {chapter}/.
import os
import urllib.request
from pathlib import Path

DATA_FILES = {files!r}
DATA_SOURCE = {source!r}  # the repository's raw files
_here = Path.cwd().resolve()
_root = next((p for p in (_here, *_here.parents)
              if all((p / f).is_file() for f in DATA_FILES)), None)
if _root is None and DATA_SOURCE:
    _root = _here / "attnmath-data"
    for _name in DATA_FILES:
        (_root / _name).parent.mkdir(parents=True, exist_ok=True)
        urllib.request.urlretrieve(DATA_SOURCE + _name, _root / _name)
if _root is None:
    raise FileNotFoundError(
        f"This chapter reads {{', '.join(DATA_FILES)}}, not found in {{_here}} "
        "or above it. They come with the chapter's .zip download (the book's "
        "download menu): unpack it and open {notebook} there.")
for _folder in {folders!r}:
    (_root / _folder).mkdir(parents=True, exist_ok=True)
os.chdir(_root / {chapter!r})'''


def data_cell(files, chapter_folder: str, notebook: str, source: str | None = None) -> str:
    """Code that finds the data ``files`` (paths in the repository) beside the notebook, laid out
    as the repository, or fetches them from ``source`` (the repository's raw files, a URL ending
    in ``/``), and works from the ``chapter_folder`` (``book``) as the chapter does when the book
    is built; without either, it stops with what to download. Run twice, it finds them again."""
    folders = sorted({chapter_folder, *(f.split("/")[0] for f in DATA_FOLDERS)})
    return _DATA_CELL.format(files=sorted(files), source=source, folders=folders,
                             chapter=chapter_folder, notebook=f"{chapter_folder}/{notebook}")


def chapter_zip(notebook_json: str, notebook: str, files: dict[str, bytes], chapter_folder: str,
                top: str) -> bytes:
    """The chapter's ``.zip`` download: in one folder ``top``, the notebook in its chapter folder
    and the data files at their paths in the repository, so that it runs where it is unpacked."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{top}/{chapter_folder}/{notebook}", notebook_json)
        for name, data in sorted(files.items()):
            archive.writestr(f"{top}/{name}", data)
    return buffer.getvalue()


#: myst-nb's ``glue`` as a downloaded notebook needs it: the values are in its text already.
GLUE_STAND_IN = '''\
def glue(name, value, display=True):
    """myst-nb's glue: the book pastes the value into its text (this notebook's text holds it
    written in). Here it only shows the value, when asked to."""
    if display:
        from IPython.display import display as show
        show(value)'''

#: What the book's build gives a chapter's code, by module: the names a stand-in provides (None:
#: the whole module, the file ``book/<module>.py``).
BOOK_MODULES = {"figstyle": None, "myst_nb": {"glue"}}


def _imported(node, modules: dict) -> str | None:
    """The module of ``modules`` that the import statement ``node`` takes its names from."""
    if isinstance(node, ast.ImportFrom) and node.module in modules:
        provided = modules[node.module]
        if provided is None or {alias.name for alias in node.names} <= provided:
            return node.module
    if isinstance(node, ast.Import):
        return next((a.name for a in node.names if a.name in modules and modules[a.name] is None), None)
    return None


def _dropped(module: str) -> str:
    return f"# {module}: in the folded cell at the top"


def drop_imports(source: str, modules: dict = BOOK_MODULES) -> tuple[str, set[str]]:
    """``source`` without its imports of the book's ``modules`` (one line, or a parenthesised
    import over several), each replaced by a comment; the modules it imported."""
    found = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython syntax: one-line imports only
        def drop(match):
            module = _imported(ast.parse(match.group(0)).body[0], modules)
            found.add(module or "")
            return _dropped(module) if module else match.group(0)

        names = "|".join(map(re.escape, modules))
        kept = re.sub(rf"^(?:from (?:{names}) import [^(\n]*|import (?:{names}))$", drop, source, flags=re.M)
        return kept, found - {""}
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        module = _imported(node, modules)
        if module:
            found.add(module)
            lines[node.lineno - 1:node.end_lineno] = [_dropped(module) + "\n"]
    return "".join(lines), found


def helpers_cell(modules: set[str], folder: Path) -> str:
    """The code of the folded cell that stands in for the book's ``modules``."""
    parts = ["# What the book's build gives its chapters, so that this notebook needs no\n"
             "# file of the book: its figure style (book/figstyle.py) and myst-nb's glue."]
    if "figstyle" in modules:
        parts.append((folder / "figstyle.py").read_text().rstrip())
    if "myst_nb" in modules:
        parts.append(GLUE_STAND_IN)
    return "\n\n\n".join(parts)


def _not_on_the_page(source: str, folded: bool = False):
    """A code cell that only the download has (tagged as the book tags a cell it does not show;
    ``folded``: its code hidden in JupyterLab until the reader opens it)."""
    import nbformat

    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["remove-cell"]
    if folded:
        cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def inline_book_modules(nb, folder: Path) -> None:
    """Replace the imports of the book's modules by one folded cell before the first cell that
    imports them."""
    modules = {k: v for k, v in BOOK_MODULES.items() if v is not None or (folder / f"{k}.py").exists()}
    first, needed = None, set()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.source, found = drop_imports(cell.source, modules)
        if found and first is None:
            first = index
        needed |= found
    if first is None:
        return
    nb.cells.insert(first, _not_on_the_page(helpers_cell(needed, folder), folded=True))


def install_cell(install: str) -> str:
    """The first code cell when the library can be installed from a public repository (Colab
    and other fresh environments); it installs nothing where ``attnmath`` is installed."""
    return ("# The course's library, attnmath: installed from the course's repository\n"
            "# where it is missing (Colab, a fresh environment).\n"
            "import importlib.util\n\n"
            "if importlib.util.find_spec(\"attnmath\") is None:\n"
            f"    %pip install --quiet \"{install}\"")


def _introduction(macros: dict, install: str | None, files) -> str:
    """The first cell's text: what the notebook is, what it needs, and the book's macros."""
    how = (f"`pip install \"{install}\"`, which the first code cell does where it is missing" if install
           else "`pip install -r requirements.txt` in the course's repository, or `make lab`")
    note = ("This notebook is a chapter of the book *The Mathematics of Attention*, with the numbers "
            "its code computes written into its text as the book shows them. It runs with the "
            f"course's library `attnmath` installed ({how}).")
    if files:
        note += (" It reads recorded data, " + ", ".join(f"`{f}`" for f in sorted(files)) + ": the folded "
                 "code cell under the title finds them beside the notebook, where the chapter's `.zip` "
                 "download puts them" + (", or fetches them from the repository." if install else "."))
    return note + (" $" + macro_definitions(macros) + "$" if macros else "")


def standalone_notebook(nb, folder: Path, macros: dict, resolver: Resolver | None = None,
                        repository: dict | None = None, name: str = "chapter"):
    """Convert ``nb`` (the chapter ``name`` read from MyST and executed, ``folder``: its source
    folder) in place. ``repository``: ``{"install": pip requirement, "raw": URL of its raw files}`` of the
    public repository, if the book names one. The paths of the data files it reads are kept in
    its metadata (``nb.metadata[MARK]["data"]``)."""
    import nbformat

    if nb.metadata.get(MARK):
        return nb
    repository = repository or {}
    resolver = resolver or Resolver()
    if resolver.bibliography is None:
        resolver.bibliography = folder / "references.bib"
    resolver.glue = {**glue_values(nb), **resolver.glue}
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = markdown_cell(cell.source, folder, resolver)
            if not cell.source.strip():  # only what the page alone shows (an interactive figure)
                continue
        cells.append(cell)
        caption = figure_caption(cell, folder, resolver) if cell.cell_type == "code" else None
        if caption:
            cells.append(nbformat.v4.new_markdown_cell(caption))
    nb.cells = cells
    inline_book_modules(nb, folder)
    root, chapter = folder.parent, folder.name
    files = data_files("\n".join(c.source for c in nb.cells if c.cell_type == "code"), root)
    setup = []  # under the chapter's title: what must run before its code
    if repository.get("install"):
        setup.append(_not_on_the_page(install_cell(repository["install"])))
    if files:
        setup.append(_not_on_the_page(data_cell(files, chapter, f"{name}.ipynb", repository.get("raw")), folded=True))
    title = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    nb.cells[title:title] = setup
    if macros or setup:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(_introduction(macros, repository.get("install"), files)))
    nb.metadata[MARK] = {"data": sorted(files)}
    return nb


def myst_text(nb) -> str:
    """The standalone notebook ``nb`` as a MyST Markdown notebook (jupytext), without outputs:
    the ``.md`` download, which jupytext opens as a notebook."""
    import copy

    import jupytext

    plain = copy.deepcopy(nb)
    for cell in plain.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    plain.metadata.pop("source_map", None)
    plain.metadata.pop(MARK, None)
    return jupytext.writes(plain, fmt="md:myst")
