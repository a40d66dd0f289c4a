"""Typeset the plain-text mathematics of claim markers (``softmax(QK^T / sqrt(d_k)) V``) as TeX.

The markers in ``tests/`` state the sources' claims as the sources write them, in ASCII, so that
they read well in pytest's output. The appendix renders them with MathJax: :func:`to_myst` finds
the formula-like runs of words (identifiers with subscripts or superscripts, function calls such
as ``softmax(z)`` or ``O(n^2 d)``, single-letter symbols joined by operators) and wraps each run
in ``$...$`` after a few rewrites (``sqrt(x)`` -> ``\\sqrt{x}``, ``K^T`` -> ``K^\\top``, ``<=`` ->
``\\le``). Code (``np.max(z)``) becomes inline code; prose, including parenthesised prose, is
left alone. A text that already contains ``$`` is taken as MyST and returned unchanged.
"""

from __future__ import annotations

import re

GREEK = {"tau": r"\tau", "lambda": r"\lambda", "omega": r"\omega", "eta": r"\eta", "mu": r"\mu",
         "delta": r"\delta", "theta": r"\theta", "phi": r"\phi", "alpha": r"\alpha",
         "infinity": r"\infty", "inf": r"\infty"}
FUNCS = {"softmax": r"\softmax", "exp": r"\exp", "log": r"\log", "elu": r"\operatorname{elu}",
         "rank": r"\operatorname{rank}", "Var": r"\operatorname{Var}", "min": r"\min", "max": r"\max",
         "diag": r"\operatorname{diag}", "rowsum": r"\operatorname{rowsum}", "sin": r"\sin", "cos": r"\cos",
         "Concat": r"\operatorname{Concat}", "MultiHead": r"\operatorname{MultiHead}",
         "Attention": r"\operatorname{Attention}", "sqrt": r"\sqrt"}
PUNCT = ",.;:"
OPERATORS = {"=", "<=", ">=", "!=", "<", ">", "->", "+", "-", "*", "/", "~", "x", ".", "==", "≈", "⊙", "·"}
SUBSUP = r"[A-Za-z]+(?:_\{?[A-Za-z0-9]+\}?|\^\{?[A-Za-z0-9]+\}?)+"
FORMULA = re.compile(r"""(?x)^(
    %s
  | (?:sqrt|softmax|exp|log|Var|rank|diag|elu|min|max|Attention|MultiHead|Concat|O)\(
        [^()]*(?:\([^()]*\)[^()]*)*\)(?:_[A-Za-z0-9]+)?
  | [A-Za-z][A-Za-z0-9]*(?:_\{?[A-Za-z0-9+-]+\}?)?/[A-Za-z][A-Za-z0-9]*(?:_\{?[A-Za-z0-9+-]+\}?)?
  | \d+/[A-Za-z0-9_]+ | [A-Za-z0-9_]+\^\d+ )$""" % SUBSUP)
PROSE = re.compile(r"\b(the|of|and|a|an|is|for|only|with|no|not|etc|on|to|in|by|as|at|from)\b")
CODE = re.compile(r"^(np\.|torch\.|F\.|[a-z]+_[a-z]+_[a-z_]+|.*\.sum\(|attn\[)")
LETTER = re.compile(r"^[A-Za-z]$")
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _tex(t: str) -> str:
    t = re.sub(r"sqrt\(([^()]*)\)", r"\\sqrt{\1}", t)
    t = re.sub(r"\^\(([^)]*)\)", r"^{\1}", t)
    t = re.sub(r"_\(([^)]*)\)", r"_{\1}", t)
    t = re.sub(r"\^T\b", r"^\\top", t)
    t = re.sub(r"_([A-Za-z0-9]{2,})\b", lambda m: "_{" + m.group(1) + "}", t)
    t = re.sub(r"\^([A-Za-z0-9]{2,})\b", lambda m: "^{" + m.group(1) + "}", t)
    for a, b in (("->", r"\to "), ("<=", r"\le "), (">=", r"\ge "), ("!=", r"\ne "), ("·", r"\cdot "),
                 ("⊙", r"\odot "), ("∞", r"\infty "), ("≈", r"\approx ")):
        t = t.replace(a, b)
    t = re.sub(r"(?<=[\w)}]) x (?=[\w(\\])", r" \\times ", t)
    t = re.sub(r"(?<=\s)[*.](?=\s)", r"\\cdot", t)
    t = t.replace("-inf", r"-\infty").replace("sum_", r"\sum_")

    def word(m):
        w = m.group(0)
        if w.startswith("\\"):
            return w
        if w in FUNCS or w in GREEK:
            return FUNCS.get(w, GREEK.get(w))
        return r"\mathrm{" + w + "}" if len(w) >= 3 and w.islower() and re.search("[aeiou]", w) else w

    return re.sub(r"\\?[A-Za-z]+", word, t)


def _words(text: str) -> list[str]:
    """Split at spaces, keeping a parenthesised or bracketed group in one word."""
    out, cur, depth = [], [], 0
    for w in text.split(" "):
        cur.append(w)
        depth += w.count("(") + w.count("[") - w.count(")") - w.count("]")
        if depth <= 0:
            out.append(" ".join(cur))
            cur, depth = [], 0
    if cur:
        out.append(" ".join(cur))
    return out


def _kind(word: str) -> str:
    core = word.rstrip(PUNCT)
    if CODE.match(core):
        return "code"
    if core in ("∞", "inf", "infinity") or core in GREEK:
        return "letter"
    if len(core) > 1 and core[0] == "-" and _kind(core[1:]) in ("math", "letter"):
        return "math"  # a negated symbol such as -p_i or -inf
    if len(core) > 2 and core[0] == "(" and core[-1] == ")" and (" " in core or core[1] == "-"):
        inner = [_kind(w) for w in _words(core[1:-1])]  # a parenthesised formula such as (1 - p_i)
        if set(inner) <= {"math", "letter", "number", "op"} and {"math", "letter"} & set(inner):
            return "math"
    if FORMULA.match(core) and not PROSE.search(core):
        return "math"
    if core == "x" or core in OPERATORS:
        return "op"
    if LETTER.match(core) and core not in ("a", "A", "I"):
        return "letter"
    if NUMBER.match(core):
        return "number"
    return "text"


def to_myst(text: str) -> str:
    """``text`` with its formulas as ``$...$`` and its code as inline code (see the module doc)."""
    if "$" in text:
        return text
    words = _words(text)
    kinds = [_kind(w) for w in words]
    out, i = [], 0
    while i < len(words):
        kind = kinds[i]
        if kind in ("math", "letter", "number"):
            j = i
            while j + 1 < len(words) and words[j] == words[j].rstrip(PUNCT):
                if (j + 2 < len(words) and kinds[j + 1] == "op" and kinds[j + 2] in ("math", "letter", "number")
                        and words[j + 1] == words[j + 1].rstrip(PUNCT)):
                    j += 2
                elif kinds[j] in ("math", "letter") and kinds[j + 1] in ("math", "letter") \
                        and not re.match(r"(O|softmax|exp|log|sqrt)\(", words[j + 1]):
                    j += 1  # juxtaposition, a product such as X W_Q
                else:
                    break
            span_kinds = kinds[i:j + 1]
            formula = "math" in span_kinds or ("op" in span_kinds and "letter" in span_kinds)
            if formula or kind == "letter":
                span = " ".join(words[i:j + 1])
                core = span.rstrip(PUNCT)
                out.append("$" + _tex(core) + "$" + span[len(core):])
                i = j + 1
                continue
        word = words[i]
        if kind == "code":
            core = word.rstrip(PUNCT)
            word = "`" + core + "`" + word[len(core):]
        out.append(word)
        i += 1
    return " ".join(out)
