"""Library code as the book shows it: ``literalinclude`` with ``:pyobject:``, made to read as
mathematics.

The chapters include the library's functions by name (``:pyobject:``), so the code on the page is
the code the tests check. The library is written to refuse bad input with a clear error, and its
docstrings are written for the API reference; on the page, both would bury the two lines of
mathematics that a listing is there to show. For a ``:pyobject:`` listing this extension
(:func:`listing`; the downloaded notebooks show the same through ``attnmath_notebook``)

* leaves out every docstring of the listed object; the first sentence of its docstring, its
  mathematics rendered, goes under the listing with a link to the object's entry in the API
  reference (``book/api.md`` and a page per module, ``book/api/<module>.md``), which has the
  whole docstring;
* folds each run of argument checks into one marked line that names what it hides, such as
  ``# … checks folded: as_array, check_axis, raise ValueError`` (highlighted on the page). A
  statement is a check when it is a ``raise`` or an ``assert``, a call of a check helper
  (:data:`CHECK_CALL`: ``check_*``, ``_check_*``, ``as_array``) whose result is dropped or
  rebinds an argument, or an ``if`` or ``for`` of checks only (:func:`is_check`, decided on the
  syntax tree). The note under the listing gives the file and lines of the whole function;
* lays out lines longer than :data:`WIDTH` characters again without changing the code: a long
  run of comment lines is wrapped again as one paragraph, a trailing comment moves to its own
  line above, and a line breaks after a comma inside brackets, the continuation aligned under
  the opening bracket (Python's implicit line joining).

So every line shown is a line of the source, in its order, except the fold lines, and the shown
code's syntax tree is the source's without its docstrings and without exactly the folded
statements: ``tests/book/test_listing.py`` checks both for every function and class of the
library, and that each fold line names every helper called and every exception raised in it.

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
from typing import NamedTuple

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


#: The calls that check an argument rather than compute with it: the library's ``check_*`` and
#: ``_check_*`` helpers (``attnmath._validate``, ``attnmath.core`` and each module's own) and
#: ``as_array`` (an argument as a float array, its type, shape and values checked).
CHECK_CALL = re.compile(r"_?check_\w+|as_array")
#: How a fold's line begins: ``# … checks folded: as_array, check_axis, raise ValueError``.
FOLD_MARK = "# … checks folded: "


class Fold(NamedTuple):
    """Lines ``start`` to ``end`` (1-based, of the listed object) shown as the one line
    ``marker``, which names ``names``: the check helpers called and the exceptions raised."""

    start: int
    end: int
    names: tuple
    marker: str


def _callee(node) -> str:
    """The name a call calls (``check_axis`` for ``check_axis(...)`` or ``v.check_axis(...)``)."""
    func = node.func if isinstance(node, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _check_value(value) -> bool:
    """A check call, a tuple of them, or a generator of them (``(check_positive_int(x, n) for
    x, n in ...)``)."""
    values = value.elts if isinstance(value, ast.Tuple) else [value]
    values = [v.elt if isinstance(v, (ast.GeneratorExp, ast.ListComp)) else v for v in values]
    return all(CHECK_CALL.fullmatch(_callee(v)) for v in values)


def is_check(stmt, params) -> bool:
    """Whether the statement only checks the arguments ``params`` (a set of names): a ``raise``
    or ``assert``; a check call (:data:`CHECK_CALL`) whose result is dropped or rebinds
    arguments (``axis = check_axis(axis, x.ndim)``; a new name stays on the page, since the
    mathematics uses it); an ``if`` or ``for`` of such statements only."""
    if isinstance(stmt, (ast.Raise, ast.Assert)):
        return True
    if isinstance(stmt, ast.If):
        return all(is_check(s, params) for s in stmt.body + stmt.orelse)
    if isinstance(stmt, ast.For):
        return not stmt.orelse and all(is_check(s, params) for s in stmt.body)
    if isinstance(stmt, ast.Expr):
        return _check_value(stmt.value)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [n for t in targets for n in (t.elts if isinstance(t, ast.Tuple) else [t])]
        return all(isinstance(n, ast.Name) and n.id in params for n in names) and _check_value(stmt.value)
    return False


def fold_names(stmts) -> tuple:
    """What folding ``stmts`` hides: each check helper called, in order, then ``raise E`` for
    each exception raised and ``assert``."""
    calls, raises = [], []
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and CHECK_CALL.fullmatch(_callee(node)):
                calls.append(_callee(node))
            elif isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                raises.append("raise " + ast.unparse(exc))
            elif isinstance(node, ast.Raise):
                raises.append("raise")
            elif isinstance(node, ast.Assert):
                raises.append("assert")
    return tuple(dict.fromkeys(calls + raises))


def _blocks(node):
    """The statement lists of ``node`` and of the compound statements inside it, with the
    arguments of the function each belongs to (a class's own block has none)."""
    params = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p}
    stack = [(node, params)]
    while stack:
        owner, names = stack.pop()
        for field in ("body", "orelse", "finalbody"):
            block = getattr(owner, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block, names
                for stmt in block:
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        yield from _blocks(stmt)
                    else:
                        stack.append((stmt, names))
        for handler in getattr(owner, "handlers", []):
            stack.append((handler, names))


def _check_runs(tree):
    """The runs of consecutive check statements (:func:`is_check`) of every block, outermost
    first; a block that is nothing but checks (after its docstring) is left whole."""
    runs = []
    for block, params in _blocks(tree.body[0]):
        body = [s for s in block if s is not _docstring_node_of(block)]
        flags = [is_check(s, params) for s in body]
        if not params or all(flags):
            continue  # a class's own block, or a block that is nothing but checks
        run = []
        for stmt, flag in zip(body + [None], flags + [False]):
            if flag:
                run.append(stmt)
            elif run:
                runs.append(run)
                run = []
    return runs


def _docstring_node_of(block):
    first = block[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return first
    return None


def show_code(code: str) -> tuple[str, list[Fold]]:
    """One function or class (``code``, dedented) as a listing shows it, before its layout: its
    docstrings left out (:func:`listing` gives the summary beside the listing) and each run of
    argument checks (:func:`is_check`) folded into one line that names what it hides
    (:data:`FOLD_MARK`, :func:`fold_names`). Every other line is the source's, in its order."""
    lines = code.splitlines()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, []
    drop, markers, folds = set(), {}, []
    for node in ast.walk(tree):
        doc = _docstring_node(node)
        if doc is not None and len(node.body) > 1:
            drop.update(range(doc.lineno - 1, doc.end_lineno))
            if doc.end_lineno < len(lines) and not lines[doc.end_lineno].strip():
                drop.add(doc.end_lineno)  # the blank line after a class's docstring
    for run in _check_runs(tree):
        start, end = run[0].lineno, run[-1].end_lineno
        if any(n in drop for n in range(start - 1, end)):
            continue  # inside a fold already
        names = fold_names(run)
        marker = " " * run[0].col_offset + FOLD_MARK + ", ".join(names)
        drop.update(range(start - 1, end))
        markers[start - 1] = marker
        folds.append(Fold(start, end, names, marker))
    shown = []
    for n, line in enumerate(lines):
        if n in markers:
            shown.append(markers[n])
        if n not in drop:
            shown.append(line)
    return "\n".join(shown) + ("\n" if code.endswith("\n") else ""), sorted(folds)


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


class Listing(NamedTuple):
    """A listing of the library: ``code`` as the page shows it, laid out to :data:`WIDTH`; the
    object's ``first`` and ``last`` lines in its file (decorators included); its ``folds``
    (:class:`Fold`, lines counted from ``first``) and its ``docstring``."""

    code: str
    first: int
    last: int
    folds: list
    docstring: str


def listing(source: str, pyobject: str | None = None) -> Listing:
    """The listing of ``pyobject`` (``softmax``, ``Class.method``) of the module ``source``, as
    the page (:class:`LibraryListing`) and the downloaded notebook show it: :func:`show_code`,
    laid out by :func:`fit_code`. Without ``pyobject``, the whole file as it is."""
    if not pyobject:
        return Listing(source, 1, len(source.splitlines()), [], "")
    node = ast.parse(source)
    for part in pyobject.split("."):
        found = [n for n in ast.iter_child_nodes(node) if getattr(n, "name", None) == part]
        if not found:
            raise ValueError(f"pyobject {pyobject!r}: the file defines no {part!r}")
        node = found[0]
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    code = textwrap.dedent("\n".join(source.splitlines()[first - 1:node.end_lineno]) + "\n")
    shown, folds = show_code(code)
    return Listing(fit_code(reflow_comments(shown)), first, node.end_lineno, folds,
                   ast.get_docstring(node) or "")


def reflow_comments(code: str, width: int = WIDTH) -> str:
    """``code`` with each run of whole-line comments at one indentation that has a line longer
    than ``width`` wrapped again as one paragraph (the same words in their order; fold lines,
    :data:`FOLD_MARK`, stay as they are)."""
    lines, out, n = code.splitlines(), [], 0
    while n < len(lines):
        indent = lines[n][:len(lines[n]) - len(lines[n].lstrip())]
        end = n
        while (end < len(lines) and lines[end].startswith(indent + "# ")
               and not lines[end].lstrip().startswith(FOLD_MARK)):
            end += 1
        run = lines[n:end]
        if any(len(line) > width for line in run):
            words = " ".join(line.strip()[2:] for line in run)
            out += textwrap.wrap(words, width, initial_indent=indent + "# ",
                                 subsequent_indent=indent + "# ", break_long_words=False)
        else:
            out += run or [lines[n]]
        n = max(end, n + 1)
    return "\n".join(out) + ("\n" if code.endswith("\n") else "")


_SUMMARY_ROLE = re.compile(r":(?P<role>[\w:]+):`(?P<body>[^`]*)`|``(?P<literal>[^`]*)``")


def summary_nodes(docstring: str) -> list:
    """The first sentence of a docstring as text, its ``:math:`` roles as mathematics and its
    literals and cross-references as code."""
    text, out, pos = module_summary(docstring), [], 0
    for match in _SUMMARY_ROLE.finditer(text):
        out.append(nodes.Text(text[pos:match.start()]))
        if match.group("role") == "math":
            out.append(nodes.math(match.group("body"), match.group("body")))
        else:
            body = match.group("literal") or match.group("body")
            body = body[1:].split(".")[-1] if body.startswith("~") else body
            out.append(nodes.literal(body, body))
        pos = match.end()
    out.append(nodes.Text(text[pos:]))
    return out


def _fold_lines(code: str) -> list[int]:
    """The 1-based numbers of a laid-out listing's fold lines (to be highlighted)."""
    return [n for n, line in enumerate(code.splitlines(), 1) if line.lstrip().startswith(FOLD_MARK)]


class LibraryListing(LiteralInclude):
    """``literalinclude`` that shows a ``:pyobject:`` listing as :func:`listing` lays it out,
    its fold lines highlighted, with the docstring's first sentence and a link to the object's
    entry in the API reference under it."""

    def run(self):
        result = super().run()
        obj = self.options.get("pyobject")
        if not obj:
            return result
        _, filename = self.env.relfn2path(self.arguments[0])
        shown = listing(Path(filename).read_text(encoding="utf-8"), obj)
        for block in result:
            for literal in block.findall(nodes.literal_block):
                literal.children = [nodes.Text(shown.code)]
                literal.rawsource = shown.code
                literal.setdefault("highlight_args", {})["hl_lines"] = _fold_lines(shown.code)
        result.append(self._note(shown, Path(filename), obj))
        return result

    def _note(self, shown: Listing, path: Path, obj: str):
        """The line under a listing: the docstring's first sentence, the link to the object's
        entry in the API reference and, where checks are folded, where the whole function is."""
        para = nodes.paragraph("", "", classes=["listing-api"])
        para += summary_nodes(shown.docstring)
        module = module_name(path)
        if module and not any(part.startswith("_") for part in obj.split(".")):
            target = f"{module}.{obj}"
            ref = addnodes.pending_xref("", refdomain="py", reftype="obj", reftarget=target,
                                        refexplicit=True, refwarn=True)
            ref += nodes.literal(target, target, classes=["xref", "py"])
            para += [nodes.Text(" Documentation: "), ref, nodes.Text(".")]
        if shown.folds:
            where = "/".join(path.parts[path.parts.index("lib"):]) if "lib" in path.parts else path.name
            para += [nodes.Text(" With its checks: "), nodes.literal(where, where),
                     nodes.Text(f", lines {shown.first}–{shown.last}.")]
        return para


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
    # env_version: raised when a listing shows its object differently, so that every page that
    # includes one is read again
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--api-pages"]:
        raise SystemExit("usage: python book/_ext/attnmath_listing.py --api-pages")
    ROOT = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(ROOT / "lib"))
    for page in write_api_pages(ROOT):
        print(f"wrote {page}: add it to _toc.yml under {API_INDEX}")
