"""The chapter notebook a reader downloads, made to run on its own in JupyterLab.

A chapter's source is MyST Markdown: its Markdown cells hold Sphinx directives (``literalinclude``,
``prf:theorem``, ``exercise``, admonitions), roles (``{cite:p}``, ``{eq}``, ``{ref}``) and the
book's TeX macros, none of which JupyterLab knows. :func:`standalone_notebook` rewrites those
cells as plain Markdown: includes expanded into code blocks (laid out as on the page), theorem,
exercise and admonition blocks as bold-titled paragraphs or quotes, roles as their text (equation
references as the equation's number), and the macros defined in a first cell. Code cells keep
their code; the book's figure style, imported from ``book/figstyle.py``, is copied into the cell
that imports it, so the notebook needs no file beside it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from attnmath_listing import fit_code, strip_docstrings

MARK = "attnmath_standalone"  # notebook metadata key: this notebook was already converted

_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
_TARGET = re.compile(r"^\((?P<label>[\w:.-]+)\)=\s*$")
_LABELLED = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$")

_PROOF_KINDS = {"algorithm", "assumption", "axiom", "conjecture", "corollary", "criterion",
                "definition", "example", "lemma", "observation", "property", "proposition",
                "remark", "theorem"}


class Resolver:
    """Numbers and titles of the book's labels, read from the Sphinx environment if given."""

    def __init__(self, env=None, bibliography: Path | None = None):
        self.env = env
        self.bibliography = bibliography  # a BibTeX file: citations as "Bridle (1990)"
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
        env = self.env
        try:
            docname, _ = env.get_domain("math").equations[label]
            numbers = env.toc_fignumbers[docname]["displaymath"][f"equation-{label}"]
            return ".".join(map(str, numbers))
        except (AttributeError, KeyError, TypeError):
            return label

    def title(self, label: str) -> str:
        try:
            labels = self.env.get_domain("std").labels
            return labels[label][2] or label
        except (AttributeError, KeyError):
            return label


def _role(match, resolver: Resolver) -> str:
    role, body = match.group("role"), match.group("body")
    labelled = _LABELLED.match(body)
    text, target = (labelled.group("text"), labelled.group("target")) if labelled else (None, body)
    if role == "math":
        return f"${body}$"
    if role == "eq":
        return f"({resolver.equation(target)})"
    if role.startswith("cite"):
        cited = [resolver.citation(k.strip()) for k in body.split(",") if k.strip()]
        if role == "cite:t":
            return "; ".join(f"{names} ({year})" if year else names for names, year in cited)
        return "(" + "; ".join(f"{names}, {year}" if year else names for names, year in cited) + ")"
    if role in ("ref", "numref", "prf:ref", "doc"):
        return text or resolver.title(target)
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
    source = path.read_text()
    obj = options.get("pyobject")
    if not obj:
        return source
    node = ast.parse(source)
    for part in obj.split("."):
        node = next(n for n in ast.iter_child_nodes(node) if getattr(n, "name", None) == part)
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    code = "\n".join(source.splitlines()[first - 1:node.end_lineno]) + "\n"
    import textwrap
    return fit_code(strip_docstrings(textwrap.dedent(code)))


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
        inner = _convert_lines(body, folder, resolver)
        kind = name.split(":")[-1]
        if name == "literalinclude":
            out += ["```python", *_listing((folder / arg).resolve(), options).rstrip("\n").split("\n"), "```"]
        elif name == "math":
            label = options.get("label")
            tag = [rf"\tag{{{resolver.equation(label)}}}"] if label else []
            out += ["$$", *body, *tag, "$$"]
        elif name in ("code-block", "code", "code-cell"):
            out += [f"```{arg or 'python'}", *body, "```"]
        elif name.startswith("prf:") and kind == "proof":
            out += ["*Proof.*", "", *inner, "", "$\\square$"]
        elif name.startswith("prf:") and kind in _PROOF_KINDS or name == "exercise":
            title = f"**{kind.capitalize()}{f' ({arg})' if arg else ''}.**"
            out += [title, "", *inner]
        elif name == "solution":
            out += ["<details><summary>Solution</summary>", "", *inner, "", "</details>"]
        elif name in ("bibliography", "nb-exec-table", "tableofcontents"):
            continue
        else:  # admonition, note, tip, ...: a quotation with its title in bold
            title = arg or kind.capitalize()
            out += [f"> **{title}**", ">", *[f"> {x}" if x else ">" for x in inner]]
        out.append("")
    return [_ROLE.sub(lambda m: _role(m, resolver), line) for line in out]


def markdown_cell(source: str, folder: Path, resolver: Resolver | None = None) -> str:
    """A MyST Markdown cell's ``source`` as plain (JupyterLab) Markdown."""
    lines = _convert_lines(source.split("\n"), folder, resolver or Resolver())
    text = "\n".join(lines)
    text = re.sub(r"^(\$\$)\s*\([\w:.-]+\)\s*$", r"\1", text, flags=re.M)  # $$ (label)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


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
DATA_ROOT = "ATTNMATH_DATA_ROOT"  # where the data cell of a downloaded notebook writes them


def data_files(code: str, root: Path) -> dict[str, bytes]:
    """The files of the repository ``root``'s data folders that ``code`` names (as a string
    ``"memory.json"``), by their path in the repository."""
    found = {}
    for folder in DATA_FOLDERS:
        for path in sorted((root / folder).glob("*")):
            if path.is_file() and re.search(rf"[\"']{re.escape(path.name)}[\"']", code):
                found[f"{folder}/{path.name}"] = path.read_bytes()
    return found


def data_cell(files: dict[str, bytes], chapter_folder: str) -> str:
    """Code that writes ``files`` into a folder beside the notebook, laid out as the repository,
    and works from its ``chapter_folder`` (``book``), as the chapter does when the book is built.
    Run twice, it writes to the same folder (kept in the kernel's environment)."""
    import base64
    import zlib

    packed = "".join(f"    {name!r}: {base64.b64encode(zlib.compress(data, 9)).decode()!r},\n"
                     for name, data in sorted(files.items()))
    return ("# The data files this chapter reads, carried in the notebook so that it runs on its own:\n"
            "# written into a folder beside it laid out as the book's repository, whose chapter folder\n"
            "# becomes the working folder, as when the book is built.\n"
            "import base64, os, zlib\nfrom pathlib import Path\n\n"
            f"_files = {{\n{packed}}}\n"
            f"_root = Path(os.environ.setdefault({DATA_ROOT!r}, str(Path.cwd() / 'attnmath-data')))\n"
            "for _name, _data in _files.items():\n"
            "    (_root / _name).parent.mkdir(parents=True, exist_ok=True)\n"
            "    (_root / _name).write_bytes(zlib.decompress(base64.b64decode(_data)))\n"
            f"for _folder in {sorted({chapter_folder, *(f.split('/')[0] for f in DATA_FOLDERS)})!r}:\n"
            "    (_root / _folder).mkdir(parents=True, exist_ok=True)\n"
            f"os.chdir(_root / {chapter_folder!r})")


def inline_figstyle(source: str, style: str) -> str:
    """``source`` with every import of the book's ``figstyle`` module (one line, or a parenthesised
    import over several) replaced by the module's text ``style``, so a download needs no file of
    the book."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython syntax: one-line imports only
        return re.sub(r"^from figstyle import [^(\n]*$|^import figstyle$", lambda m: style, source, flags=re.M)
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        imported = (isinstance(node, ast.ImportFrom) and node.module == "figstyle") or (
            isinstance(node, ast.Import) and any(alias.name == "figstyle" for alias in node.names))
        if imported:
            lines[node.lineno - 1:node.end_lineno] = [style + "\n"]
    return "".join(lines)


def standalone_notebook(nb, folder: Path, macros: dict, resolver: Resolver | None = None):
    """Convert ``nb`` (a chapter read from MyST, ``folder``: its source folder) in place."""
    import nbformat

    if nb.metadata.get(MARK):
        return nb
    resolver = resolver or Resolver()
    if resolver.bibliography is None:
        resolver.bibliography = folder / "references.bib"
    style = folder / "figstyle.py"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = markdown_cell(cell.source, folder, resolver)
        elif cell.cell_type == "code" and style.exists():
            cell.source = inline_figstyle(cell.source, style.read_text().rstrip())
    if macros:
        note = ("*This notebook is a chapter of the book* The Mathematics of Attention. *It needs "
                "the `attnmath` library installed.* $" + macro_definitions(macros) + "$")
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(note))
    root = folder.parent
    files = data_files("\n".join(c.source for c in nb.cells if c.cell_type == "code"), root)
    if files:
        cell = nbformat.v4.new_code_cell(data_cell(files, folder.relative_to(root).as_posix()))
        # not on the chapter's page (remove-cell); folded in JupyterLab (source_hidden)
        cell.metadata["tags"] = ["remove-cell"]
        cell.metadata["jupyter"] = {"source_hidden": True}
        nb.cells.insert(1 if macros else 0, cell)
    nb.metadata[MARK] = True
    return nb
