"""Normalised fingerprints of a Python answer, for :mod:`attngrade.similarity`.

An answer becomes a set of *features*, each a hash of a canonical text, with the places in the
answer that gave it (character ranges, for marking shared passages). The canonical text is read
from the answer's syntax tree, so that the usual disguises of a copy change little:

* comments, docstrings, blank lines, imports and ``pass`` are gone;
* every name the answer binds (variables, parameters, its own functions) is ``V``; names it does
  not bind (``len``, ``range``, a function of the task) stay; a module prefix is dropped
  (``np.exp``, ``math.exp`` and ``from math import exp`` are all ``exp``);
* a method call is a call with the object first (``x.sum(axis=a)`` is ``sum(V; axis=V)``, as
  ``np.sum(x, axis=a)`` is), a few NumPy spellings of one operation are one (``np.amax`` and
  ``np.max``; ``np.matmul(a, b)``, ``a.dot(b)`` and ``a @ b``), keyword arguments are sorted,
  the operands of ``+``, ``*``, ``and``, ``or`` and ``==`` are sorted, ``a > b`` is ``b < a``,
  ``x += y`` is ``x = x + y``;
* a comprehension and a loop give the same ``FOR target IN iterable`` and ``COLLECT element``
  features (a loop that appends ``element``), a conditional expression and an ``if`` the same
  ``IF test``.

Features: every expression that is more than a name or a constant, every statement header
(``FOR``, ``IF``, ``WHILE``, ``DEF`` with its parameter count and defaults, ...), every
assignment to more than a plain name, and the k-grams of :data:`SURFACE_K` tokens of the code as
written (comments and docstrings left out, the answer's own names ``V``; marked ``surface``: a
lazy copy keeps them, two honest answers that compute the same thing rarely share them). Order
plays no part (a set), so reordered statements or functions change nothing.

Besides each expression as written, its *expanded* form is a feature too: a variable is replaced
by what was last assigned to it (up to :data:`MAX_EXPANDED` characters; one that an ``if``
branch rebinds, or a conditional expression, stays ``V``), a call of the answer's own function
by the expression it returns with its parameters bound to the call's arguments, a loop variable
by the sequence it runs over (``x[i]`` for an index ``i`` by ``x``), an element-wise
comprehension by its element, a list that a loop appends to by the element, an accumulator
(``s = 0; for ...: s += t``) by ``sum(t)``, and ``list(x)``, ``np.asarray(x)``, ``float(x)``
by ``x``. So a copy with a helper inlined, temporaries introduced or removed, or NumPy rewritten
as lists and loops, still shares these expanded expressions with its original (what an honest
answer computes in the obvious way is often the solution's expanded expression too: no evidence).

``literals`` (a per-student variant's parameters, :mod:`attngrade.variants`) maps numbers to
names: a number literal equal to one is read as that name, in the tree and in the tokens, so two
answers that differ only in the value of a parameter they were given differently have the same
features.

Code that does not parse is read by top-level blocks, then by lines; what still does not parse
gives k-grams of its tokens (names abstracted as above), so a copy of broken code is still found.
"""

from __future__ import annotations

import ast
import hashlib
import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field

__all__ = ["CodePrint", "code_print", "feature_hash", "MAX_EXPANDED"]

MAX_EXPANDED = 240  # characters of an expanded expression; a longer one stays a name
INLINE_BUDGET = 2000  # top-level statements of helpers expanded per answer (then calls stay calls)
TOKEN_K = 6  # tokens per k-gram of code that does not parse
SURFACE_K = 5  # tokens per k-gram of the code as written (the answer's own names abstracted)
#: Names read as modules when the answer does not bind them itself.
MODULES = frozenset({"np", "numpy", "math", "cmath", "torch", "F", "nn", "scipy", "sp", "jnp", "jax"})
#: Spellings of one operation (after the module prefix is dropped).
SYNONYMS = {"amax": "max", "amin": "min", "maximum.reduce": "max", "minimum.reduce": "min",
            "add.reduce": "sum", "fsum": "sum", "true_divide": "divide", "array": "asarray"}
#: Functions that are a binary operator when called with two arguments and no keywords.
BINARY = {"matmul": "@", "dot": "@", "multiply": "*", "divide": "/", "add": "+", "subtract": "-",
          "power": "**"}
#: Conversions that the expanded form sees through when called with one argument alone.
TRANSPARENT = frozenset({"list", "tuple", "asarray", "asanyarray", "float", "copy", "ascontiguousarray"})
OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
       ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
       ast.BitAnd: "&", ast.BitXor: "^", ast.USub: "-", ast.UAdd: "+", ast.Not: "not ",
       ast.Invert: "~", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
       ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
       ast.And: "and", ast.Or: "or"}
COMMUTATIVE = frozenset({"+", "*", "&", "|", "^", "and", "or"})
INDEX = "#"  # what a loop variable over range(...) or np.ndindex(...) expands to
_TOKEN = re.compile(r"[^\W\d]\w*|\d[\w.]*|\S")


def feature_hash(text: str) -> int:
    """A feature's id: 64 bits of BLAKE2b of its canonical text (the same in every process)."""
    data = text.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)


@dataclass
class CodePrint:
    """An answer's features: feature id -> the character ranges of the answer that gave it."""

    features: dict = field(default_factory=dict)
    surface: set = field(default_factory=set)  # the features of the code as written (k-grams)
    unparsed: int = 0  # characters read as tokens because they do not parse

    def add(self, text: str, span, surface: bool = False) -> None:
        key = feature_hash(text)
        self.features.setdefault(key, []).append(span)
        if surface:
            self.surface.add(key)


class _Positions:
    """Character offsets from the syntax tree's (line, UTF-8 byte column) positions."""

    def __init__(self, code: str, first_line: int = 1):
        self.lines = code.splitlines(keepends=True)
        self.starts, at = [], 0
        for line in self.lines:
            self.starts.append(at)
            at += len(line)
        self.first, self.length = first_line, at

    def offset(self, line: int, col: int) -> int:
        i = line - self.first
        if i < 0 or i >= len(self.lines):
            return self.length if i >= 0 else 0
        text = self.lines[i]
        if not text.isascii():
            col = len(text.encode("utf-8", "replace")[:col].decode("utf-8", "ignore"))
        return self.starts[i] + min(col, len(text))

    def span(self, node, end_node=None) -> tuple:
        last = end_node or node
        end_line = getattr(last, "end_lineno", None) or node.lineno
        end_col = getattr(last, "end_col_offset", None)
        end_col = end_col if end_col is not None else node.col_offset
        return (self.offset(node.lineno, node.col_offset), self.offset(end_line, end_col))


def _bindings(tree) -> tuple[set, set]:
    """The names ``tree`` binds itself, and the names it imports as modules."""
    bound, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return bound - modules, modules | (MODULES - bound)


def _chain(node, modules) -> str | None:
    """``np.linalg.norm`` -> ``linalg.norm``: an attribute chain on a module, without the module."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in modules and attrs:
        return ".".join(reversed(attrs))
    return None


def _atom(node, modules) -> bool:
    """A name, a constant (``-1`` too) or a module's attribute: never a feature on its own."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, (ast.Name, ast.Constant)) or _chain(node, modules) is not None


def _callee(node) -> str:
    """The last name of what a call calls (``np.ndindex(...)`` -> ``ndindex``), else ``""``."""
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _lifted(wide_slice: str) -> bool:
    """Whether a subscript's expanded index is loop indices only (``x[i]``, ``x[i, :]``)."""
    parts = set(re.split(r"[(), ]+", wide_slice)) - {"", ":", "..."}
    return parts == {INDEX}


def _constant(value) -> str:
    if isinstance(value, bool) or value is None or value is Ellipsis:
        return "..." if value is Ellipsis else repr(value)
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 16 else "S"
    return type(value).__name__


def _literal_name(value, literals: dict) -> str | None:
    """The name ``literals`` reads the number ``value`` as, or None."""
    if not literals or isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value.replace("_", "")) if isinstance(value, str) else float(value)
    except ValueError:
        return None
    return literals.get(number)


class _Canon:
    """One pass over a syntax tree: each expression's (plain, expanded) canonical text, and the
    features of the answer into ``out`` (none when ``out`` is None: the helpers' pass)."""

    def __init__(self, out, pos, bound, modules, helpers, inlining=frozenset(), budget=None, literals=None):
        self.out, self.pos, self.bound, self.modules = out, pos, bound, modules
        self.literals = literals or {}  # number -> the name it is read as
        self.helpers = helpers  # the answer's own functions by name (FunctionDef nodes)
        self.inlining = inlining  # the helpers being expanded now (no recursion)
        self.budget = budget if budget is not None else [INLINE_BUDGET]  # statements left to inline
        self.defs: dict = {}  # variable -> what was last assigned to it, expanded
        self.loops = 0
        self.returned = None

    def emit(self, texts, node, end=None) -> None:
        if self.out is None or not hasattr(node, "lineno"):
            return
        span = self.pos.span(node, end)
        for text in dict.fromkeys(texts):
            if len(text) <= 4 * MAX_EXPANDED:
                self.out.add(text, span)

    def expr(self, node) -> tuple:
        method = getattr(self, "_" + type(node).__name__, None)
        texts = method(node) if method else self._generic(node)
        if len(texts[1]) > 4 * MAX_EXPANDED:
            texts = (texts[0], texts[0])
        if not _atom(node, self.modules):
            self.emit(texts, node)
        elif isinstance(node, ast.Name) and texts[1] not in ("V", INDEX):
            self.emit(texts[1:], node)  # what the variable holds (an accumulator's sum, a list's rows)
        return texts

    def _generic(self, node) -> tuple:
        kids = [self.expr(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        name = type(node).__name__
        return tuple(f"{name}({', '.join(k[i] for k in kids)})" for i in (0, 1))

    def _Name(self, node) -> tuple:
        if node.id in self.bound:
            return "V", self.defs.get(node.id, "V")
        return node.id, node.id

    def _Constant(self, node) -> tuple:
        text = _literal_name(node.value, self.literals) or _constant(node.value)
        return text, text

    def _Attribute(self, node) -> tuple:
        chain = _chain(node, self.modules)
        if chain is not None:
            name = SYNONYMS.get(chain, chain)
            return name, name
        value = self.expr(node.value)
        return f"{value[0]}.{node.attr}", f"{value[1]}.{node.attr}"

    def _Call(self, node) -> tuple:
        func, args = node.func, [self.expr(a) for a in node.args]
        chain = _chain(func, self.modules)
        if chain is None and isinstance(func, ast.Attribute):
            args.insert(0, self.expr(func.value))
            name = (func.attr, func.attr)
        else:
            name = (chain, chain) if chain is not None else self.expr(func)
        name = tuple(SYNONYMS.get(n, n) for n in name)
        kws = sorted((k.arg or "**", self.expr(k.value)) for k in node.keywords)
        if name[0] in BINARY and len(args) == 2 and not kws:
            return self._joined(BINARY[name[0]], args)
        texts = []
        for i in (0, 1):
            inner = ", ".join(a[i] for a in args)
            named = ", ".join(f"{k}={v[i]}" for k, v in kws)
            texts.append(f"{name[i]}({inner}{'; ' + named if named else ''})")
        if name[1] in TRANSPARENT and len(args) == 1 and not kws:
            texts[1] = args[0][1]
        elif isinstance(func, ast.Name) and func.id in self.helpers and func.id not in self.inlining:
            texts[1] = self.inline(self.helpers[func.id], [a[1] for a in args], {k: v[1] for k, v in kws})
        return tuple(texts)

    def inline(self, helper, args: list, kws: dict) -> str:
        """What a call of the answer's own function returns, its parameters bound to the call's
        arguments (expanded), or ``V``; nothing is emitted."""
        params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        self.budget[0] -= len(helper.body)
        if len(self.inlining) >= 3 or self.budget[0] < 0:
            return "V"
        inner = _Canon(None, self.pos, self.bound, self.modules, self.helpers, self.inlining | {helper.name},
                       self.budget, self.literals)
        defaults = helper.args.defaults
        for i, name in enumerate(params):
            at_default = i - (len(params) - len(defaults))
            value = args[i] if i < len(args) else kws.get(name)
            if value is None and at_default >= 0:
                value = inner.expr(defaults[at_default])[1]
            inner.defs[name] = value if value is not None else "V"
        for name, value in kws.items():
            inner.defs.setdefault(name, value)
        inner.body(helper.body)
        return inner.returned if inner.returned and len(inner.returned) <= 4 * MAX_EXPANDED else "V"

    def _joined(self, op: str, operands) -> tuple:
        out = []
        for i in (0, 1):
            items = [o[i] for o in operands]
            if op in COMMUTATIVE:
                items.sort()
            out.append("(" + f" {op} ".join(items) + ")")
        return tuple(out)

    def _operands(self, node, op_type) -> list:
        if isinstance(node, ast.BinOp) and isinstance(node.op, op_type):
            return self._operands(node.left, op_type) + self._operands(node.right, op_type)
        return [node]

    def _BinOp(self, node) -> tuple:
        op = OPS.get(type(node.op), "?")
        nodes = self._operands(node, type(node.op)) if op in COMMUTATIVE else [node.left, node.right]
        return self._joined(op, [self.expr(n) for n in nodes])

    def _UnaryOp(self, node) -> tuple:
        op, value = OPS.get(type(node.op), "?"), self.expr(node.operand)
        if isinstance(node.operand, ast.Constant) and op == "-":
            return "-" + value[0], "-" + value[1]
        return f"({op}{value[0]})", f"({op}{value[1]})"

    def _BoolOp(self, node) -> tuple:
        return self._joined(OPS.get(type(node.op), "?"), [self.expr(v) for v in node.values])

    def _Compare(self, node) -> tuple:
        items = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        ops = [OPS.get(type(o), "?") for o in node.ops]
        if len(ops) == 1 and ops[0] in (">", ">="):
            items, ops = items[::-1], ["<" if ops[0] == ">" else "<="]
        if len(ops) == 1 and ops[0] in ("==", "!=", "is", "is not"):
            items = sorted(items)
        return tuple("(" + items[0][i] + "".join(f" {o} {x[i]}" for o, x in zip(ops, items[1:])) + ")"
                     for i in (0, 1))

    def _Subscript(self, node) -> tuple:
        value, index = self.expr(node.value), self.expr(node.slice)
        wide = value[1] if _lifted(index[1]) else f"{value[1]}[{index[1]}]"
        return f"{value[0]}[{index[0]}]", wide

    def _Slice(self, node) -> tuple:
        parts = [self.expr(p) if p is not None else ("", "") for p in (node.lower, node.upper, node.step)]
        return tuple(":".join(p[i] for p in (parts if node.step else parts[:2])) for i in (0, 1))

    def _sequence(self, node, left: str, right: str) -> tuple:
        items = [self.expr(e) for e in node.elts]
        return tuple(left + ", ".join(x[i] for x in items) + right for i in (0, 1))

    def _Tuple(self, node) -> tuple:
        return self._sequence(node, "(", ")")

    def _List(self, node) -> tuple:
        return self._sequence(node, "[", "]")

    def _Set(self, node) -> tuple:
        return self._sequence(node, "{", "}")

    def _Dict(self, node) -> tuple:
        keys = [self.expr(k) if k is not None else ("**", "**") for k in node.keys]
        values = [self.expr(v) for v in node.values]
        return tuple("{" + ", ".join(f"{k[i]}: {v[i]}" for k, v in zip(keys, values)) + "}" for i in (0, 1))

    def _IfExp(self, node) -> tuple:
        test, body, orelse = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        self.emit(("IF " + test[0], "IF " + test[1]), node.test)
        return f"({body[0]} if {test[0]} else {orelse[0]})", "V"

    def _Lambda(self, node) -> tuple:
        saved = dict(self.defs)
        for a in ast.walk(node.args):
            if isinstance(a, ast.arg):
                self.defs.pop(a.arg, None)
        body = self.expr(node.body)
        self.defs = saved
        return f"lambda: {body[0]}", f"lambda: {body[1]}"

    def _NamedExpr(self, node) -> tuple:
        value = self.expr(node.value)
        self.bind(node.target, value[1])
        return value

    def _Starred(self, node) -> tuple:
        value = self.expr(node.value)
        return "*" + value[0], "*" + value[1]

    def _JoinedStr(self, node) -> tuple:
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                self.expr(value.value)
        return "S", "S"

    def bind(self, target, wide: str) -> None:
        """What ``target`` (a name, or names in a tuple: unknown then) holds from now on."""
        if isinstance(target, ast.Name):
            self.defs[target.id] = wide if len(wide) <= MAX_EXPANDED else "V"
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.bind(elt, "V")
        elif isinstance(target, ast.Starred):
            self.bind(target.value, "V")

    def bind_loop(self, target, iterable, wide: str) -> None:
        """A loop variable: an index over ``range``/``ndindex``, else the sequence it runs over
        (``enumerate`` and ``zip`` take their tuple apart)."""
        name = _callee(iterable)
        if name in ("range", "ndindex", "arange", "ndenumerate") and isinstance(target, ast.Name):
            self.defs[target.id] = INDEX
        elif name in ("enumerate", "zip") and isinstance(target, ast.Tuple):
            args = list(iterable.args)
            if name == "enumerate" and len(target.elts) == 2 and args:
                self.bind(target.elts[0], INDEX)
                self.bind_loop(target.elts[1], args[0], self.expr(args[0])[1])
            elif len(args) == len(target.elts):
                for elt, arg in zip(target.elts, args):
                    self.bind_loop(elt, arg, self.expr(arg)[1])
            else:
                self.bind(target, "V")
        else:
            self.bind(target, wide)

    def _comprehension(self, node, elts) -> tuple:
        saved = dict(self.defs)
        heads = []
        for gen in node.generators:
            iterable = self.expr(gen.iter)
            self.bind_loop(gen.target, gen.iter, iterable[1])
            target = self.expr(gen.target)[0]
            self.emit(tuple(f"FOR {target} IN {it}" for it in iterable), gen.iter)
            for cond in gen.ifs:
                test = self.expr(cond)
                self.emit(("IF " + test[0], "IF " + test[1]), cond)
            heads.append(f"for {target} in {iterable[0]}")
        values = [self.expr(e) for e in elts]
        element = tuple(": ".join(v[i] for v in values) for i in (0, 1))
        self.emit(("COLLECT " + element[0], "COLLECT " + element[1]), elts[0], elts[-1])
        self.defs = saved
        return f"[{element[0]} {' '.join(heads)}]", element[1]

    def _ListComp(self, node) -> tuple:
        return self._comprehension(node, [node.elt])

    _SetComp = _GeneratorExp = _ListComp

    def _DictComp(self, node) -> tuple:
        return self._comprehension(node, [node.key, node.value])

    # Statements.

    def body(self, statements) -> None:
        for node in statements:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring or a bare constant
            method = getattr(self, "_s_" + type(node).__name__, None)
            if method is not None:
                method(node)
            elif not isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass, ast.Break, ast.Continue,
                                       ast.Global, ast.Nonlocal)):
                self._s_generic(node)

    def _s_generic(self, node) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                self.body([s for s in block if isinstance(s, ast.stmt)])
                for other in (s for s in block if not isinstance(s, ast.stmt)):
                    self.body(getattr(other, "body", []))

    def _scope(self, node, params) -> None:
        saved, returned = dict(self.defs), self.returned
        for name in params:
            self.defs.pop(name, None)
        self.body(node.body)
        self.defs, self.returned = saved, returned

    def _s_FunctionDef(self, node) -> None:
        args = node.args
        params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        defaults = [self.expr(d)[0] for d in (*args.defaults, *(d for d in args.kw_defaults if d))]
        stars = ("*" if args.vararg else "") + ("**" if args.kwarg else "")
        for deco in node.decorator_list:
            self.expr(deco)
        self.emit((f"DEF {len(params)}{stars} {', '.join(defaults)}",), node, (args.args or [node])[-1])
        extra = [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        self._scope(node, params + extra)

    _s_AsyncFunctionDef = _s_FunctionDef

    def _s_ClassDef(self, node) -> None:
        bases = [self.expr(b)[0] for b in node.bases]
        self.emit((f"CLASS {', '.join(bases)}",), node, (node.bases or [node])[-1])
        self._scope(node, [])

    def _s_Return(self, node) -> None:
        if node.value is not None:
            self.returned = self.expr(node.value)[1]

    def _s_Assign(self, node) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def _s_AnnAssign(self, node) -> None:
        if node.value is not None:
            self.assign(node.target, self.expr(node.value), node)

    def assign(self, target, value, node) -> None:
        if isinstance(target, ast.Name):
            self.bind(target, value[1])
            return
        where = self.expr(target)
        self.emit((f"{where[0]} = {value[0]}", f"{where[1]} = {value[1]}"), node)
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            if _lifted(self.expr(target.slice)[1]):  # out[i] = row: out is the rows
                self.bind(target.value, value[1])
        else:
            self.bind(target, "V")

    def _s_AugAssign(self, node) -> None:
        target, value = self.expr(node.target), self.expr(node.value)
        op = OPS.get(type(node.op), "?")
        both = self._joined(op, [target, value])
        self.emit(both, node)
        if isinstance(node.target, ast.Name):
            start = self.defs.get(node.target.id)
            if self.loops and op in ("+", "*") and start in ("0", "1"):
                self.bind(node.target, f"{'sum' if op == '+' else 'prod'}({value[1]})")
            else:
                self.bind(node.target, both[1])
        else:
            self.assign(node.target, both, node)

    def _s_For(self, node) -> None:
        iterable = self.expr(node.iter)
        self.bind_loop(node.target, node.iter, iterable[1])
        target = self.expr(node.target)[0]
        self.emit(("FOR " + target + " IN " + iterable[0], "FOR " + target + " IN " + iterable[1]),
                  node, node.iter)
        self.loops += 1
        self.body(node.body)
        self.loops -= 1
        self.body(node.orelse)

    _s_AsyncFor = _s_For

    def _s_While(self, node) -> None:
        test = self.expr(node.test)
        self.emit(("WHILE " + test[0], "WHILE " + test[1]), node, node.test)
        self.loops += 1
        self.body(node.body)
        self.loops -= 1
        self.body(node.orelse)

    def _s_If(self, node) -> None:
        """A variable that a branch rebinds keeps what it held before the ``if`` (the branch is a
        guard: a cast, a clamp), unless both branches agree or it held nothing before."""
        test = self.expr(node.test)
        self.emit(("IF " + test[0], "IF " + test[1]), node, node.test)
        before = dict(self.defs)
        self.body(node.body)
        after_body, self.defs = self.defs, dict(before)
        self.body(node.orelse)
        for name in set(after_body) | set(self.defs):
            agreed = after_body.get(name) == self.defs.get(name)
            if not agreed:
                self.defs[name] = "V"

    def _s_Expr(self, node) -> None:
        call = node.value
        self.expr(call)
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args
                and call.func.attr in ("append", "extend") and isinstance(call.func.value, ast.Name)):
            element = self.expr(call.args[0])  # out.append(e) in a loop: out is e's rows
            self.emit(("COLLECT " + element[0], "COLLECT " + element[1]), call.args[0])
            self.bind(call.func.value, element[1])

    def _s_Raise(self, node) -> None:
        if node.exc is not None:
            self.emit(("RAISE " + self.expr(node.exc)[0],), node)

    def _s_Assert(self, node) -> None:
        self.emit(("ASSERT " + self.expr(node.test)[0],), node)


def _parse(text: str, first_line: int):
    """The syntax tree of ``text`` with line numbers from ``first_line``, or None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    ast.increment_lineno(tree, first_line - 1)
    return tree


def _line_tree(line: str, number: int):
    """One line on its own (indented: inside ``if 1:``; ending in ``:``: with a body)."""
    text = line.rstrip()
    if not text.strip():
        return None
    indented = text[0] in " \t"
    wrapped = ("if 1:\n" if indented else "") + text + ("\n" + text[: len(text) - len(text.lstrip())]
                                                       + "    pass" if text.endswith(":") else "")
    return _parse(wrapped, number - (1 if indented else 0))


def _pieces(code: str) -> tuple[list, list]:
    """The trees of ``code`` (the whole, else each top-level block, else each line of a block),
    and the (start, end) character ranges that none of them covers."""
    whole = _parse(code, 1)
    if whole is not None:
        return [whole], []
    lines = code.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "\n", "\r", "#")
              and line.strip()] or [0]
    starts = sorted({0, *starts})
    trees, rest, offset = [], [], [sum(len(x) for x in lines[:i]) for i in range(len(lines) + 1)]
    for begin, end in zip(starts, starts[1:] + [len(lines)]):
        block = _parse("".join(lines[begin:end]), begin + 1)
        if block is not None:
            trees.append(block)
            continue
        for i in range(begin, end):
            tree = _line_tree(lines[i], i + 1)
            if tree is not None:
                trees.append(tree)
            elif lines[i].strip():
                rest.append((offset[i], offset[i + 1]))
    return trees, rest


def _regex_tokens(code: str) -> list:
    """Tokens of text that ``tokenize`` refuses: words, numbers and single characters, with
    ``#`` comments left out."""
    out = []
    for m in re.finditer(r"#[^\n]*|'[^'\n]*'|\"[^\"\n]*\"|" + _TOKEN.pattern, code):
        if not m.group().startswith("#"):
            out.append((m.group(), m.start(), m.end()))
    return out


def _source_tokens(code: str, pos: _Positions) -> list:
    """``(text, start, end)`` of the code's tokens without comments, layout and bare strings
    (docstrings)."""
    kinds = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER)
    try:
        raw = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in kinds[:1]]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _regex_tokens(code)
    out = []
    for i, tok in enumerate(raw):
        if tok.type in kinds:
            continue
        before = raw[i - 1].type if i else tokenize.NEWLINE
        after = raw[i + 1].type if i + 1 < len(raw) else tokenize.NEWLINE
        if tok.type == tokenize.STRING and before in kinds and after in kinds:
            continue  # a docstring or another bare string
        start = pos.offset(tok.start[0], len(tok.line[: tok.start[1]].encode("utf-8", "replace")))
        out.append((tok.string, start, start + len(tok.string)))
    return out


def _grams(out: CodePrint, prefix: str, words: list, k: int, surface: bool = False) -> None:
    """Every ``k`` consecutive ``(word, start, end)`` as one feature (fewer when that is all)."""
    for i in range(max(0, len(words) - k) + 1):
        gram = words[i:i + k]
        if len(gram) == k or (i == 0 and len(gram) >= 3):
            out.add(prefix + " ".join(g[0] for g in gram), (gram[0][1], gram[-1][2]), surface)


def _surface(tokens, bound: set) -> list:
    """Tokens as written, except the answer's own names (``V``) and strings (``S``)."""
    out = []
    for i, (tok, begin, stop) in enumerate(tokens):
        after_dot = i > 0 and tokens[i - 1][0] == "."
        keyword_arg = i + 1 < len(tokens) and tokens[i + 1][0] == "=" and i > 0 and tokens[i - 1][0] in "(,"
        if tok in bound and not after_dot and not keyword_arg:
            tok = "V"
        elif tok[:1] in "'\"" or (tok[:1].isalpha() and tok[1:2] in "'\"" and len(tok) > 2):
            tok = "S"
        out.append((tok, begin, stop))
    return out


def _abstract(tokens, bound: set, modules: set) -> list:
    """Tokens abstracted as the syntax tree's canonical text is: names that are not called are
    ``V``, a module's prefix is dropped."""
    kept, skip = [], False
    for i, (tok, begin, stop) in enumerate(tokens):
        after = tokens[i + 1][0] if i + 1 < len(tokens) else ""
        before = tokens[i - 1][0] if i else ""
        if skip:  # the dot after a dropped module name
            skip = False
        elif not (tok[0].isalpha() or tok[0] == "_") or keyword.iskeyword(tok) or before == ".":
            kept.append((tok, begin, stop))
        elif tok in modules and after == ".":
            skip = True
        else:
            kept.append(("V" if tok in bound or after != "(" else tok, begin, stop))
    return kept


def _named_numbers(tokens: list, literals: dict | None) -> list:
    """``tokens`` with each number that ``literals`` names replaced by its name."""
    if not literals:
        return tokens
    number = re.compile(r"\d[\d_]*\.?[\d_]*(?:[eE][-+]?\d+)?|\.\d[\d_]*(?:[eE][-+]?\d+)?")
    return [((_literal_name(t, literals) if number.fullmatch(t) else None) or t, b, e) for t, b, e in tokens]


def code_print(code: str, literals: dict | None = None) -> CodePrint:
    """The features of ``code`` (any text: what does not parse is read as tokens); ``literals``:
    number -> name, the numbers read as names (a variant's parameters)."""
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, got {type(code).__name__}")
    if literals is not None and not all(isinstance(k, float) and isinstance(v, str) for k, v in literals.items()):
        raise TypeError("literals must map floats to names")
    clean = re.sub(r"[\ud800-\udfff\x00]", "?", code)
    trees, rest = _pieces(clean)
    bound, modules = set(), set()
    for tree in trees:
        b, m = _bindings(tree)
        bound |= b
        modules |= m
    modules -= bound
    out, pos = CodePrint(), _Positions(clean)
    helpers = {node.name: node for tree in trees for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for tree in trees:
        try:
            _Canon(out, pos, bound, modules, helpers, literals=literals).body(tree.body)
        except RecursionError:
            rest.append(pos.span(tree.body[0], tree.body[-1]) if tree.body else (0, 0))
    tokens = _named_numbers(_source_tokens(clean, pos), literals)
    _grams(out, "W ", _surface(tokens, bound), SURFACE_K, surface=True)
    for start, end in rest:  # what does not parse: its tokens, abstracted
        inside = [t for t in tokens if start <= t[1] < end]
        _grams(out, "T ", _abstract(inside, bound, modules), TOKEN_K)
        out.unparsed += end - start
    return out
