"""Static checks of answer cells: evidence for the instructor, read from each cell's AST.

What an answer can reach is decided by the worker's private root (:mod:`attngrade.sandbox`),
not by recognising tricks here. Each answer or added cell is parsed (IPython magics are removed
first, see :func:`to_python`) and walked once; every finding names its line:

* **reference** findings: importing or naming a reference library (``attnmath``, ``torch``,
  ``scipy``, ``jax`` and every part's ``forbidden`` list, whose names that are not modules count
  as attributes too: exercise 17's ``.scaled_dot_product_attention``). The submission is flagged;
  inside the private root the import fails by itself. Where no private root exists, or where the
  assignment lets its answers import a reference (17: torch), the dependent parts score zero.
* **forbidden** findings: reaching for the import machinery or the interpreter's internals:
  ``__import__``, ``importlib``, ``__builtins__``, ``__subclasses__``/``__globals__`` and frame
  attributes, ``sys.modules``/``sys.meta_path``/``settrace``, ``gc`` (``tracemalloc`` is only for
  review: memory is counted by the kernel, per case, and it fools nothing).
  Flagged (and zero for dependent parts where no private root exists).
* **course** findings: strings naming the course's files (``hidden_tests``, ``gradebook``,
  ``solutions/``...). Proof of reaching for course files: the cell is not run and its parts
  score zero, at every level.
* **tampering** findings: patching modules (``np.allclose = ...``), IPython input or AST
  transformers, ``get_ipython``, writes to raw file descriptors. They cannot change a score (the
  checks run in the grader's own process); the submission is flagged for the instructor.
* **review** findings: ordinary but unusual introspection (``globals()``, ``vars``, ``locals``,
  ``exec``/``eval``/``compile``, ``__dict__``, ``inspect``). Listed for the instructor only; they
  change neither points nor status.

A part *depends* on the answer cell that defines its function and, transitively, on every answer
cell defining a name that a dependent cell uses (names that the release's own setup cells define,
such as ``np``, are not followed).
"""

from __future__ import annotations

import ast
import functools
import re
import shlex
import threading
from dataclasses import dataclass, field

__all__ = [
    "Finding", "CellInfo", "analyse_cell", "to_python", "part_dependencies", "REFERENCE_MODULES", "SHELL_ESCAPE",
]

REFERENCE_MODULES = frozenset({"attnmath", "torch", "scipy", "jax", "jaxlib", "tensorflow", "keras", "flax"})
FORBIDDEN_MODULES = frozenset(
    {
        "attngrade",
        "nbgrader",
        "importlib",
        "imp",
        "builtins",
        "__builtin__",
        "_tracemalloc",
        "gc",
        "runpy",
        "pkgutil",
        "zipimport",
        "marshal",
        "site",
        "sysconfig",
        "_imp",
        "_frozen_importlib",
        "_frozen_importlib_external",
    }
)
REVIEW_MODULES = frozenset({"inspect", "code", "codeop", "dis", "tracemalloc"})
#: What a notebook imports to show things, as in the student's kernel: no finding.
DISPLAY_MODULES = frozenset({"IPython.display", "IPython.core.display"})
KERNEL_MODULES = frozenset(
    {
        "IPython",
        "ipykernel",
        "jupyter_client",
        "nbformat",
        "nbclient",
        "nbconvert",
        "ast",
        "unittest",
        "pytest",
    }
)
FORBIDDEN_NAMES = frozenset({"__import__", "__builtins__", "__loader__", "__spec__"})
REVIEW_NAMES = frozenset({"exec", "eval", "compile", "breakpoint", "globals", "vars", "locals"})
REVIEW_ATTRS = frozenset(
    {
        "__dict__",
        "__defaults__",
        "__kwdefaults__",
        "__self__",
        "__func__",
        "__code__",
        "__closure__",
        "__mro__",
        "__bases__",
        "__base__",
        "__reduce__",
        "__reduce_ex__",
        "__getattribute__",
    }
)
DUNDER_ESCAPES = frozenset(
    {
        "__import__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "__subclasses__",
        "__globals__",
        "__code__",
        "__closure__",
        "__bases__",
        "__base__",
        "__mro__",
        "__getattribute__",
        "__dict__",
        "__reduce__",
        "__reduce_ex__",
        "__self__",
        "__func__",
        "__traceback__",
        "__frame__",
        "__defaults__",
        "__kwdefaults__",
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "gi_frame",
        "cr_frame",
        "tb_frame",
    }
)
SYS_ESCAPES = frozenset(
    {
        "modules",
        "meta_path",
        "path_hooks",
        "path_importer_cache",
        "_getframe",
        "settrace",
        "setprofile",
        "_current_frames",
        "addaudithook",
        "setrecursionlimit",
    }
)
KERNEL_ATTRS = frozenset(
    {
        "input_transformers_cleanup",
        "input_transformers_post",
        "input_transformer_manager",
        "ast_transformers",
        "register_magic_function",
        "run_cell",
        "events",
        "user_ns",
        "NodeTransformer",
        "showtraceback",
        "set_custom_exc",
    }
)
FD_CALLS = frozenset({"write", "writev", "fdopen", "dup", "dup2", "pipe", "openpty", "sendfile", "pwrite"})
COURSE_WORDS = (
    "hidden_tests",
    "gradebook",
    "nbgrader",
    "solutions/",
    "/solutions",
    "autograded",
    "submitted/",
    "attngrade",
    "attnmath",
)


# CPython 3.11's AST constructor is not thread-safe ("AST constructor recursion depth mismatch"),
# and the grader checks submissions from several threads: parse one cell at a time.
_AST_LOCK = threading.RLock()


def _serialized(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _AST_LOCK:
            return fn(*args, **kwargs)

    return wrapper


@dataclass
class Finding:
    kind: str  # "reference", "forbidden", "course", "tampering" or "review"
    message: str  # ends with the line it was found on, "(line 3)"


@dataclass
class CellInfo:
    """What one cell defines, uses and does that the grader cares about."""

    defines: set = field(default_factory=set)
    uses: set = field(default_factory=set)
    findings: list = field(default_factory=list)
    syntax_error: bool = False
    notes: list = field(default_factory=list)  # e.g. removed magics
    python: str = ""  # the cell as plain Python (:func:`to_python`)


_MAGIC_CALLS = {"run_line_magic", "run_cell_magic", "system", "getoutput", "run_magic", "magic"}
_BODY_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
#: The builtin that the worker provides for IPython's shell escapes (``!cmd``, ``x = !cmd``, ``%sx``,
#: ``%%bash``, ``%%sh``): it runs the command where the sandbox allows it, and prints why not where
#: it does not (:func:`attngrade.worker._shell_escape`).
SHELL_ESCAPE = "_shell_escape"
_SHELL_CELLS = {"bash": "bash", "sh": "sh"}


def _is_ipython_call(node) -> str | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MAGIC_CALLS
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
    ):
        return node.func.attr
    return None


def _texts(call) -> list[str] | None:
    """The arguments of an IPython call when they are all text, else None."""
    args = call.args
    return [a.value for a in args] if all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args) else None


def _shell_call(command: str, capture: bool, program: str = "sh") -> ast.expr:
    return ast.parse(f"{SHELL_ESCAPE}({command!r}, {capture!r}, {program!r})", mode="eval").body


def _shell_note(what: str) -> str:
    return f"{what} runs in the worker's sandbox (its log says when it cannot)"


class _MagicRemover(ast.NodeTransformer):
    """IPython's calls (``get_ipython().run_line_magic(...)`` and the like) replaced by the Python
    they stand for where the grader can run it, and dropped (with a note) where it cannot."""

    def __init__(self):
        self.notes: list[str] = []
        self.modules: list[tuple[str, str]] = []  # (module name, source) written by %%writefile

    def visit_Expr(self, node):
        kind = _is_ipython_call(node.value)
        if kind is None:
            return self.generic_visit(node)
        return self._statements(kind, _texts(node.value)) or ast.Pass()

    def visit_Assign(self, node):
        kind = _is_ipython_call(node.value)
        if kind is None:
            return self.generic_visit(node)
        node.value = self._value(kind, _texts(node.value))
        return node

    def _value(self, kind: str, args: list[str] | None) -> ast.expr:
        """What ``x = <IPython call>`` assigns: the output lines of a shell command, the value of
        ``%time``'s expression, else None (with a note)."""
        if args and kind in ("getoutput", "system"):
            self.notes.append(_shell_note(f"shell command {args[0][:80]!r}"))
            return _shell_call(args[0], True)
        if args and kind == "run_line_magic" and len(args) == 2:
            if args[0] in ("sx", "system"):
                self.notes.append(_shell_note(f"shell command {args[1][:80]!r}"))
                return _shell_call(args[1], True)
            if args[0] == "time":
                try:
                    return ast.parse(args[1], mode="eval").body
                except SyntaxError:
                    pass
        self.notes.append(f"IPython magic {args[0] if args else kind} assigned: replaced by None")
        return ast.Constant(None)

    def _statements(self, kind: str, args: list[str] | None) -> list:
        """The statements an IPython call stands for as a statement of its own ([]: nothing)."""
        if args and kind in ("getoutput", "system"):
            self.notes.append(_shell_note(f"shell command {args[0][:80]!r}"))
            return [ast.Expr(_shell_call(args[0], kind == "getoutput"))]
        name = args[0] if args else "?"
        if kind == "run_line_magic" and args and len(args) == 2:
            if name in ("sx", "system"):
                return [ast.Expr(self._value(kind, args))]
            if name == "time":
                return self._parsed(args[1], "%time")
        if kind == "run_cell_magic" and args and len(args) == 3:
            if name in _BODY_MAGICS:
                return self._parsed(args[2], f"%%{name}")
            if name == "writefile":
                return self._writefile(args[1], args[2])
            if name in _SHELL_CELLS:
                self.notes.append(_shell_note(f"%%{name} cell"))
                return [ast.Expr(_shell_call(args[2], False, _SHELL_CELLS[name]))]
        self.notes.append(f"IPython magic {name!s} removed")
        return []

    def _parsed(self, body: str, magic: str) -> list:
        """The statements of a magic's body (its own magics replaced too)."""
        python, notes, modules = _transform(body)
        self.notes.extend(notes)
        self.modules.extend(modules)
        try:
            return ast.parse(python).body
        except SyntaxError:
            self.notes.append(f"{magic}: its code does not parse; not run")
            return []

    def _writefile(self, line: str, body: str) -> list:
        """``%%writefile [-a] FILE``: Python that writes the file, as IPython does."""
        try:
            words = shlex.split(line)
        except ValueError:
            words = []
        append = any(w in ("-a", "--append") for w in words)
        names = [w for w in words if not w.startswith("-")]
        if len(names) != 1:
            self.notes.append(f"%%writefile {line[:80]}: no file name; not written")
            return []
        path = names[0]
        if path.endswith(".py") and "/" not in path:
            self.modules.append((path[:-3], body))
        self.notes.append(f"%%writefile writes {path[:80]}")
        mode = "a" if append else "w"
        return ast.parse(f"open({path!r}, {mode!r}, encoding='utf-8').write({body!r})").body


@_serialized
def to_python(source: str) -> tuple[str, list[str]]:
    """Plain Python for a notebook cell, and notes on what was changed (see :func:`_transform`)."""
    python, notes, _ = _transform(source)
    return python, notes


def _transform(source: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    """Plain Python for a notebook cell as IPython runs it, notes, and the modules it writes.

    A cell that already parses is returned unchanged. Otherwise IPython's own input transformer
    (when IPython is installed) turns the magics into ``get_ipython()`` calls, which become what
    they stand for where the worker can do it: ``%time`` runs its statement (its value where it is
    assigned), the bodies of ``%%time``, ``%%timeit``, ``%%capture`` run, ``%%writefile`` writes
    its file (a ``.py`` file is a module the notebook may import: ``(name, source)`` is returned),
    and shell escapes (``!cmd``, ``x = !cmd``, ``%sx``, ``%%bash``) call :data:`SHELL_ESCAPE`.
    Every other magic is dropped, with a note.
    """
    try:
        ast.parse(source)
        return source, [], []
    except SyntaxError:
        pass
    except (ValueError, RecursionError, MemoryError):
        return source, [], []
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython comes with nbgrader
        return source, [], []
    try:
        transformed = TransformerManager().transform_cell(source)
        tree = ast.parse(transformed)
    except Exception:  # noqa: BLE001 - not valid even for IPython: leave it to fail in the worker
        return source, [], []
    remover = _MagicRemover()
    tree = ast.fix_missing_locations(remover.visit(tree))
    try:
        return ast.unparse(tree), remover.notes, remover.modules
    except Exception:  # noqa: BLE001 - pragma: no cover
        return source, [], []


def _docstring_nodes(tree) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                ids.add(id(body[0].value))
    return ids


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


_SYS_ANYWHERE = frozenset(
    {"meta_path", "path_hooks", "path_importer_cache", "_getframe", "_current_frames", "settrace",
     "setprofile", "addaudithook"}
)


class _Walker:
    """One pass over a cell's AST, collecting what :func:`analyse_cell` reports."""

    def __init__(self, info: CellInfo, reference: frozenset, module_names: set | None, docstrings: set):
        self.info, self.reference, self.docstrings = info, reference, docstrings
        self.modules = set(module_names or ())
        self.aliases: dict[str, str] = {}  # local name -> module it is bound to
        self.seen: set[tuple[str, str]] = set()
        self.line = 0
        self.handlers = {
            ast.Import: self.visit_import, ast.ImportFrom: self.visit_import_from, ast.Name: self.visit_name,
            ast.Attribute: self.visit_attribute, ast.Call: self.visit_call, ast.Constant: self.visit_constant,
            ast.ClassDef: self.visit_class, ast.Global: self.visit_global, ast.NamedExpr: self.visit_walrus,
        }

    def add(self, kind: str, message: str) -> None:
        if (kind, message) not in self.seen:
            self.seen.add((kind, message))
            self.info.findings.append(Finding(kind, f"{message} (line {self.line})"))

    def check_module(self, name: str) -> None:
        if any(name == m or name.startswith(m + ".") for m in DISPLAY_MODULES):
            return
        top = name.split(".")[0]
        for group, kind in ((self.reference, "reference"), (FORBIDDEN_MODULES, "forbidden"),
                            (KERNEL_MODULES, "tampering"), (REVIEW_MODULES, "review")):
            if top in group:
                self.add(kind, f"imports {top}")
                return

    def top_level(self, body: list) -> None:
        """Names the cell defines at its top level (what other cells can use)."""
        blocks = (ast.If, ast.Try, ast.With, ast.For, ast.While)
        for node in body:
            for sub in ast.walk(node) if isinstance(node, blocks) else [node]:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.info.defines.add(sub.name)
                elif isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    self.info.defines.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    self.info.defines.update((a.asname or a.name).split(".")[0] for a in sub.names)

    def visit(self, node) -> None:
        self.line = getattr(node, "lineno", self.line)
        handler = self.handlers.get(type(node))
        if handler is not None:
            handler(node)

    def visit_global(self, node) -> None:
        self.info.defines.update(node.names)

    def visit_walrus(self, node) -> None:
        if isinstance(node.target, ast.Name):
            self.info.defines.add(node.target.id)

    def visit_import(self, node) -> None:
        for a in node.names:
            self.check_module(a.name)
            self.info.uses.add(a.name.split(".")[0])  # a module that another cell may write
            local = (a.asname or a.name).split(".")[0]
            self.aliases[local] = a.name.split(".")[0] if not a.asname else a.name
            self.modules.add(local)

    def visit_import_from(self, node) -> None:
        if node.level:
            self.add("forbidden", "relative import")
        self.check_module(node.module or "")
        if node.module and not node.level:
            self.info.uses.add(node.module.split(".")[0])  # a module that another cell may write
        for a in node.names:
            if a.name == "*":
                self.add("tampering", f"star import from {node.module}")
            self.check_module(f"{node.module}.{a.name}" if node.module else a.name)
            if (node.module or "").split(".")[0] in self.reference:
                continue
            if a.name in self.reference and a.name not in REFERENCE_MODULES:
                self.add("reference", f"imports {a.name}")  # a part's forbidden call
            if a.name in FORBIDDEN_NAMES or (a.name in DUNDER_ESCAPES and a.name not in REVIEW_ATTRS):
                self.add("forbidden", f"imports {a.name}")
            if a.name == "get_ipython":
                self.add("tampering", "uses get_ipython")

    def visit_name(self, node) -> None:
        if isinstance(node.ctx, ast.Load):
            self.info.uses.add(node.id)
        if node.id in FORBIDDEN_NAMES:
            self.add("forbidden", f"uses {node.id}")
        elif node.id in REVIEW_NAMES:
            self.add("review", f"uses {node.id}")
        elif node.id == "get_ipython":
            self.add("tampering", "uses get_ipython")
        elif node.id in self.reference:
            self.add("reference", f"uses {node.id}")

    def visit_attribute(self, node) -> None:
        root = _root_name(node)
        if root is not None:
            self.info.uses.add(root)
        if node.attr in REVIEW_ATTRS:
            self.add("review", f"uses .{node.attr}")
        elif node.attr in DUNDER_ESCAPES:
            self.add("forbidden", f"uses .{node.attr}")
        elif node.attr in SYS_ESCAPES:
            base = _dotted(node.value) or ""
            if base.split(".")[-1] == "sys" or self.aliases.get(base) == "sys":
                self.add("forbidden", f"uses sys.{node.attr}")
            elif node.attr in _SYS_ANYWHERE:
                self.add("forbidden", f"uses .{node.attr}")
        elif node.attr in KERNEL_ATTRS:
            self.add("tampering", f"uses .{node.attr}")
        elif node.attr in self.reference and node.attr not in REFERENCE_MODULES:
            self.add("reference", f"uses .{node.attr}")  # a part's forbidden call, torch.nn.functional.<it>
        if node.attr in FD_CALLS and self.aliases.get(_dotted(node.value) or "") == "os":
            self.add("tampering", f"uses os.{node.attr} (raw file descriptors)")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and root is not None and root in self.modules:
            self.add("tampering", f"patches {_dotted(node) or root}")

    def visit_call(self, node) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
            target = _root_name(node.args[0])
            if target in self.modules:
                self.add("tampering", f"patches {target} with {func.id}")
        first = node.args[0] if node.args else None
        if isinstance(func, ast.Name) and func.id == "open" and isinstance(first, ast.Constant):
            if isinstance(first.value, int) and not isinstance(first.value, bool):
                self.add("tampering", "opens a raw file descriptor")
        if isinstance(func, ast.Name) and func.id == SHELL_ESCAPE and isinstance(first, ast.Constant):
            for word in str(first.value).split():  # a shell command: each of its words
                self.course_words(word)

    def course_words(self, text: str) -> None:
        """A path or name that names the course's files or modules."""
        low = text.lower()
        for word in COURSE_WORDS:
            if word in low:
                kind = "reference" if word == "attnmath" else "course"
                self.add(kind, f"names course files or modules ({word!r})")

    def visit_constant(self, node) -> None:
        if not isinstance(node.value, str) or id(node) in self.docstrings:
            return
        text = node.value
        if not any(ch.isspace() for ch in text):
            self.course_words(text)
        stripped = text.strip()
        if re.fullmatch(r"[A-Za-z_][\w.]*", stripped):
            top = stripped.split(".")[0]
            if top in self.reference or top in ("attngrade", "importlib"):
                self.add("reference" if top in self.reference else "forbidden", f"names module {top!r}")
        if "__" in text and _DUNDER_TEXT.search(text):
            self.add("forbidden", "names a dunder escape hatch in a string")

    def visit_class(self, node) -> None:
        for base in node.bases:
            dotted = _dotted(base) or ""
            if dotted.endswith("NodeTransformer") or dotted.endswith("NodeVisitor"):
                self.add("tampering", "defines an AST transformer")


_DUNDER_TEXT = re.compile(r"__(import|builtins|loader|spec|subclasses|globals)__")


@_serialized
def analyse_cell(
    source: str, *, reference: frozenset = REFERENCE_MODULES, module_names: set | None = None
) -> CellInfo:
    """Parse one answer cell and collect its definitions, uses and findings.

    ``module_names`` are names known to be bound to modules elsewhere (the release's setup cells,
    for example ``np``); assignments to their attributes count as patching. The cell is walked
    once; its cost grows with its size, so the grader runs it in the read stage's bounded child
    (:mod:`attngrade.reading`).
    """
    info = CellInfo()
    source, info.notes, modules = _transform(source)
    info.python = source
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        info.syntax_error = True
        return info  # a MemoryError propagates: the read stage reports it as the limit it is
    walker = _Walker(info, reference, module_names, _docstring_nodes(tree))
    walker.top_level(tree.body)
    for node in ast.walk(tree):
        walker.visit(node)
    for name, body in modules:  # a module the cell writes (%%writefile) is the cell's code too
        info.defines.add(name)
        try:
            module = ast.parse(body)
        except (SyntaxError, ValueError, RecursionError):
            continue
        walker.docstrings |= _docstring_nodes(module)
        for node in ast.walk(module):
            walker.visit(node)
    return info


def part_dependencies(function: str, cells: list[tuple[str, CellInfo]], trusted_names: set) -> list[str]:
    """Labels of the answer cells a part's function depends on (see the module docstring)."""
    defining = [label for label, info in cells if function in info.defines]
    closure: list[str] = []
    todo = list(defining)
    by_label = dict(cells)
    while todo:
        label = todo.pop()
        if label in closure:
            continue
        closure.append(label)
        used = by_label[label].uses - trusted_names
        for other, info in cells:
            if other not in closure and info.defines & used:
                todo.append(other)
    return closure
