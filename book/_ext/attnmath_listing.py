"""Library code as the book shows it: ``literalinclude`` with ``:pyobject:``, made to read as text.

The chapters include the library's functions by name (``:pyobject:``), so the code on the page is
the code the tests check. The library's own layout is written for an editor, not for a book
column, so for a ``:pyobject:`` listing this extension

* replaces every docstring in the listed object by its summary line (the full docstring, with its
  rendered mathematics, is in the API reference: ``book/api.md`` and a page per module,
  ``book/api/<module>.md``);
* lays out lines longer than :data:`WIDTH` characters again without changing the code: a trailing
  comment moves to its own line above, and a line breaks after a comma inside brackets, the
  continuation aligned under the opening bracket (Python's implicit line joining);
* adds a link under the listing to the object's entry in the API reference.

The code of the chapters' cells is laid out to the same width on the page
(:func:`fit_code_cells`).

The API reference is one light page per module rather than one page of a thousand formulas.
Each module's page, ``book/api/<module>.md``, is the heading and the ``automodule`` that
:func:`api_page` writes (``python book/_ext/attnmath_listing.py --api-pages`` writes the missing
ones; ``tests/book/test_api_pages.py`` checks that every page is exactly that and is in
``_toc.yml`` under ``book/api``). The ``attnmath-api`` directive of ``book/api.md`` lists every
public module with the first sentence of its docstring and a link to its page: a module without
a page is a reference that ``-n -W`` turns into a failed build, and a page of a module that is
gone fails at its ``automodule``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import io
import pkgutil
import re
import textwrap
import tokenize
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.directives.code import LiteralInclude
from sphinx.util.docutils import SphinxDirective

WIDTH = 88  # characters of a code line in the text column
#: A cell whose code is folded (``hide-input``) shows it in a box that takes this many columns.
FOLD_COLUMNS = 2
FOLDED_TAGS = ("hide-input", "hide-cell")


def cell_width(tags) -> int:
    """The columns of a code cell with these tags on the page (a folded cell's box takes two)."""
    return WIDTH - FOLD_COLUMNS if set(tags) & set(FOLDED_TAGS) else WIDTH


def _docstring_node(node):
    body = getattr(node, "body", None)
    if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
            and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[0]
    return None


def summary_line(docstring: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    para = " ".join(textwrap.dedent(docstring).strip().split("\n\n")[0].split())
    para = re.sub(r":\w+:`([^`]*)`", r"\1", para)  # reST roles and literals as plain text
    para = re.sub(r"``([^`]*)``", r"\1", para)
    match = re.match(r"(.+?\.)(\s|$)", para)
    return match.group(1) if match else para


def strip_docstrings(code: str) -> str:
    """``code`` (one function or class) with every docstring replaced by its summary line."""
    dedented = textwrap.dedent(code)
    shift = len(code.splitlines()[0]) - len(dedented.splitlines()[0]) if code.strip() else 0
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        return code
    lines = code.splitlines()
    edits = []
    for node in ast.walk(tree):
        doc = _docstring_node(node)
        if doc is None:
            continue
        indent = " " * (doc.col_offset + shift)
        raw = lines[doc.lineno - 1][doc.col_offset + shift:][:1] in ("r", "R")  # r"""..."""
        summary = summary_line(doc.value.value).replace('"', "'")
        prefix = "r" if raw else ""
        summary = summary if raw else summary.replace("\\", "\\\\")
        replacement = [f'{indent}{prefix}"""{summary}"""']
        if len(replacement[0]) > WIDTH:
            words, current, replacement = summary.split(), indent + prefix + '"""', []
            for word in words:
                if len(current) + len(word) + 4 > WIDTH and current.strip() != prefix + '"""':
                    replacement.append(current.rstrip())
                    current = indent
                current += word + " "
            replacement.append(current.rstrip() + '"""')
        edits.append((doc.lineno - 1, doc.end_lineno, replacement))
    for start, end, replacement in sorted(edits, reverse=True):
        lines[start:end] = replacement
    return "\n".join(lines) + ("\n" if code.endswith("\n") else "")


def _tokens(line: str) -> list:
    """The tokens of one physical line; an unclosed bracket (a continued line) is fine."""
    tokens = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.rstrip("\n") + "\n").readline):
            tokens.append(tok)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return tokens


def _break_points(line: str, continued: bool = False):
    """Columns just after a comma inside brackets, with the column after the opening bracket;
    ``continued``: the line continues a bracket opened on an earlier line."""
    indent = len(line) - len(line.lstrip())
    stack, points = ([indent] if continued else []), []
    for tok in _tokens(line):
        if tok.type != tokenize.OP:
            continue
        if tok.string in "([{":
            stack.append(tok.end[1])
        elif tok.string in ")]}" and stack:
            stack.pop()
        elif tok.string == "," and stack:
            points.append((tok.end[1], stack[-1]))
        elif tok.string == "+" and stack and tok.start[1] > indent + 8:
            points.append((tok.start[1], stack[-1]))  # the next line starts with the operator
    for tok in _tokens(line):
        if tok.type == tokenize.NAME and tok.string in ("if", "else") and tok.start[1] > indent + 8:
            depth = _depth_at(line, tok.start[1], continued)
            if depth:
                points.append((tok.start[1], depth))
    return sorted(points)


def _depth_at(line: str, column: int, continued: bool) -> int:
    """The column after the innermost bracket open at ``column`` (0 if none)."""
    indent = len(line) - len(line.lstrip())
    stack = [indent] if continued else []
    for tok in _tokens(line):
        if tok.start[1] >= column:
            break
        if tok.type == tokenize.OP and tok.string in "([{":
            stack.append(tok.end[1])
        elif tok.type == tokenize.OP and tok.string in ")]}" and stack:
            stack.pop()
    return stack[-1] if stack else 0


_STRING_START = re.compile(r"([A-Za-z]*)(\"|')")


def _split_string(line: str, width: int, continued: bool = False):
    """The line split inside the string literal that crosses ``width``, as two adjacent literals
    (which Python joins), if the literal is inside brackets and has a space to split at."""
    depth = 1 if continued else 0
    for tok in _tokens(line):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif (tok.type == tokenize.STRING and depth > 0 and tok.start[1] < width - 12
              and tok.end[1] - tok.start[1] > 12 and _last_string(line, tok, width)):
            match = _STRING_START.match(tok.string)
            prefix, quote = match.groups()
            if tok.string[len(prefix):].startswith(quote * 3) or "b" in prefix.lower():
                return None
            start = tok.start[1] + len(prefix) + 1
            braces, cut = 0, None
            for i in range(start, min(tok.end[1] - 1, width - 1)):
                ch = line[i]
                if "f" in prefix.lower() and ch in "{}":
                    braces += 1 if ch == "{" else -1
                elif ch == " " and braces == 0 and line[i - 1] != "\\":
                    cut = i + 1
            if cut is None or cut <= start + 1:
                return None
            return line[:cut] + quote, " " * tok.start[1] + prefix + quote + line[cut:]
    return None


def _bracket_tuple(line: str) -> str | None:
    """``a, b = x`` as ``(a, b) = x`` and ``return a, b`` as ``return (a, b)`` (the same code),
    so that the tuple can break inside its brackets; None for any other line."""
    depth, commas, equals = 0, [], None
    tokens = _tokens(line)
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and depth == 0 and tok.string == ",":
            commas.append(tok.start[1])
        elif tok.type == tokenize.OP and depth == 0 and tok.string == "=" and equals is None:
            equals = tok.start[1]
    indent = len(line) - len(line.lstrip())
    body = line[indent:]
    if body.startswith("return ") and equals is None and not body.rstrip().endswith(")"):
        return f"{line[:indent]}return ({body[len('return '):].rstrip()})"
    if not commas:
        return None
    if equals is not None and commas[0] < equals:
        lhs = line[indent:equals].rstrip()
        return f"{line[:indent]}({lhs}) ={line[equals + 1:]}"
    body = line[indent:]
    if body.startswith("return ") and equals is None:
        return f"{line[:indent]}return ({body[len('return '):].rstrip()})"
    return None


def _last_string(line: str, candidate, width: int) -> bool:
    """Whether ``candidate`` is the last string literal of the line that starts early enough to
    be split before ``width``."""
    later = [t for t in _tokens(line) if t.type == tokenize.STRING and t.start[1] > candidate.start[1]
             and t.start[1] < width - 12 and t.end[1] - t.start[1] > 12]
    return not later


def _comment_start(line: str):
    for tok in _tokens(line):
        if tok.type == tokenize.COMMENT:
            return tok.start[1]
    return None


def fit_line(line: str, width: int = WIDTH, continued: bool = False) -> list[str]:
    """``line`` as one or more lines of at most ``width`` characters where Python allows it;
    ``continued``: the line continues a bracket opened on an earlier line."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    if line.lstrip().startswith("#"):
        return textwrap.wrap(line.lstrip(), width, initial_indent=indent,
                             subsequent_indent=indent + "# ")
    start = _comment_start(line)
    if start is not None and line[:start].strip():
        comment = line[start:]
        code = line[:start].rstrip()
        above = [indent + c for c in textwrap.wrap(comment, width - len(indent),
                                                   subsequent_indent="# ")] if len(indent + comment) > width else [indent + comment]
        return above + fit_line(code, width, continued)
    points = [(col, opener) for col, opener in _break_points(line, continued) if col <= width]
    if not points and not continued:
        bracketed = _bracket_tuple(line)
        if bracketed is not None:
            return fit_line(bracketed, width)
    if not points:
        split = _split_string(line, width, continued)
        if split is None:
            return [line]  # nothing safe to break at: the page wraps it (attnmath.css)
        return [split[0]] + fit_line(split[1], width, True)
    col, opener = points[-1]
    rest = line[col:].lstrip()
    cont = opener if opener + len(rest) <= width or opener <= len(indent) + 8 else len(indent) + 8
    if cont + len(rest) > width and cont > len(indent) + 8:
        cont = len(indent) + 8
    head = line[:col].rstrip()
    tail = " " * cont + rest
    return [head] + fit_line(tail, width, True)


def _continued_lines(code: str) -> set[int]:
    """0-based numbers of the lines that start inside a bracket opened on an earlier line."""
    depth_at, depth = {}, 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(textwrap.dedent(code)).readline):
            depth_at.setdefault(tok.start[0] - 1, depth)
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set()
    return {n for n, d in depth_at.items() if d > 0}


def _syntax_tree(code: str) -> str | None:
    """The code's syntax tree as text (positions left out), or None where it is not plain Python."""
    try:
        return ast.dump(ast.parse(textwrap.dedent(code)))
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=1024)  # a chapter's cells are laid out for its page and its download
def fit_code(code: str, width: int = WIDTH) -> str:
    """``code`` with its long lines laid out again (see the module docstring).

    A line's new layout is kept only where the code still parses to the same syntax tree, so the
    layout never changes what the code means nor makes it invalid; such a line stays as written.
    """
    lines, continued = code.splitlines(), _continued_lines(code)
    tree = _syntax_tree(code)
    blocks = [[line] for line in lines]
    for n, line in enumerate(lines):
        fitted = fit_line(line, width, n in continued)
        if fitted == [line]:
            continue
        trial = blocks[:n] + [fitted] + blocks[n + 1:]
        if tree is None or _syntax_tree("\n".join(x for b in trial for x in b)) == tree:
            blocks[n] = fitted
    return "\n".join(x for b in blocks for x in b) + ("\n" if code.endswith("\n") else "")


def module_name(path: Path) -> str | None:
    """``attnmath.softmax`` for ``.../lib/attnmath/softmax.py``; None outside the package."""
    parts = path.with_suffix("").parts
    if "attnmath" not in parts:
        return None
    names = list(parts[parts.index("attnmath"):])
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


class LibraryListing(LiteralInclude):
    """``literalinclude`` that lays out a ``:pyobject:`` listing for the page (see the module)."""

    def run(self):
        result = super().run()
        obj = self.options.get("pyobject")
        if not obj:
            return result
        for block in result:
            for literal in block.findall(nodes.literal_block):
                code = fit_code(strip_docstrings(literal.astext()))
                literal.children = [nodes.Text(code)]
                literal.rawsource = code
        _, filename = self.env.relfn2path(self.arguments[0])
        module = module_name(Path(filename))
        if module and not any(part.startswith("_") for part in obj.split(".")):
            target = f"{module}.{obj}"
            ref = addnodes.pending_xref("", refdomain="py", reftype="obj", reftarget=target,
                                        refexplicit=True, refwarn=True)
            ref += nodes.literal(target, target, classes=["xref", "py"])
            para = nodes.paragraph("", "", classes=["listing-api"])
            para += nodes.Text("Documentation: ")
            para += ref
            result.append(para)
        return result


#: Where the pages of the API reference are, relative to the book's root: ``book/api.md`` is the
#: index, ``book/api/<module>.md`` the page of ``attnmath.<module>``.
API_INDEX = "book/api"


def public_modules(skip=()) -> list[str]:
    """The public modules of ``attnmath`` (``softmax``, ``flash`` ...), alphabetically."""
    package = importlib.import_module("attnmath")
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__)
                  if not info.name.startswith("_") and info.name not in skip)


def api_page(module: str) -> str:
    """The source of the API page of ``attnmath.<module>`` (``book/api/<module>.md``): its
    docstring and every documented member, by autodoc."""
    return (f"(api-{module.replace('_', '-')})=\n"
            f"# attnmath.{module}\n\n"
            f"% Written by `python book/_ext/attnmath_listing.py --api-pages`;\n"
            f"% tests/book/test_api_pages.py checks that it is unchanged.\n\n"
            f"```{{eval-rst}}\n"
            f".. automodule:: attnmath.{module}\n"
            f"   :members:\n"
            f"```\n")


def module_summary(docstring: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line, its reST kept."""
    para = " ".join(textwrap.dedent(docstring or "").strip().split("\n\n")[0].split())
    match = re.match(r"(.+?\.)(\s|$)", para)
    return match.group(1) if match else para


class ApiIndex(SphinxDirective):
    """The index of the API reference: every public module of ``attnmath``, alphabetically, with
    the first sentence of its docstring and a link to its page (written for a MyST page, as
    ``book/api.md`` is). The package itself is a target here (docstrings refer to
    :mod:`attnmath`)."""

    has_content = False

    def run(self):
        rst = [".. py:module:: attnmath", ""]
        for name in public_modules(self.config.attnmath_api_skip):
            module = importlib.import_module(f"attnmath.{name}")
            rst.append(f"* :mod:`attnmath.{name}` — {module_summary(module.__doc__)}")
        container = nodes.container()
        # autodoc and the summaries are reStructuredText: parse them as such inside the MyST page
        self.state.nested_parse(StringList(["```{eval-rst}", *rst, "```"], source="attnmath-api"),
                                self.content_offset, container)
        return list(container.children)


def write_api_pages(root: Path, skip=()) -> list[str]:
    """Write the API page of every public module that has none (see :func:`api_page`); the
    pages written, relative to ``root``."""
    written = []
    for name in public_modules(skip):
        path = root / API_INDEX / f"{name}.md"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(api_page(name))
            written.append(path.relative_to(root).as_posix())
    return written


def fit_code_cells(app, doctree):
    """The code of the chapters' cells laid out to the column as the listings are (:func:`fit_code`):
    the page shows the same program in lines of at most :data:`WIDTH` characters, two fewer in a
    folded cell (:func:`cell_width`; the downloadable notebook shows the same lines,
    ``attnmath_html.make_standalone``)."""
    for block in list(doctree.findall(nodes.literal_block)):
        parent = block.parent
        if parent is None or "cell_input" not in parent.get("classes", []):
            continue
        cell = parent.parent
        tags = [c[len("tag_"):] for c in (cell.get("classes", []) if cell is not None else [])
                if c.startswith("tag_")]
        code = block.astext()
        fitted = fit_code(code, cell_width(tags))
        if fitted != code:
            new = nodes.literal_block(fitted, fitted, **block.attributes)
            new.source, new.line = block.source, block.line
            block.replace_self(new)


def setup(app):
    app.connect("doctree-read", fit_code_cells)
    app.add_config_value("attnmath_api_skip", [], "env")
    app.add_directive("literalinclude", LibraryListing, override=True)
    app.add_directive("attnmath-api", ApiIndex)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--api-pages"]:
        raise SystemExit("usage: python book/_ext/attnmath_listing.py --api-pages")
    ROOT = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(ROOT / "lib"))
    for page in write_api_pages(ROOT):
        print(f"wrote {page}: add it to _toc.yml under {API_INDEX}")
